/* The liveness tree's sockets (livesock.c): a parent's listener and the route's source address. */
#ifndef GPL_LAUNCHER_LIVESOCK_H
#define GPL_LAUNCHER_LIVESOCK_H

#include <stddef.h>

/* A TCP listener on addr (IPv4 or IPv6 text; the job's agreed address, not every address), port
 * chosen by the kernel (*port). The descriptor (close-on-exec), or -1. */
int livesock_listen(const char *addr, int *port);
/* This host's address on the route to addr (rank 0's) into out: the interface the job agreed on.
 * 0, or -1. */
int livesock_route_addr(const char *addr, char *out, size_t len);

#endif
