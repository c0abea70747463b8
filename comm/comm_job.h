/* comm as the launcher uses it: the job a communicator is made from, comm_init, and the proxy that
 * serves a wrapped program's collectives. The internals are in comm/internal.h. */
#ifndef GPL_COMM_COMM_JOB_H
#define GPL_COMM_COMM_JOB_H

#include <mpi.h>
#include <stddef.h>

#include "common/envvar.h"
#include "gpulaunch/comm.h"

/* The job, as the launcher (or gpl_init) found it. Plain data: comm/ knows nothing of launcher/. */
typedef struct comm_job_s {
  int rank, size;             /* rank in comm, and its size */
  int local_rank, local_size; /* among the ranks of this node */
  int node, nnodes;           /* node index and count */
  MPI_Comm comm;              /* the job's ranks (duplicated for comm's own traffic); may be
                               * MPI_COMM_NULL only for a job of one */
  const char *const *hosts;   /* host name of each rank (size entries) for messages, or NULL;
                               * copied */
  double timeout;             /* deadline (s) of every wait on other ranks; <= 0: the
                               * GPULAUNCH_TIMEOUT default */
} comm_job_t;

/* Create the communicator of `job` (every rank of job->comm calls it). opts may be NULL (defaults;
 * opts->backend AUTO does not read the environment here: the launcher passes [comm] backend). */
int comm_init(gpl_comm_t **out, const comm_job_t *job, const gpl_init_opts_t *opts);

/* The environment variable that tells gpl_init in a wrapped program where its proxy is. */
#define COMM_PROXY_ENV ENVVAR_LITERAL(PROXY)

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
/* The program showed progress: a collective it started (step < 0), or gpl_progress(comm, step)
 * (step < 0: none given). Called on the loop; fn NULL: nobody listens. */
void comm_proxy_on_progress(comm_proxy_t *p, void (*fn)(void *arg, double step), void *arg);

#endif
