/* NVML loaded at run time (dlopen "libnvidia-ml.so.1"): the GPUs the driver sees, by PCI bus id. */
#ifndef GPL_TOPOLOGY_NVMLX_H
#define GPL_TOPOLOGY_NVMLX_H

#include "topology/topo.h"

/* There is no NVML header or library to link against on build machines, so the few functions
 * used are declared in nvmlx.c and looked up with dlsym. A machine without the library (or
 * without a driver) is normal: nvmlx_list then reports 0 GPUs and logs at debug level only. */

typedef struct nvmlx_gpu_s {
  int index;                  /* NVML's device index */
  unsigned domain, bus, dev, func;
  char pci[TOPO_PCI_LEN];     /* "0000:03:00.0" */
  char name[TOPO_MODEL_LEN];  /* "NVIDIA H200" */
  char uuid[96];              /* "GPU-..." */
} nvmlx_gpu_t;

/** The GPUs NVML reports. \return their count (0 when NVML is absent or fails) with *out
 * malloc'd (NULL when 0), or GPL_ENOMEM. */
int nvmlx_list(nvmlx_gpu_t **out);

/** Merge NVML's GPUs into a live topology: fill model/UUID of the GPUs hwloc found (matched by
 * bus id) and add those hwloc did not see, with locality from sysfs. *cap is t->gpus' capacity.
 * Sets t->nvml when NVML answered. \return 0 or a negative GPL_E* code. */
int nvmlx_probe(topo_t *t, int *cap);

#endif
