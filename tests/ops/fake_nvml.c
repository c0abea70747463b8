/* A stand-in libnvidia-ml for tests: the NVML functions the monitor loads, with canned values
 * and call counters, so the dlopen/dlsym path and the field mapping run without a GPU. */
#include <stdlib.h>
#include <string.h>

typedef int nvmlReturn_t;
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

/* Exported for the test; prototypes here keep -Wmissing-prototypes quiet. */
#define API __attribute__((visibility("default")))
API int fake_nvml_count(const char *what);
API nvmlReturn_t nvmlInit_v2(void);
API nvmlReturn_t nvmlShutdown(void);
API const char *nvmlErrorString(nvmlReturn_t r);
API nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev);
API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev);
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
API nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len);
API nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned int len);
API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v);

static int g_dev, g_set, g_inits, g_shutdowns, g_pcie, g_reads, g_waits_nonzero;

int fake_nvml_count(const char *what) {
  if (!strcmp(what, "init")) return g_inits;
  if (!strcmp(what, "shutdown")) return g_shutdowns;
  if (!strcmp(what, "pcie")) return g_pcie;
  if (!strcmp(what, "wait_nonzero")) return g_waits_nonzero;
  return -1;
}

nvmlReturn_t nvmlInit_v2(void) {
  if (getenv("FAKE_NVML_INIT_FAIL")) return 9; /* NVML_ERROR_DRIVER_NOT_LOADED */
  g_inits++;
  return 0;
}
nvmlReturn_t nvmlShutdown(void) {
  g_shutdowns++;
  return 0;
}
const char *nvmlErrorString(nvmlReturn_t r) {
  switch (r) {
    case 0: return "Success";
    case 3: return "Not Supported";
    case 6: return "Not Found";
    case 9: return "Driver Not Loaded";
    case 10: return "Timeout";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}
nvmlReturn_t nvmlDeviceGetHandleByPciBusId_v2(const char *bus, void **dev) {
  if (strcmp(bus, "0000:3b:00.0") != 0) return 6;
  *dev = &g_dev;
  return 0;
}
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev) {
  if (i != 0) return 6;
  *dev = &g_dev;
  return 0;
}
nvmlReturn_t nvmlDeviceGetUtilizationRates(void *dev, util_t *u) {
  if (dev != &g_dev) return 2;
  if (getenv("FAKE_NVML_LOST")) return 15;
  static const unsigned sm[] = {91, 12, 77};
  u->gpu = sm[g_reads++ % 3];
  u->memory = 33;
  return 0;
}
nvmlReturn_t nvmlDeviceGetMemoryInfo(void *dev, mem_t *m) {
  (void)dev;
  m->total = 80ull << 30;
  m->used = 12ull << 30;
  m->free = m->total - m->used;
  return 0;
}
nvmlReturn_t nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw) {
  (void)dev;
  *mw = 345678;
  return 0;
}
nvmlReturn_t nvmlDeviceGetTemperature(void *dev, int sensor, unsigned int *t) {
  (void)dev;
  if (sensor != 0) return 2;
  *t = 61;
  return 0;
}
nvmlReturn_t nvmlDeviceGetClockInfo(void *dev, int type, unsigned int *mhz) {
  (void)dev;
  if (type == 1) *mhz = 1755;
  else if (type == 2) *mhz = 2619;
  else return 2;
  return 0;
}
nvmlReturn_t nvmlDeviceGetPcieThroughput(void *dev, int counter, unsigned int *kbs) {
  (void)dev;
  (void)counter;
  (void)kbs;
  g_pcie++;
  return 3; /* NOT_SUPPORTED, as in many VMs */
}
nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(void *dev, unsigned long long *bits) {
  (void)dev;
  *bits = 0x4 | 0x1;
  return 0;
}
nvmlReturn_t nvmlDeviceGetTotalEccErrors(void *dev, int type, int counter, unsigned long long *n) {
  (void)dev;
  if (counter != 0) return 2;
  *n = type == 0 ? 3 : 0;
  return 0;
}
nvmlReturn_t nvmlEventSetCreate(void **set) {
  *set = &g_set;
  return 0;
}
nvmlReturn_t nvmlDeviceRegisterEvents(void *dev, unsigned long long types, void *set) {
  (void)dev;
  (void)set;
  return types == 0x8 ? 0 : 2;
}
/* One XID 79 on the second read's poll, then none. */
nvmlReturn_t nvmlEventSetWait_v2(void *set, event_t *ev, unsigned int timeout_ms) {
  static int delivered;
  (void)set;
  if (timeout_ms != 0) g_waits_nonzero++;
  if (g_reads == 2 && !delivered) {
    delivered = 1;
    ev->device = &g_dev;
    ev->eventType = 0x8;
    ev->eventData = 79;
    ev->gpuInstanceId = ev->computeInstanceId = 0xFFFFFFFFu;
    return 0;
  }
  return 10; /* TIMEOUT */
}
nvmlReturn_t nvmlEventSetFree(void *set) {
  (void)set;
  return 0;
}
nvmlReturn_t nvmlSystemGetDriverVersion(char *v, unsigned int len) {
  strncpy(v, "550.54.15", len);
  return 0;
}
nvmlReturn_t nvmlSystemGetNVMLVersion(char *v, unsigned int len) {
  strncpy(v, "12.550.54.15", len);
  return 0;
}
nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) {
  *v = 12040;
  return 0;
}
