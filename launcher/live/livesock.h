/* The liveness tree's sockets (livesock.c): a parent's listener and the route's source address. */
#ifndef GPL_LAUNCHER_LIVESOCK_H
#define GPL_LAUNCHER_LIVESOCK_H

#include <stddef.h>

/* A TCP listener on every address of the family (v6: IPv6), port chosen by the kernel (*port).
 * The descriptor (close-on-exec), or -1. */
int livesock_listen(int v6, int *port);
/* This host's address on the route to addr (rank 0's) into out: the interface the job agreed on.
 * 0, or -1. */
int livesock_route_addr(const char *addr, char *out, size_t len);

#endif
