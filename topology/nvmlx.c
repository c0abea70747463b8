/* NVML loaded at run time: list GPUs by bus id and merge them into a live topology. */
#include "topology/nvmlx.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/log.h"
#include "common/util.h"

/* The NVML ABI pieces used here (nvml.h, stable since CUDA 11). */
typedef int nvml_return_t; /* nvmlReturn_t; 0 = NVML_SUCCESS */
typedef struct nvml_device_st *nvml_device_t;
typedef struct nvml_pci_info_s {
  char bus_id_legacy[16];
  unsigned int domain, bus, device, pci_device_id, pci_subsystem_id;
  char bus_id[32];
} nvml_pci_info_t; /* nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3 */

typedef struct nvml_api_s {
  nvml_return_t (*init)(void);
  nvml_return_t (*shutdown)(void);
  nvml_return_t (*count)(unsigned int *);
  nvml_return_t (*handle)(unsigned int, nvml_device_t *);
  nvml_return_t (*pci)(nvml_device_t, nvml_pci_info_t *);
  nvml_return_t (*name)(nvml_device_t, char *, unsigned int);
  nvml_return_t (*uuid)(nvml_device_t, char *, unsigned int);
  const char *(*error)(nvml_return_t);
} nvml_api_t;

static int load_api(void *lib, nvml_api_t *api) {
  /* dlsym returns void*; the cast through a union keeps -Wpedantic-style warnings quiet. */
#define NVML_SYM(field, sym)                                                                     \
  do {                                                                                           \
    void *p_ = dlsym(lib, sym);                                                                  \
    if (!p_) {                                                                                   \
      LOG_DEBUG(TOPO, "NVML: %s missing", sym);                                                  \
      return -1;                                                                                 \
    }                                                                                            \
    memcpy(&api->field, &p_, sizeof p_);                                                         \
  } while (0)
  NVML_SYM(init, "nvmlInit_v2");
  NVML_SYM(shutdown, "nvmlShutdown");
  NVML_SYM(count, "nvmlDeviceGetCount_v2");
  NVML_SYM(handle, "nvmlDeviceGetHandleByIndex_v2");
  NVML_SYM(pci, "nvmlDeviceGetPciInfo_v3");
  NVML_SYM(name, "nvmlDeviceGetName");
  NVML_SYM(uuid, "nvmlDeviceGetUUID");
  NVML_SYM(error, "nvmlErrorString");
#undef NVML_SYM
  return 0;
}

int nvmlx_list(nvmlx_gpu_t **out) {
  *out = NULL;
  void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    LOG_DEBUG(TOPO, "NVML not available (%s): GPUs from hwloc's PCI devices only", dlerror());
    return 0;
  }
  nvml_api_t api;
  int n = 0;
  if (load_api(lib, &api) < 0) goto done;
  nvml_return_t r = api.init();
  if (r != 0) {
    LOG_INFO(TOPO, "NVML init failed: %s", api.error(r));
    goto done;
  }
  unsigned count = 0;
  if ((r = api.count(&count)) != 0 || count == 0) {
    if (r != 0) LOG_INFO(TOPO, "NVML device count failed: %s", api.error(r));
    api.shutdown();
    goto done;
  }
  nvmlx_gpu_t *v = calloc(count, sizeof *v);
  if (!v) {
    api.shutdown();
    dlclose(lib);
    return GPL_ENOMEM;
  }
  for (unsigned i = 0; i < count; i++) {
    nvml_device_t dev;
    nvml_pci_info_t pci;
    memset(&pci, 0, sizeof pci);
    if ((r = api.handle(i, &dev)) != 0 || (r = api.pci(dev, &pci)) != 0) {
      LOG_WARN("NVML device %u: %s; skipped", i, api.error(r));
      continue;
    }
    nvmlx_gpu_t *g = &v[n];
    g->index = (int)i;
    pci.bus_id[sizeof pci.bus_id - 1] = 0;
    /* The numeric fields are authoritative; the string is only a fallback. */
    g->domain = pci.domain, g->bus = pci.bus, g->dev = pci.device, g->func = 0;
    unsigned d, b, s, f;
    if (topo_parse_busid(pci.bus_id, &d, &b, &s, &f) == 0) g->func = f;
    snprintf(g->pci, sizeof g->pci, "%04x:%02x:%02x.%x", g->domain, g->bus, g->dev, g->func);
    if (api.name(dev, g->name, sizeof g->name) != 0) g->name[0] = 0;
    if (api.uuid(dev, g->uuid, sizeof g->uuid) != 0) g->uuid[0] = 0;
    n++;
  }
  api.shutdown();
  if (n == 0) free(v);
  else *out = v;
done:
  dlclose(lib);
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
  if (util_read_file(path, &text, &len) == 0) {
    hwloc_bitmap_t s = hwloc_bitmap_alloc();
    if (s && hwloc_bitmap_list_sscanf(s, util_trim(text)) == 0 && !hwloc_bitmap_iszero(s)) {
      hwloc_bitmap_and(s, s, root->cpuset);
      if (!hwloc_bitmap_iszero(s)) hwloc_bitmap_copy(g->cpuset, s);
    }
    hwloc_bitmap_free(s);
    free(text);
  }
  snprintf(path, sizeof path, "/sys/bus/pci/devices/%s/numa_node", g->pci);
  if (util_read_file(path, &text, &len) == 0) {
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

int nvmlx_probe(topo_t *t, int *cap) {
  nvmlx_gpu_t *v = NULL;
  int n = nvmlx_list(&v);
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
