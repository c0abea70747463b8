/* Start-up placement of a rank: topology, plan, CPU binding, interface agreement, preflight; fills
 * the program's environment with the plan's variables. */
#ifndef GPL_LAUNCHER_PLACE_H
#define GPL_LAUNCHER_PLACE_H

#include "launcher/job/childenv.h"
#include "launcher/job/launch.h"
#include "topology/preflight.h"

struct topo_s;
struct plan_s;
struct net_job_s;

typedef struct place_s {
  char master_addr[64]; /* rank 0's address on the agreed interface ("" if none) */
  int cores;            /* cores the rank may use (OMP_NUM_THREADS) */
  int gpu;              /* the rank's GPU index on its node, -1 if none */
  char ifname[64];      /* interface for NCCL_SOCKET_IFNAME on this node ("" if none) */
  char nic[64];         /* nearest NIC ("" if none) */
  struct topo_s *topo;  /* this node's topology (owned; place_free) */
  struct plan_s *plan;  /* the node's plan; this rank's entry is plan->ranks[local_rank] */
  /* What the start-up's network steps decided and proved, for those that report it (accept):
   * one answer per run. Zero when the step did not run (an earlier step failed). */
  int net_done;         /* net_agree ran: net is filled as far as it got (place_free frees it) */
  int net_rc;           /* its status: 0, 1 (with warnings, logged), or a negative code */
  net_result_t net;
  int preflight_done;   /* preflight_run ran (also with probe = off or on one node) */
  int preflight_rc;     /* its status: 0, GPL_EUNREACH, GPL_ETIMEDOUT, ... */
  preflight_mode_t preflight_mode;
  double preflight_timeout;
  preflight_stats_t preflight; /* its counts; the job's failed paths on world rank 0 */
  int mpi_same;         /* MPI's TCP transport is on NCCL's interface (1), or not (0) */
  char mpi_net[768];    /* one sentence saying so, and why not ("" when net_agree failed) */
} place_t;

/* Plan and bind this rank; adds CUDA_VISIBLE_DEVICES, NCCL_IB_HCA, NCCL_SOCKET_IFNAME to ce
 * (ce may be NULL: modes that run in gpulaunch itself, such as bench, get the variables set in
 * their own environment instead). Collective: every rank calls it, and every rank returns the
 * same result; a failing rank prints why (with its host). Returns 0 or a negative code
 * (exit with exitcode_of). */
int place_rank(launch_t *L, childenv_t *ce, place_t *out);
void place_free(place_t *p);
/* The summary's "network" object (NCCL's interface, MPI's, whether they are the same and why). */
struct cJSON;
void place_summary(const place_t *p, struct cJSON *summary);
/* A variable as the program will see it: [env] wins over [nccl], which wins over the environment
 * (childenv's precedence); NULL when unset. *source (optional) says where it came from, as users
 * write it ("[nccl] SOCKET_IFNAME": [nccl] keys without their NCCL_ prefix, "[env]
 * NCCL_SOCKET_IFNAME", "the environment"); valid until the next call. */
const char *place_user_var(const launch_t *L, const char *name, const char **source);
/* The job as the interface agreement and the preflight see it (topology/net.h), with the
 * program's NCCL_SOCKET_FAMILY. L->job must be set. */
void place_net_job(const launch_t *L, struct net_job_s *nj);

#endif
