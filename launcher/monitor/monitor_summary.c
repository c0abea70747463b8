/* Job-wide monitor summary: gather every rank's stats, the table, and the straggler rule. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/monitor/monitor.h"
#include "launcher/monitor/monitor_int.h"

/* A rank is a clear straggler by utilisation when its mean GPU busy % is this many points below
 * the median of the ranks; by clocks when it was slowed down in this share of its samples and its
 * mean SM clock is this fraction below the median clock. */
#define STRAGGLER_BUSY_GAP 10.0
#define STRAGGLER_THROTTLE_SHARE 0.10
#define STRAGGLER_CLOCK_DROP 0.05

int mon_gather(const mon_stats_t *mine, MPI_Comm comm, double timeout_s, mon_stats_t *all) {
  return mpix_allgather(mine, (int)sizeof *mine, all, comm, timeout_s, "GPU monitor summary");
}

/* Who drags the job. In synchronous data parallelism every step ends in a collective, and NVML
 * counts a NCCL kernel that waits for a late peer as "a kernel running": the ranks that wait
 * show HIGH GPU busy time. The rank whose own GPU idles (low busy %) is the one whose input is
 * late (data pipeline, CPU, I/O), and everyone waits for it: the lowest mean busy % is the
 * straggler when it stands clearly below the median. This is the one place where busy time is
 * the right measure and SM activity is not: a waiting NCCL kernel leaves the SMs idle on the
 * waiting ranks too, and would hide who makes them wait. A rank slowed by its own hardware (power
 * cap, thermal slowdown) looks busy like the others; its lowered clocks give it away, so that
 * is the second rule. Otherwise no rank stands out, and the lowest is named as such. */
void mon_find_straggler(const mon_stats_t *all, int n, double sm_threshold, mon_straggler_t *out) {
  memset(out, 0, sizeof *out);
  out->index = -1;
  double *sm = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  double *clk = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
  if (!sm || !clk) {
    free(sm);
    free(clk);
    snprintf(out->reason, sizeof out->reason, "out of memory");
    return;
  }
  int na = 0, nc = 0, low = -1;
  for (int i = 0; i < n; i++) {
    if (all[i].samples == 0) continue;
    sm[na++] = all[i].mean_busy;
    if (all[i].mean_sm_clock_mhz > 0) clk[nc++] = all[i].mean_sm_clock_mhz;
    if (low < 0 || all[i].mean_busy < all[low].mean_busy) low = i;
  }
  if (na == 0) {
    snprintf(out->reason, sizeof out->reason, "no rank sampled its GPU (monitor off)");
    goto done;
  }
  out->median_busy = util_median(sm, (size_t)na);
  double med_clk = util_median(clk, (size_t)nc);
  out->index = low;
  if (na == 1) {
    snprintf(out->reason, sizeof out->reason, "the only rank with samples (mean GPU busy %.1f%%)",
             all[low].mean_busy);
    goto done;
  }
  double gap = out->median_busy - all[low].mean_busy;
  if (gap >= STRAGGLER_BUSY_GAP) {
    out->clear = 1;
    snprintf(out->reason, sizeof out->reason,
             "mean GPU busy %.1f%% vs %.1f%% median of the ranks: its GPU waits for its input "
             "while the others wait for it in the collectives - a straggler drags everyone in "
             "data parallelism%s", all[low].mean_busy, out->median_busy,
             all[low].mean_busy < sm_threshold ? " (check its data pipeline and host)" : "");
    goto done;
  }
  /* Second rule: the most throttled rank whose clocks are clearly below the others'. */
  int thr = -1;
  double best = 0;
  for (int i = 0; i < n; i++) {
    if (all[i].samples == 0 || all[i].mean_sm_clock_mhz <= 0 || med_clk <= 0) continue;
    double share = (double)all[i].throttle_samples / (double)all[i].samples;
    double drop = 1.0 - all[i].mean_sm_clock_mhz / med_clk;
    if (share >= STRAGGLER_THROTTLE_SHARE && drop >= STRAGGLER_CLOCK_DROP && share > best) {
      best = share;
      thr = i;
    }
  }
  if (thr >= 0) {
    out->index = thr;
    out->clear = 1;
    snprintf(out->reason, sizeof out->reason,
             "clocks slowed down (power cap / thermal) in %.0f%% of its samples, mean SM clock "
             "%.0f MHz vs %.0f MHz median: it computes slower and the others wait for it",
             100.0 * best, all[thr].mean_sm_clock_mhz, med_clk);
    goto done;
  }
  snprintf(out->reason, sizeof out->reason,
           "no clear straggler: every rank is within %.0f points of the %.1f%% median GPU busy "
           "time (this one is the lowest, %.1f%%)", STRAGGLER_BUSY_GAP, out->median_busy,
           all[low].mean_busy);
done:
  free(sm);
  free(clk);
}

/* "power cap,thermal" for the slowdown bits seen. */
static void throttle_names(uint64_t mask, char *buf, size_t len) {
  static const struct {
    uint64_t bit;
    const char *name;
  } names[] = {{NVML_THROTTLE_SW_POWER_CAP, "power cap"},
               {NVML_THROTTLE_HW_SLOWDOWN, "hw slowdown"},
               {NVML_THROTTLE_SW_THERMAL, "sw thermal"},
               {NVML_THROTTLE_HW_THERMAL, "hw thermal"},
               {NVML_THROTTLE_HW_POWER_BRAKE, "power brake"}};
  buf[0] = 0;
  for (size_t i = 0; i < GPL_ARRAY_LEN(names); i++) {
    if (!(mask & names[i].bit)) continue;
    if (buf[0]) strncat(buf, ",", len - strlen(buf) - 1);
    strncat(buf, names[i].name, len - strlen(buf) - 1);
  }
}

static cJSON *rank_json(const mon_stats_t *s) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  cJSON_AddNumberToObject(o, "rank", s->rank);
  cJSON_AddStringToObject(o, "host", s->host);
  cJSON_AddNumberToObject(o, "gpu", s->gpu);
  cJSON_AddBoolToObject(o, "active", s->samples > 0);
  cJSON_AddNumberToObject(o, "samples", (double)s->samples);
  if (s->samples == 0) return o;
  cJSON_AddNumberToObject(o, "mean_busy", s->mean_busy);
  cJSON_AddNumberToObject(o, "p5_busy", s->p5_busy);
  if (s->sm_samples) {
    cJSON_AddNumberToObject(o, "sm_samples", (double)s->sm_samples);
    cJSON_AddNumberToObject(o, "mean_sm_active", s->mean_sm_active);
    cJSON_AddNumberToObject(o, "p5_sm_active", s->p5_sm_active);
    cJSON_AddNumberToObject(o, "mean_sm_occupancy", s->mean_sm_occupancy);
  }
  cJSON_AddStringToObject(o, "judged_by", mon_measure_name((mon_measure_t)s->measure));
  cJSON_AddNumberToObject(o, "under_threshold_s", s->low_seconds);
  cJSON_AddBoolToObject(o, "warned", s->warned);
  cJSON_AddNumberToObject(o, "peak_mem_used", (double)s->peak_mem_used);
  cJSON_AddNumberToObject(o, "mem_total", (double)s->mem_total);
  cJSON_AddBoolToObject(o, "mem_headroom_warned", s->mem_warned);
  cJSON_AddNumberToObject(o, "max_power_w", s->max_power_w);
  cJSON_AddNumberToObject(o, "max_temp_c", s->max_temp_c);
  cJSON_AddNumberToObject(o, "mean_sm_clock_mhz", s->mean_sm_clock_mhz);
  cJSON_AddNumberToObject(o, "throttle_mask", (double)s->throttle_mask);
  cJSON_AddNumberToObject(o, "throttled_samples", (double)s->throttle_samples);
  cJSON_AddNumberToObject(o, "ecc_corrected", (double)s->ecc_corrected);
  cJSON_AddNumberToObject(o, "ecc_uncorrected", (double)s->ecc_uncorrected);
  cJSON_AddNumberToObject(o, "xid_count", (double)s->xid_count);
  if (s->xid_count) cJSON_AddNumberToObject(o, "last_xid", s->last_xid);
  return o;
}

void mon_summary(const mon_stats_t *all, int n, double sm_threshold, FILE *f, cJSON *summary) {
  mon_straggler_t st;
  mon_find_straggler(all, n, sm_threshold, &st);
  strbuf_t b = STRBUF_INIT;
  strbuf_printf(&b, "GPU monitor summary (threshold %g%% of SM activity where the GPU counts it, "
                "else of GPU busy time)\n", sm_threshold);
  strbuf_printf(&b, "%5s  %-16s %4s %8s %9s %7s %8s %21s %6s %5s  %-22s %8s %5s\n", "rank", "host",
                "gpu", "samples", "mean busy", "p5 busy", "SM act.", "peak memory", "max W",
                "max C", "throttled", "ECC c/u", "XID");
  for (int i = 0; i < n; i++) {
    const mon_stats_t *s = &all[i];
    if (s->samples == 0) {
      strbuf_printf(&b, "%5d  %-16.16s %4d %8s   monitor off\n", s->rank, s->host, s->gpu, "-");
      continue;
    }
    char peak[24], total[24], mem[56], thr[80], names[48], ecc[48], xid[40], act[24];
    mon_fmt_bytes(s->peak_mem_used, peak, sizeof peak);
    if (s->mem_total) snprintf(mem, sizeof mem, "%s / %s", peak,
                               mon_fmt_bytes(s->mem_total, total, sizeof total));
    else snprintf(mem, sizeof mem, "%s", s->peak_mem_used ? peak : "-");
    throttle_names(s->throttle_mask, names, sizeof names);
    if (s->throttle_samples)
      snprintf(thr, sizeof thr, "%.0f%% %s", 100.0 * (double)s->throttle_samples / (double)s->samples,
               names);
    else snprintf(thr, sizeof thr, "-");
    snprintf(ecc, sizeof ecc, "%llu/%llu", (unsigned long long)s->ecc_corrected,
             (unsigned long long)s->ecc_uncorrected);
    if (s->xid_count) snprintf(xid, sizeof xid, "%llu (%d)", (unsigned long long)s->xid_count,
                               s->last_xid);
    else snprintf(xid, sizeof xid, "-");
    if (s->sm_samples) snprintf(act, sizeof act, "%.1f", s->mean_sm_active);
    else snprintf(act, sizeof act, "-");
    double judged = s->measure == MON_MEASURE_SM_ACTIVE ? s->mean_sm_active : s->mean_busy;
    strbuf_printf(&b, "%5d  %-16.16s %4d %8llu %9.1f %7.1f %8s %21s %6.0f %5.0f  %-22.22s %8s %5s%s\n",
                  s->rank, s->host, s->gpu, (unsigned long long)s->samples, s->mean_busy, s->p5_busy,
                  act, mem, s->max_power_w, s->max_temp_c, thr, ecc, xid,
                  judged < sm_threshold ? "  < threshold" : "");
  }
  if (st.index >= 0)
    strbuf_printf(&b, "slowest rank: %d (host %s, GPU %d): %s\n", all[st.index].rank,
                  all[st.index].host, all[st.index].gpu, st.reason);
  else
    strbuf_printf(&b, "slowest rank: none (%s)\n", st.reason);
  if (f) {
    fputs(strbuf_str(&b), f);
    fflush(f);
  }
  strbuf_free(&b);

  if (!summary) return;
  cJSON *mon = cJSON_CreateObject();
  if (!mon) return;
  cJSON_AddBoolToObject(mon, "active", 1);
  cJSON_AddNumberToObject(mon, "sm_threshold", sm_threshold);
  cJSON *ranks = cJSON_AddArrayToObject(mon, "ranks");
  for (int i = 0; ranks && i < n; i++) {
    cJSON *r = rank_json(&all[i]);
    if (r) cJSON_AddItemToArray(ranks, r);
  }
  cJSON *sg = cJSON_AddObjectToObject(mon, "straggler");
  if (sg && st.index >= 0) {
    cJSON_AddNumberToObject(sg, "rank", all[st.index].rank);
    cJSON_AddStringToObject(sg, "host", all[st.index].host);
    cJSON_AddNumberToObject(sg, "gpu", all[st.index].gpu);
    cJSON_AddBoolToObject(sg, "clear", st.clear);
    cJSON_AddNumberToObject(sg, "mean_busy", all[st.index].mean_busy);
    cJSON_AddNumberToObject(sg, "median_busy", st.median_busy);
  }
  if (sg) cJSON_AddStringToObject(sg, "reason", st.reason);
  cJSON_DeleteItemFromObjectCaseSensitive(summary, "monitor");
  cJSON_AddItemToObject(summary, "monitor", mon);
}

int mon_job_summary(const monitor_t *m, MPI_Comm comm, double timeout_s, FILE *f, cJSON *summary) {
  int rank, size;
  CHECK(mpix_comm_size(comm, &rank, &size)); /* MPI_COMM_NULL: a job of one without MPI */
  mon_stats_t mine;
  if (m) mon_stats(m, &mine);
  else mon_stats_empty(&mine, rank, util_hostname(), -1);
  mon_stats_t *all = calloc((size_t)size, sizeof *all);
  ALLOCCHECK(all);
  int rc = mon_gather(&mine, comm, timeout_s, all);
  if (rc == 0 && rank == 0) {
    int sampled = 0;
    for (int i = 0; i < size; i++) sampled += all[i].samples > 0;
    if (sampled) {
      mon_summary(all, size, mon__threshold(m), f, summary);
    } else if (summary) {
      cJSON *mon = cJSON_CreateObject();
      if (mon) {
        cJSON_AddBoolToObject(mon, "active", 0);
        cJSON_DeleteItemFromObjectCaseSensitive(summary, "monitor");
        cJSON_AddItemToObject(summary, "monitor", mon);
      }
    }
  }
  free(all);
  return rc;
}
