/* The terminal side of `gpulaunch accept`: the progress line while it runs and the result table. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/accept/accept.h"
#include "common/log.h"

void accept_progress(int on, int step, int nsteps, const char *fmt, ...) {
  if (!on) return;
  if (!fmt) {
    log_print("%s", "\r\033[K");
    fflush(stderr);
    return;
  }
  char msg[200];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  log_print("\r\033[K[%d/%d] %s", step, nsteps, msg);
  fflush(stderr);
}

/* Column text cut to width (the full text is in the JSON/HTML). */
static void cell(FILE *f, const char *s, int w, int last) {
  int n = (int)strlen(s);
  if (n > w) fprintf(f, "%.*s~", w - 1, s);
  else if (last) fputs(s, f);
  else fprintf(f, "%-*s", w, s);
  if (!last) fputs("  ", f);
}

static const char *status_cell(accept_status_t s) {
  static const char *const up[] = {"pass", "WARN", "FAIL", "skipped", "ERROR"};
  return s >= 0 && s < ACCEPT_NSTATUS ? up[s] : "?";
}

/* GPU number of a "GPU<n>" subject, or -1. */
static int gpu_no(const char *subject) {
  if (strncmp(subject, "GPU", 3) != 0 || !subject[3]) return -1;
  for (const char *p = subject + 3; *p; p++)
    if (*p < '0' || *p > '9') return -1;
  return atoi(subject + 3);
}

/* How many rows from i on say the same thing about consecutive GPUs (shown as one "GPU0-7" row;
 * the JSON, JUnit and HTML keep every row). */
static int same_run(const accept_report_t *r, int i) {
  const accept_check_t *a = &r->checks[i];
  int g = gpu_no(a->subject), n = 1;
  if (g < 0) return 1;
  for (int j = i + 1; j < r->nchecks; j++, n++) {
    const accept_check_t *b = &r->checks[j];
    if (b->node != a->node || strcmp(b->name, a->name) != 0 || b->status != a->status ||
        strcmp(b->value_text, a->value_text) != 0 || strcmp(b->threshold, a->threshold) != 0 ||
        strcmp(b->detail, a->detail) != 0 || gpu_no(b->subject) != g + n)
      break;
  }
  return n;
}

static void row(FILE *f, const accept_check_t *c, const char *subject, const int *w, const char **prev_detail) {
  char subj[ACCEPT_SUBJECT_LEN + 8];
  snprintf(subj, sizeof subj, "%s", subject);
  cell(f, status_cell(c->status), w[0], 0);
  cell(f, c->name, w[1], 0);
  cell(f, subj, w[2], 0);
  cell(f, c->value_text, w[3], 0);
  cell(f, c->threshold, w[4], 1);
  fputc('\n', f);
  /* The why of anything that did not pass; a run of rows with one reason says it once. */
  if (c->status != ACCEPT_PASS && c->detail[0]) {
    if (*prev_detail && strcmp(*prev_detail, c->detail) == 0) return;
    fprintf(f, "%*s-> %s\n", w[0] + 2, "", c->detail);
    *prev_detail = c->detail;
  }
}

static void widths(const accept_report_t *r, int *w) {
  static const int cap[5] = {7, 14, 24, 40, 34};
  static const int min[5] = {7, 5, 7, 5, 9};
  for (int k = 0; k < 5; k++) w[k] = min[k];
  for (int i = 0; i < r->nchecks; i++) {
    const accept_check_t *c = &r->checks[i];
    int l[5] = {7, (int)strlen(c->name), (int)strlen(c->subject), (int)strlen(c->value_text),
                (int)strlen(c->threshold)};
    for (int k = 0; k < 5; k++)
      if (l[k] > w[k]) w[k] = l[k] > cap[k] ? cap[k] : l[k];
  }
}

static void bar(FILE *f, double v, double max, int width) {
  int n = max > 0 && v > 0 ? (int)(v / max * width + 0.5) : 0;
  if (v > 0 && n == 0) n = 1;
  for (int i = 0; i < n; i++) fputc('#', f);
  for (int i = n; i < width; i++) fputc(' ', f);
}

/* The skipped checks of a node, one line per reason ("ecc, clocks, ... -> NVML not available"),
 * so that a cluster of CPU-only or NVML-less nodes does not drown the table in skipped rows. */
static int skipped_lines(const accept_report_t *r, int node, strbuf_t *f, int indent) {
  char *done = calloc((size_t)r->nchecks + 1, 1);
  int total = 0;
  if (!done) return 0;
  for (int i = 0; i < r->nchecks; i++) {
    const accept_check_t *c = &r->checks[i];
    if (done[i] || c->node != node || c->status != ACCEPT_SKIP) continue;
    strbuf_printf(f, "%-*s", indent, "skipped");
    int n = 0;
    for (int j = i; j < r->nchecks; j++) {
      const accept_check_t *d = &r->checks[j];
      if (done[j] || d->node != node || d->status != ACCEPT_SKIP || strcmp(d->detail, c->detail) != 0) continue;
      /* A name once per line, even when several subjects share the reason. */
      int seen = 0;
      for (int k = i; k < j && !seen; k++)
        seen = done[k] == 2 && r->checks[k].node == node && strcmp(r->checks[k].name, d->name) == 0 &&
               strcmp(r->checks[k].detail, d->detail) == 0;
      if (!seen) strbuf_printf(f, "%s%s", n++ ? ", " : "", d->name);
      done[j] = 2;
      total++;
    }
    strbuf_printf(f, " -> %s\n", c->detail[0] ? c->detail : "(no reason given)");
    for (int j = 0; j < r->nchecks; j++)
      if (done[j] == 2) done[j] = 1;
  }
  free(done);
  return total;
}

static double jnum(const cJSON *o, const char *key) {
  const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
  return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* The latency numbers (us): each allreduce size, each pair's round trip, slow ones marked. */
static void print_latency(const accept_report_t *r, FILE *f) {
  const cJSON *lat = r->latency, *e;
  if (!lat) return;
  double slow = jnum(lat, "slow_above_us"), maxus = jnum(lat, "max_latency_us");
  fprintf(f, "\nLatency (us, p50 / p99)\n");
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(lat, "allreduce"))
    fprintf(f, "  allreduce %6.0f B   %9.1f / %9.1f\n", jnum(e, "bytes"), jnum(e, "p50_us"), jnum(e, "p99_us"));
  cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(lat, "pairs")) {
    const char *a = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "a"));
    const char *b = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(e, "b"));
    double p50 = jnum(e, "p50_us");
    char pair[140];
    snprintf(pair, sizeof pair, "%s + %s", a ? a : "?", b ? b : "?");
    fprintf(f, "  rtt %-20s %9.1f / %9.1f%s\n", pair, p50, jnum(e, "p99_us"),
            (slow >= 0 && p50 > slow) || (maxus > 0 && p50 > maxus) ? "  << slow" : "");
  }
  if (slow >= 0)
    fprintf(f, "  slow: a round trip above %.1f us (%g x the majority's + %.0f us)\n", slow, ACCEPT_LAT_FACTOR,
            ACCEPT_LAT_SLACK_US);
  if (maxus > 0) fprintf(f, "  [accept] max_latency_us = %.0f\n", maxus);
}

void accept_print_table(const accept_report_t *r, FILE *f) {
  int w[5];
  widths(r, w);
  const char *prev = NULL;
  strbuf_t skips = STRBUF_INIT, last_skips = STRBUF_INIT;
  int last_node = -1;
  fprintf(f, "\ngpulaunch accept: %d node(s), %d rank(s), %.1f s\n", r->nnodes, r->nranks, r->seconds);
  for (int node = -1; node < r->nnodes; node++) {
    int any = 0;
    for (int i = 0; i < r->nchecks; i++) {
      const accept_check_t *c = &r->checks[i];
      if (accept_check_suite(c) != node || (node >= 0 && c->status == ACCEPT_SKIP)) continue;
      if (!any++) {
        if (node < 0) fprintf(f, "\nJob\n");
        else fprintf(f, "\nNode %s (node %d)\n", r->hosts[node], node);
        cell(f, "STATUS", w[0], 0);
        cell(f, "CHECK", w[1], 0);
        cell(f, "SUBJECT", w[2], 0);
        cell(f, "VALUE", w[3], 0);
        cell(f, "THRESHOLD", w[4], 1);
        fputc('\n', f);
        prev = NULL;
      }
      int run = same_run(r, i);
      char subj[ACCEPT_SUBJECT_LEN + 8];
      if (run > 1) snprintf(subj, sizeof subj, "GPU%d-%d", gpu_no(c->subject), gpu_no(c->subject) + run - 1);
      else snprintf(subj, sizeof subj, "%s", c->subject);
      row(f, c, subj, w, &prev);
      i += run - 1;
    }
    if (node >= 0) {
      if (!any) fprintf(f, "\nNode %s (node %d)\n", r->hosts[node], node);
      strbuf_reset(&skips);
      int n = skipped_lines(r, node, &skips, w[0] + 2);
      /* Nodes alike skip alike: say it once. */
      if (n && last_node >= 0 && strcmp(strbuf_str(&skips), strbuf_str(&last_skips)) == 0) {
        fprintf(f, "%-*s%d checks, for the same reasons as on %s\n", w[0] + 2, "skipped", n, r->hosts[last_node]);
      } else if (n) {
        fputs(strbuf_str(&skips), f);
        strbuf_reset(&last_skips);
        strbuf_append(&last_skips, strbuf_str(&skips));
        last_node = node;
      }
    }
  }
  strbuf_free(&skips);
  strbuf_free(&last_skips);
  if (r->nmeas > 0 || r->ar_busbw > 0) {
    double max = r->ar_busbw;
    int lw = 12;
    for (int i = 0; i < r->nmeas; i++) {
      if (r->meas[i].busbw > max) max = r->meas[i].busbw;
      int l = (int)strlen(r->meas[i].label);
      if (l > lw) lw = l > 40 ? 40 : l;
    }
    fprintf(f, "\nBandwidth (GB/s, bus bandwidth of an allreduce)\n");
    if (r->ar_busbw > 0) {
      fprintf(f, "  %-8s ", "job");
      cell(f, "all ranks", lw, 0);
      fprintf(f, "%9.3f  ", r->ar_busbw);
      bar(f, r->ar_busbw, max, 30);
      if (r->ar_threshold >= 0) fprintf(f, "  threshold %.3f", r->ar_threshold);
      fputc('\n', f);
    }
    for (int i = 0; i < r->nmeas; i++) {
      const accept_meas_t *m = &r->meas[i];
      fprintf(f, "  %-8s ", m->phase);
      cell(f, m->label, lw, 0);
      fprintf(f, "%9.3f  ", m->busbw);
      bar(f, m->busbw, max, 30);
      if (m->flagged) fprintf(f, "  << below %.0f%% of %.3f", 100 * r->fraction, m->reference);
      if (m->nsamples > 1) {
        fprintf(f, "  (best of");
        for (int k = 0; k < m->nsamples && k < ACCEPT_PASSES_MAX; k++) fprintf(f, " %.3g", m->samples[k]);
        fputc(')', f);
      }
      fputc('\n', f);
    }
    if (r->search_summary[0]) fprintf(f, "  search: %s\n", r->search_summary);
    if (r->search_rule[0]) fprintf(f, "  rule: %s\n", r->search_rule);
  }
  print_latency(r, f);
  int n[ACCEPT_NSTATUS];
  accept_report_counts(r, n);
  accept_status_t v = accept_verdict(r->exit_code);
  const char *verdict = v == ACCEPT_PASS ? "PASS" : v == ACCEPT_FAIL ? "FAIL" : "ERROR";
  fprintf(f, "\nResult: %s: %d passed, %d warning(s), %d failed, %d skipped, %d error(s) (exit %d%s)",
          verdict, n[ACCEPT_PASS], n[ACCEPT_WARN], n[ACCEPT_FAIL], n[ACCEPT_SKIP], n[ACCEPT_ERROR],
          r->exit_code, r->strict ? ", strict: warnings fail" : "");
  /* An ERROR verdict says what the error was: the first check that could not run. */
  for (int i = 0; v == ACCEPT_ERROR && i < r->nchecks; i++) {
    const accept_check_t *c = &r->checks[i];
    if (c->status != ACCEPT_ERROR) continue;
    fprintf(f, ": %s%s%s%s%s: %s", c->name, c->subject[0] ? " " : "", c->subject, c->host[0] ? " on " : "",
            c->host, c->detail);
    break;
  }
  fputc('\n', f);
  if (r->nbad) {
    fprintf(f, "Bad hosts:");
    for (int i = 0; i < r->nbad; i++) fprintf(f, " %s", r->bad_hosts[i]);
    fprintf(f, "   (--exclude-out FILE writes them for scripts/hostfile --exclude)\n");
  }
  for (int i = 0; i < r->nbadlinks; i++) fprintf(f, "Bad link: %s\n", r->bad_links[i]);
  fflush(f);
}
