/* PCI path classes between a GPU (or a NUMA domain) and a NIC, like nvidia-smi topo / NCCL, and NIC rankings. */
#ifndef GPL_TOPOLOGY_PATH_H
#define GPL_TOPOLOGY_PATH_H

#include "topology/topo.h"

/* Classes, nearest first (the rules of EXPECTED-MAPPINGS.md, which follow nvidia-smi and NCCL):
 *   PIX  common ancestor is a PCI bridge and each device is at most one bridge below it (same switch)
 *   PXB  common ancestor is a PCI bridge, deeper paths (several switches, no host bridge)
 *   PHB  common ancestor is the host bridge (same root complex, no switch)
 *   NODE different host bridges, NUMA nodes in common
 *   SYS  different NUMA nodes (crossing the SMP interconnect, or SNC/NPS domains) */
typedef enum path_class_e { PATH_PIX = 0, PATH_PXB, PATH_PHB, PATH_NODE, PATH_SYS } path_class_t;

typedef struct path_s {
  path_class_t cls;
  int hops;                     /* bridges on the path (the common one counted once) */
  unsigned long long numa_dist; /* smallest NUMA latency between the ends' nodes; 0 = no matrix */
} path_t;

/* One NIC of a ranking. */
typedef struct path_entry_s {
  int nic;     /* index into topo_t.nics */
  int rdma;    /* 1 when the NIC has an RDMA (OpenFabrics) device */
  int link;    /* 0 link up, 1 unknown, 2 down: a tie-breaker only (files are often taken on
                * nodes whose ports were down; locality decides first) */
  path_t path;
} path_entry_t;

/** "PIX", "PXB", "PHB", "NODE", "SYS". */
const char *path_class_name(path_class_t c);
/** A few words for reasons: "same PCIe switch", "other NUMA node", ... */
const char *path_class_desc(path_class_t c);
/** Parse a class name. \return 0 or GPL_EINVAL. */
int path_class_parse(const char *s, path_class_t *out);

/** Path between a GPU and a NIC of the same topology. A GPU known only to NVML (no PCI object)
 * is placed by its NUMA nodes alone (NODE or SYS). */
void path_gpu_nic(const topo_t *t, const topo_gpu_t *g, const topo_nic_t *n, path_t *out);
/** Path between a NUMA domain (a nodeset: a rank without GPU) and a NIC: NODE or SYS. */
void path_nodeset_nic(const topo_t *t, hwloc_const_bitmap_t nodeset, const topo_nic_t *n, path_t *out);

/** Order of two entries: class, then RDMA devices ahead of plain netdevs, then NUMA distance
 * (only differs for NODE/SYS), then link state (up first), then hops (fewer bridges first),
 * then PCI bus order. \return <0, 0 (same NIC), >0. */
int path_entry_cmp(const path_entry_t *a, const path_entry_t *b);
/** 1 when two entries are equally near: equal in every key of path_entry_cmp but the bus order
 * (class, RDMA-ness, NUMA distance, link state, hops). The NICs tied with a GPU's first RDMA
 * entry are its nearest: they go to its node's NCCL_IB_HCA, and ranks are spread over them. */
int path_entry_tie(const path_entry_t *a, const path_entry_t *b);

/** All NICs of \p t ranked nearest first from GPU \p g (or from \p nodeset when g is NULL), into
 * out (t->nnics entries). \return the number of entries written (t->nnics). */
int path_rank_nics(const topo_t *t, const topo_gpu_t *g, hwloc_const_bitmap_t nodeset, path_entry_t *out);

#endif
