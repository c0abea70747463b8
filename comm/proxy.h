/* The comm proxy's client side (internal; the server's start/stop are in comm/comm_job.h): lets a
 * program that gpulaunch wraps (a child of the MPI rank, not an MPI process) use gpl_init and the
 * collectives. The rank's gpulaunch serves a Unix socket from its libuv loop
 * and runs the child's host collectives on its own MPI communicator, on shared memory the child
 * maps (memfds passed over the socket); the nccl backend in the child uses it only to bootstrap. */
#ifndef GPL_COMM_PROXY_H
#define GPL_COMM_PROXY_H

#include <stddef.h>

#include "comm/internal.h"

/* Client side, in gpl_init: connect to the proxy at path and build the communicator. */
int comm_proxy_connect(gpl_comm_t **out, const char *path, const gpl_init_opts_t *o);
/* gpl_progress() of a wrapped program: tell its gpulaunch (no reply awaited). */
int comm_proxy_progress(gpl_comm_t *c, double step);

#endif
