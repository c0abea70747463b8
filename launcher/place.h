/* Start-up placement of a rank: topology, plan, CPU binding, interface agreement, preflight; fills
 * the program's environment with the plan's variables. */
#ifndef GPL_LAUNCHER_PLACE_H
#define GPL_LAUNCHER_PLACE_H

#include "launcher/childenv.h"
#include "launcher/launcher.h"

typedef struct place_s {
  char master_addr[64]; /* rank 0's address on the agreed interface ("" if none) */
  int cores;            /* cores the rank may use (OMP_NUM_THREADS) */
  int gpu;              /* the rank's GPU index on its node, -1 if none */
  char ifname[64];      /* interface for NCCL_SOCKET_IFNAME on this node ("" if none) */
  char nic[64];         /* nearest NIC ("" if none) */
} place_t;

/* Plan and bind this rank; adds CUDA_VISIBLE_DEVICES, NCCL_IB_HCA, NCCL_SOCKET_IFNAME to ce
 * (ce may be NULL: modes that run in gpulaunch itself, such as bench, only need the binding and
 * the plan's variables set in their own environment).
 * Returns 0 or a negative code after printing what is wrong (exit with place_exit_code). */
int place_rank(launch_t *L, childenv_t *ce, place_t *out);
/* The exit code for a place_rank error. */
int place_exit_code(int err);

#endif
