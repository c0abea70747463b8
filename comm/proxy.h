/* The comm proxy: lets a program that gpulaunch wraps (a child of the MPI rank, not an MPI process)
 * use gpl_init and the collectives. The rank's gpulaunch serves a Unix socket from its libuv loop
 * and runs the child's host collectives on its own MPI communicator, on shared memory the child
 * maps (memfds passed over the socket); the nccl backend in the child uses it only to bootstrap. */
#ifndef GPL_COMM_PROXY_H
#define GPL_COMM_PROXY_H

#include <stddef.h>

#include "comm/comm.h"

/* The environment variable that tells gpl_init in the child where its proxy is. */
#define COMM_PROXY_ENV "GPULAUNCH_PROXY"

struct uv_loop_s;
typedef struct comm_proxy_s comm_proxy_t;

/* Start this rank's proxy on loop. Every rank of job->comm calls it (it builds the proxy's own
 * communicator, collectively with job->timeout). path_out gets the socket's path: pass it to the
 * program as COMM_PROXY_ENV=path (and GPULAUNCH_COMM_BACKEND, GPULAUNCH_COMM_INIT_TIMEOUT for
 * [comm] backend and init_timeout, GPULAUNCH_TIMEOUT for the deadline). One program at a time
 * connects. Every program after the first (a restart) gets a fresh communicator when it greets
 * the proxy: collective over the ranks' gpulaunch processes and bounded by job->timeout, it blocks
 * the loop while it is made; restart all ranks' programs together. A collective of a program that
 * was killed inside it is left to MPI (with its memory). */
int comm_proxy_start(struct uv_loop_s *loop, const comm_job_t *job, comm_proxy_t **out,
                     char *path_out, size_t len);
/* Stop: close the socket and the handles, free the communicator. The loop must run again (as the
 * supervisor does after detaching) for the handles to finish closing; then the memory is freed.
 * A collective still in flight (a program killed mid-call) leaves the communicator to MPI. */
void comm_proxy_stop(comm_proxy_t *p);

/* Client side, in gpl_init: connect to the proxy at path and build the communicator. */
int comm_proxy_connect(gpl_comm_t **out, const char *path, const gpl_init_opts_t *o);

#endif
