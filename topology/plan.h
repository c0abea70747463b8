/* Placement plan: each local rank's GPU, CPU cores and NIC, the environment that says so, and the binding. */
#ifndef GPL_TOPOLOGY_PLAN_H
#define GPL_TOPOLOGY_PLAN_H

#include <stddef.h>

#include "topology/path.h"
#include "topology/topo.h"

/* How a rank is bound: not at all, to its GPU's whole local CPU set (NUMA domain), or to its own
 * share of whole cores of that set (the default). */
typedef enum plan_bind_e { PLAN_BIND_NONE = 0, PLAN_BIND_NUMA, PLAN_BIND_CORES } plan_bind_t;

/* Which GPUs a rank's program sees: the node's (every rank of a node gets the same
 * CUDA_VISIBLE_DEVICES, the GPUs of the node's ranks in local-rank order, so device LOCAL_RANK
 * is the rank's GPU and CUDA IPC / NVLink P2P between the node's ranks works; the default), or
 * only its own (one GPU per process: device 0; no P2P between the node's ranks, and programs
 * that call set_device(LOCAL_RANK) fail on every rank but local rank 0). */
typedef enum plan_visible_e { PLAN_VISIBLE_NODE = 0, PLAN_VISIBLE_RANK } plan_visible_t;

typedef struct plan_opts_s {
  int local_size;      /* ranks on this node; <= 0: one per GPU (at least 1) */
  plan_bind_t bind;    /* default PLAN_BIND_CORES */
  int no_gpus;         /* 1: assign no GPUs (CPU-only job); ranks are spread over NUMA nodes */
  int nics_per_rank;   /* NICs in a rank's NCCL_IB_HCA (its share of the equally near ones); <= 0: 1 */
  const char *visible; /* an inherited CUDA_VISIBLE_DEVICES ("2,3": GPU indexes in bus order, or
                        * GPU UUIDs) that limits the GPUs to use, or NULL. Only meaningful for a
                        * live topology. */
  plan_visible_t visible_gpus; /* default PLAN_VISIBLE_NODE */
  char *err;           /* optional: the reason a plan could not be made, for the user */
  size_t errlen;
} plan_opts_t;

/* Per-rank environment entries, each with the reason it was chosen. */
#define PLAN_ENV_MAX 12
#define PLAN_VALUE_LEN 2048 /* a node's NCCL_IB_HCA lists every fabric NIC (16+ on some) */
#define PLAN_MAX_NICS 8
#define PLAN_REASON_LEN 320

typedef struct plan_env_s {
  char name[40];
  char value[PLAN_VALUE_LEN];
  char reason[PLAN_REASON_LEN];
} plan_env_t;

typedef struct plan_rank_s {
  int local_rank;
  int gpu;                        /* index into topo_t.gpus, -1 = none */
  int nic;                        /* the rank's NIC (index into topo_t.nics), -1 = none */
  path_t nic_path;                /* from the rank's GPU (or NUMA domain) to nic */
  int nnics;                      /* the rank's own RDMA devices, nearest first (topo, accept);
                                   * NCCL_IB_HCA is the node's set (plan_t.hca) */
  int nics[PLAN_MAX_NICS];
  int numa;                       /* os_index of the NUMA node a GPU-less rank was placed on, or -1 */
  plan_bind_t bind;
  hwloc_bitmap_t cpuset;          /* the CPUs the rank is bound to (all CPUs for bind none) */
  char *cpus;                     /* the same in hwloc list format */
  char why_gpu[PLAN_REASON_LEN];  /* "local rank 1 -> GPU1 (0000:44:00.0), PCI bus order" */
  char why_cpus[PLAN_REASON_LEN];
  char why_nic[PLAN_REASON_LEN];
  int nenv;
  plan_env_t env[PLAN_ENV_MAX];
} plan_rank_t;

typedef struct plan_s {
  int nranks;
  plan_rank_t *ranks;
  plan_bind_t bind;
  int no_gpus;
  int ngpus;                      /* t->ngpus */
  int nnics;                      /* t->nnics */
  path_entry_t *gpu_nics;         /* ngpus x nnics: each GPU's NICs ranked nearest first */
  plan_visible_t visible_gpus;
  /* The node-wide values every rank of the node gets (plan_node_env lists them). */
  int nhca;                       /* NICs of NCCL_IB_HCA (indexes into topo_t.nics, PCI order) */
  int *hca;                       /* every RDMA NIC nearest to at least one usable GPU */
} plan_t;

/** Defaults: local_size 0 (one per GPU), bind cores, GPUs on, one NIC per rank, the node's GPUs
 * visible to every rank. */
void plan_opts_default(plan_opts_t *o);
/** "none" (or "off") | "numa" | "cores" (or "core"), any case. \return 0 or GPL_EINVAL. */
int plan_bind_parse(const char *s, plan_bind_t *out);
const char *plan_bind_name(plan_bind_t b);

/** Make the plan for o->local_size ranks of this node.
 * Local rank i gets the i-th usable GPU (PCI bus order); more ranks than GPUs is GPL_ETOPO
 * (message with both counts in o->err and the log) unless o->no_gpus; no GPU at all spreads
 * ranks over NUMA nodes. CPUs: the GPU's local CPUs, split in contiguous blocks of whole cores
 * among the ranks that share them (bind cores) or whole (bind numa). NIC: the nearest; ranks
 * whose GPUs have the same equally-near NICs get different ones (least used first,
 * deterministic).
 * Environment, the same on every rank of the node (NCCL builds its rings from what every rank
 * of a node sees):
 *  - CUDA_DEVICE_ORDER=PCI_BUS_ID, and CUDA_VISIBLE_DEVICES = the GPUs of the node's ranks in
 *    local-rank order (so device LOCAL_RANK is the rank's GPU), left unset when that is every
 *    GPU in bus order and nothing was inherited; with PLAN_VISIBLE_RANK the rank's GPU alone;
 *  - NCCL_IB_HCA = "=" and every RDMA NIC that is nearest (plan order: class, NUMA distance,
 *    link, hops) to at least one usable GPU of the node, with its port ("=mlx5_0:1,mlx5_3:1");
 *    a NIC on a PCIe link far slower than an equally near one (a management function) is left
 *    out; unset without RDMA NICs.
 * NCCL_SOCKET_IFNAME is left for the interface agreement (plan_env_set).
 * \return 0 and *out (free with plan_free), or a negative GPL_E* code. */
int plan_make(const topo_t *t, const plan_opts_t *o, plan_t **out);
void plan_free(plan_t *p);

/** GPU g's NICs ranked nearest first (p->nnics entries). */
const path_entry_t *plan_gpu_nics(const plan_t *p, int g);

/** Whole cores in the rank's CPU set (its PUs when the topology has no cores), at least 1: the
 * natural OMP_NUM_THREADS. */
int plan_rank_ncores(const topo_t *t, const plan_rank_t *r);

/** Set (or replace) an environment entry of a rank. \return 0, GPL_ERANGE when full or the value
 * does not fit (PLAN_VALUE_LEN), GPL_EINVAL. */
int plan_env_set(plan_rank_t *r, const char *name, const char *value, const char *reason);
/** The value of an entry, or NULL. */
const char *plan_env_get(const plan_rank_t *r, const char *name);
/** "node" | "rank", any case. \return 0 or GPL_EINVAL. */
int plan_visible_parse(const char *s, plan_visible_t *out);
/** 1 when the variable is one the plan sets to the same value on every rank of a node
 * (CUDA_VISIBLE_DEVICES unless one GPU per process, CUDA_DEVICE_ORDER, NCCL_IB_HCA). */
int plan_env_node_wide(const plan_t *p, const char *name);

/** Apply the rank's CPU binding to the calling process (all its threads; children inherit it)
 * with hwloc. When the binding the process already had (e.g. mpirun's bind-to-package) excludes
 * the rank's CPUs -- the GPU's cores -- msg says so and that it was replaced; otherwise msg says
 * what was done. msg is also logged: a replaced binding and a failure as warnings, the rest at
 * info level. bind none leaves the binding alone. A topology read from a file cannot bind
 * this machine: GPL_ENOTSUP. \return 0 or a negative GPL_E* code (msg explains). */
int plan_bind(const topo_t *t, const plan_rank_t *r, char *msg, size_t len);

#endif
