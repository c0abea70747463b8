/* One GPU through NVML: its readings (busy time, GPM SM activity, memory, power, clocks, ECC, XID events) and its health (retired pages or remapped rows, NVLink). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/log.h"
#include "topology/nvml.h"
#include "topology/nvml_api.h"

struct nvml_dev_s {
  nvml_handle_t h;
  nvml_event_set_t events; /* XID events; NULL when the device or permissions do not allow them */
  unsigned unsupported;    /* NVML_HAVE_* fields NVML said NOT_SUPPORTED for: not asked again */
  int lost_logged;
  /* GPM: two sample buffers, the older one holding the previous reading's counters. */
  int gpm;                 /* 1: supported, buffers allocated */
  int gpm_have_prev;
  nvml_gpm_sample_t gpm_prev, gpm_cur;
  nvml_gpm_get_t *gpm_get;
};

/* 1 when the value is good; a field the board does not have is remembered as unsupported. */
static int field_ok(nvml_dev_t *d, unsigned bit, nvml_ret_t r) {
  if (r == NVML_SUCCESS) return 1;
  if (r == NVML_ERROR_NOT_SUPPORTED || r == NVML_ERROR_NO_PERMISSION) d->unsupported |= bit;
  return 0;
}

/* 1 when the field may be asked: the driver has the function and the board did not refuse it. */
static int askable(const nvml_dev_t *d, unsigned bit, int have_fn) {
  return have_fn && !(d->unsupported & bit);
}

static void gpm_setup(nvml_dev_t *d) {
  const nvml_api_t *a = &nvml__api;
  if (!a->gpm_support || !a->gpm_alloc || !a->gpm_free || !a->gpm_sample || !a->gpm_metrics) return;
  nvml_gpm_support_t sup = {NVML_GPM_SUPPORT_VERSION, 0};
  if (a->gpm_support(d->h, &sup) != NVML_SUCCESS || !sup.supported) return;
  d->gpm_get = calloc(1, sizeof *d->gpm_get);
  if (!d->gpm_get) return;
  if (a->gpm_alloc(&d->gpm_prev) != NVML_SUCCESS) goto fail;
  if (a->gpm_alloc(&d->gpm_cur) != NVML_SUCCESS) {
    a->gpm_free(d->gpm_prev);
    goto fail;
  }
  d->gpm = 1;
  return;
fail:
  free(d->gpm_get);
  d->gpm_get = NULL;
}

int nvml_dev_open(const char *pci, int index, nvml_dev_t **out, char *why, size_t whylen) {
  *out = NULL;
  if (whylen) why[0] = 0;
  CHECK(nvml_open(why, whylen));
  const nvml_api_t *a = &nvml__api;
  nvml_handle_t h = NULL;
  nvml_ret_t r;
  if (pci && *pci && a->by_pci) r = a->by_pci(pci, &h);
  else if (a->by_index && index >= 0) r = a->by_index((unsigned)index, &h);
  else r = NVML_ERROR_NOT_FOUND;
  if (r != NVML_SUCCESS) {
    if (pci && *pci) snprintf(why, whylen, "NVML has no GPU at PCI bus id %s: %s", pci, nvml__err(r));
    else snprintf(why, whylen, "NVML has no GPU %d: %s", index, nvml__err(r));
    nvml_close();
    return GPL_ENOGPU;
  }
  nvml_dev_t *d = calloc(1, sizeof *d);
  if (!d) {
    nvml_close();
    return GPL_ENOMEM;
  }
  d->h = h;
  if (a->event_set_create && a->register_events && a->event_set_wait && a->event_set_free &&
      a->event_set_create(&d->events) == NVML_SUCCESS) {
    r = a->register_events(h, NVML_EVENT_TYPE_XID_CRITICAL_ERROR, d->events);
    if (r != NVML_SUCCESS) {
      LOG_DEBUG(MON, "XID events not available: %s", nvml__err(r));
      a->event_set_free(d->events);
      d->events = NULL;
    }
  } else {
    d->events = NULL;
  }
  gpm_setup(d);
  *out = d;
  return 0;
}

void nvml_dev_close(nvml_dev_t *d) {
  if (!d) return;
  if (d->events) nvml__api.event_set_free(d->events);
  if (d->gpm) {
    nvml__api.gpm_free(d->gpm_prev);
    nvml__api.gpm_free(d->gpm_cur);
  }
  free(d->gpm_get);
  free(d);
  nvml_close();
}

/* SM activity between the previous reading and this one: sample now, compute the metrics over
 * the two samples, keep this one as the next reading's start. */
static void read_gpm(nvml_dev_t *d, nvml_reading_t *r) {
  const nvml_api_t *a = &nvml__api;
  if (!d->gpm || (d->unsupported & NVML_HAVE_SM_ACTIVE)) return;
  nvml_ret_t rc = a->gpm_sample(d->h, d->gpm_cur);
  if (!field_ok(d, NVML_HAVE_SM_ACTIVE, rc)) {
    d->gpm_have_prev = 0;
    return;
  }
  if (d->gpm_have_prev) {
    nvml_gpm_get_t *g = d->gpm_get;
    memset(g, 0, sizeof *g);
    g->version = NVML_GPM_METRICS_GET_VERSION;
    g->num_metrics = 2;
    g->sample1 = d->gpm_prev;
    g->sample2 = d->gpm_cur;
    g->metrics[0].metric_id = NVML_GPM_METRIC_SM_UTIL;
    g->metrics[1].metric_id = NVML_GPM_METRIC_SM_OCCUPANCY;
    rc = a->gpm_metrics(g);
    if (field_ok(d, NVML_HAVE_SM_ACTIVE, rc) && g->metrics[0].ret == NVML_SUCCESS) {
      r->have |= NVML_HAVE_SM_ACTIVE;
      r->sm_active_pct = g->metrics[0].value;
      r->sm_occupancy_pct = g->metrics[1].ret == NVML_SUCCESS ? g->metrics[1].value : 0;
    } else if (rc == NVML_SUCCESS) {
      LOG_DEBUG(MON, "GPM SM_UTIL: %s", nvml__err(g->metrics[0].ret));
    }
  }
  /* The sample just taken starts the next interval. */
  nvml_gpm_sample_t t = d->gpm_prev;
  d->gpm_prev = d->gpm_cur;
  d->gpm_cur = t;
  d->gpm_have_prev = 1;
}

int nvml_dev_read(nvml_dev_t *d, nvml_reading_t *r) {
  const nvml_api_t *a = &nvml__api;
  memset(r, 0, sizeof *r);
  /* Asked on every reading, supported or not: it is also how a lost GPU shows. */
  if (a->utilization) {
    nvml_utilization_t u;
    nvml_ret_t rc = a->utilization(d->h, &u);
    if (rc == NVML_ERROR_GPU_IS_LOST) {
      if (!d->lost_logged)
        LOG_WARN("NVML: the GPU has fallen off the bus (GPU_IS_LOST); see the kernel log for XID 79");
      d->lost_logged = 1;
      return GPL_ENOGPU;
    }
    if (field_ok(d, NVML_HAVE_BUSY, rc)) {
      r->have |= NVML_HAVE_BUSY;
      r->busy_pct = u.gpu;
      r->mem_util_pct = u.memory;
    } else if (!(d->unsupported & NVML_HAVE_BUSY)) {
      LOG_DEBUG(MON, "nvmlDeviceGetUtilizationRates: %s", nvml__err(rc));
    }
  }
  read_gpm(d, r);
  nvml_memory_t mem;
  if (askable(d, NVML_HAVE_MEM, a->memory != NULL) && field_ok(d, NVML_HAVE_MEM, a->memory(d->h, &mem))) {
    r->have |= NVML_HAVE_MEM;
    r->mem_used = mem.used;
    r->mem_total = mem.total;
  }
  unsigned v = 0, w = 0;
  if (askable(d, NVML_HAVE_POWER, a->power != NULL) && field_ok(d, NVML_HAVE_POWER, a->power(d->h, &v))) {
    r->have |= NVML_HAVE_POWER;
    r->power_w = v / 1000.0;
  }
  if (askable(d, NVML_HAVE_TEMP, a->temperature != NULL) &&
      field_ok(d, NVML_HAVE_TEMP, a->temperature(d->h, NVML_TEMPERATURE_GPU, &v))) {
    r->have |= NVML_HAVE_TEMP;
    r->temp_c = v;
  }
  if (askable(d, NVML_HAVE_CLOCKS, a->clock != NULL) &&
      field_ok(d, NVML_HAVE_CLOCKS, a->clock(d->h, NVML_CLOCK_SM, &v))) {
    r->have |= NVML_HAVE_CLOCKS;
    r->sm_clock_mhz = v;
    if (a->clock(d->h, NVML_CLOCK_MEM, &w) == NVML_SUCCESS) r->mem_clock_mhz = w;
  }
  /* Each PCIe call counts bytes over 20 ms: 40 ms per reading, acceptable every few seconds. */
  if (askable(d, NVML_HAVE_PCIE, a->pcie != NULL) &&
      field_ok(d, NVML_HAVE_PCIE, a->pcie(d->h, NVML_PCIE_UTIL_RX_BYTES, &v)) &&
      field_ok(d, NVML_HAVE_PCIE, a->pcie(d->h, NVML_PCIE_UTIL_TX_BYTES, &w))) {
    r->have |= NVML_HAVE_PCIE;
    r->pcie_rx_kbs = v;
    r->pcie_tx_kbs = w;
  }
  unsigned long long bits = 0, c = 0, e = 0;
  if (askable(d, NVML_HAVE_THROTTLE, a->clock_reasons != NULL) &&
      field_ok(d, NVML_HAVE_THROTTLE, a->clock_reasons(d->h, &bits))) {
    r->have |= NVML_HAVE_THROTTLE;
    r->throttle = bits;
  }
  if (askable(d, NVML_HAVE_ECC, a->ecc != NULL) &&
      field_ok(d, NVML_HAVE_ECC, a->ecc(d->h, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC, &c)) &&
      field_ok(d, NVML_HAVE_ECC, a->ecc(d->h, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, &e))) {
    r->have |= NVML_HAVE_ECC;
    r->ecc_corrected = c;
    r->ecc_uncorrected = e;
  }
  /* XID events: poll with a zero timeout, a bounded number per reading, so it never blocks. */
  for (int i = 0; d->events && i < 32; i++) {
    nvml_event_data_t ev;
    memset(&ev, 0, sizeof ev);
    if (a->event_set_wait(d->events, &ev, 0) != NVML_SUCCESS) break; /* TIMEOUT: none left */
    if (ev.event_type & NVML_EVENT_TYPE_XID_CRITICAL_ERROR) {
      r->nxid++;
      r->xid = (int)ev.event_data;
    }
  }
  /* A partial reading (MIG instances answer NOT_SUPPORTED for utilisation) still counts. */
  return r->have || r->nxid ? 0 : GPL_ENOTSUP;
}

/* Retired pages of one cause: the count NVML reports (INSUFFICIENT_SIZE also says it). */
static nvml_ret_t retired_count(nvml_handle_t h, int cause, unsigned *n) {
  unsigned long long addr[256];
  unsigned count = (unsigned)(sizeof addr / sizeof addr[0]);
  nvml_ret_t r = nvml__api.retired_pages(h, cause, &count, addr);
  if (r == NVML_SUCCESS || r == NVML_ERROR_INSUFFICIENT_SIZE) {
    *n = count;
    return NVML_SUCCESS;
  }
  return r;
}

int nvml_dev_health(nvml_dev_t *d, nvml_health_t *h) {
  const nvml_api_t *a = &nvml__api;
  memset(h, 0, sizeof *h);
  nvml_ret_t r;
  /* Ampere and later remap rows instead of retiring pages: ask for that first. */
  unsigned corr = 0, unc = 0, pending = 0, failed = 0;
  if (a->remapped_rows && (r = a->remapped_rows(d->h, &corr, &unc, &pending, &failed)) == NVML_SUCCESS) {
    h->mem_kind = 2;
    h->remap_corr = corr, h->remap_unc = unc;
    h->remap_pending = pending != 0, h->remap_failed = failed != 0;
  } else if (a->remapped_rows && r == NVML_ERROR_GPU_IS_LOST) {
    return GPL_ENOGPU;
  } else if (a->retired_pages &&
             retired_count(d->h, NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS, &h->retired_sbe) == NVML_SUCCESS &&
             retired_count(d->h, NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &h->retired_dbe) == NVML_SUCCESS) {
    h->mem_kind = 1;
    int st = NVML_FEATURE_DISABLED;
    if (a->retired_pending && a->retired_pending(d->h, &st) == NVML_SUCCESS) h->retired_pending = st == NVML_FEATURE_ENABLED;
  }
  /* NVLink: every link index NVML knows; links that do not exist answer an error, not a state. */
  for (unsigned l = 0; a->nvlink_state && l < NVML_NVLINK_MAX; l++) {
    int st = NVML_FEATURE_DISABLED;
    r = a->nvlink_state(d->h, l, &st);
    if (r == NVML_ERROR_GPU_IS_LOST) return GPL_ENOGPU;
    if (r != NVML_SUCCESS) continue;
    h->nvlink_links++;
    if (st == NVML_FEATURE_ENABLED) {
      h->nvlink_active++;
      unsigned ver = 0;
      if (!h->nvlink_version && a->nvlink_version && a->nvlink_version(d->h, l, &ver) == NVML_SUCCESS)
        h->nvlink_version = ver;
    } else {
      h->nvlink_down |= 1ull << l;
    }
  }
  return 0;
}

const char *nvml_nvlink_version_name(unsigned v) {
  static const char *const names[] = {"?", "1.0", "2.0", "2.2", "3.0", "3.1", "4.0", "5.0", "6.0"};
  return v < sizeof names / sizeof names[0] ? names[v] : "?";
}
