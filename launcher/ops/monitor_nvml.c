/* NVML sampling source: libnvidia-ml.so.1 loaded at run time (no header or library at build time). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/util.h"
#include "launcher/ops/monitor.h"

/* ---- The part of nvml.h we use, declared here (signatures from NVIDIA's NVML API reference).
 * Every function returns nvmlReturn_t; 0 is NVML_SUCCESS. */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;
typedef struct {
  unsigned int gpu;    /* % of the last sample period during which a kernel was running */
  unsigned int memory; /* % of it during which device memory was read or written */
} nvml_utilization_t;
typedef struct {
  unsigned long long total, free, used; /* bytes (nvmlMemory_t, v1) */
} nvml_memory_t;
typedef struct {
  nvmlDevice_t device;
  unsigned long long eventType;
  unsigned long long eventData; /* the XID for nvmlEventTypeXidCriticalError */
  unsigned int gpuInstanceId;   /* _v2 layout; nvmlEventSetWait (v1) writes only the first three */
  unsigned int computeInstanceId;
} nvml_event_data_t;

enum {
  NVML_SUCCESS = 0,
  NVML_ERROR_NOT_SUPPORTED = 3,
  NVML_ERROR_NO_PERMISSION = 4,
  NVML_ERROR_NOT_FOUND = 6,
  NVML_ERROR_TIMEOUT = 10,
  NVML_ERROR_GPU_IS_LOST = 15,
};
enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum { NVML_MEMORY_ERROR_TYPE_CORRECTED = 0, NVML_MEMORY_ERROR_TYPE_UNCORRECTED = 1 };
enum { NVML_VOLATILE_ECC = 0 };
#define NVML_EVENT_TYPE_XID_CRITICAL_ERROR 0x8ull

typedef struct nvml_api_s {
  void *lib;
  int refs;
  nvmlReturn_t (*Init)(void);
  nvmlReturn_t (*Shutdown)(void);
  const char *(*ErrorString)(nvmlReturn_t);
  nvmlReturn_t (*ByPciBusId)(const char *, nvmlDevice_t *);
  nvmlReturn_t (*ByIndex)(unsigned int, nvmlDevice_t *);
  nvmlReturn_t (*Utilization)(nvmlDevice_t, nvml_utilization_t *);
  nvmlReturn_t (*MemoryInfo)(nvmlDevice_t, nvml_memory_t *);
  nvmlReturn_t (*PowerUsage)(nvmlDevice_t, unsigned int *);            /* milliwatts */
  nvmlReturn_t (*Temperature)(nvmlDevice_t, int, unsigned int *);      /* degrees C */
  nvmlReturn_t (*ClockInfo)(nvmlDevice_t, int, unsigned int *);        /* MHz */
  nvmlReturn_t (*PcieThroughput)(nvmlDevice_t, int, unsigned int *);   /* KB/s over 20 ms */
  nvmlReturn_t (*ThrottleReasons)(nvmlDevice_t, unsigned long long *);
  nvmlReturn_t (*TotalEcc)(nvmlDevice_t, int, int, unsigned long long *);
  nvmlReturn_t (*EventSetCreate)(nvmlEventSet_t *);
  nvmlReturn_t (*RegisterEvents)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
  nvmlReturn_t (*EventSetWait)(nvmlEventSet_t, nvml_event_data_t *, unsigned int);
  nvmlReturn_t (*EventSetFree)(nvmlEventSet_t);
  nvmlReturn_t (*DriverVersion)(char *, unsigned int);
  nvmlReturn_t (*NvmlVersion)(char *, unsigned int);
  nvmlReturn_t (*CudaDriverVersion)(int *);
} nvml_api_t;

/* One per process: NVML's own init is reference counted, and so is ours. Not thread-safe: the
 * supervisor and diag call it from one thread. */
static nvml_api_t g_nvml;

static const char *nvml_err(nvmlReturn_t r) {
  static char buf[32];
  if (g_nvml.ErrorString) return g_nvml.ErrorString(r);
  snprintf(buf, sizeof buf, "NVML error %d", r);
  return buf;
}

static void *sym(const char *a, const char *b) {
  void *p = dlsym(g_nvml.lib, a);
  if (!p && b) p = dlsym(g_nvml.lib, b);
  return p;
}

/* Load and init once. 0, or GPL_ENOTSUP with the reason in why. */
static int nvml_acquire(char *why, size_t whylen) {
  if (g_nvml.refs > 0) {
    g_nvml.refs++;
    return 0;
  }
  const char *name = getenv("GPULAUNCH_NVML_LIB");
  if (!name || !*name) name = "libnvidia-ml.so.1";
  dlerror();
  void *lib = dlopen(name, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char *e = dlerror();
    /* "not found" is the usual case (no driver); anything else (wrong ELF class, a missing
     * dependency) is worth its loader message */
    if (!e || strstr(e, "No such file"))
      snprintf(why, whylen, "no NVIDIA driver (%s not found)", name);
    else
      snprintf(why, whylen, "no NVIDIA driver (%s: %s)", name, e);
    return GPL_ENOTSUP;
  }
  memset(&g_nvml, 0, sizeof g_nvml);
  g_nvml.lib = lib;
  /* dlsym gives a void*; POSIX guarantees it holds a function's address, copied bit for bit. */
#define LOAD(field, a, b)                                                                        \
  do {                                                                                           \
    void *p_ = sym(a, b);                                                                        \
    memcpy(&g_nvml.field, &p_, sizeof p_);                                                       \
  } while (0)
  LOAD(Init, "nvmlInit_v2", "nvmlInit");
  LOAD(Shutdown, "nvmlShutdown", NULL);
  LOAD(ErrorString, "nvmlErrorString", NULL);
  LOAD(ByPciBusId, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
  LOAD(ByIndex, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  LOAD(Utilization, "nvmlDeviceGetUtilizationRates", NULL);
  LOAD(MemoryInfo, "nvmlDeviceGetMemoryInfo", NULL);
  LOAD(PowerUsage, "nvmlDeviceGetPowerUsage", NULL);
  LOAD(Temperature, "nvmlDeviceGetTemperature", NULL);
  LOAD(ClockInfo, "nvmlDeviceGetClockInfo", NULL);
  LOAD(PcieThroughput, "nvmlDeviceGetPcieThroughput", NULL);
  /* renamed "clock event reasons" in CUDA 12.2's NVML; the old name stays for older drivers */
  LOAD(ThrottleReasons, "nvmlDeviceGetCurrentClocksEventReasons",
       "nvmlDeviceGetCurrentClocksThrottleReasons");
  LOAD(TotalEcc, "nvmlDeviceGetTotalEccErrors", NULL);
  LOAD(EventSetCreate, "nvmlEventSetCreate", NULL);
  LOAD(RegisterEvents, "nvmlDeviceRegisterEvents", NULL);
  LOAD(EventSetWait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
  LOAD(EventSetFree, "nvmlEventSetFree", NULL);
  LOAD(DriverVersion, "nvmlSystemGetDriverVersion", NULL);
  LOAD(NvmlVersion, "nvmlSystemGetNVMLVersion", NULL);
  LOAD(CudaDriverVersion, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
#undef LOAD
  if (!g_nvml.Init || !g_nvml.Shutdown || !g_nvml.Utilization ||
      (!g_nvml.ByPciBusId && !g_nvml.ByIndex)) {
    snprintf(why, whylen, "%s lacks nvmlInit_v2/nvmlDeviceGetUtilizationRates (too old?)", name);
    dlclose(lib);
    memset(&g_nvml, 0, sizeof g_nvml);
    return GPL_ENOTSUP;
  }
  nvmlReturn_t r = g_nvml.Init();
  if (r != NVML_SUCCESS) {
    snprintf(why, whylen, "nvmlInit failed: %s", nvml_err(r));
    dlclose(lib);
    memset(&g_nvml, 0, sizeof g_nvml);
    return GPL_ENOTSUP;
  }
  g_nvml.refs = 1;
  return 0;
}

static void nvml_release(void) {
  if (g_nvml.refs <= 0 || --g_nvml.refs > 0) return;
  g_nvml.Shutdown();
  dlclose(g_nvml.lib);
  memset(&g_nvml, 0, sizeof g_nvml);
}

int mon_nvml_versions(char *nvml, size_t nlen, char *driver, size_t dlen, int *cuda_driver) {
  char why[256];
  if (nvml && nlen) nvml[0] = 0;
  if (driver && dlen) driver[0] = 0;
  if (cuda_driver) *cuda_driver = 0;
  if (nvml_acquire(why, sizeof why) < 0) {
    if (nvml && nlen) util_strlcpy(nvml, why, nlen);
    return GPL_ENOTSUP;
  }
  char buf[96];
  if (nvml && g_nvml.NvmlVersion && g_nvml.NvmlVersion(buf, sizeof buf) == NVML_SUCCESS)
    util_strlcpy(nvml, buf, nlen);
  if (driver && g_nvml.DriverVersion && g_nvml.DriverVersion(buf, sizeof buf) == NVML_SUCCESS)
    util_strlcpy(driver, buf, dlen);
  if (cuda_driver && g_nvml.CudaDriverVersion) g_nvml.CudaDriverVersion(cuda_driver);
  nvml_release();
  return 0;
}

/* ---- The source ------------------------------------------------------------------------------ */

typedef struct nvml_src_s {
  nvmlDevice_t dev;
  nvmlEventSet_t events; /* XID events; NULL when the device or permissions do not allow them */
  double t0;
  unsigned unsupported; /* MON_HAVE_* fields NVML said NOT_SUPPORTED for: not asked again */
  int lost_logged;
} nvml_src_t;

/* Ask for one field unless it was unsupported before; 1 when the value is good. */
static int field_ok(nvml_src_t *n, unsigned bit, nvmlReturn_t r) {
  if (r == NVML_SUCCESS) return 1;
  if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION) n->unsupported |= bit;
  return 0;
}

static int nvml_read(mon_source_t *src, mon_sample_t *s) {
  nvml_src_t *n = src->state;
  s->t = util_now() - n->t0;
  nvml_utilization_t u;
  nvmlReturn_t r = g_nvml.Utilization(n->dev, &u);
  if (r == NVML_ERROR_GPU_IS_LOST) {
    if (!n->lost_logged)
      LOG_WARN("NVML: the GPU has fallen off the bus (GPU_IS_LOST); see the kernel log for XID 79");
    n->lost_logged = 1;
    return GPL_ENOGPU;
  }
  if (field_ok(n, MON_HAVE_SM, r)) {
    s->have |= MON_HAVE_SM | MON_HAVE_MEMUTIL;
    s->sm_pct = u.gpu;
    s->mem_util_pct = u.memory;
  } else if (!(n->unsupported & MON_HAVE_SM)) {
    LOG_DEBUG(MON, "nvmlDeviceGetUtilizationRates: %s", nvml_err(r));
  }
  nvml_memory_t mem;
  if (g_nvml.MemoryInfo && !(n->unsupported & MON_HAVE_MEM) &&
      field_ok(n, MON_HAVE_MEM, g_nvml.MemoryInfo(n->dev, &mem))) {
    s->have |= MON_HAVE_MEM;
    s->mem_used = mem.used;
    s->mem_total = mem.total;
  }
  unsigned v = 0, w = 0;
  if (g_nvml.PowerUsage && !(n->unsupported & MON_HAVE_POWER) &&
      field_ok(n, MON_HAVE_POWER, g_nvml.PowerUsage(n->dev, &v))) {
    s->have |= MON_HAVE_POWER;
    s->power_w = v / 1000.0;
  }
  if (g_nvml.Temperature && !(n->unsupported & MON_HAVE_TEMP) &&
      field_ok(n, MON_HAVE_TEMP, g_nvml.Temperature(n->dev, NVML_TEMPERATURE_GPU, &v))) {
    s->have |= MON_HAVE_TEMP;
    s->temp_c = v;
  }
  if (g_nvml.ClockInfo && !(n->unsupported & MON_HAVE_CLOCKS) &&
      field_ok(n, MON_HAVE_CLOCKS, g_nvml.ClockInfo(n->dev, NVML_CLOCK_SM, &v))) {
    s->have |= MON_HAVE_CLOCKS;
    s->sm_clock_mhz = v;
    if (g_nvml.ClockInfo(n->dev, NVML_CLOCK_MEM, &w) == NVML_SUCCESS) s->mem_clock_mhz = w;
  }
  /* Each PCIe call counts bytes over 20 ms: 40 ms per tick, acceptable every few seconds. */
  if (g_nvml.PcieThroughput && !(n->unsupported & MON_HAVE_PCIE) &&
      field_ok(n, MON_HAVE_PCIE, g_nvml.PcieThroughput(n->dev, NVML_PCIE_UTIL_RX_BYTES, &v)) &&
      field_ok(n, MON_HAVE_PCIE, g_nvml.PcieThroughput(n->dev, NVML_PCIE_UTIL_TX_BYTES, &w))) {
    s->have |= MON_HAVE_PCIE;
    s->pcie_rx_kbs = v;
    s->pcie_tx_kbs = w;
  }
  unsigned long long bits = 0, c = 0, e = 0;
  if (g_nvml.ThrottleReasons && !(n->unsupported & MON_HAVE_THROTTLE) &&
      field_ok(n, MON_HAVE_THROTTLE, g_nvml.ThrottleReasons(n->dev, &bits))) {
    s->have |= MON_HAVE_THROTTLE;
    s->throttle = bits;
  }
  if (g_nvml.TotalEcc && !(n->unsupported & MON_HAVE_ECC) &&
      field_ok(n, MON_HAVE_ECC, g_nvml.TotalEcc(n->dev, NVML_MEMORY_ERROR_TYPE_CORRECTED,
                                                NVML_VOLATILE_ECC, &c)) &&
      field_ok(n, MON_HAVE_ECC, g_nvml.TotalEcc(n->dev, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                                                NVML_VOLATILE_ECC, &e))) {
    s->have |= MON_HAVE_ECC;
    s->ecc_corrected = c;
    s->ecc_uncorrected = e;
  }
  /* XID events: poll with a zero timeout, a bounded number per tick, so a tick never blocks. */
  for (int i = 0; n->events && i < 32; i++) {
    nvml_event_data_t ev;
    memset(&ev, 0, sizeof ev);
    if (g_nvml.EventSetWait(n->events, &ev, 0) != NVML_SUCCESS) break; /* TIMEOUT: none left */
    if (ev.eventType & NVML_EVENT_TYPE_XID_CRITICAL_ERROR) {
      s->nxid++;
      s->xid = (int)ev.eventData;
    }
  }
  /* A partial sample (MIG instances answer NOT_SUPPORTED for utilisation) still counts. */
  return s->have ? 0 : GPL_ENOTSUP;
}

static void nvml_close(mon_source_t *src) {
  nvml_src_t *n = src->state;
  if (n) {
    if (n->events) g_nvml.EventSetFree(n->events);
    free(n);
    nvml_release();
  }
  free(src);
}

static const mon_source_ops_t nvml_ops = {"nvml", nvml_read, nvml_close};

int mon_nvml_open(const char *pci_bus_id, int index, mon_source_t **out, char *why,
                  size_t whylen) {
  *out = NULL;
  if (whylen) why[0] = 0;
  CHECK(nvml_acquire(why, whylen));
  nvmlDevice_t dev = NULL;
  nvmlReturn_t r;
  if (pci_bus_id && *pci_bus_id && g_nvml.ByPciBusId)
    r = g_nvml.ByPciBusId(pci_bus_id, &dev);
  else if (g_nvml.ByIndex && index >= 0)
    r = g_nvml.ByIndex((unsigned)index, &dev);
  else
    r = NVML_ERROR_NOT_FOUND;
  if (r != NVML_SUCCESS) {
    if (pci_bus_id && *pci_bus_id)
      snprintf(why, whylen, "NVML has no GPU at PCI bus id %s: %s", pci_bus_id, nvml_err(r));
    else
      snprintf(why, whylen, "NVML has no GPU %d: %s", index, nvml_err(r));
    nvml_release();
    return GPL_ENOGPU;
  }
  nvml_src_t *n = calloc(1, sizeof *n);
  mon_source_t *src = calloc(1, sizeof *src);
  if (!n || !src) {
    free(n);
    free(src);
    nvml_release();
    return GPL_ENOMEM;
  }
  n->dev = dev;
  n->t0 = util_now();
  if (g_nvml.EventSetCreate && g_nvml.RegisterEvents && g_nvml.EventSetWait &&
      g_nvml.EventSetFree && g_nvml.EventSetCreate(&n->events) == NVML_SUCCESS) {
    r = g_nvml.RegisterEvents(dev, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, n->events);
    if (r != NVML_SUCCESS) {
      LOG_DEBUG(MON, "XID events not available: %s", nvml_err(r));
      g_nvml.EventSetFree(n->events);
      n->events = NULL;
    }
  } else {
    n->events = NULL;
  }
  src->ops = &nvml_ops;
  src->state = n;
  *out = src;
  return 0;
}
