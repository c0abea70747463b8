/* Monitor outputs: per-rank output paths and the Prometheus textfile in dcgm-exporter's names and labels (written atomically, readable by node_exporter). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/strbuf.h"
#include "common/safefile.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/monitor/monitor_int.h"

char *mon__expand_path(const char *path, int rank, const char *host, int prom_suffix) {
  strbuf_t b = STRBUF_INIT;
  int saw_rank = 0;
  for (const char *p = path; *p; p++) {
    if (p[0] == '%' && p[1] == 'r') {
      strbuf_printf(&b, "%d", rank);
      saw_rank = 1;
      p++;
    } else if (p[0] == '%' && p[1] == 'h') {
      strbuf_append(&b, host);
      p++;
    } else if (p[0] == '%' && p[1] == '%') {
      strbuf_append(&b, "%");
      p++;
    } else {
      strbuf_append_n(&b, p, 1);
    }
  }
  if (prom_suffix && !saw_rank) {
    /* node_exporter's textfile collector reads only *.prom: keep the suffix last */
    const char *s = strbuf_str(&b);
    size_t n = strlen(s);
    char tail[32];
    snprintf(tail, sizeof tail, "-rank%d", rank);
    if (n >= 5 && strcmp(s + n - 5, ".prom") == 0) {
      char *base = strbuf_take(&b);
      base[n - 5] = 0;
      strbuf_printf(&b, "%s%s.prom", base, tail);
      free(base);
    } else {
      strbuf_append(&b, tail);
    }
  }
  if (b.oom) {
    strbuf_free(&b);
    return NULL;
  }
  if (!b.s) strbuf_append(&b, "");
  return strbuf_take(&b);
}

void mon__prom_escape(const char *in, char *out, size_t len) {
  size_t o = 0;
  for (const char *p = in; *p && o + 3 < len; p++) {
    if (*p == '\\' || *p == '"') {
      out[o++] = '\\';
      out[o++] = *p;
    } else if (*p == '\n') {
      out[o++] = '\\';
      out[o++] = 'n';
    } else {
      out[o++] = *p;
    }
  }
  out[o] = 0;
}

/* One metric family: HELP and TYPE once, then the sample with the rank's labels. */
static void family(strbuf_t *b, const char *name, const char *type, const char *help,
                   const char *labels, double v) {
  strbuf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
  strbuf_printf(b, "%s{%s} %.10g\n", name, labels, v);
}

/* dcgm-exporter's labels, in its order (gpu, UUID, pci_bus_id, device, modelName, Hostname),
 * then gpulaunch's rank and job. gpu is NVML's index as dcgm-exporter gives it when the source
 * knows the GPU, else the index the monitor was given; device is "nvidia<gpu>", as there. */
static void make_labels(char *out, size_t len, const mon_stats_t *st, const mon_prom_id_t *id) {
  static const mon_ident_t none = {-1, "", "", ""};
  const mon_ident_t *g = id && id->gpu ? id->gpu : &none;
  int gpu = g->index >= 0 ? g->index : st->gpu;
  char host[200], uuid[200], pci[80], model[200], job[200];
  mon__prom_escape(st->host, host, sizeof host);
  mon__prom_escape(g->uuid, uuid, sizeof uuid);
  mon__prom_escape(g->pci, pci, sizeof pci);
  mon__prom_escape(g->model, model, sizeof model);
  mon__prom_escape(id && id->job ? id->job : "", job, sizeof job);
  snprintf(out, len,
           "gpu=\"%d\",UUID=\"%s\",pci_bus_id=\"%s\",device=\"nvidia%d\",modelName=\"%s\","
           "Hostname=\"%s\",rank=\"%d\",job=\"%s\"",
           gpu, uuid, pci, gpu, model, host, st->rank, job);
}

/* The names, types, units and HELP texts are dcgm-exporter's (its default and DCP counter
 * lists): gauges in MHz, C, W, % and MiB, the DCP measures as ratios 0..1. gpulaunch_* only
 * for what DCGM has no field for. docs/ops.md lists the mapping. */
int mon__prom_write(const char *path, const mon_sample_t *s, const mon_stats_t *st,
                    double sm_threshold, const mon_prom_id_t *id, char *err, size_t errlen) {
  char labels[1200];
  make_labels(labels, sizeof labels, st, id);
  strbuf_t b = STRBUF_INIT;
  if (s->have & MON_HAVE_CLOCKS) {
    family(&b, "DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", labels,
           s->sm_clock_mhz);
    family(&b, "DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", labels,
           s->mem_clock_mhz);
  }
  if (s->have & MON_HAVE_TEMP)
    family(&b, "DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", labels, s->temp_c);
  if (s->have & MON_HAVE_POWER)
    family(&b, "DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", labels, s->power_w);
  if (s->have & MON_HAVE_BUSY)
    family(&b, "DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", labels, s->busy_pct);
  if (s->have & MON_HAVE_MEMUTIL)
    family(&b, "DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", labels,
           s->mem_util_pct);
  family(&b, "DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.",
         labels, st->last_xid);
  if (s->have & MON_HAVE_MEM) {
    uint64_t free_b = s->mem_total > s->mem_used ? s->mem_total - s->mem_used : 0;
    family(&b, "DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", labels,
           (double)(free_b >> 20));
    family(&b, "DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", labels,
           (double)(s->mem_used >> 20));
    family(&b, "DCGM_FI_DEV_FB_TOTAL", "gauge", "Framebuffer memory total (in MiB).", labels,
           (double)(s->mem_total >> 20));
  }
  if (s->have & MON_HAVE_ECC) {
    family(&b, "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter",
           "Total number of single-bit volatile ECC errors.", labels, (double)s->ecc_corrected);
    family(&b, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter",
           "Total number of double-bit volatile ECC errors.", labels, (double)s->ecc_uncorrected);
  }
  if (s->have & MON_HAVE_THROTTLE)
    family(&b, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", "gauge",
           "Current clock throttle reasons (bitmask of DCGM_CLOCKS_THROTTLE_REASON_*).", labels,
           (double)s->throttle);
  /* DCGM's profiling measures: GR_ENGINE_ACTIVE is the share of time the engine ran work, what
   * NVML's busy time counts (gpulaunch reads it there: its dashboard's "GPU Utilization" panel);
   * SM_ACTIVE and SM_OCCUPANCY are what GPM's SM_UTIL and SM_OCCUPANCY measure. */
  if (s->have & MON_HAVE_BUSY)
    family(&b, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge",
           "Ratio of time the graphics engine is active.", labels, s->busy_pct / 100.0);
  if (s->have & MON_HAVE_SM_ACTIVE) {
    family(&b, "DCGM_FI_PROF_SM_ACTIVE", "gauge",
           "The ratio of cycles an SM has at least 1 warp assigned.", labels,
           s->sm_active_pct / 100.0);
    family(&b, "DCGM_FI_PROF_SM_OCCUPANCY", "gauge",
           "The ratio of number of warps resident on an SM.", labels,
           s->sm_occupancy_pct / 100.0);
  }
  if (s->have & MON_HAVE_PCIE) {
    family(&b, "DCGM_FI_PROF_PCIE_TX_BYTES", "gauge",
           "The rate of data transmitted over the PCIe bus, in bytes per second.", labels,
           s->pcie_tx_kbs * 1024.0);
    family(&b, "DCGM_FI_PROF_PCIE_RX_BYTES", "gauge",
           "The rate of data received over the PCIe bus, in bytes per second.", labels,
           s->pcie_rx_kbs * 1024.0);
  }
  /* gpulaunch's own: what DCGM has no field for. */
  if (s->have & MON_HAVE_THROTTLE)
    family(&b, "gpulaunch_gpu_clock_slowdown", "gauge",
           "1 when clocks are lowered by a power cap, thermal or hardware slowdown.", labels,
           (s->throttle & NVML_THROTTLE_SLOWDOWN) ? 1 : 0);
  family(&b, "gpulaunch_gpu_xid_events_total", "counter", "XID events seen by the monitor.",
         labels, (double)st->xid_count);
  family(&b, "gpulaunch_gpu_busy_mean_percent", "gauge",
         "Mean GPU busy time (NVML utilization) since the job started.", labels, st->mean_busy);
  if (st->sm_samples)
    family(&b, "gpulaunch_gpu_sm_active_mean_percent", "gauge",
           "Mean SM activity (GPM) since the job started.", labels, st->mean_sm_active);
  family(&b, "gpulaunch_gpu_under_threshold_seconds_total", "counter",
         "Seconds the judged measure (SM activity where the GPU counts it, else GPU busy) spent "
         "under the monitor's threshold.", labels, st->low_seconds);
  family(&b, "gpulaunch_gpu_under_threshold_alarm", "gauge",
         "1 once the judged measure stayed under the threshold for [monitor] window (the "
         "under-use warning was given).", labels, st->warned ? 1 : 0);
  family(&b, "gpulaunch_gpu_memory_headroom_alarm", "gauge",
         "1 once free device memory stayed under [monitor] mem_headroom for [monitor] window (an "
         "out-of-memory error is near; the warning was given).", labels, st->mem_warned ? 1 : 0);
  family(&b, "gpulaunch_gpu_threshold_percent", "gauge",
         "The monitor's under-use threshold ([monitor] sm_threshold).", labels, sm_threshold);
  family(&b, "gpulaunch_gpu_last_sample_timestamp_seconds", "gauge",
         "Wall clock of the last sample (Unix time).", labels, (double)time(NULL));
  if (b.oom) {
    strbuf_free(&b);
    util_fmt(err, errlen, "%s: out of memory", path);
    return GPL_ENOMEM;
  }
  /* Readable by node_exporter, which runs as its own user (0644 unless [monitor] prom_mode says
   * otherwise), in a folder that may be its textfile folder, writable through a group. */
  unsigned mode = id && id->mode ? id->mode : 0644;
  int rc = safefile_replace(path, strbuf_str(&b), b.len, mode, SAFEFILE_DIR_GROUP, err, errlen);
  strbuf_free(&b);
  return rc;
}
