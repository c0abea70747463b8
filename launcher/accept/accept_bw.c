/* Bandwidth arithmetic of `gpulaunch accept`: nccl-tests' bus bandwidth, and the threshold that
 * min_busbw = auto derives from what the nodes detected. */
#include <stdio.h>
#include <string.h>

#include "comm/busbw.h"
#include "launcher/accept/accept.h"

double accept_busbw(double bytes, double seconds, int nranks) {
  if (seconds <= 0 || nranks < 2) return 0;
  double algbw = bytes / seconds / 1e9; /* GB = 1e9 bytes, as nccl-tests */
  return algbw * busbw_allreduce_factor(nranks); /* nccl-tests' definition, as bench's */
}

/* Efficiencies: what fraction of the link a healthy allreduce reaches. NCCL over RDMA NICs
 * reaches 80-95% of the NICs' line rate in bus bandwidth (nccl-tests on InfiniBand/EFA
 * clusters); TCP through Open MPI on one interface about half of it or more. The threshold is
 * the low end, so a healthy cluster passes and a degraded link (a port at half speed, a node
 * on a slow path) does not. */
#define EFF_RDMA 0.8
#define EFF_TCP 0.5
#define EFF_PCIE 0.6

double accept_auto_busbw(const accept_nodeinfo_t *nodes, int nnodes, int gpu_backend, char *how, size_t len) {
  if (nnodes <= 0) {
    snprintf(how, len, "auto: no node information");
    return -1;
  }
  if (nnodes > 1) {
    /* Inter-node: the slowest node's network bandwidth bounds the ring. */
    int use_rdma = gpu_backend;
    for (int i = 0; i < nnodes && use_rdma; i++)
      if (nodes[i].rdma_up <= 0 || nodes[i].rdma_mbps <= 0) use_rdma = 0;
    int slow = -1;
    double slow_mbps = 0;
    for (int i = 0; i < nnodes; i++) {
      double mbps = use_rdma ? nodes[i].rdma_mbps : nodes[i].if_speed_mbps;
      if (mbps <= 0) {
        snprintf(how, len, "auto: the speed of %s on node %d is not known (virtual NICs report "
                 "none); no threshold: set [accept] min_busbw", nodes[i].ifname[0] ? nodes[i].ifname : "its interface",
                 nodes[i].node);
        return -1;
      }
      if (slow < 0 || mbps < slow_mbps) {
        slow = i;
        slow_mbps = mbps;
      }
    }
    double eff = use_rdma ? EFF_RDMA : EFF_TCP;
    double thr = eff * slow_mbps / 8000.0;
    if (use_rdma)
      snprintf(how, len, "auto: %.1f x %g Gb/s (the %d RDMA NIC(s) up on node %d, the slowest) / 8 = "
               "%.3f GB/s; NCCL over RDMA reaches 80-95%% of line rate", eff, slow_mbps / 1000.0,
               nodes[slow].rdma_up, nodes[slow].node, thr);
    else
      snprintf(how, len, "auto: %.1f x %g Gb/s (%s on node %d, the slowest job interface) / 8 = %.3f "
               "GB/s; TCP through MPI reaches about half of line rate or more", eff,
               slow_mbps / 1000.0, nodes[slow].ifname, nodes[slow].node, thr);
    return thr;
  }
  /* One node. */
  if (!gpu_backend) {
    snprintf(how, len, "auto: one node on the cpu backend: shared memory has no link speed to "
             "derive a threshold from; no threshold: set [accept] min_busbw to check it");
    return -1;
  }
  if (nodes[0].ngpus < 2 || nodes[0].gpu_pcie_gbps <= 0) {
    snprintf(how, len, "auto: one node and %s; no threshold", nodes[0].ngpus < 2 ? "fewer than 2 GPUs"
             : "no PCIe link speed known");
    return -1;
  }
  double thr = EFF_PCIE * nodes[0].gpu_pcie_gbps;
  char dec[64];
  accept_pcie_decode(nodes[0].gpu_pcie_gbps, dec, sizeof dec);
  snprintf(how, len, "auto: %.1f x %.1f GB/s (the slowest GPU PCIe link%s%s) = %.3f GB/s; NVLink is "
           "not detected without NVML, so for NVLink machines this is only a floor", EFF_PCIE,
           nodes[0].gpu_pcie_gbps, dec[0] ? ", " : "", dec, thr);
  return thr;
}
