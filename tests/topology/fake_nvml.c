/* A stand-in libnvidia-ml.so.1 for tests: GPUs from FAKE_NVML_GPUS ("busid|name|uuid;..."), init fails with FAKE_NVML_FAIL=1. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The NVML ABI as nvmlx.c uses it (nvml.h: nvmlReturn_t, nvmlPciInfo_t v3). */
typedef struct fake_pci_s {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
} fake_pci_t;

int nvmlInit_v2(void);
int nvmlShutdown(void);
int nvmlDeviceGetCount_v2(unsigned int *n);
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev);
int nvmlDeviceGetPciInfo_v3(void *dev, fake_pci_t *pci);
int nvmlDeviceGetName(void *dev, char *name, unsigned int len);
int nvmlDeviceGetUUID(void *dev, char *uuid, unsigned int len);
const char *nvmlErrorString(int r);

/* Field f (0 busid, 1 name, 2 uuid) of GPU i, into out; 0 or -1 when there is no such GPU. */
static int field(unsigned i, int f, char *out, size_t len) {
  const char *s = getenv("FAKE_NVML_GPUS");
  if (!s) return -1;
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

int nvmlInit_v2(void) {
  const char *fail = getenv("FAKE_NVML_FAIL");
  return fail && *fail == '1' ? 9 /* NVML_ERROR_DRIVER_NOT_LOADED */ : 0;
}
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned int *n) {
  char buf[64];
  *n = 0;
  while (field(*n, 0, buf, sizeof buf) == 0 && buf[0]) (*n)++;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **dev) {
  *dev = (void *)(uintptr_t)(i + 1);
  return 0;
}
int nvmlDeviceGetPciInfo_v3(void *dev, fake_pci_t *pci) {
  unsigned i = (unsigned)(uintptr_t)dev - 1;
  memset(pci, 0, sizeof *pci);
  if (field(i, 0, pci->bus_id, sizeof pci->bus_id) < 0) return 2;
  unsigned d, b, s, f;
  if (sscanf(pci->bus_id, "%x:%x:%x.%x", &d, &b, &s, &f) != 4) return 2;
  pci->domain = d, pci->bus = b, pci->device = s;
  snprintf(pci->bus_id_legacy, sizeof pci->bus_id_legacy, "%04x:%02x:%02x.%x", d, b, s, f);
  return 0;
}
int nvmlDeviceGetName(void *dev, char *name, unsigned int len) {
  return field((unsigned)(uintptr_t)dev - 1, 1, name, len) == 0 ? 0 : 2;
}
int nvmlDeviceGetUUID(void *dev, char *uuid, unsigned int len) {
  return field((unsigned)(uintptr_t)dev - 1, 2, uuid, len) == 0 ? 0 : 2;
}
const char *nvmlErrorString(int r) { return r == 9 ? "Driver Not Loaded" : r ? "Unknown Error" : "Success"; }
