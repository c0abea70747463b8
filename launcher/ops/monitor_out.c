/* Monitor outputs: per-rank output paths and the Prometheus textfile (written atomically). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/strbuf.h"
#include "common/safefile.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/ops/monitor_int.h"

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

int mon__prom_write(const char *path, const mon_sample_t *s, const mon_stats_t *st,
                    double sm_threshold) {
  char host[200], labels[300];
  mon__prom_escape(st->host, host, sizeof host);
  snprintf(labels, sizeof labels, "rank=\"%d\",host=\"%s\",gpu=\"%d\"", st->rank, host, st->gpu);
  strbuf_t b = STRBUF_INIT;
  if (s->have & MON_HAVE_BUSY)
    family(&b, "gpulaunch_gpu_busy_percent", "gauge",
           "GPU busy: percent of the last sample period during which any kernel ran (NVML gpu "
           "utilization; a NCCL kernel waiting for a peer counts).", labels, s->busy_pct);
  if (s->have & MON_HAVE_SM_ACTIVE) {
    family(&b, "gpulaunch_gpu_sm_active_percent", "gauge",
           "SM activity: percent of SMs busy since the previous sample (NVML GPM SM_UTIL).",
           labels, s->sm_active_pct);
    family(&b, "gpulaunch_gpu_sm_occupancy_percent", "gauge",
           "Percent of warps resident against the maximum since the previous sample (NVML GPM "
           "SM_OCCUPANCY).", labels, s->sm_occupancy_pct);
  }
  if (s->have & MON_HAVE_MEMUTIL)
    family(&b, "gpulaunch_gpu_memory_utilization_percent", "gauge",
           "Percent of the last sample period during which device memory was read or written.",
           labels, s->mem_util_pct);
  if (s->have & MON_HAVE_MEM) {
    family(&b, "gpulaunch_gpu_memory_used_bytes", "gauge", "Device memory in use.", labels,
           (double)s->mem_used);
    family(&b, "gpulaunch_gpu_memory_total_bytes", "gauge", "Device memory in total.", labels,
           (double)s->mem_total);
  }
  if (s->have & MON_HAVE_POWER)
    family(&b, "gpulaunch_gpu_power_watts", "gauge", "Board power draw.", labels, s->power_w);
  if (s->have & MON_HAVE_TEMP)
    family(&b, "gpulaunch_gpu_temperature_celsius", "gauge", "GPU temperature.", labels,
           s->temp_c);
  if (s->have & MON_HAVE_CLOCKS) {
    family(&b, "gpulaunch_gpu_sm_clock_hertz", "gauge", "SM clock.", labels,
           s->sm_clock_mhz * 1e6);
    family(&b, "gpulaunch_gpu_memory_clock_hertz", "gauge", "Memory clock.", labels,
           s->mem_clock_mhz * 1e6);
  }
  if (s->have & MON_HAVE_PCIE) {
    family(&b, "gpulaunch_gpu_pcie_rx_bytes_per_second", "gauge", "PCIe receive throughput.",
           labels, s->pcie_rx_kbs * 1024.0);
    family(&b, "gpulaunch_gpu_pcie_tx_bytes_per_second", "gauge", "PCIe transmit throughput.",
           labels, s->pcie_tx_kbs * 1024.0);
  }
  if (s->have & MON_HAVE_THROTTLE) {
    family(&b, "gpulaunch_gpu_clock_event_reasons", "gauge",
           "NVML clock event (throttle) reason bits active at the last sample.", labels,
           (double)s->throttle);
    family(&b, "gpulaunch_gpu_clock_slowdown", "gauge",
           "1 when clocks are lowered by a power cap, thermal or hardware slowdown.", labels,
           (s->throttle & NVML_THROTTLE_SLOWDOWN) ? 1 : 0);
  }
  if (s->have & MON_HAVE_ECC) {
    strbuf_printf(&b, "# HELP gpulaunch_gpu_ecc_errors_total Volatile ECC error counts.\n"
                      "# TYPE gpulaunch_gpu_ecc_errors_total counter\n");
    strbuf_printf(&b, "gpulaunch_gpu_ecc_errors_total{%s,type=\"corrected\"} %llu\n", labels,
                  (unsigned long long)s->ecc_corrected);
    strbuf_printf(&b, "gpulaunch_gpu_ecc_errors_total{%s,type=\"uncorrected\"} %llu\n", labels,
                  (unsigned long long)s->ecc_uncorrected);
  }
  family(&b, "gpulaunch_gpu_xid_events_total", "counter", "XID events seen by the monitor.",
         labels, (double)st->xid_count);
  family(&b, "gpulaunch_gpu_busy_mean_percent", "gauge",
         "Mean GPU busy time since the job started.", labels, st->mean_busy);
  if (st->sm_samples)
    family(&b, "gpulaunch_gpu_sm_active_mean_percent", "gauge",
           "Mean SM activity (GPM) since the job started.", labels, st->mean_sm_active);
  family(&b, "gpulaunch_gpu_under_threshold_seconds_total", "counter",
         "Seconds the judged measure (SM activity where the GPU counts it, else GPU busy) spent "
         "under the monitor's threshold.", labels, st->low_seconds);
  family(&b, "gpulaunch_gpu_threshold_percent", "gauge",
         "The monitor's under-use threshold ([monitor] sm_threshold).", labels, sm_threshold);
  family(&b, "gpulaunch_gpu_last_sample_timestamp_seconds", "gauge",
         "Wall clock of the last sample (Unix time).", labels, (double)time(NULL));
  if (b.oom) {
    strbuf_free(&b);
    errno = ENOMEM;
    return GPL_ENOMEM;
  }

  size_t plen = strlen(path) + 32;
  char *tmp = malloc(plen);
  if (!tmp) {
    strbuf_free(&b);
    return GPL_ENOMEM;
  }
  /* A fresh name (mkostemp: O_EXCL, 0600) in a checked folder, renamed over the file: rename
   * replaces a planted link itself instead of writing through it. */
  snprintf(tmp, plen, "%s.XXXXXX", path);
  int rc = GPL_ESYS;
  char err[512];
  FILE *f = NULL;
  if (safefile_check_parent(path, err, sizeof err) < 0) {
    LOG_WARN("monitor: Prometheus textfile: %s", err);
    errno = EPERM;
  } else {
    int fd = mkostemp(tmp, O_CLOEXEC);
    f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (fd >= 0 && !f) close(fd), unlink(tmp);
  }
  if (f) {
    size_t n = fwrite(strbuf_str(&b), 1, b.len, f);
    int bad = n != b.len;
    if (fclose(f) != 0) bad = 1;
    if (!bad && rename(tmp, path) == 0) rc = 0;
    else {
      int e = errno;
      unlink(tmp);
      errno = e;
    }
  }
  free(tmp);
  strbuf_free(&b);
  return rc;
}
