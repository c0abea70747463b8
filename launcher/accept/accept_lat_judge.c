/* Latency verdicts of `gpulaunch accept` (no MPI): each node's round trips against the majority's
 * as the bandwidth search judges pairs, the slow link named, [accept] max_latency_us as an
 * absolute bound, and the numbers as JSON for the reports. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/accept/accept.h"

static double rtt(const accept_lat_t *l, int a, int b) {
  if (a == b) return -1;
  return a < b ? l->rtt_p50[a * l->nnodes + b] : l->rtt_p50[b * l->nnodes + a];
}

static double rtt99(const accept_lat_t *l, int a, int b) {
  return a < b ? l->rtt_p99[a * l->nnodes + b] : l->rtt_p99[b * l->nnodes + a];
}

static const char *size_text(int bytes, char *buf, size_t len) {
  if (bytes >= 1024) snprintf(buf, len, "%d KiB", bytes / 1024);
  else snprintf(buf, len, "%d B", bytes);
  return buf;
}

/* Microseconds as people read them: "45 us", "10.2 ms". */
static const char *us_text(double us, char *buf, size_t len) {
  if (us >= 1000) snprintf(buf, len, "%.1f ms", us / 1000);
  else snprintf(buf, len, "%.0f us", us);
  return buf;
}

static cJSON *numbers(const accept_lat_t *l, const char *const *hosts, double ref, double limit,
                      const accept_opts_t *o) {
  cJSON *j = cJSON_CreateObject(), *ar = cJSON_AddArrayToObject(j, "allreduce");
  cJSON *pairs = cJSON_AddArrayToObject(j, "pairs");
  if (!ar || !pairs) return cJSON_Delete(j), NULL;
  for (int s = 0; s < ACCEPT_LAT_NSIZES; s++) {
    if (l->ar_p50[s] < 0) continue;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "bytes", accept_lat_sizes[s]);
    cJSON_AddNumberToObject(e, "p50_us", l->ar_p50[s]);
    cJSON_AddNumberToObject(e, "p99_us", l->ar_p99[s]);
    cJSON_AddNumberToObject(e, "iters", l->ar_iters[s]);
    cJSON_AddItemToArray(ar, e);
  }
  for (int a = 0; a < l->nnodes; a++)
    for (int b = a + 1; b < l->nnodes; b++) {
      if (rtt(l, a, b) < 0) continue;
      cJSON *e = cJSON_CreateObject();
      cJSON_AddStringToObject(e, "a", hosts[a]);
      cJSON_AddStringToObject(e, "b", hosts[b]);
      cJSON_AddNumberToObject(e, "p50_us", rtt(l, a, b));
      cJSON_AddNumberToObject(e, "p99_us", rtt99(l, a, b));
      cJSON_AddNumberToObject(e, "round_trips", l->rtt_n[a * l->nnodes + b]);
      cJSON_AddItemToArray(pairs, e);
    }
  if (ref >= 0) cJSON_AddNumberToObject(j, "majority_rtt_us", ref);
  if (limit >= 0) cJSON_AddNumberToObject(j, "slow_above_us", limit);
  cJSON_AddNumberToObject(j, "max_latency_us", o->max_latency_us);
  return j;
}

/* The median of the nodes' fastest round trips: what most nodes get. -1 when none. */
static double majority(const double *best, int n) {
  double *v = malloc((size_t)(n > 0 ? n : 1) * sizeof *v);
  int k = 0;
  if (!v) return -1;
  for (int i = 0; i < n; i++)
    if (best[i] >= 0) v[k++] = best[i];
  double m = accept_percentile(v, k, 50);
  free(v);
  return m;
}

int accept_latency_judge(const accept_lat_t *l, const char *const *hosts, const accept_opts_t *o,
                         accept_report_t *rep) {
  int nn = l->nnodes, rc = GPL_OK;
  char t1[32], t2[32], t3[32], t4[32];
  accept_check_t c;
  double maxus = o->max_latency_us;
  /* The allreduce of each size: measured; the 8-byte one held to the absolute bound. */
  for (int s = 0; s < ACCEPT_LAT_NSIZES; s++) {
    char sz[32];
    size_text(accept_lat_sizes[s], sz, sizeof sz);
    char subject[ACCEPT_SUBJECT_LEN];
    snprintf(subject, sizeof subject, "allreduce %s", sz);
    accept_check_init(&c, "allreduce_latency", "", -1, -1, subject);
    if (l->ar_p50[s] < 0) {
      accept_check_set(&c, ACCEPT_SKIP, "%s", l->nranks < 2 ? "one rank: no allreduce to time" : "not measured");
    } else {
      accept_check_value(&c, l->ar_p50[s], "us", "p50 %s, p99 %s", us_text(l->ar_p50[s], t1, sizeof t1),
                         us_text(l->ar_p99[s], t2, sizeof t2));
      int bounded = s == 0 && maxus > 0;
      if (bounded) accept_check_threshold(&c, "p50 <= %g us (config)", maxus);
      int bad = bounded && l->ar_p50[s] > maxus;
      accept_check_set(&c, bad ? ACCEPT_FAIL : ACCEPT_PASS,
                       "%d ranks, %d calls of %s: p50 %s, p99 %s (the slowest rank's)%s", l->nranks,
                       l->ar_iters[s], sz, t1, t2,
                       bad ? "; above [accept] max_latency_us" : "");
    }
    if (accept_report_add(rep, &c) < 0) rc = GPL_ENOMEM;
  }
  if (nn < 2) {
    accept_check_init(&c, "rtt", "", -1, -1, "");
    accept_check_set(&c, ACCEPT_SKIP, "one node: no round trip between nodes");
    if (accept_report_add(rep, &c) < 0) rc = GPL_ENOMEM;
    rep->latency = numbers(l, hosts, -1, -1, o);
    return rc;
  }
  /* Each node's fastest round trip: a node with a slow link or NIC is slow with every partner,
   * while a slow link between two healthy nodes leaves each of them a fast partner. */
  double *best = malloc((size_t)nn * sizeof *best);
  int *slow = calloc((size_t)nn, sizeof *slow), *bestp = calloc((size_t)nn, sizeof *bestp);
  if (!best || !slow || !bestp) {
    free(best), free(slow), free(bestp);
    return GPL_ENOMEM;
  }
  for (int a = 0; a < nn; a++) {
    best[a] = -1;
    for (int b = 0; b < nn; b++) {
      double v = rtt(l, a, b);
      if (v >= 0 && (best[a] < 0 || v < best[a])) best[a] = v, bestp[a] = b;
    }
  }
  int relative = o->compare && nn >= 3;
  double ref = relative ? majority(best, nn) : -1;
  double limit = ref >= 0 ? ACCEPT_LAT_FACTOR * ref + ACCEPT_LAT_SLACK_US : -1;
  for (int a = 0; a < nn; a++) {
    accept_check_init(&c, "latency", hosts[a], a, -1, "round trip");
    if (best[a] < 0) {
      accept_check_set(&c, ACCEPT_SKIP, "no round trip of this node was measured");
      if (accept_report_add(rep, &c) < 0) rc = GPL_ENOMEM;
      continue;
    }
    accept_check_value(&c, best[a], "us", "p50 %s (fastest, to %s)", us_text(best[a], t1, sizeof t1),
                       hosts[bestp[a]]);
    int rel = limit >= 0 && best[a] > limit, abs_ = maxus > 0 && best[a] > maxus;
    slow[a] = rel || abs_;
    us_text(limit, t2, sizeof t2);
    us_text(ref, t3, sizeof t3);
    if (limit >= 0 && maxus > 0)
      accept_check_threshold(&c, "p50 <= %s (%g x the majority's %s + %.0f us) and <= %g us (config)",
                             us_text(limit, t2, sizeof t2), ACCEPT_LAT_FACTOR, us_text(ref, t3, sizeof t3),
                             ACCEPT_LAT_SLACK_US, maxus);
    else if (limit >= 0)
      accept_check_threshold(&c, "p50 <= %s (%g x the majority's %s + %.0f us)", us_text(limit, t2, sizeof t2),
                             ACCEPT_LAT_FACTOR, us_text(ref, t3, sizeof t3), ACCEPT_LAT_SLACK_US);
    else if (maxus > 0)
      accept_check_threshold(&c, "p50 <= %g us (config)", maxus);
    if (slow[a]) {
      char why[160];
      if (rel)
        snprintf(why, sizeof why, "beyond the majority's limit %s (most nodes' fastest: %s)", t2, t3);
      else
        snprintf(why, sizeof why, "above [accept] max_latency_us = %g us", maxus);
      accept_check_set(&c, ACCEPT_FAIL, "%s's link is slow: its round trips take %s at best (to %s), %s; "
                       "slow with every partner, so its link, NIC or port", hosts[a], t1, hosts[bestp[a]], why);
    } else {
      accept_check_set(&c, ACCEPT_PASS, "fastest round trip %s (to %s)%s", t1, hosts[bestp[a]],
                       relative ? "" : nn < 3 ? "; two nodes: no majority to compare with"
                                             : "; [accept] compare = off: not compared");
    }
    if (accept_report_add(rep, &c) < 0) rc = GPL_ENOMEM;
  }
  /* Every pair: slow beyond the limit; with both its nodes healthy, a slow link. */
  for (int a = 0; a < nn; a++)
    for (int b = a + 1; b < nn; b++) {
      double v = rtt(l, a, b);
      char subject[ACCEPT_SUBJECT_LEN];
      snprintf(subject, sizeof subject, "%.22s+%.22s", hosts[a], hosts[b]);
      accept_check_init(&c, "rtt", "", -1, -1, subject);
      if (v < 0) {
        accept_check_set(&c, ACCEPT_SKIP, "not measured");
        if (accept_report_add(rep, &c) < 0) rc = GPL_ENOMEM;
        continue;
      }
      double v99 = rtt99(l, a, b);
      accept_check_value(&c, v, "us", "p50 %s, p99 %s", us_text(v, t1, sizeof t1), us_text(v99, t2, sizeof t2));
      int rel = limit >= 0 && v > limit, abs_ = maxus > 0 && v > maxus;
      if (limit >= 0) accept_check_threshold(&c, "p50 <= %s", us_text(limit, t3, sizeof t3));
      if (maxus > 0 && (limit < 0 || maxus < limit)) accept_check_threshold(&c, "p50 <= %g us (config)", maxus);
      if (!rel && !abs_) {
        accept_check_set(&c, ACCEPT_PASS, "%d round trips of 8 bytes: p50 %s, p99 %s", l->rtt_n[a * nn + b], t1,
                         t2);
      } else if (slow[a] || slow[b]) {
        const char *who = slow[a] && slow[b] ? "both hosts are" : slow[a] ? hosts[a] : hosts[b];
        accept_check_set(&c, ACCEPT_FAIL, "slow round trips %s + %s: p50 %s, p99 %s, %s (%s slow with every "
                         "partner)", hosts[a], hosts[b], t1, t2,
                         rel ? "beyond the majority's limit" : "above [accept] max_latency_us", who);
      } else {
        char label[ACCEPT_TEXT_LEN];
        snprintf(label, sizeof label, "%s + %s", hosts[a], hosts[b]);
        /* Against the majority alone, a warning: one pair's round trips on a busy machine can be
         * slow for a while (the process waited for a core), which a node's fastest partner never
         * is. Above the configured bound it fails, and the link is named for the exclude list. */
        accept_check_set(&c, abs_ ? ACCEPT_FAIL : ACCEPT_WARN, "slow link %s: p50 %s, p99 %s, %s, while both "
                         "hosts are fast with others (%s %s, %s %s)", label, t1, t2,
                         abs_ ? "above [accept] max_latency_us" : "beyond the majority's limit",
                         hosts[a], us_text(best[a], t3, sizeof t3), hosts[b], us_text(best[b], t4, sizeof t4));
        if (abs_ && accept_report_add_bad_link(rep, label) < 0) rc = GPL_ENOMEM;
      }
      if (accept_report_add(rep, &c) < 0) rc = GPL_ENOMEM;
    }
  cJSON_Delete(rep->latency);
  rep->latency = numbers(l, hosts, ref, limit, o);
  free(best);
  free(slow);
  free(bestp);
  return rc;
}
