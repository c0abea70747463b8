/* Bounded MPI: collectives built on non-blocking calls with a deadline that name the missing ranks. */
#ifndef GPL_COMMON_MPIX_H
#define GPL_COMMON_MPIX_H

#include <mpi.h>

#include "common/check.h"
#include "common/watchdog.h"

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

/* A blocking MPI call that spans ranks (MPI_Comm_split, MPI_Comm_split_type), bounded by the
 * watchdog (common/watchdog.h): still inside after timeout_s, the process ends with exit status
 * WDOG_EXIT_TIMEOUT and a line that says which call and why. Then like MPICHECK. */
#define MPIX_GUARDED(timeout_s, what, call)                                                  \
  do {                                                                                       \
    wdog_arm((timeout_s), (what), "a rank is gone, or the network between the job's hosts stopped " \
             "carrying MPI's traffic", WDOG_EXIT_TIMEOUT);                                   \
    int guarded_rc_ = (call);                                                                \
    wdog_disarm();                                                                           \
    MPICHECK(guarded_rc_);                                                                   \
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

/* Can the probers reach each other? Each of probers[0..n) (ranks of comm; rank 0 among them)
 * sends one byte to every other and waits up to timeout_s; rank 0 gathers whom each heard and
 * names every pair that cannot reach each other. Collective over comm (the others only learn
 * the verdict). GPL_OK, or GPL_ETIMEDOUT when some pair cannot talk (every rank returns it).
 * MPI's own collectives need every pair; the star-shaped exchanges above need only rank 0. */
int mpix_reach_check(MPI_Comm comm, const int *probers, int nprobers, double timeout_s, const char *what);

/* MPI_Comm_dup with a deadline (MPI_Comm_idup, waited for as mpix_wait waits). Every rank must
 * have arrived (a bounded exchange just before) for this to be the question: when the dup still
 * stalls, a link between two ranks is broken, and mpix_reach_check over all ranks names every
 * pair that cannot reach each other. 0, or GPL_ETIMEDOUT (then *out is MPI_COMM_NULL). One dup at a time:
 * Open MPI 4.1 sometimes never completes one of two concurrent MPI_Comm_idup. */
int mpix_comm_dup(MPI_Comm comm, MPI_Comm *out, double timeout_s, const char *what);
/* The second half of mpix_comm_dup, for an MPI_Comm_idup(comm, out, req) started earlier so that
 * its rounds of collectives progress while other bounded exchanges run: waits (bounded, the same
 * diagnosis on a timeout). Nothing else may create a communicator while it is pending. */
int mpix_comm_idup_wait(MPI_Comm comm, MPI_Request *req, MPI_Comm *out, double timeout_s, const char *what);

/* Default deadline for bootstrap exchanges (GPULAUNCH_TIMEOUT, seconds; default 60). */
double mpix_default_timeout(void);

#endif
