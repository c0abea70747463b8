/* Placement plan: each local rank's GPU, CPU cores and NIC, the environment that says so, and the binding. */
#ifndef GPL_TOPOLOGY_PLAN_H
#define GPL_TOPOLOGY_PLAN_H

#include <stddef.h>

#include "topology/path.h"
#include "topology/topo.h"

/* How a rank is bound: not at all, to its GPU's whole local CPU set (NUMA domain), or to its own
 * share of whole cores of that set (the default). */
typedef enum plan_bind_e { PLAN_BIND_NONE = 0, PLAN_BIND_NUMA, PLAN_BIND_CORES } plan_bind_t;

typedef struct plan_opts_s {
  int local_size;      /* ranks on this node; <= 0: one per GPU (at least 1) */
  plan_bind_t bind;    /* default PLAN_BIND_CORES */
  int no_gpus;         /* 1: assign no GPUs (CPU-only job); ranks are spread over NUMA nodes */
  int nics_per_rank;   /* NICs in a rank's NCCL_IB_HCA (its share of the equally near ones); <= 0: 1 */
  const char *visible; /* an inherited CUDA_VISIBLE_DEVICES ("2,3": GPU indexes in bus order) that
                        * limits the GPUs to use, or NULL. Only meaningful for a live topology. */
  char *err;           /* optional: the reason a plan could not be made, for the user */
  size_t errlen;
} plan_opts_t;

/* Per-rank environment entries, each with the reason it was chosen. */
#define PLAN_ENV_MAX 12
#define PLAN_MAX_NICS 8
#define PLAN_REASON_LEN 320

typedef struct plan_env_s {
  char name[40];
  char value[256];
  char reason[PLAN_REASON_LEN];
} plan_env_t;

typedef struct plan_rank_s {
  int local_rank;
  int gpu;                        /* index into topo_t.gpus, -1 = none */
  int nic;                        /* the rank's NIC (index into topo_t.nics), -1 = none */
  path_t nic_path;                /* from the rank's GPU (or NUMA domain) to nic */
  int nnics;                      /* NICs for NCCL_IB_HCA: RDMA devices only, nearest first */
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
} plan_t;

/** Defaults: local_size 0 (one per GPU), bind cores, GPUs on, one NIC per rank. */
void plan_opts_default(plan_opts_t *o);
/** "none" (or "off") | "numa" | "cores" (or "core"), any case. \return 0 or GPL_EINVAL. */
int plan_bind_parse(const char *s, plan_bind_t *out);
const char *plan_bind_name(plan_bind_t b);

/** Make the plan for o->local_size ranks of this node.
 * Local rank i gets the i-th GPU (PCI bus order); more ranks than GPUs is GPL_ETOPO (message
 * with both counts in o->err and the log) unless o->no_gpus; no GPU at all spreads ranks over
 * NUMA nodes. CPUs: the GPU's local CPUs, split in contiguous blocks of whole cores among the
 * ranks that share them (bind cores) or whole (bind numa). NIC: the nearest; ranks whose GPUs
 * have the same equally-near NICs get different ones (least used first, deterministic).
 * Environment: CUDA_VISIBLE_DEVICES, CUDA_DEVICE_ORDER=PCI_BUS_ID, NCCL_IB_HCA ("=mlx5_1:1")
 * when the rank has an RDMA NIC. NCCL_SOCKET_IFNAME is left for the interface agreement
 * (plan_env_set). \return 0 and *out (free with plan_free), or a negative GPL_E* code. */
int plan_make(const topo_t *t, const plan_opts_t *o, plan_t **out);
void plan_free(plan_t *p);

/** GPU g's NICs ranked nearest first (p->nnics entries). */
const path_entry_t *plan_gpu_nics(const plan_t *p, int g);

/** Whole cores in the rank's CPU set (its PUs when the topology has no cores), at least 1: the
 * natural OMP_NUM_THREADS. */
int plan_rank_ncores(const topo_t *t, const plan_rank_t *r);

/** Set (or replace) an environment entry of a rank. \return 0, GPL_ERANGE when full, GPL_EINVAL. */
int plan_env_set(plan_rank_t *r, const char *name, const char *value, const char *reason);
/** The value of an entry, or NULL. */
const char *plan_env_get(const plan_rank_t *r, const char *name);

/** Apply the rank's CPU binding to the calling process (all its threads; children inherit it)
 * with hwloc. When the binding the process already had (e.g. mpirun's bind-to-package) excludes
 * the rank's CPUs -- the GPU's cores -- msg says so and that it was replaced; otherwise msg says
 * what was done. msg is also logged: a replaced binding and a failure as warnings, the rest at
 * info level. bind none leaves the binding alone. A topology read from a file cannot bind
 * this machine: GPL_ENOTSUP. \return 0 or a negative GPL_E* code (msg explains). */
int plan_bind(const topo_t *t, const plan_rank_t *r, char *msg, size_t len);

#endif
