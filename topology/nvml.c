/* NVML loaded at run time: the library (reference counted), its versions, and the GPUs it sees merged into a live topology. */
#include "topology/nvml.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/envvar.h"
#include "common/log.h"
#include "common/safefile.h"
#include "common/util.h"
#include "topology/busid.h"
#include "topology/nvml_api.h"

nvml_api_t nvml__api;

const char *nvml__err(nvml_ret_t r) {
  static char buf[32];
  if (nvml__api.error_string) return nvml__api.error_string(r);
  snprintf(buf, sizeof buf, "NVML error %d", r);
  return buf;
}

/* dlsym of a, else of b (older or newer names of one function); NULL when neither exists. */
static void *sym(const char *a, const char *b) {
  void *p = dlsym(nvml__api.lib, a);
  if (!p && b) p = dlsym(nvml__api.lib, b);
  return p;
}

int nvml_open(char *why, size_t whylen) {
  if (nvml__api.refs > 0) {
    nvml__api.refs++;
    return 0;
  }
  const char *name = envvar_get(ENVVAR_NVML_LIB);
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
  memset(&nvml__api, 0, sizeof nvml__api);
  nvml__api.lib = lib;
  /* dlsym gives a void*; POSIX guarantees it holds a function's address, copied bit for bit. */
#define LOAD(field, a, b)                                                                        \
  do {                                                                                           \
    void *p_ = sym(a, b);                                                                        \
    memcpy(&nvml__api.field, &p_, sizeof p_);                                                    \
  } while (0)
  LOAD(init, "nvmlInit_v2", "nvmlInit");
  LOAD(shutdown, "nvmlShutdown", NULL);
  LOAD(error_string, "nvmlErrorString", NULL);
  LOAD(driver_version, "nvmlSystemGetDriverVersion", NULL);
  LOAD(nvml_version, "nvmlSystemGetNVMLVersion", NULL);
  LOAD(cuda_driver_version, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
  LOAD(count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
  LOAD(by_index, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
  LOAD(by_pci, "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetHandleByPciBusId");
  LOAD(pci_info, "nvmlDeviceGetPciInfo_v3", NULL);
  LOAD(name, "nvmlDeviceGetName", NULL);
  LOAD(uuid, "nvmlDeviceGetUUID", NULL);
  LOAD(utilization, "nvmlDeviceGetUtilizationRates", NULL);
  LOAD(memory, "nvmlDeviceGetMemoryInfo", NULL);
  LOAD(power, "nvmlDeviceGetPowerUsage", NULL);
  LOAD(temperature, "nvmlDeviceGetTemperature", NULL);
  LOAD(clock, "nvmlDeviceGetClockInfo", NULL);
  LOAD(pcie, "nvmlDeviceGetPcieThroughput", NULL);
  /* renamed "clock event reasons" in CUDA 12.2's NVML; the old name stays for older drivers */
  LOAD(clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons",
       "nvmlDeviceGetCurrentClocksThrottleReasons");
  LOAD(ecc, "nvmlDeviceGetTotalEccErrors", NULL);
  LOAD(event_set_create, "nvmlEventSetCreate", NULL);
  LOAD(register_events, "nvmlDeviceRegisterEvents", NULL);
  LOAD(event_set_wait, "nvmlEventSetWait_v2", "nvmlEventSetWait");
  LOAD(event_set_free, "nvmlEventSetFree", NULL);
  LOAD(retired_pages, "nvmlDeviceGetRetiredPages", NULL);
  LOAD(retired_pending, "nvmlDeviceGetRetiredPagesPendingStatus", NULL);
  LOAD(remapped_rows, "nvmlDeviceGetRemappedRows", NULL);
  LOAD(nvlink_state, "nvmlDeviceGetNvLinkState", NULL);
  LOAD(nvlink_version, "nvmlDeviceGetNvLinkVersion", NULL);
  LOAD(gpm_support, "nvmlGpmQueryDeviceSupport", NULL);
  LOAD(gpm_alloc, "nvmlGpmSampleAlloc", NULL);
  LOAD(gpm_free, "nvmlGpmSampleFree", NULL);
  LOAD(gpm_sample, "nvmlGpmSampleGet", NULL);
  LOAD(gpm_metrics, "nvmlGpmMetricsGet", NULL);
#undef LOAD
  /* The least every user needs; everything else is optional and read as "not supported". */
  if (!nvml__api.init || !nvml__api.shutdown || (!nvml__api.by_pci && !nvml__api.by_index)) {
    snprintf(why, whylen, "%s lacks nvmlInit_v2/nvmlDeviceGetHandleByIndex (too old?)", name);
    dlclose(lib);
    memset(&nvml__api, 0, sizeof nvml__api);
    return GPL_ENOTSUP;
  }
  nvml_ret_t r = nvml__api.init();
  if (r != NVML_SUCCESS) {
    snprintf(why, whylen, "nvmlInit failed: %s", nvml__err(r));
    dlclose(lib);
    memset(&nvml__api, 0, sizeof nvml__api);
    return GPL_ENOTSUP;
  }
  nvml__api.refs = 1;
  return 0;
}

void nvml_close(void) {
  if (nvml__api.refs <= 0 || --nvml__api.refs > 0) return;
  nvml__api.shutdown();
  dlclose(nvml__api.lib);
  memset(&nvml__api, 0, sizeof nvml__api);
}

int nvml_versions(char *nvml, size_t nlen, char *driver, size_t dlen, int *cuda_driver) {
  char why[256];
  if (nvml && nlen) nvml[0] = 0;
  if (driver && dlen) driver[0] = 0;
  if (cuda_driver) *cuda_driver = 0;
  if (nvml_open(why, sizeof why) < 0) {
    if (nvml && nlen) util_strlcpy(nvml, why, nlen);
    return GPL_ENOTSUP;
  }
  char buf[96];
  if (nvml && nvml__api.nvml_version && nvml__api.nvml_version(buf, sizeof buf) == NVML_SUCCESS)
    util_strlcpy(nvml, buf, nlen);
  if (driver && nvml__api.driver_version && nvml__api.driver_version(buf, sizeof buf) == NVML_SUCCESS)
    util_strlcpy(driver, buf, dlen);
  if (cuda_driver && nvml__api.cuda_driver_version) nvml__api.cuda_driver_version(cuda_driver);
  nvml_close();
  return 0;
}

/* ---- The GPU list -------------------------------------------------------------------------- */

int nvml_list(nvml_gpu_t **out) {
  *out = NULL;
  char why[256];
  if (nvml_open(why, sizeof why) < 0) {
    LOG_DEBUG(TOPO, "NVML not available (%s): GPUs from hwloc's PCI devices only", why);
    return 0;
  }
  int n = 0;
  unsigned count = 0;
  nvml_ret_t r = NVML_ERROR_FUNCTION_NOT_FOUND;
  if (!nvml__api.count || !nvml__api.by_index || !nvml__api.pci_info ||
      (r = nvml__api.count(&count)) != NVML_SUCCESS || count == 0) {
    if (r != NVML_SUCCESS) LOG_INFO(TOPO, "NVML device count failed: %s", nvml__err(r));
    nvml_close();
    return 0;
  }
  nvml_gpu_t *v = calloc(count, sizeof *v);
  if (!v) {
    nvml_close();
    return GPL_ENOMEM;
  }
  for (unsigned i = 0; i < count; i++) {
    nvml_handle_t dev;
    nvml_pci_info_t pci;
    memset(&pci, 0, sizeof pci);
    if ((r = nvml__api.by_index(i, &dev)) != NVML_SUCCESS || (r = nvml__api.pci_info(dev, &pci)) != NVML_SUCCESS) {
      LOG_WARN("NVML device %u: %s; skipped", i, nvml__err(r));
      continue;
    }
    nvml_gpu_t *g = &v[n];
    g->index = (int)i;
    pci.bus_id[sizeof pci.bus_id - 1] = 0;
    /* The numeric fields are authoritative; the string is only a fallback. */
    g->domain = pci.domain, g->bus = pci.bus, g->dev = pci.device, g->func = 0;
    unsigned d, b, s, f;
    if (topo_parse_busid(pci.bus_id, &d, &b, &s, &f) == 0) g->func = f;
    snprintf(g->pci, sizeof g->pci, "%04x:%02x:%02x.%x", g->domain, g->bus, g->dev, g->func);
    if (!nvml__api.name || nvml__api.name(dev, g->name, sizeof g->name) != NVML_SUCCESS) g->name[0] = 0;
    if (!nvml__api.uuid || nvml__api.uuid(dev, g->uuid, sizeof g->uuid) != NVML_SUCCESS) g->uuid[0] = 0;
    n++;
  }
  nvml_close();
  if (n == 0) free(v);
  else *out = v;
  return n;
}

/* Locality of a GPU that hwloc did not see: sysfs's local_cpulist / numa_node, else everything. */
static int sysfs_locality(topo_t *t, topo_gpu_t *g) {
  hwloc_obj_t root = hwloc_get_root_obj(t->hw);
  g->cpuset = hwloc_bitmap_dup(root->cpuset);
  g->nodeset = hwloc_bitmap_dup(root->nodeset);
  ALLOCCHECK(g->cpuset);
  ALLOCCHECK(g->nodeset);
  char path[256], *text = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/local_cpulist", g->pci);
  if (safefile_read_text(path, &text, &len) == 0) {
    hwloc_bitmap_t s = hwloc_bitmap_alloc();
    if (s && hwloc_bitmap_list_sscanf(s, util_trim(text)) == 0 && !hwloc_bitmap_iszero(s)) {
      hwloc_bitmap_and(s, s, root->cpuset);
      if (!hwloc_bitmap_iszero(s)) hwloc_bitmap_copy(g->cpuset, s);
    }
    hwloc_bitmap_free(s);
    free(text);
  }
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", g->pci);
  if (safefile_read_text(path, &text, &len) == 0) {
    int node = atoi(text);
    if (node >= 0 && hwloc_bitmap_isset(root->nodeset, (unsigned)node)) hwloc_bitmap_only(g->nodeset, (unsigned)node);
    free(text);
  }
  if (hwloc_bitmap_list_asprintf(&g->cpus, g->cpuset) < 0) return GPL_ENOMEM;
  int i = hwloc_bitmap_first(g->nodeset);
  while (i >= 0 && g->nnuma < TOPO_MAX_NUMA) {
    g->numa[g->nnuma++] = i;
    i = hwloc_bitmap_next(g->nodeset, i);
  }
  return 0;
}

int nvml_probe(topo_t *t, int *cap) {
  nvml_gpu_t *v = NULL;
  int n = nvml_list(&v);
  if (n < 0) return n;
  t->nvml = n > 0;
  int rc = 0;
  for (int i = 0; i < n; i++) {
    topo_gpu_t *g = NULL;
    for (int k = 0; k < t->ngpus; k++) {
      topo_gpu_t *c = &t->gpus[k];
      if (c->domain == v[i].domain && c->bus == v[i].bus && c->dev == v[i].dev && c->func == v[i].func) g = c;
    }
    if (!g) {
      LOG_INFO(TOPO, "NVML GPU %d at %s is not among hwloc's PCI devices: locality from sysfs", v[i].index, v[i].pci);
      if (t->ngpus == *cap) {
        int ncap = *cap ? *cap * 2 : 8;
        topo_gpu_t *nv = realloc(t->gpus, sizeof *nv * (size_t)ncap);
        if (!nv) {
          rc = GPL_ENOMEM;
          break;
        }
        t->gpus = nv, *cap = ncap;
      }
      g = &t->gpus[t->ngpus++];
      memset(g, 0, sizeof *g);
      g->domain = v[i].domain, g->bus = v[i].bus, g->dev = v[i].dev, g->func = v[i].func;
      g->vendor_id = 0x10de;
      util_strlcpy(g->pci, v[i].pci, sizeof g->pci);
      util_strlcpy(g->osdevs, "nvml", sizeof g->osdevs);
      CHECKGOTO(sysfs_locality(t, g), rc, out);
    }
    g->nvml_index = v[i].index;
    if (v[i].name[0]) util_strlcpy(g->model, v[i].name, sizeof g->model);
    if (v[i].uuid[0]) util_strlcpy(g->uuid, v[i].uuid, sizeof g->uuid);
  }
  /* In a container hwloc sees every GPU of the host in sysfs, but CUDA (and NVML) only the
   * container's: keep only what NVML reports, so that GPU indexes are CUDA's. */
  if (rc == 0 && n > 0) {
    int k = 0;
    for (int j = 0; j < t->ngpus; j++) {
      topo_gpu_t *g = &t->gpus[j];
      if (g->nvml_index < 0) {
        LOG_INFO(TOPO, "GPU %s is not visible to NVML (container, vfio or hidden): not used", g->pci);
        free(g->cpus);
        hwloc_bitmap_free(g->cpuset);
        hwloc_bitmap_free(g->nodeset);
        continue;
      }
      if (k != j) t->gpus[k] = *g;
      k++;
    }
    t->ngpus = k;
  }
out:
  free(v);
  return rc;
}
