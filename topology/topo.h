/* Node topology from hwloc (this machine or an hwloc XML export): GPUs, NICs, their PCI locality and NUMA. */
#ifndef GPL_TOPOLOGY_TOPO_H
#define GPL_TOPOLOGY_TOPO_H

#include <hwloc.h>

#include "topology/busid.h"

/* A live topology and an XML file go through exactly the same code: topo_load(xml_path = NULL)
 * reads this machine, topo_load("file.xml") reads the file. Everything below is plain data that
 * the rest of gpulaunch may read; the hwloc handles are there for plan.c / path.c.
 *
 * GPUs are NVIDIA PCI functions (vendor 0x10de, class 0x03xx; NVSwitches, class 0x0680, are not
 * GPUs), found whether or not the file has cuda or nvml OS devices, ordered by PCI bus id
 * (= CUDA_DEVICE_ORDER=PCI_BUS_ID = nvidia-smi's order). On a live machine NVML, when its library
 * loads, adds model names and UUIDs (matched by bus id) and any GPU hwloc did not see.
 *
 * NICs are PCI functions of network class (0x02xx, or 0x0c06 InfiniBand) with an OpenFabrics OS
 * device (mlx5_0, rdmap16s27 = EFA, hfi1_0, ...) and/or network OS devices (ib0, eth0, enp1s0),
 * plus any PCI function that has an OpenFabrics device whatever its class. Ordered by bus id. */

#define TOPO_PCI_LEN 20    /* "0000:03:00.0" */
#define TOPO_NAME_LEN 64   /* OS device names */
#define TOPO_MODEL_LEN 128
#define TOPO_MAX_NUMA 64   /* NUMA nodes local to one device */
#define TOPO_MAX_NETDEV 4  /* netdevs of one PCI function (mlx4: ib0 + eth2) */

/* Link state of a NIC port. */
typedef enum topo_link_e { TOPO_LINK_UNKNOWN = -1, TOPO_LINK_DOWN = 0, TOPO_LINK_UP = 1 } topo_link_t;

typedef struct topo_gpu_s {
  int index;                  /* position in PCI bus order: the CUDA_VISIBLE_DEVICES number */
  char pci[TOPO_PCI_LEN];     /* "0000:03:00.0" */
  unsigned domain, bus, dev, func;
  unsigned vendor_id, device_id, class_id;
  char model[TOPO_MODEL_LEN]; /* "NVIDIA A100-SXM4-40GB" (GPUModel/NVML) or PCIDevice name; "" */
  char uuid[96];              /* NVIDIAUUID from the file or NVML; "" */
  char osdevs[256];           /* OS devices in hwloc, comma-separated ("cuda0,nvml0"); "" */
  float link_gbps;            /* PCIe link speed in GB/s as hwloc reports it; 0 = unknown */
  int nnuma;                  /* NUMA nodes (os_index numbers) local to the GPU */
  int numa[TOPO_MAX_NUMA];
  char *cpus;                 /* local CPUs in hwloc list format ("48-63,176-191") */
  hwloc_bitmap_t cpuset;      /* local CPUs: cpuset of the first non-I/O ancestor */
  hwloc_bitmap_t nodeset;     /* local NUMA nodes */
  hwloc_obj_t obj;            /* the PCI object; NULL for a GPU only NVML knows */
  int nvml_index;             /* NVML's index, -1 when NVML did not report it */
} topo_gpu_t;

typedef struct topo_nic_s {
  int index;                  /* position in PCI bus order */
  char pci[TOPO_PCI_LEN];
  unsigned domain, bus, dev, func;
  unsigned vendor_id, device_id, class_id;
  char model[TOPO_MODEL_LEN]; /* PCIDevice name; "" */
  char name[TOPO_NAME_LEN];   /* the RDMA name when there is one, else the first netdev */
  char rdma[TOPO_NAME_LEN];   /* OpenFabrics name ("mlx5_1", "rdmap85s0"); "" = none */
  int nnetdev;                /* network interfaces of this function ("ib1"); may be 0 (EFA) */
  char netdevs[TOPO_MAX_NETDEV][TOPO_NAME_LEN];
  int port;                   /* RDMA port for NCCL_IB_HCA (first active port, default 1) */
  topo_link_t state;          /* from the file's PortNState or live sysfs */
  int speed_mbps;             /* live sysfs link speed, -1 unknown */
  float link_gbps;            /* PCIe link speed in GB/s (hwloc); 0 = unknown */
  int nnuma;
  int numa[TOPO_MAX_NUMA];
  char *cpus;
  hwloc_bitmap_t cpuset;
  hwloc_bitmap_t nodeset;
  hwloc_obj_t obj;
} topo_nic_t;

typedef struct topo_s {
  hwloc_topology_t hw;
  int live;                   /* 1: this machine (binding allowed); 0: from a file */
  char *source;               /* the XML path, or "live" */
  char host[256];             /* HostName of the file, or this machine's name; "" if unknown */
  int ngpus;
  topo_gpu_t *gpus;
  int nnics;
  topo_nic_t *nics;
  int nnuma;                  /* NUMA nodes of the machine */
  int *numa_os;               /* their os_index, in logical order */
  unsigned long long *dist;   /* NUMA latency matrix nnuma x nnuma (row = numa_os order), or NULL */
  char *cpus;                 /* all CPUs of the topology, list format */
  int nvml;                   /* 1 when NVML was loaded and answered (live only) */
} topo_t;

/** Load the topology of this machine (\p xml_path NULL) or of an hwloc XML export, with every
 * I/O object kept. Files that are not hwloc XML (an NCCL_TOPO_FILE, hwloc 3.x XML, garbage) give
 * GPL_ETOPO and one error line that says what the file is; a missing file gives GPL_ENOENT.
 * \return 0 and *out (free with topo_free), or a negative GPL_E* code. */
int topo_load(topo_t **out, const char *xml_path);
void topo_free(topo_t *t);
/** This machine's topology from an XML buffer that topo_export made on this same machine (the
 * node's first rank discovers, the others import: the same topology without paying for the
 * discovery again). Treated as live: binding allowed, sysfs and NVML consulted. */
int topo_load_shared(topo_t **out, const char *xml, size_t len);
/** The topology as hwloc XML (malloc'd, not NUL-terminated; *len bytes). */
int topo_export(const topo_t *t, char **xml, size_t *len);

/** NUMA latency between two NUMA nodes (os_index), from the matrix in the topology; 0 when the
 * topology has none or a node is unknown. */
unsigned long long topo_numa_distance(const topo_t *t, int os_a, int os_b);

/** The NIC with this bus id (any accepted spelling), or NULL. */
const topo_nic_t *topo_nic_by_pci(const topo_t *t, const char *busid);
/** The NIC whose RDMA name or one of whose netdevs is \p name, or NULL. */
const topo_nic_t *topo_nic_by_name(const topo_t *t, const char *name);
/** The NIC's first netdev, or NULL when it has none. */
const char *topo_nic_netdev(const topo_nic_t *n);

/** "3" or "0,1": the device's NUMA nodes as a comma list, into buf. */
const char *topo_numa_str(const int *numa, int n, char *buf, size_t len);

#endif
