/* NVML (the NVIDIA driver's management library) loaded at run time: the one loader every module uses -- the GPU list of the topology, the monitor's readings, accept's health checks. */
#ifndef GPL_TOPOLOGY_NVML_H
#define GPL_TOPOLOGY_NVML_H

#include <stddef.h>
#include <stdint.h>

#include "topology/topo.h"

/* Build machines have neither NVML's header nor its library, and a machine without a driver is
 * normal: the library is dlopen'ed ("libnvidia-ml.so.1", or the path in GPULAUNCH_NVML_LIB, for
 * tests and odd installs) and the few functions used are declared in nvml.c from NVIDIA's API
 * reference. Functions a driver lacks (GPM before Hopper drivers, renamed symbols) are optional:
 * what they read is then reported as not supported. Nothing here is thread-safe: gpulaunch calls
 * NVML from one thread. */

/* ---- The library ----------------------------------------------------------------------------- */

/** Load and initialise NVML, reference counted (NVML's own init is too): each successful call
 * needs one nvml_close. \return 0, or GPL_ENOTSUP with the reason in why ("no NVIDIA driver
 * (libnvidia-ml.so.1 not found)", "nvmlInit failed: Driver Not Loaded"); nothing is logged. */
int nvml_open(char *why, size_t whylen);
void nvml_close(void);

/** The NVML library's and driver's versions ("12.535.104.05", "535.104.05") and the CUDA version
 * the driver supports (12040 = 12.4); any output may be NULL. Without NVML: GPL_ENOTSUP, with
 * the reason in nvml. */
int nvml_versions(char *nvml, size_t nlen, char *driver, size_t dlen, int *cuda_driver);

/* ---- The GPUs the driver sees (topology) ----------------------------------------------------- */

typedef struct nvml_gpu_s {
  int index;                  /* NVML's device index */
  unsigned domain, bus, dev, func;
  char pci[TOPO_PCI_LEN];     /* "0000:03:00.0" */
  char name[TOPO_MODEL_LEN];  /* "NVIDIA H200" */
  char uuid[96];              /* "GPU-..." */
} nvml_gpu_t;

/** The GPUs NVML reports. \return their count (0 when NVML is absent or fails: logged at debug or
 * info level only) with *out malloc'd (NULL when 0), or GPL_ENOMEM. */
int nvml_list(nvml_gpu_t **out);

/** Merge NVML's GPUs into a live topology: fill model/UUID of the GPUs hwloc found (matched by
 * bus id) and add those hwloc did not see, with locality from sysfs; in a container (NVML sees
 * fewer GPUs than the PCI bus) keep only NVML's. *cap is t->gpus' capacity. Sets t->nvml when
 * NVML answered. \return 0 or a negative GPL_E* code. */
int nvml_probe(topo_t *t, int *cap);

/* ---- One GPU: readings and health ------------------------------------------------------------ */

typedef struct nvml_dev_s nvml_dev_t;

/** Open the GPU at PCI bus id \p pci ("0000:3b:00.0") when given, else NVML's GPU \p index (this
 * holds the library open until nvml_dev_close). Registers for XID events where the driver
 * allows. \return 0, GPL_ENOTSUP (no NVML; why says it) or GPL_ENOGPU (no such GPU; why says it);
 * nothing is logged. */
int nvml_dev_open(const char *pci, int index, nvml_dev_t **out, char *why, size_t whylen);
void nvml_dev_close(nvml_dev_t *d);

/* What a reading holds (boards answer NOT_SUPPORTED for some fields: MIG instances for the
 * utilisation, VMs for PCIe counters, GPUs before Hopper for GPM). */
enum {
  NVML_HAVE_BUSY = 1u << 0,      /* busy_pct, mem_util_pct */
  NVML_HAVE_MEM = 1u << 1,       /* mem_used, mem_total */
  NVML_HAVE_POWER = 1u << 2,     /* power_w */
  NVML_HAVE_TEMP = 1u << 3,      /* temp_c */
  NVML_HAVE_CLOCKS = 1u << 4,    /* sm_clock_mhz, mem_clock_mhz */
  NVML_HAVE_PCIE = 1u << 5,      /* pcie_rx_kbs, pcie_tx_kbs */
  NVML_HAVE_THROTTLE = 1u << 6,  /* throttle */
  NVML_HAVE_ECC = 1u << 7,       /* ecc_corrected, ecc_uncorrected */
  NVML_HAVE_SM_ACTIVE = 1u << 8, /* sm_active_pct, sm_occupancy_pct (GPM) */
};

/* NVML's clock event ("throttle") reason bits, as nvmlDeviceGetCurrentClocksEventReasons gives
 * them. NVML_THROTTLE_SLOWDOWN is the set that means "clocks were lowered against the program's
 * will" (power cap, thermal, hardware slowdown); idle and application clocks are not throttling. */
enum {
  NVML_THROTTLE_GPU_IDLE = 0x1ull,
  NVML_THROTTLE_APP_CLOCKS = 0x2ull,
  NVML_THROTTLE_SW_POWER_CAP = 0x4ull,
  NVML_THROTTLE_HW_SLOWDOWN = 0x8ull,
  NVML_THROTTLE_SYNC_BOOST = 0x10ull,
  NVML_THROTTLE_SW_THERMAL = 0x20ull,
  NVML_THROTTLE_HW_THERMAL = 0x40ull,
  NVML_THROTTLE_HW_POWER_BRAKE = 0x80ull,
  NVML_THROTTLE_DISPLAY_CLOCKS = 0x100ull,
};
#define NVML_THROTTLE_SLOWDOWN                                                                    \
  (NVML_THROTTLE_SW_POWER_CAP | NVML_THROTTLE_HW_SLOWDOWN | NVML_THROTTLE_SW_THERMAL |              \
   NVML_THROTTLE_HW_THERMAL | NVML_THROTTLE_HW_POWER_BRAKE)

typedef struct nvml_reading_s {
  unsigned have;                /* NVML_HAVE_* */
  /* nvmlDeviceGetUtilizationRates: the share of NVML's sample period during which at least one
   * kernel ran, whatever it did on how many SMs: a NCCL kernel that waits for a peer counts as
   * busy. That is "GPU busy", not SM utilisation. */
  double busy_pct;
  double mem_util_pct;          /* share of the period device memory was read or written */
  /* GPM (Hopper and later): what the SMs really did between this reading and the previous one
   * of the same device (the first reading of a device has none): the share of SMs busy
   * (NVML_GPM_METRIC_SM_UTIL) and of warps resident against the maximum (SM_OCCUPANCY). */
  double sm_active_pct;
  double sm_occupancy_pct;
  uint64_t mem_used, mem_total; /* bytes */
  double power_w;
  double temp_c;
  unsigned sm_clock_mhz, mem_clock_mhz;
  double pcie_rx_kbs, pcie_tx_kbs; /* KB/s, NVML's unit (each is counted over 20 ms) */
  uint64_t throttle;            /* clock event reason bits (NVML_THROTTLE_*) */
  uint64_t ecc_corrected, ecc_uncorrected; /* volatile counts since the driver loaded */
  int nxid;                     /* XID events since the previous reading */
  int xid;                      /* the last of them */
} nvml_reading_t;

/** Read everything the GPU answers. Fields it said NOT_SUPPORTED for are not asked again on this
 * device. XID events are polled without waiting. \return 0 (some fields may be missing),
 * GPL_ENOGPU (the GPU fell off the bus: logged once per device) or GPL_ENOTSUP (nothing). */
int nvml_dev_read(nvml_dev_t *d, nvml_reading_t *r);

#define NVML_NVLINK_MAX 36 /* NVML_NVLINK_MAX_LINKS of current drivers */

/* Memory health: retired pages (before Ampere) or remapped rows (Ampere and later), and NVLink. */
typedef struct nvml_health_s {
  /* 0: the GPU reports neither; 1: retired pages; 2: remapped rows. */
  int mem_kind;
  unsigned retired_sbe, retired_dbe; /* pages retired for single-bit / double-bit errors */
  int retired_pending;               /* pages wait for a reboot to be retired */
  unsigned remap_corr, remap_unc;    /* rows remapped for correctable / uncorrectable errors */
  int remap_pending;                 /* remappings wait for a GPU reset */
  int remap_failed;                  /* a remapping failed once: the GPU needs replacing */
  /* NVLink: the links that answered nvmlDeviceGetNvLinkState (0: no NVLink on this GPU). */
  int nvlink_links;
  int nvlink_active;
  uint64_t nvlink_down;              /* bit l: link l answered and is not active */
  unsigned nvlink_version;           /* of the first active link (nvmlNvlinkVersion_t); 0 */
} nvml_health_t;

/** The GPU's memory and NVLink health. \return 0, or GPL_ENOGPU when the GPU is lost. */
int nvml_dev_health(nvml_dev_t *d, nvml_health_t *h);
/** "4.0" for an nvmlNvlinkVersion_t value; "?" when unknown. */
const char *nvml_nvlink_version_name(unsigned v);

#endif
