/* Who am I: rank, world size, local rank/size and node index learned from MPI (or a job of one). */
#ifndef GPL_LAUNCHER_JOB_H
#define GPL_LAUNCHER_JOB_H

#include <mpi.h>

typedef struct job_s {
  int rank, size;             /* world rank and size */
  int local_rank, local_size; /* rank among the ranks of this node, and their count */
  int node, nnodes;           /* node index (torchrun's GROUP_RANK) and node count */
  char host[256];             /* this rank's host name */
  char **hosts;               /* host name of each world rank (size entries) */
  int *node_of;               /* node index of each world rank */
  int *local_rank_of;         /* local rank of each world rank */
  int *local_size_of_node;    /* ranks on each node (nnodes entries) */
  int *leader_of_node;        /* world rank of local rank 0 of each node (nnodes entries) */
  MPI_Comm world;             /* a duplicate of MPI_COMM_WORLD for gpulaunch's own messages */
  MPI_Comm node_comm;         /* the ranks of this node (MPI_COMM_TYPE_SHARED) */
  MPI_Comm leaders;           /* local rank 0 of every node; MPI_COMM_NULL on the others */
  double timeout;             /* deadline in seconds for every wait on other ranks */
  int under_launcher;         /* 1 under mpirun/srun, 0 for a job of one started alone */
} job_t;

/* MPI_Init and the exchanges above (each bounded by timeout). */
int job_init(job_t *job, int *argc, char ***argv, double timeout);
/* MPI_Finalize and free. */
void job_finalize(job_t *job);
/* End the whole job now with this exit code (MPI_Abort when there are other ranks). */
void job_abort(job_t *job, int exit_code) __attribute__((noreturn));

#endif
