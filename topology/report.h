/* Rendering of a topology and its plan: JSON (cJSON, the `gpulaunch topo --json` contract) and text. */
#ifndef GPL_TOPOLOGY_REPORT_H
#define GPL_TOPOLOGY_REPORT_H

#include <stdio.h>

#include <cjson/cJSON.h>

#include "topology/plan.h"
#include "topology/topo.h"

/** The JSON document of `gpulaunch topo --json`. Field names are a contract, at least:
 *  {"gpus":[{"index":0,"pci":"0000:03:00.0","numa":[3],"cpus":"48-63,176-191",
 *            "nics":[{"name":"mlx5_1","netdev":"ib1","pci":"0000:04:00.0","path":"PIX"},...]},...],
 *   "nics":[...],
 *   "ranks":[{"local_rank":0,"gpu":0,"cpus":"...","nic":"mlx5_1",
 *             "env":{"CUDA_VISIBLE_DEVICES":"0","NCCL_IB_HCA":"=mlx5_1:1",...}},...]}
 * gpus[].nics is best first; "name" is the RDMA (OpenFabrics) name, or the netdev when there is
 * none; "netdev" is null for an RDMA-only NIC (EFA). A rank without GPU has "gpu": null, one
 * without NIC "nic": null. More fields (model, hops, reasons under "why") may be added.
 * \p p may be NULL (topology only). \return the document (cJSON_Delete it), NULL when out of memory. */
cJSON *report_json(const topo_t *t, const plan_t *p);

/** The human report: GPU x NIC matrix of path classes (like `nvidia-smi topo -m`), NUMA and CPUs
 * per GPU, the NIC legend, and the plan per local rank with the reason for each choice.
 * \p p may be NULL. \return 0 or GPL_EIO when writing failed. */
int report_text(FILE *f, const topo_t *t, const plan_t *p);

#endif
