/* The monitor's NVML source: one GPU's readings through the project's NVML loader (topology/nvml.h), as monitor samples. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/util.h"
#include "launcher/monitor/monitor.h"
#include "topology/busid.h"
#include "topology/nvml.h"

typedef struct nvml_src_s {
  nvml_dev_t *dev;
  double t0;
  mon_ident_t ident; /* index -1 when NVML's list did not name the GPU */
} nvml_src_t;

/* The reading's fields, one by one: the two headers name them after their own modules. */
static void to_sample(const nvml_reading_t *r, mon_sample_t *s) {
  static const struct {
    unsigned nvml, mon;
  } bits[] = {{NVML_HAVE_BUSY, MON_HAVE_BUSY | MON_HAVE_MEMUTIL}, {NVML_HAVE_MEM, MON_HAVE_MEM},
              {NVML_HAVE_POWER, MON_HAVE_POWER},     {NVML_HAVE_TEMP, MON_HAVE_TEMP},
              {NVML_HAVE_CLOCKS, MON_HAVE_CLOCKS},   {NVML_HAVE_PCIE, MON_HAVE_PCIE},
              {NVML_HAVE_THROTTLE, MON_HAVE_THROTTLE}, {NVML_HAVE_ECC, MON_HAVE_ECC},
              {NVML_HAVE_SM_ACTIVE, MON_HAVE_SM_ACTIVE}};
  for (size_t i = 0; i < GPL_ARRAY_LEN(bits); i++)
    if (r->have & bits[i].nvml) s->have |= bits[i].mon;
  s->busy_pct = r->busy_pct;
  s->mem_util_pct = r->mem_util_pct;
  s->sm_active_pct = r->sm_active_pct;
  s->sm_occupancy_pct = r->sm_occupancy_pct;
  s->mem_used = r->mem_used;
  s->mem_total = r->mem_total;
  s->power_w = r->power_w;
  s->temp_c = r->temp_c;
  s->sm_clock_mhz = r->sm_clock_mhz;
  s->mem_clock_mhz = r->mem_clock_mhz;
  s->pcie_rx_kbs = r->pcie_rx_kbs;
  s->pcie_tx_kbs = r->pcie_tx_kbs;
  s->throttle = r->throttle;
  s->ecc_corrected = r->ecc_corrected;
  s->ecc_uncorrected = r->ecc_uncorrected;
  s->nxid = r->nxid;
  s->xid = r->xid;
}

static int nvml_read(mon_source_t *src, mon_sample_t *s) {
  nvml_src_t *n = src->state;
  s->t = util_now() - n->t0;
  nvml_reading_t r;
  int rc = nvml_dev_read(n->dev, &r);
  if (rc < 0) return rc;
  to_sample(&r, s);
  return 0;
}

static void nvml_src_close(mon_source_t *src) {
  nvml_src_t *n = src->state;
  if (n) {
    nvml_dev_close(n->dev);
    free(n);
  }
  free(src);
}

static int nvml_ident(mon_source_t *src, mon_ident_t *out) {
  const nvml_src_t *n = src->state;
  *out = n->ident;
  return n->ident.index >= 0 ? 0 : GPL_ENOGPU;
}

static const mon_source_ops_t nvml_ops = {"nvml", nvml_read, nvml_src_close, nvml_ident};

/* The opened GPU's index, UUID, bus id and model from NVML's list, found by bus id when given,
 * else by index. Read once: they are labels, not readings. */
static void find_ident(const char *pci_bus_id, int index, mon_ident_t *id) {
  memset(id, 0, sizeof *id);
  id->index = -1;
  unsigned d = 0, b = 0, s = 0, f = 0;
  int by_pci = pci_bus_id && topo_parse_busid(pci_bus_id, &d, &b, &s, &f) == 0;
  nvml_gpu_t *v = NULL;
  int n = nvml_list(&v);
  for (int i = 0; i < n; i++) {
    const nvml_gpu_t *g = &v[i];
    if (by_pci ? !(g->domain == d && g->bus == b && g->dev == s && g->func == f) : g->index != index)
      continue;
    id->index = g->index;
    util_strlcpy(id->uuid, g->uuid, sizeof id->uuid);
    util_strlcpy(id->model, g->name, sizeof id->model);
    snprintf(id->pci, sizeof id->pci, "%08X:%02X:%02X.%X", g->domain, g->bus, g->dev, g->func);
    break;
  }
  free(v);
}

int mon_nvml_open(const char *pci_bus_id, int index, mon_source_t **out, char *why, size_t whylen) {
  *out = NULL;
  nvml_dev_t *dev = NULL;
  CHECK(nvml_dev_open(pci_bus_id, index, &dev, why, whylen));
  nvml_src_t *n = calloc(1, sizeof *n);
  mon_source_t *src = calloc(1, sizeof *src);
  if (!n || !src) {
    free(n);
    free(src);
    nvml_dev_close(dev);
    return GPL_ENOMEM;
  }
  n->dev = dev;
  n->t0 = util_now();
  find_ident(pci_bus_id, index, &n->ident);
  src->ops = &nvml_ops;
  src->state = n;
  *out = src;
  return 0;
}
