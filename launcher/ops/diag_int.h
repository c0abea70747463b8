/* Internal to diag (diag_*.c): facts the sections learn, and the section functions. */
#ifndef GPL_LAUNCHER_DIAG_INT_H
#define GPL_LAUNCHER_DIAG_INT_H

#include "common/strbuf.h"
#include "launcher/ops/diag.h"

/* What the sections found, for the verdicts. */
typedef struct diag_facts_s {
  int nvml_ok;               /* NVML loaded and initialised */
  char nvml_why[256];        /* why not */
  char driver_version[96];   /* "535.104.05" (NVML) */
  int driver_cuda;           /* CUDA version the driver supports (1000*major + 10*minor), 0 none */
  int runtime_cuda;          /* CUDA runtime found (libcudart), 0 none */
  int nvidia_pci;            /* NVIDIA GPUs on the PCI bus, -1 unknown */
  int rdma_devices;
  unsigned long long memlock;   /* RLIMIT_MEMLOCK soft limit (RLIM_INFINITY: unlimited) */
  unsigned long long shm_bytes; /* size of /dev/shm, 0 unknown */
  int interfaces_up;         /* up interfaces other than lo */
} diag_facts_t;

void diag_collect_versions(diag_facts_t *f, strbuf_t *b);
void diag_collect_system(diag_facts_t *f, strbuf_t *b);
void diag_collect_network(diag_facts_t *f, strbuf_t *b, diag_verdicts_t *v, double timeout);
void diag_collect_env(strbuf_t *b);
/* XID lines found (last one in last_xid), or -1 when the kernel log is not readable. */
int diag_collect_kernel(strbuf_t *b, double timeout, char *last_xid, size_t xlen);
/* malloc'd XML of the file or of this machine. 0 or a negative code. */
int diag_collect_topology(const char *xml, char **out);
/* The placement plan for local_size ranks on the topology of xml (NULL: this machine), as
 * `gpulaunch topo` prints it; what went wrong instead when it cannot be made. */
void diag_collect_plan(const char *xml, int local_size, strbuf_t *b);
/* The NVIDIA tools (diag_nvidia.c): the fabric manager's state on NVSwitch systems
 * (fabricmanager.txt), `dcgmi diag -r 1` where dcgmi exists (dcgmi-diag.txt), and unless
 * o->bug_report is 0, nvidia-bug-report.sh with its archive in dir (nvidia-bug-report.txt). */
void diag_collect_nvidia(const diag_opts_t *o, const char *dir, diag_verdicts_t *v);

#endif
