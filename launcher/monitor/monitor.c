/* The monitor's life: create over a source, tick (stats, the under-threshold window, outputs), stats. */
#include "launcher/monitor/monitor.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/check.h"
#include "common/safefile.h"
#include "common/util.h"
#include "launcher/monitor/monitor_int.h"

/* Utilisation histograms in 0.1% steps: constant memory for a week of samples, exact p5 for
 * NVML's whole percents. */
#define HIST_BINS 1001

struct monitor_s {
  mon_opts_t opts;
  int rank, gpu;
  char host[64];
  mon_source_t *src;
  int active;
  mon_ident_t ident; /* the GPU's labels in the Prometheus file (index -1: unknown) */
  char job[96];      /* the "job" label */
  /* outputs */
  int metrics_fd;
  char *metrics_path, *prom_path;
  int out_err_logged, read_err_logged;
  /* the under-threshold window, on the judged measure (mon_measure_t) */
  mon_measure_t judge;
  double low_since;    /* time of the first sample of the current low run, < 0 when none */
  double low_sum;      /* the measure summed over the current low run */
  int low_n;
  int episode_warned;  /* the current low run already reached the window */
  int warned;          /* the one warning was printed */
  int episodes;        /* low runs that lasted a window */
  double last_t;
  int last_low, have_last;
  /* stats */
  uint64_t n_busy, n_sm;
  double sum_busy, sum_sm, sum_occ, low_seconds;
  uint32_t hist_busy[HIST_BINS], hist_sm[HIST_BINS];
  uint64_t n_clock;
  double sum_clock;
  uint64_t peak_mem, mem_total;
  double max_power, max_temp;
  uint64_t throttle_mask, throttle_samples;
  int have_ecc0, ecc_warned;
  uint64_t ecc0_c, ecc0_u, ecc_c, ecc_u;
  uint64_t xid_count;
  int last_xid;
  int oom_seen;
  unsigned long lines_since_oom; /* output lines after the last OOM line of this attempt */
  int oom_sampled;     /* this attempt's OOM got its own NVML sample */
  /* the device memory headroom: free memory under mem_headroom percent */
  double mem_low_since; /* time of the first sample of the current low run, < 0 when none */
  uint64_t mem_low_min_free;
  int mem_warned;
};

void mon_opts_default(mon_opts_t *o) {
  memset(o, 0, sizeof *o);
  o->enabled = 1;
  o->interval = 5.0;
  o->sm_threshold = 80.0;
  o->window = 60.0;
  o->prom_mode = 0644;
  o->mem_headroom = 5.0;
  o->off_level = LOG_LVL_WARN;
}

static void say_off(const mon_opts_t *o, int rank, const char *host, int gpu, const char *why) {
  if (o->off_level <= LOG_LVL_WARN)
    LOG_WARN("GPU monitor off on rank %d (host %s) GPU %d: %s; GPU utilisation is not sampled",
             rank, host, gpu, why);
  else
    LOG_INFO(MON, "GPU monitor off on rank %d (host %s) GPU %d: %s", rank, host, gpu, why);
}

static int check_opts(const mon_opts_t *o) {
  if (!(o->interval > 0) || !(o->window >= 0) || !(o->sm_threshold >= 0) ||
      !(o->sm_threshold <= 100) || !(o->mem_headroom >= 0) || !(o->mem_headroom <= 100) ||
      (o->prom_mode & ~0777u)) {
    LOG_WARN("monitor: bad settings (interval %g s must be > 0, window %g s >= 0, sm_threshold "
             "%g%% and mem_headroom %g%% within 0..100, prom_mode %04o a file mode)", o->interval,
             o->window, o->sm_threshold, o->mem_headroom, o->prom_mode);
    return GPL_EINVAL;
  }
  return 0;
}

/* The monitor without a source; outputs opened. */
static int make(monitor_t **out, const mon_opts_t *opts, int rank, const char *host, int gpu) {
  *out = NULL;
  CHECK(check_opts(opts));
  monitor_t *m = calloc(1, sizeof *m);
  ALLOCCHECK(m);
  m->opts = *opts;
  m->opts.replay = m->opts.metrics = m->opts.prom = m->opts.job = NULL; /* not kept: copies */
  util_strlcpy(m->job, opts->job ? opts->job : "", sizeof m->job);
  m->ident.index = -1;
  m->rank = rank;
  m->gpu = gpu;
  util_strlcpy(m->host, host ? host : util_hostname(), sizeof m->host);
  m->metrics_fd = -1;
  m->low_since = -1;
  m->mem_low_since = -1;
  if (opts->metrics && *opts->metrics) {
    m->metrics_path = mon__expand_path(opts->metrics, rank, m->host, 0);
    if (!m->metrics_path) goto oom;
    /* O_APPEND + one write(2) per line: ranks of a node may share one file. */
    char err[PATH_MAX + 200];
    int orc = safefile_open_append(m->metrics_path, &m->metrics_fd, err, sizeof err);
    if (orc < 0) {
      LOG_WARN("monitor: cannot open the metrics file: %s", err);
      mon_destroy(m);
      return orc;
    }
  }
  if (opts->prom && *opts->prom) {
    m->prom_path = mon__expand_path(opts->prom, rank, m->host, 1);
    if (!m->prom_path) goto oom;
  }
  *out = m;
  return 0;
oom:
  mon_destroy(m);
  return GPL_ENOMEM;
}

int mon_create_with_source(monitor_t **out, const mon_opts_t *opts, int rank, const char *host,
                           int gpu, mon_source_t *src) {
  int rc = make(out, opts, rank, host, gpu);
  if (rc < 0) {
    if (src) src->ops->close(src);
    return rc;
  }
  (*out)->src = src;
  (*out)->active = src != NULL && opts->enabled;
  if (src && src->ops->ident && src->ops->ident(src, &(*out)->ident) < 0) (*out)->ident.index = -1;
  return 0;
}

int mon_create(monitor_t **out, const mon_opts_t *opts, int rank, const char *host, int gpu,
               const char *pci_bus_id) {
  const char *h = host ? host : util_hostname();
  CHECK(check_opts(opts)); /* before NVML: a bad setting is said first, and alone */
  if (!opts->enabled) {
    LOG_INFO(MON, "GPU monitor disabled ([monitor] enabled = false)");
    return mon_create_with_source(out, opts, rank, h, gpu, NULL);
  }
  mon_source_t *src = NULL;
  if (opts->replay && *opts->replay) {
    int rc = mon_replay_open(opts->replay, rank, &src);
    if (rc < 0) {
      LOG_WARN("monitor: cannot open the replay file %s: %s", opts->replay, gpl_strerror(rc));
      return rc;
    }
    LOG_INFO(MON, "GPU monitor replays %s for rank %d", opts->replay, rank);
  } else {
    char why[256] = "";
    int rc = mon_nvml_open(pci_bus_id, gpu, &src, why, sizeof why);
    if (rc < 0) {
      say_off(opts, rank, h, gpu, why[0] ? why : gpl_strerror(rc));
      src = NULL;
    }
  }
  return mon_create_with_source(out, opts, rank, h, gpu, src);
}

int mon_active(const monitor_t *m) { return m != NULL && m->active; }

double mon_interval(const monitor_t *m) { return m ? m->opts.interval : 0; }

const char *mon_measure_name(mon_measure_t m) {
  return m == MON_MEASURE_SM_ACTIVE ? "SM activity" : "GPU busy";
}

/* Why the judged measure is the one it is, for the warning. */
static const char *measure_why(mon_measure_t m) {
  return m == MON_MEASURE_SM_ACTIVE
             ? "measured as GPM SM activity: the share of SMs at work, which NCCL kernels waiting "
               "for peers barely raise"
             : "measured as GPU busy time (NVML utilization: the share of time any kernel ran); "
               "this GPU reports no GPM SM activity, the better measure";
}

static void warn_low(monitor_t *m, double t) {
  double mean = m->low_n ? m->low_sum / m->low_n : 0;
  const char *what = mon_measure_name(m->judge);
  m->episodes++;
  m->episode_warned = 1;
  if (!m->warned) {
    m->warned = 1;
    LOG_WARN("%s stayed under %g%% for %.0f s on rank %d (host %s) GPU %d (mean %.1f%%; %s): the "
             "GPU is waiting - check the data pipeline (DataLoader workers, pinned memory), the "
             "batch size, or the parallelism",
             what, m->opts.sm_threshold, t - m->low_since, m->rank, m->host, m->gpu, mean,
             measure_why(m->judge));
  } else {
    /* One warning per monitor: later low runs are counted in the stats, not repeated. */
    LOG_INFO(MON, "%s under %g%% again for %.0f s on rank %d GPU %d (run %d)", what,
             m->opts.sm_threshold, t - m->low_since, m->rank, m->gpu, m->episodes);
  }
}

static double clamp_pct(double v) { return v < 0 ? 0 : v > 100 ? 100 : v; }

/* The under-threshold window and time on the judged measure: SM activity from the first sample
 * that has it on (a GPU or a recording with GPM), GPU busy until then. */
static void judge(monitor_t *m, const mon_sample_t *s) {
  if ((s->have & MON_HAVE_SM_ACTIVE) && m->judge != MON_MEASURE_SM_ACTIVE) {
    /* Time under the threshold measured in busy time does not carry over. */
    m->judge = MON_MEASURE_SM_ACTIVE;
    m->low_since = -1;
    m->low_seconds = 0;
    m->have_last = 0;
  }
  unsigned need = m->judge == MON_MEASURE_SM_ACTIVE ? MON_HAVE_SM_ACTIVE : MON_HAVE_BUSY;
  if (!(s->have & need)) return;
  double v = clamp_pct(m->judge == MON_MEASURE_SM_ACTIVE ? s->sm_active_pct : s->busy_pct);
  int low = v < m->opts.sm_threshold;
  if (m->have_last && m->last_low && s->t > m->last_t) m->low_seconds += s->t - m->last_t;
  if (low) {
    if (m->low_since < 0) {
      m->low_since = s->t;
      m->low_sum = 0;
      m->low_n = 0;
      m->episode_warned = 0;
    }
    m->low_sum += v;
    m->low_n++;
    if (!m->episode_warned && s->t - m->low_since >= m->opts.window) warn_low(m, s->t);
  } else {
    m->low_since = -1;
  }
  m->last_t = s->t;
  m->last_low = low;
  m->have_last = 1;
}

/* Free device memory under mem_headroom percent of the total for the window: one warning per
 * monitor, before the out-of-memory error it announces. */
static void headroom(monitor_t *m, const mon_sample_t *s) {
  if (!(m->opts.mem_headroom > 0) || !(s->have & MON_HAVE_MEM) || s->mem_total == 0) return;
  uint64_t free_b = s->mem_total > s->mem_used ? s->mem_total - s->mem_used : 0;
  if ((double)free_b * 100.0 >= m->opts.mem_headroom * (double)s->mem_total) {
    m->mem_low_since = -1;
    return;
  }
  if (m->mem_low_since < 0) {
    m->mem_low_since = s->t;
    m->mem_low_min_free = free_b;
  }
  if (free_b < m->mem_low_min_free) m->mem_low_min_free = free_b;
  if (m->mem_warned || s->t - m->mem_low_since < m->opts.window) return;
  m->mem_warned = 1;
  char fr[32], tot[32], least[32];
  LOG_WARN("device memory nearly full on rank %d (host %s) GPU %d: free memory stayed under %g%% "
           "for %.0f s (now %s free of %s, at least %s): a CUDA out-of-memory error is near - "
           "lower the batch size, set PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less "
           "fragmentation), or use activation checkpointing",
           m->rank, m->host, m->gpu, m->opts.mem_headroom, s->t - m->mem_low_since,
           mon_fmt_bytes(free_b, fr, sizeof fr), mon_fmt_bytes(s->mem_total, tot, sizeof tot),
           mon_fmt_bytes(m->mem_low_min_free, least, sizeof least));
}

static void account(monitor_t *m, const mon_sample_t *s) {
  if (s->have & MON_HAVE_BUSY) {
    double v = clamp_pct(s->busy_pct);
    m->n_busy++;
    m->sum_busy += v;
    m->hist_busy[(int)lround(v * 10.0)]++;
  }
  if (s->have & MON_HAVE_SM_ACTIVE) {
    double v = clamp_pct(s->sm_active_pct);
    m->n_sm++;
    m->sum_sm += v;
    m->sum_occ += clamp_pct(s->sm_occupancy_pct);
    m->hist_sm[(int)lround(v * 10.0)]++;
  }
  judge(m, s);
  if (s->have & MON_HAVE_CLOCKS && s->sm_clock_mhz > 0) {
    m->n_clock++;
    m->sum_clock += s->sm_clock_mhz;
  }
  if (s->have & MON_HAVE_MEM) {
    if (s->mem_used > m->peak_mem) m->peak_mem = s->mem_used;
    if (s->mem_total) m->mem_total = s->mem_total;
    headroom(m, s);
  }
  if (s->have & MON_HAVE_POWER && s->power_w > m->max_power) m->max_power = s->power_w;
  if (s->have & MON_HAVE_TEMP && s->temp_c > m->max_temp) m->max_temp = s->temp_c;
  if (s->have & MON_HAVE_THROTTLE) {
    m->throttle_mask |= s->throttle;
    if (s->throttle & NVML_THROTTLE_SLOWDOWN) m->throttle_samples++;
  }
  if (s->have & MON_HAVE_ECC) {
    if (!m->have_ecc0) {
      m->have_ecc0 = 1;
      m->ecc0_c = s->ecc_corrected;
      m->ecc0_u = s->ecc_uncorrected;
    }
    m->ecc_c = s->ecc_corrected;
    m->ecc_u = s->ecc_uncorrected;
    if (m->ecc_u > m->ecc0_u && !m->ecc_warned) {
      m->ecc_warned = 1;
      LOG_WARN("uncorrected ECC errors on rank %d (host %s) GPU %d: %llu since the job started; "
               "the GPU may need a reset or replacement", m->rank, m->host, m->gpu,
               (unsigned long long)(m->ecc_u - m->ecc0_u));
    }
  }
  if (s->nxid > 0) {
    m->xid_count += (uint64_t)s->nxid;
    m->last_xid = s->xid;
    LOG_WARN("XID %d on rank %d (host %s) GPU %d: the driver reported a GPU error (see `gpulaunch "
             "diag` and the kernel log)", s->xid, m->rank, m->host, m->gpu);
  }
}

static int write_outputs(monitor_t *m, const mon_sample_t *s) {
  int rc = 0;
  if (m->metrics_fd >= 0) {
    char *line = mon_sample_to_json(s, m->host, m->gpu);
    if (!line) return GPL_ENOMEM;
    size_t n = strlen(line);
    line[n] = '\n'; /* the NUL becomes the newline: one write(2) for the whole line */
    ssize_t w = write(m->metrics_fd, line, n + 1);
    free(line);
    if (w != (ssize_t)(n + 1)) {
      if (!m->out_err_logged)
        LOG_WARN("monitor: writing %s failed: %s", m->metrics_path,
                 w < 0 ? strerror(errno) : "short write");
      m->out_err_logged = 1;
      rc = GPL_ESYS;
    }
  }
  if (m->prom_path) {
    mon_stats_t st;
    mon_stats(m, &st);
    mon_prom_id_t id = {&m->ident, m->job, m->opts.prom_mode};
    char err[4400];
    if (mon__prom_write(m->prom_path, s, &st, m->opts.sm_threshold, &id, err, sizeof err) < 0) {
      if (!m->out_err_logged)
        LOG_WARN("monitor: writing the Prometheus textfile failed: %s", err);
      m->out_err_logged = 1;
      rc = GPL_ESYS;
    }
  }
  return rc;
}

int mon_tick(monitor_t *m) {
  if (!mon_active(m)) return 0;
  mon_sample_t s;
  memset(&s, 0, sizeof s);
  s.rank = m->rank;
  int rc = m->src->ops->read(m->src, &s);
  if (rc == 1) {
    LOG_INFO(MON, "rank %d: the %s source has no more samples after %llu; monitor off", m->rank,
             m->src->ops->name, (unsigned long long)m->n_busy);
    m->active = 0;
    return 1;
  }
  if (rc < 0) {
    if (!m->read_err_logged)
      LOG_WARN("monitor: reading rank %d GPU %d through %s failed: %s", m->rank, m->gpu,
               m->src->ops->name, gpl_strerror(rc));
    m->read_err_logged = 1;
    return 0; /* keep sampling: NVML errors are often transient */
  }
  s.rank = m->rank;
  account(m, &s);
  return write_outputs(m, &s);
}

int mon_drain(monitor_t *m, int max_ticks) {
  int n = 0;
  while (mon_active(m) && (max_ticks <= 0 || n < max_ticks)) {
    if (mon_tick(m) == 1) break;
    n++;
  }
  return n;
}

void mon_destroy(monitor_t *m) {
  if (!m) return;
  if (m->src) m->src->ops->close(m->src);
  if (m->metrics_fd >= 0) close(m->metrics_fd);
  free(m->metrics_path);
  free(m->prom_path);
  free(m);
}

void mon_stats_empty(mon_stats_t *out, int rank, const char *host, int gpu) {
  memset(out, 0, sizeof *out);
  out->rank = rank;
  out->gpu = gpu;
  util_strlcpy(out->host, host ? host : "", sizeof out->host);
}

static double percentile(const uint32_t *hist, uint64_t n, double p) {
  if (n == 0) return 0;
  /* nearest-rank: the smallest value with at least p of the samples at or below it */
  uint64_t want = (uint64_t)ceil(p * (double)n);
  if (want < 1) want = 1;
  uint64_t acc = 0;
  for (int i = 0; i < HIST_BINS; i++) {
    acc += hist[i];
    if (acc >= want) return i / 10.0;
  }
  return 100.0;
}

void mon_stats(const monitor_t *m, mon_stats_t *out) {
  if (!m) {
    mon_stats_empty(out, -1, "", -1);
    return;
  }
  mon_stats_empty(out, m->rank, m->host, m->gpu);
  out->active = m->src != NULL && (m->active || m->n_busy > 0 || m->n_sm > 0);
  out->warned = m->warned;
  out->samples = m->n_busy;
  out->mean_busy = m->n_busy ? m->sum_busy / (double)m->n_busy : 0;
  out->p5_busy = percentile(m->hist_busy, m->n_busy, 0.05);
  out->sm_samples = m->n_sm;
  out->mean_sm_active = m->n_sm ? m->sum_sm / (double)m->n_sm : 0;
  out->p5_sm_active = percentile(m->hist_sm, m->n_sm, 0.05);
  out->mean_sm_occupancy = m->n_sm ? m->sum_occ / (double)m->n_sm : 0;
  out->measure = m->judge;
  out->low_seconds = m->low_seconds;
  out->mean_sm_clock_mhz = m->n_clock ? m->sum_clock / (double)m->n_clock : 0;
  out->peak_mem_used = m->peak_mem;
  out->mem_total = m->mem_total;
  out->max_power_w = m->max_power;
  out->max_temp_c = m->max_temp;
  out->throttle_mask = m->throttle_mask;
  out->throttle_samples = m->throttle_samples;
  /* volatile counters restart when the driver reloads: never report a negative increase */
  out->ecc_corrected = m->ecc_c >= m->ecc0_c ? m->ecc_c - m->ecc0_c : m->ecc_c;
  out->ecc_uncorrected = m->ecc_u >= m->ecc0_u ? m->ecc_u - m->ecc0_u : m->ecc_u;
  out->xid_count = m->xid_count;
  out->last_xid = m->last_xid;
  out->mem_warned = m->mem_warned;
}

const char *mon_fmt_bytes(uint64_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = (double)bytes;
  size_t u = 0;
  while (v >= 1024.0 && u + 1 < GPL_ARRAY_LEN(units)) {
    v /= 1024.0;
    u++;
  }
  if (u == 0) snprintf(buf, len, "%llu B", (unsigned long long)bytes);
  else snprintf(buf, len, "%.1f %s", v, units[u]);
  return buf;
}

const char *mon_oom_cause(const monitor_t *m, char *buf, size_t len) {
  if (!m) {
    snprintf(buf, len, "CUDA out of memory (the GPU monitor was not running: no memory samples)");
    return buf;
  }
  if (m->peak_mem == 0) {
    snprintf(buf, len, "CUDA out of memory on rank %d (host %s) GPU %d (the monitor saw no memory "
             "samples)", m->rank, m->host, m->gpu);
    return buf;
  }
  char peak[32], total[32];
  mon_fmt_bytes(m->peak_mem, peak, sizeof peak);
  if (m->mem_total)
    snprintf(buf, len, "CUDA out of memory on rank %d (host %s) GPU %d: peak device memory seen by "
             "the monitor %s of %s", m->rank, m->host, m->gpu, peak,
             mon_fmt_bytes(m->mem_total, total, sizeof total));
  else
    snprintf(buf, len, "CUDA out of memory on rank %d (host %s) GPU %d: peak device memory seen by "
             "the monitor %s", m->rank, m->host, m->gpu, peak);
  return buf;
}

int mon_note_line(monitor_t *m, const char *line, size_t len) {
  if (!mon_is_cuda_oom(line, len)) {
    if (m && m->lines_since_oom < ULONG_MAX) m->lines_since_oom++;
    return 0;
  }
  if (m) {
    m->oom_seen = 1;
    m->lines_since_oom = 0;
    /* The memory the program holds as it fails, read at once from NVML rather than at the next
     * tick (a spike between two samples is the usual OOM); once per attempt. A recording has no
     * "now": its samples keep their pace. */
    if (!m->oom_sampled && mon_active(m) && strcmp(m->src->ops->name, "nvml") == 0) {
      m->oom_sampled = 1;
      mon_tick(m);
    }
  }
  return 1;
}

int mon_oom_seen(const monitor_t *m) {
  return m != NULL && m->oom_seen && m->lines_since_oom < MON_OOM_LAST_LINES;
}

void mon_new_attempt(monitor_t *m) {
  if (!m) return;
  m->oom_seen = 0;
  m->lines_since_oom = 0;
  m->oom_sampled = 0;
}

double mon_mem_total_mib(const monitor_t *m) {
  if (!m || m->mem_total == 0) return -1;
  return (double)m->mem_total / (1024.0 * 1024.0);
}

double mon_peak_mem_mib(const monitor_t *m) {
  if (!m || m->peak_mem == 0) return -1;
  return (double)m->peak_mem / (1024.0 * 1024.0);
}

double mon__threshold(const monitor_t *m) { return m ? m->opts.sm_threshold : 80.0; }
