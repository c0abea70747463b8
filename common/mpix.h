/* Bounded MPI: collectives built on non-blocking calls with a deadline that name the missing ranks. */
#ifndef GPL_COMMON_MPIX_H
#define GPL_COMMON_MPIX_H

#include <mpi.h>

#include "common/check.h"

/* MPI calls: log MPI's own error string and where; return GPL_EMPI. */
#define MPICHECK(call)                                                                       \
  do {                                                                                       \
    int mpi_rc_ = (call);                                                                    \
    if (mpi_rc_ != MPI_SUCCESS) {                                                            \
      char mpi_msg_[MPI_MAX_ERROR_STRING];                                                   \
      int mpi_len_ = 0;                                                                      \
      MPI_Error_string(mpi_rc_, mpi_msg_, &mpi_len_);                                        \
      LOG_WARN("MPI call %s failed: %s", #call, mpi_msg_);                                   \
      return GPL_EMPI;                                                                       \
    }                                                                                        \
  } while (0)

/* This rank and the size of comm. A job of one started alone never initialises MPI (there may be
 * no MPI runtime to start, and a singleton MPI_Init can hang): while MPI is not initialised every
 * communicator (MPI_COMM_NULL there) is this process alone, rank 0 of 1, and the collectives
 * below are local. */
int mpix_comm_size(MPI_Comm comm, int *rank, int *size);

/* Host names by world rank, used to name missing ranks ("rank 3 (host node2)"). The array is
 * borrowed, not copied; pass NULL to forget it. */
void mpix_set_hosts(const char *const *hosts, int n);
/* "rank 3 (host node2)" into buf. */
const char *mpix_rank_name(int world_rank, char *buf, size_t len);

/* Wait for n requests until timeout_s seconds have passed. peers[i] is the rank of the
 * communicator that reqs[i] depends on (or -1). On timeout, logs which ranks did not answer in
 * "what", fills missing (if not NULL, as a comma list of world ranks) and returns GPL_ETIMEDOUT.
 * Sleeps between polls, so oversubscribed ranks leave the CPU to the others. */
int mpix_wait(MPI_Request *reqs, int n, const int *peers, MPI_Comm comm, double timeout_s,
              const char *what);

/* Gather `bytes` from every rank into recv (rank order) on every rank, with a deadline. */
int mpix_allgather(const void *send, int bytes, void *recv, MPI_Comm comm, double timeout_s,
                   const char *what);
/* Broadcast from root with a deadline. */
int mpix_bcast(void *buf, int bytes, int root, MPI_Comm comm, double timeout_s, const char *what);
/* Barrier with a deadline. */
int mpix_barrier(MPI_Comm comm, double timeout_s, const char *what);
/* Sum of one double / max of one double over all ranks, with a deadline. */
int mpix_allreduce_double(double *inout, MPI_Op op, MPI_Comm comm, double timeout_s,
                          const char *what);

/* Gather one string from every rank on every rank (rank order). *all is an array of size
 * malloc'd strings; free with mpix_free_strs. */
int mpix_allgather_str(const char *mine, char ***all, MPI_Comm comm, double timeout_s, const char *what);
void mpix_free_strs(char **all, int n);

/* Default deadline for bootstrap exchanges (GPULAUNCH_TIMEOUT, seconds; default 60). */
double mpix_default_timeout(void);

#endif
