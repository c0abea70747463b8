/* The liveness tree's sockets (livesock.c): a parent's listener, the route's source address and
 * the start-up exchange of the listeners. */
#ifndef GPL_LAUNCHER_LIVESOCK_H
#define GPL_LAUNCHER_LIVESOCK_H

#include <stddef.h>

/* A TCP listener on addr (IPv4 or IPv6 text; the job's agreed address, not every address), port
 * chosen by the kernel (*port). The descriptor (close-on-exec), or -1. */
int livesock_listen(const char *addr, int *port);
/* This host's address on the route to addr (rank 0's) into out: the interface the job agreed on.
 * 0, or -1. */
int livesock_route_addr(const char *addr, char *out, size_t len);

struct job_s;
/* Start-up, collective over job->world (bounded by job->timeout): a rank with children (nkids)
 * listens on its address on the route to addr (rank 0's; not when !keyed), every rank's address
 * and port are gathered; *parent_addr / *parent_port: where parent listens. *ok = 0 when some
 * parent has no listener (no liveness for anyone, the same decision on every rank). 0, or the
 * exchange's error. *listen_fd: the listener (-1: none), the caller's to close. */
int livesock_exchange(struct job_s *job, const char *addr, int nkids, int parent, int keyed, int *listen_fd,
                      char *parent_addr, size_t len, int *parent_port, int *ok);

#endif
