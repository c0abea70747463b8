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
/* The rank in MPI_COMM_WORLD of rank r of comm. */
int mpix_world_rank(MPI_Comm comm, int r);

/* The job's nodes (common/tree.h), once they are known: exchanges over MPI_COMM_WORLD then run
 * over the two-level tree (each node's first rank gathers its node, the first ranks in a k-ary
 * tree, k = GPULAUNCH_TREE_FANOUT, default 32); before, and on other communicators, over a k-ary
 * tree of the ranks. The arrays are borrowed; pass NULL to forget them. 0 or GPL_ENOMEM. */
int mpix_set_nodes(const int *node_of, const int *leader_of_node, int nnodes, int size);
/* Some ranks of a communicator that exchange among themselves without a communicator of their own
 * (making one costs rounds of collectives among its members): their traffic is told apart from
 * other groups' by a tag offset. Groups whose members overlap must use different tags. */
typedef struct mpix_group_s {
  MPI_Comm comm;     /* where the members talk */
  int n, me;         /* members; this rank's index among them (-1: not a member) */
  const int *ranks;  /* ranks in comm by index (borrowed); NULL: every rank of comm, in order */
  int tag;           /* offset added to the exchanges' tags (multiples of 16) */
} mpix_group_t;

/* Every rank of comm, as a group (tag 0). */
int mpix_group_of(MPI_Comm comm, mpix_group_t *g);
/* The rank in g->comm of member i. */
static inline int mpix_group_rank(const mpix_group_t *g, int i) { return g->ranks ? g->ranks[i] : i; }


/* Wait for n requests until timeout_s seconds have passed. peers[i] is the rank of the
 * communicator that reqs[i] depends on (or -1). On timeout, logs which ranks did not answer in
 * "what", fills missing (if not NULL, as a comma list of world ranks) and returns GPL_ETIMEDOUT.
 * Sleeps between polls, so oversubscribed ranks leave the CPU to the others. */
int mpix_wait(MPI_Request *reqs, int n, const int *peers, MPI_Comm comm, double timeout_s,
              const char *what);

/* The collectives below run over a tree (mpix_set_nodes): a rank waits on its children only, up
 * to a deadline that grows by half a second per level below it, and reports who did not answer
 * to its parent; rank 0 names them ("timed out after 8.0 s in WHAT: no answer from rank 5 (host
 * h2)") and every rank returns GPL_ETIMEDOUT; a rank whose parent is gone names the parent.
 * Gather `bytes` from every rank into recv (rank order) on every rank, with a deadline. */
int mpix_allgather(const void *send, int bytes, void *recv, MPI_Comm comm, double timeout_s,
                   const char *what);
/* Broadcast from root with a deadline. */
int mpix_bcast(void *buf, int bytes, int root, MPI_Comm comm, double timeout_s, const char *what);
/* The same among a group's members (recv and root by member index; members only). */
int mpix_gallgather(const mpix_group_t *g, const void *send, int bytes, void *recv, double timeout_s,
                    const char *what);
int mpix_gbcast(const mpix_group_t *g, void *buf, int bytes, int root, double timeout_s, const char *what);
/* Barrier with a deadline. */
int mpix_barrier(MPI_Comm comm, double timeout_s, const char *what);
/* Sum of one double / max of one double over all ranks, with a deadline. */
int mpix_allreduce_double(double *inout, MPI_Op op, MPI_Comm comm, double timeout_s,
                          const char *what);

/* The exchange itself, for callers that must keep serving something else while it runs (poll it
 * from their loop): ALLGATHER (every member gets the table), GATHER (the root gets the table and
 * decides one int32 verdict with the callback set by mpix_tx_set_decide, which every member gets),
 * BCAST (member 0's `bytes` to every member; data is ignored elsewhere). Bounded and named as
 * above; the root of the tree is member 0. */
typedef enum mpix_tx_kind_e { MPIX_TX_ALLGATHER, MPIX_TX_GATHER, MPIX_TX_BCAST } mpix_tx_kind_t;
typedef struct mpix_tx_s mpix_tx_t;
int mpix_tx_start(mpix_tx_t **out, const mpix_group_t *g, mpix_tx_kind_t kind, const void *data, int bytes,
                  double timeout_s, const char *what);
/* GATHER: the root's verdict from the whole table (n members' blocks in member order). Call
 * before the first poll. */
void mpix_tx_set_decide(mpix_tx_t *t, int (*decide)(void *arg, const void *table, int n), void *arg);
/* 1 while it runs, 0 when done, a negative code when it failed. Never blocks. */
int mpix_tx_poll(mpix_tx_t *t);
/* Poll until done (sleeping between polls). */
int mpix_tx_wait(mpix_tx_t *t);
/* After success: ALLGATHER the table into out (member order); BCAST the message into out;
 * GATHER the table into out at the root (NULL: not wanted) and returns the verdict. */
int mpix_tx_result(const mpix_tx_t *t, void *out);
void mpix_tx_free(mpix_tx_t *t);

/* Gather one string from every rank on every rank (rank order). *all is an array of size
 * malloc'd strings; free with mpix_free_strs. */
int mpix_allgather_str(const char *mine, char ***all, MPI_Comm comm, double timeout_s, const char *what);
int mpix_gallgather_str(const mpix_group_t *g, const char *mine, char ***all, double timeout_s, const char *what);
void mpix_free_strs(char **all, int n);

/* Can the probers reach each other? Each of probers[0..n) (ranks of comm; rank 0 among them)
 * sends one byte to its two neighbours on a ring of the probers and waits up to timeout_s; the
 * records go to every rank over the tree and rank 0 names every pair that cannot reach each
 * other. A split of the probers in two groups that cannot talk always cuts the ring; no prober
 * talks to more than two. Collective over comm. GPL_OK, or GPL_ETIMEDOUT (every rank). */
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
