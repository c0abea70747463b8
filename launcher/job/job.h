/* Who am I: rank, world size, local rank/size and node index learned from MPI (or a job of one). */
#ifndef GPL_LAUNCHER_JOB_H
#define GPL_LAUNCHER_JOB_H

#include <mpi.h>

#include "common/mpix.h"

typedef struct job_s {
  int rank, size;             /* world rank and size */
  int local_rank, local_size; /* rank among the ranks of this node, and their count */
  int node, nnodes;           /* node index (torchrun's GROUP_RANK) and node count */
  char host[256];             /* this rank's host name */
  char **hosts;               /* host name of each world rank (size entries) */
  int *node_of;               /* node index of each world rank */
  int *leader_of_node;        /* world rank of local rank 0 of each node (nnodes entries) */
  MPI_Comm world;             /* MPI_COMM_WORLD: gpulaunch is the only MPI user of its process */
  int *node_ranks;            /* the world ranks of this node, by local rank */
  mpix_group_t node_grp;      /* the ranks of this node (same host name), over world */
  mpix_group_t lead_grp;      /* local rank 0 of every node, in node order (me = -1 elsewhere) */
  MPI_Comm ctl;               /* the supervisors' control messages (launcher/sup/ctl.h): world */
  double timeout;             /* deadline in seconds for every wait on other ranks */
  int under_launcher;         /* 1 under mpirun/srun, 0 for a job of one started alone */
  int lost;                   /* a rank was lost while the job ran: job_exit leaves without MPI */
} job_t;

/* MPI_Init and the exchanges above (each bounded by timeout). No communicator is made: every
 * exchange runs over MPI_COMM_WORLD, the node's and the leaders' as groups (common/mpix.h) with
 * tags of their own. A process started alone (util_env_rank() < 0) is a job of one that never
 * initialises MPI: world and ctl stay MPI_COMM_NULL, which common/mpix.h's collectives and ctl.h
 * take as this process alone. */
int job_init(job_t *job, int *argc, char ***argv, double timeout);
/* The job as comm/ wants it (comm/comm_job.h: comm_job_t), for built-in jobs and the proxy. */
struct comm_job_s;
void job_to_comm(const job_t *job, struct comm_job_s *out);

/* A collective check after work each rank did on its own: every rank learns whether any rank
 * failed. Returns the first negative rc in rank order (each failing rank has already said why),
 * 0 when all succeeded, or GPL_ETIMEDOUT. Keeps all ranks on the same path, so that a rank that
 * failed never leaves the others waiting in the next exchange. */
int job_agree(job_t *job, int rc, const char *what);
/* Test hook: GPULAUNCH_TEST_STALL=rank:seconds[:stage] delays that rank at that stage. */
void job_test_stall(const job_t *job, const char *stage);
/* MPI_Finalize and free. */
void job_finalize(job_t *job);
/* End this rank with the job's exit code: all ranks agree (bounded) on one code, the first
 * non-zero in rank order; 0 finalizes MPI normally, anything else makes every rank leave at the
 * same moment without MPI_Finalize (Open MPI then ends mpirun at once with that code instead of
 * waiting seconds to kill stragglers). A rank missing from the agreement: MPI_Abort. After a
 * lost rank (job->lost) there is nothing to agree on: the rank leaves at once with code. */
void job_exit(job_t *job, int code) __attribute__((noreturn));
/* End the whole job now with this exit code (MPI_Abort when there are other ranks). */
void job_abort(job_t *job, int exit_code) __attribute__((noreturn));

#endif
