/* A stand-in libnvidia-ml.so.1 for every test that goes through topology/nvml*.c: GPUs, readings, health and GPM with canned values set from the environment, and call counters. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The environment decides what the "driver" says (read on every call, so a test can change it
 * between calls):
 *   FAKE_NVML_GPUS       "busid|name|uuid;..." (default: one GPU, 00000000:3B:00.0)
 *   FAKE_NVML_INIT_FAIL  nvmlInit answers DRIVER_NOT_LOADED
 *   FAKE_NVML_LOST       the utilisation answers GPU_IS_LOST
 *   FAKE_NVML_BUSY       GPU busy % of every reading (default: 91, 12, 77 % in turn)
 *   FAKE_NVML_GPM        GPM supported: SM activity 35, 20, 45, ... % and occupancy 10 points below
 *   FAKE_NVML_REMAP      "corr,unc,pending,failed": remapped rows (unset: not supported)
 *   FAKE_NVML_RETIRED    "sbe,dbe,pending": retired pages (unset: not supported)
 *   FAKE_NVML_NVLINK     "1,1,0,...": the state of each NVLink (unset: no NVLink)
 * Every other reading is fixed: 33 % memory utilisation, 12 of 80 GiB, 345.678 W,
 * 61 C, SM 1755 / memory 2619 MHz, software power cap + idle (0x5), 3 corrected and 0 uncorrected
 * ECC errors, PCIe counters NOT_SUPPORTED (as in many VMs), one XID 79 on the second reading. */

typedef int nvmlReturn_t;
enum {
  OK = 0,
  INVALID_ARGUMENT = 2,
  NOT_SUPPORTED = 3,
  NOT_FOUND = 6,
  INSUFFICIENT_SIZE = 7,
  DRIVER_NOT_LOADED = 9,
  TIMEOUT = 10,
  GPU_IS_LOST = 15,
};
#define MAX_GPUS 16

typedef struct {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
} pci_t;
typedef struct {
  unsigned int gpu, memory;
} util_t;
typedef struct {
  unsigned long long total, free, used;
} mem_t;
typedef struct {
  void *device;
  unsigned long long eventType, eventData;
  unsigned int gpuInstanceId, computeInstanceId;
} event_t;
typedef struct {
  unsigned int metricId;
  nvmlReturn_t nvmlReturn;
  double value;
  struct {
    char *shortName, *longName, *unit;
  } metricInfo;
} gpm_metric_t;
typedef struct {
  unsigned int version, numMetrics;
  void *sample1, *sample2;
  gpm_metric_t metrics[98]; /* the smallest NVML_GPM_METRIC_MAX a driver had */
} gpm_get_t;
typedef struct {
  unsigned int version, isSupportedDevice;
} gpm_support_t;
typedef struct {
  int magic;
  unsigned seq; /* which nvmlGpmSampleGet filled it; 0 = never */
} gpm_sample_t;

#define API __attribute__((visibility("default")))
API int fake_nvml_count(const char *what);
API nvmlReturn_t nvmlInit_v2(void);
API nvmlReturn_t nvmlShutdown(void);
API const char *nvmlErrorString(nvmlReturn_t r);
API nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len);
API nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned int len);
API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v);
API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n);
API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev);
API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev);
API nvmlReturn_t nvmlDeviceGetPciInfo_v3(void *dev, pci_t *pci);
API nvmlReturn_t nvmlDeviceGetName(void *dev, char *name, unsigned int len);
API nvmlReturn_t nvmlDeviceGetUUID(void *dev, char *uuid, unsigned int len);
API nvmlReturn_t nvmlDeviceGetUtilizationRates(void *dev, util_t *u);
API nvmlReturn_t nvmlDeviceGetMemoryInfo(void *dev, mem_t *m);
API nvmlReturn_t nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw);
API nvmlReturn_t nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *t);
API nvmlReturn_t nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz);
API nvmlReturn_t nvmlDeviceGetPcieThroughput(void *dev, int counter, unsigned int *kbs);
API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *bits);
API nvmlReturn_t nvmlDeviceGetTotalEccErrors(void *dev, int type, int counter, unsigned long long *n);
API nvmlReturn_t nvmlEventSetCreate(void **set);
API nvmlReturn_t nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set);
API nvmlReturn_t nvmlEventSetWait_v2(void *set, event_t *ev, unsigned int timeout_ms);
API nvmlReturn_t nvmlEventSetFree(void *set);
API nvmlReturn_t nvmlDeviceGetRemappedRows(void *dev, unsigned *corr, unsigned *unc, unsigned *pending,
                                           unsigned *failed);
API nvmlReturn_t nvmlDeviceGetRetiredPages(void *dev, int cause, unsigned *count, unsigned long long *addr);
API nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(void *dev, int *pending);
API nvmlReturn_t nvmlDeviceGetNvLinkState(void *dev, unsigned link, int *active);
API nvmlReturn_t nvmlDeviceGetNvLinkVersion(void *dev, unsigned link, unsigned *version);
API nvmlReturn_t nvmlGpmQueryDeviceSupport(void *dev, gpm_support_t *s);
API nvmlReturn_t nvmlGpmSampleAlloc(void **sample);
API nvmlReturn_t nvmlGpmSampleFree(void *sample);
API nvmlReturn_t nvmlGpmSampleGet(void *dev, void *sample);
API nvmlReturn_t nvmlGpmMetricsGet(gpm_get_t *g);

static int g_devs[MAX_GPUS]; /* handles: &g_devs[i] */
static int g_set, g_inits, g_shutdowns, g_pcie, g_reads, g_waits_nonzero, g_gpm_samples, g_gpm_metrics;
static int g_gpm_allocated;

int fake_nvml_count(const char *what) {
  if (!strcmp(what, "init")) return g_inits;
  if (!strcmp(what, "shutdown")) return g_shutdowns;
  if (!strcmp(what, "pcie")) return g_pcie;
  if (!strcmp(what, "wait_nonzero")) return g_waits_nonzero;
  if (!strcmp(what, "gpm_samples")) return g_gpm_samples;
  if (!strcmp(what, "gpm_metrics")) return g_gpm_metrics;
  if (!strcmp(what, "gpm_allocated")) return g_gpm_allocated;
  return -1;
}

/* Field f (0 bus id, 1 name, 2 uuid) of GPU i, into out; 0, or -1 when there is no such GPU. */
static int field(unsigned i, int f, char *out, size_t len) {
  const char *s = getenv("FAKE_NVML_GPUS");
  if (!s) s = "00000000:3B:00.0|Fake H100 80GB HBM3|GPU-fake-0000";
  for (unsigned k = 0; k < i; k++) {
    s = strchr(s, ';');
    if (!s) return -1;
    s++;
  }
  for (int k = 0; k < f; k++) {
    const char *bar = strchr(s, '|'), *semi = strchr(s, ';');
    if (!bar || (semi && semi < bar)) return -1;
    s = bar + 1;
  }
  size_t n = strcspn(s, "|;");
  if (n >= len) n = len - 1;
  memcpy(out, s, n);
  out[n] = 0;
  return 0;
}

static unsigned count_gpus(void) {
  char buf[64];
  unsigned n = 0;
  while (n < MAX_GPUS && field(n, 0, buf, sizeof buf) == 0 && buf[0]) n++;
  return n;
}

/* The GPU of a handle, -1 for anything else. */
static int gpu_of(const void *dev) {
  for (unsigned i = 0; i < count_gpus(); i++)
    if (dev == &g_devs[i]) return (int)i;
  return -1;
}

/* Comma-separated unsigned numbers of an environment variable into v; their count, -1 unset. */
static int env_list(const char *name, unsigned *v, int max) {
  const char *s = getenv(name);
  if (!s) return -1;
  int n = 0;
  for (char *end; *s && n < max; s = *end ? end + 1 : end) {
    v[n++] = (unsigned)strtoul(s, &end, 10);
    if (end == s) break;
  }
  return n;
}

nvmlReturn_t nvmlInit_v2(void) {
  if (getenv("FAKE_NVML_INIT_FAIL")) return DRIVER_NOT_LOADED;
  g_inits++;
  return OK;
}
nvmlReturn_t nvmlShutdown(void) {
  g_shutdowns++;
  return OK;
}
const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case OK: return "Success";
    case INVALID_ARGUMENT: return "Invalid Argument";
    case NOT_SUPPORTED: return "Not Supported";
    case NOT_FOUND: return "Not Found";
    case DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case TIMEOUT: return "Timeout";
    case GPU_IS_LOST: return "GPU is lost";
    default: return "Unknown Error";
  }
}
nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len) {
  snprintf(v, len, "550.54.15");
  return OK;
}
nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned int len) {
  snprintf(v, len, "12.550.54.15");
  return OK;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) {
  *v = 12040;
  return OK;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *n) {
  *n = count_gpus();
  return OK;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev) {
  if (i >= count_gpus()) return INVALID_ARGUMENT;
  *dev = &g_devs[i];
  return OK;
}
/* NVML takes "0000:3b:00.0" and "00000000:3B:00.0" alike. */
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev) {
  unsigned d, b, s, f, d2, b2, s2, f2;
  char id[64];
  if (sscanf(bus, "%x:%x:%x.%x", &d, &b, &s, &f) != 4) return INVALID_ARGUMENT;
  for (unsigned i = 0; i < count_gpus(); i++) {
    if (field(i, 0, id, sizeof id) < 0 || sscanf(id, "%x:%x:%x.%x", &d2, &b2, &s2, &f2) != 4) continue;
    if (d == d2 && b == b2 && s == s2 && f == f2) {
      *dev = &g_devs[i];
      return OK;
    }
  }
  return NOT_FOUND;
}
nvmlReturn_t nvmlDeviceGetPciInfo_v3(void *dev, pci_t *pci) {
  int i = gpu_of(dev);
  memset(pci, 0, sizeof *pci);
  if (i < 0 || field((unsigned)i, 0, pci->bus_id, sizeof pci->bus_id) < 0) return INVALID_ARGUMENT;
  unsigned d, b, s, f;
  if (sscanf(pci->bus_id, "%x:%x:%x.%x", &d, &b, &s, &f) != 4) return INVALID_ARGUMENT;
  pci->domain = d, pci->bus = b, pci->device = s;
  snprintf(pci->bus_id_legacy, sizeof pci->bus_id_legacy, "%04x:%02x:%02x.%x", d, b, s, f);
  return OK;
}
nvmlReturn_t nvmlDeviceGetName(void *dev, char *name, unsigned int len) {
  int i = gpu_of(dev);
  return i >= 0 && field((unsigned)i, 1, name, len) == 0 ? OK : INVALID_ARGUMENT;
}
nvmlReturn_t nvmlDeviceGetUUID(void *dev, char *uuid, unsigned int len) {
  int i = gpu_of(dev);
  return i >= 0 && field((unsigned)i, 2, uuid, len) == 0 ? OK : INVALID_ARGUMENT;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(void *dev, util_t *u) {
  if (gpu_of(dev) < 0) return INVALID_ARGUMENT;
  if (getenv("FAKE_NVML_LOST")) return GPU_IS_LOST;
  static const unsigned busy[] = {91, 12, 77};
  const char *fixed = getenv("FAKE_NVML_BUSY");
  u->gpu = fixed ? (unsigned)atoi(fixed) : busy[g_reads % 3];
  g_reads++;
  u->memory = 33;
  return OK;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(void *dev, mem_t *m) {
  if (gpu_of(dev) < 0) return INVALID_ARGUMENT;
  m->total = 80ull << 30;
  m->used = 12ull << 30;
  m->free = m->total - m->used;
  return OK;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw) {
  if (gpu_of(dev) < 0) return INVALID_ARGUMENT;
  *mw = 345678;
  return OK;
}
nvmlReturn_t nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *t) {
  if (gpu_of(dev) < 0 || sensor != 0) return INVALID_ARGUMENT;
  *t = 61;
  return OK;
}
nvmlReturn_t nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz) {
  if (gpu_of(dev) < 0) return INVALID_ARGUMENT;
  if (type == 1) *mhz = 1755;
  else if (type == 2) *mhz = 2619;
  else return INVALID_ARGUMENT;
  return OK;
}
nvmlReturn_t nvmlDeviceGetPcieThroughput(void *dev, int counter, unsigned int *kbs) {
  (void)dev;
  (void)counter;
  (void)kbs;
  g_pcie++;
  return NOT_SUPPORTED;
}
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *bits) {
  if (gpu_of(dev) < 0) return INVALID_ARGUMENT;
  *bits = 0x4 | 0x1;
  return OK;
}
nvmlReturn_t nvmlDeviceGetTotalEccErrors(void *dev, int type, int counter, unsigned long long *n) {
  if (gpu_of(dev) < 0 || counter != 0) return INVALID_ARGUMENT;
  *n = type == 0 ? 3 : 0;
  return OK;
}

nvmlReturn_t nvmlEventSetCreate(void **set) {
  *set = &g_set;
  return OK;
}
nvmlReturn_t nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set) {
  (void)set;
  return gpu_of(dev) >= 0 && types == 0x8 ? OK : INVALID_ARGUMENT;
}
/* One XID 79 on the second reading's poll, then none. */
nvmlReturn_t nvmlEventSetWait_v2(void *set, event_t *ev, unsigned int timeout_ms) {
  static int delivered;
  (void)set;
  if (timeout_ms != 0) g_waits_nonzero++;
  if (g_reads == 2 && !delivered) {
    delivered = 1;
    ev->device = &g_devs[0];
    ev->eventType = 0x8;
    ev->eventData = 79;
    ev->gpuInstanceId = ev->computeInstanceId = 0xFFFFFFFFu;
    return OK;
  }
  return TIMEOUT;
}
nvmlReturn_t nvmlEventSetFree(void *set) {
  (void)set;
  return OK;
}

nvmlReturn_t nvmlDeviceGetRemappedRows(void *dev, unsigned *corr, unsigned *unc, unsigned *pending,
                                       unsigned *failed) {
  unsigned v[4] = {0};
  if (gpu_of(dev) < 0) return INVALID_ARGUMENT;
  if (env_list("FAKE_NVML_REMAP", v, 4) < 0) return NOT_SUPPORTED;
  *corr = v[0], *unc = v[1], *pending = v[2], *failed = v[3];
  return OK;
}
nvmlReturn_t nvmlDeviceGetRetiredPages(void *dev, int cause, unsigned *count, unsigned long long *addr) {
  unsigned v[3] = {0};
  if (gpu_of(dev) < 0 || !count || (cause != 0 && cause != 1)) return INVALID_ARGUMENT;
  if (env_list("FAKE_NVML_RETIRED", v, 3) < 0) return NOT_SUPPORTED;
  unsigned want = v[cause];
  if (*count < want) {
    *count = want;
    return INSUFFICIENT_SIZE;
  }
  for (unsigned i = 0; addr && i < want; i++) addr[i] = 0x1000ull * (i + 1);
  *count = want;
  return OK;
}
nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(void *dev, int *pending) {
  unsigned v[3] = {0};
  if (gpu_of(dev) < 0) return INVALID_ARGUMENT;
  if (env_list("FAKE_NVML_RETIRED", v, 3) < 0) return NOT_SUPPORTED;
  *pending = v[2] != 0;
  return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkState(void *dev, unsigned link, int *active) {
  unsigned v[36];
  if (gpu_of(dev) < 0) return INVALID_ARGUMENT;
  int n = env_list("FAKE_NVML_NVLINK", v, 36);
  if (n < 0) return NOT_SUPPORTED;
  if ((int)link >= n) return INVALID_ARGUMENT;
  *active = v[link] != 0;
  return OK;
}
nvmlReturn_t nvmlDeviceGetNvLinkVersion(void *dev, unsigned link, unsigned *version) {
  int active = 0;
  nvmlReturn_t r = nvmlDeviceGetNvLinkState(dev, link, &active);
  if (r != OK) return r;
  *version = 6; /* NVML_NVLINK_VERSION_4_0: Hopper */
  return OK;
}

nvmlReturn_t nvmlGpmQueryDeviceSupport(void *dev, gpm_support_t *s) {
  if (gpu_of(dev) < 0 || s->version != 1) return INVALID_ARGUMENT;
  s->isSupportedDevice = getenv("FAKE_NVML_GPM") != NULL;
  return OK;
}
nvmlReturn_t nvmlGpmSampleAlloc(void **sample) {
  gpm_sample_t *s = calloc(1, sizeof *s);
  if (!s) return 999;
  s->magic = 0x67706d;
  g_gpm_allocated++;
  *sample = s;
  return OK;
}
nvmlReturn_t nvmlGpmSampleFree(void *sample) {
  gpm_sample_t *s = sample;
  if (!s || s->magic != 0x67706d) return INVALID_ARGUMENT;
  s->magic = 0;
  free(s);
  g_gpm_allocated--;
  return OK;
}
nvmlReturn_t nvmlGpmSampleGet(void *dev, void *sample) {
  gpm_sample_t *s = sample;
  if (gpu_of(dev) < 0 || !s || s->magic != 0x67706d) return INVALID_ARGUMENT;
  s->seq = (unsigned)++g_gpm_samples;
  return OK;
}
/* The metrics of the interval that ends at sample2: real NVML refuses samples in the wrong order. */
nvmlReturn_t nvmlGpmMetricsGet(gpm_get_t *g) {
  const gpm_sample_t *a = g->sample1, *b = g->sample2;
  if (g->version != 1 || g->numMetrics == 0 || g->numMetrics > 98 || !a || !b || a->magic != 0x67706d ||
      b->magic != 0x67706d || a->seq == 0 || b->seq <= a->seq)
    return INVALID_ARGUMENT;
  g_gpm_metrics++;
  static const double sm[] = {35, 20, 45};
  for (unsigned i = 0; i < g->numMetrics; i++) {
    gpm_metric_t *m = &g->metrics[i];
    m->nvmlReturn = OK;
    if (m->metricId == 2) m->value = sm[b->seq % 3];
    else if (m->metricId == 3) m->value = sm[b->seq % 3] - 10;
    else m->nvmlReturn = NOT_SUPPORTED;
  }
  return OK;
}
