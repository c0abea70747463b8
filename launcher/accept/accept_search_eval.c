/* The bad-node / bad-link search's judgement (accept_search.c asks for the measurements): the
 * statistics of each phase's results, what they name, and the report's checks. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/accept/accept.h"
#include "launcher/accept/accept_search_int.h"

/* ---- statistics ---- */

/* The median of v, which stays as it is (the callers' arrays are in node or measurement order). */
static double median(const double *v, int n) {
  if (n <= 0) return 0;
  double *c = malloc((size_t)n * sizeof *c);
  if (!c) return 0;
  memcpy(c, v, (size_t)n * sizeof *c);
  double m = util_median(c, (size_t)n);
  free(c);
  return m;
}

/* The noise from everything measured so far, and the fraction it allows. The spread is the
 * largest among the complete series (a consistently slow link spreads little and does not lower
 * it; a flapping one does, and the report says the noise was large); on many groups the 90th
 * percentile, so that one hiccup on a large quiet fabric does not blunt the whole search. */
static void update_eff(accept_search_t *s) {
  int cap = 2 * s->nlinks + 2 * s->nnodes + 3, n = 0;
  double *v = malloc((size_t)cap * sizeof *v);
  if (v) {
#define SPREAD_(x) do { double d_ = accept__series_spread(x); if (d_ >= 0 && n < cap) v[n++] = d_; } while (0)
    for (int l = 0; l < s->nlinks; l++) {
      SPREAD_(&s->link[l]);
      SPREAD_(&s->relink[l]);
    }
    for (int x = 0; x < s->nnodes; x++) SPREAD_(&s->conf[x]);
    SPREAD_(&s->ctl);
    SPREAD_(&s->half[0]);
    SPREAD_(&s->half[1]);
#undef SPREAD_
    if (n > 0) {
      util_sort_doubles(v, (size_t)n);
      int k = n >= 10 ? (int)ceil(0.9 * n) - 1 : n - 1;
      if (v[k] > s->spread) s->spread = v[k]; /* halving levels are forgotten: keep the largest */
    }
    free(v);
  }
  s->jitter = median(s->jit, s->njit);
  if (s->jitter < 0) s->jitter = 0;
  /* The tries of a group are what its best is judged on, so their spread is the noise that
   * matters; the iterations inside one measurement only stand in when nothing was repeated. */
  s->noise = n > 0 || s->passes > 1 ? s->spread : s->jitter;
  if (s->noise > 0.95) s->noise = 0.95;
  s->eff = accept_search_rule(s->fraction, s->noise, s->rule, sizeof s->rule);
}

static void label_of(const int *nodes, int n, const char *const *hosts, char *out, size_t len) {
  strbuf_t b = STRBUF_INIT;
  for (int i = 0; i < n; i++) {
    if (i == 8 && n > 10) {
      strbuf_printf(&b, " ... (%d nodes)", n);
      break;
    }
    if (hosts && hosts[nodes[i]])
      strbuf_printf(&b, "%s%s", i ? (n == 2 ? " + " : " ") : "", hosts[nodes[i]]);
    else
      strbuf_printf(&b, "%snode%d", i ? (n == 2 ? " + " : " ") : "", nodes[i]);
  }
  snprintf(out, len, "%s", strbuf_str(&b));
  strbuf_free(&b);
}

/* A group's series as one measurement of the report (its best, with every try). */
static void add_meas(accept_report_t *rep, const char *phase, const accept_series_t *x, const int *nodes, int n,
                     double ref, int flagged, const char *const *hosts) {
  if (!rep) return;
  accept_meas_t m;
  memset(&m, 0, sizeof m);
  snprintf(m.phase, sizeof m.phase, "%s", phase);
  m.round = x->n > 0 ? x->round[x->n - 1] : 0;
  m.nnodes = n;
  m.nodes = (int *)nodes;
  label_of(nodes, n, hosts, m.label, sizeof m.label);
  m.busbw = accept_series_best(x);
  m.nsamples = x->n;
  for (int i = 0; i < x->n; i++) m.samples[i] = x->bw[i];
  m.reference = ref;
  m.flagged = flagged;
  accept_report_add_meas(rep, &m);
}

/* ---- evaluation ---- */

/* After every pass of the ring: scores, reference, suspects; partners for the confirmation. */
void accept__ring_evaluate(accept_search_t *s, accept_report_t *rep, const char *const *hosts) {
  int n = s->nnodes;
  for (int l = 0; l < s->nlinks; l++) s->link_bw[l] = accept_series_best(&s->link[l]);
  update_eff(s);
  if (s->nlinks == 1) {
    s->reference = 0;
    for (int i = 0; i < n; i++) s->verdict[i] = V_UNKNOWN;
    add_meas(rep, "ring", &s->link[0], (int[]){s->link_a[0], s->link_b[0]}, 2, 0, 0, hosts);
    snprintf(s->note, sizeof s->note,
             "2 nodes: one pair (%.3f GB/s) and nothing to compare it with; a slow pair cannot be "
             "blamed on either node without a third", s->link_bw[0]);
    s->na = 1;
    s->phase = P_DONE;
    return;
  }
  for (int i = 0; i < n; i++) s->score[i] = 0;
  for (int l = 0; l < s->nlinks; l++) {
    double bw = s->link_bw[l] > 0 ? s->link_bw[l] : 0;
    if (bw > s->score[s->link_a[l]]) s->score[s->link_a[l]] = bw;
    if (bw > s->score[s->link_b[l]]) s->score[s->link_b[l]] = bw;
  }
  s->reference = median(s->score, n);
  double limit = s->eff * s->reference;
  int nsus = 0, nflag = 0, *sus = calloc((size_t)n, sizeof *sus);
  for (int i = 0; i < n; i++) {
    s->verdict[i] = s->score[i] < limit ? V_SUSPECT : V_GOOD;
    if (s->verdict[i] == V_SUSPECT && sus) sus[nsus] = i;
    nsus += s->verdict[i] == V_SUSPECT;
  }
  for (int l = 0; l < s->nlinks; l++) {
    double bw = s->link_bw[l] > 0 ? s->link_bw[l] : 0;
    s->link_state[l] = bw < limit ? L_FLAGGED : L_OK;
    nflag += s->link_state[l] == L_FLAGGED;
    add_meas(rep, "ring", &s->link[l], (int[]){s->link_a[l], s->link_b[l]}, 2, s->reference,
             s->link_state[l] == L_FLAGGED, hosts);
  }
  if (nflag == 0 || !sus) {
    if (nflag == 0)
      snprintf(s->note, sizeof s->note, "%d ring pairs (best of %d tries each), all at or above %.0f%% "
               "of the median node score %.3f GB/s", s->nlinks, s->passes, 100 * s->eff, s->reference);
    else
      snprintf(s->note, sizeof s->note, "%d slow ring pair(s) not confirmed: out of memory", nflag);
    s->inconclusive = nflag > 0;
    s->phase = P_DONE;
    free(sus);
    return;
  }
  /* Fewer than half of the nodes can score below a fraction of the median: good nodes exist. */
  accept__pick_partners(s, sus, nsus);
  free(sus);
  snprintf(s->note, sizeof s->note, "%d of %d ring pairs (best of %d tries each) below %.0f%% of the "
           "median node score %.3f GB/s; %d suspect node(s)", nflag, s->nlinks, s->passes,
           100 * s->eff, s->reference, nsus);
  s->phase = P_CONFIRM;
  s->pass = 0;
}

/* The reference of a confirmation: the ring's, unless the control pair, measured at the same
 * time, shows that the fabric got slower since. */
static double control_ref(const accept_search_t *s, double ref) {
  double c = accept_series_best(&s->ctl);
  return c > 0 && c < ref ? c : ref;
}

/* After every pass of the confirmation: the verdicts, with the noise of all measurements. */
void accept__confirm_evaluate(accept_search_t *s, accept_report_t *rep, const char *const *hosts) {
  update_eff(s);
  s->ctl_ref = control_ref(s, s->reference);
  double ring_limit = s->eff * s->reference, limit = s->eff * s->ctl_ref;
  int named = 0, links = 0;
  for (int x = 0; x < s->nnodes; x++) {
    if (s->verdict[x] != V_SUSPECT) continue;
    s->confirm_bw[x] = accept_series_best(&s->conf[x]);
    double b = s->confirm_bw[x] > 0 ? s->confirm_bw[x] : 0;
    /* Slow in the ring by the rule of all the evidence, and slow again with a third partner. */
    if (s->score[x] >= ring_limit) s->verdict[x] = V_GOOD; /* within the noise after all */
    else if (s->conf[x].n == 0) s->verdict[x] = V_NOT_REPRODUCED; /* no good partner: not confirmed */
    else s->verdict[x] = b < limit ? V_BAD : V_NOT_REPRODUCED;
    named += s->verdict[x] == V_BAD;
    add_meas(rep, "confirm", &s->conf[x], (int[]){x, s->partner[x]}, 2, s->ctl_ref, b < limit, hosts);
  }
  for (int l = 0; l < s->nlinks; l++) {
    if (s->link_state[l] != L_FLAGGED || s->relink[l].n == 0) continue;
    double b = accept_series_best(&s->relink[l]);
    if (b < 0) b = 0;
    if (s->link_bw[l] >= ring_limit) s->link_state[l] = L_OK;
    else s->link_state[l] = b < limit ? L_BAD : L_NOT_REPRODUCED;
    links += s->link_state[l] == L_BAD;
    add_meas(rep, "confirm", &s->relink[l], (int[]){s->link_a[l], s->link_b[l]}, 2, s->ctl_ref, b < limit, hosts);
  }
  if (s->ctl.n > 0) add_meas(rep, "control", &s->ctl, (int[]){s->ctl_a, s->ctl_b}, 2, s->reference, 0, hosts);
  size_t len = strlen(s->note);
  snprintf(s->note + len, sizeof s->note - len, "; slow again: %d node(s) with a third partner, %d link(s) "
           "on their own, against %.0f%% of %.3f GB/s (%s)", named, links, 100 * s->eff, s->ctl_ref, s->ctl.n > 0 ?
           "the lower of the reference and a control pair measured alongside" : "the reference");
  s->phase = P_DONE;
}

/* After every pass of one halving level. */
void accept__halving_evaluate(accept_search_t *s, accept_report_t *rep, const char *const *hosts) {
  int h0 = (s->nsuspects + 1) / 2;
  const int *nodes[2] = {s->suspects, s->suspects + h0};
  int n[2] = {h0, s->nsuspects - h0};
  double b0 = accept_series_best(&s->half[0]), b1 = accept_series_best(&s->half[1]);
  if (b0 < 0) b0 = 0;
  if (b1 < 0) b1 = 0;
  double ref = b0 > b1 ? b0 : b1;
  update_eff(s);
  double limit = s->eff * ref;
  int slow0 = b0 < limit, slow1 = b1 < limit;
  add_meas(rep, "halving", &s->half[0], nodes[0], n[0], ref, slow0, hosts);
  add_meas(rep, "halving", &s->half[1], nodes[1], n[1], ref, slow1, hosts);
  memset(s->half, 0, sizeof s->half);
  s->pass = 0;
  if (!slow0 && !slow1) {
    snprintf(s->note, sizeof s->note,
             "halving: the two halves of %d nodes measured %.3f and %.3f GB/s (best of %d tries), the "
             "slower at or above %.0f%% of the faster: %s", s->nsuspects, b0, b1, s->passes, 100 * s->eff,
             s->fallback ? "no single node to blame" : "no slow half");
    s->inconclusive = s->fallback;
    s->phase = P_DONE;
    return;
  }
  int keep = slow0 ? 0 : 1;
  for (int i = 0; i < n[!keep]; i++) s->verdict[nodes[!keep][i]] = V_GOOD;
  /* nodes[keep] points into suspects: move it to the front. */
  memmove(s->suspects, nodes[keep], (size_t)n[keep] * sizeof(int));
  s->nsuspects = n[keep];
  for (int i = 0; i < s->nsuspects; i++) s->verdict[s->suspects[i]] = V_SUSPECT;
  s->half_ref = ref;
  snprintf(s->note, sizeof s->note, "halving: culprit among %d node(s)", s->nsuspects);
  if (s->nsuspects <= 3) {
    memset(&s->ctl, 0, sizeof s->ctl);
    /* Each suspect with its own good node; the scores rank the good nodes for the control. */
    for (int i = 0; i < s->nnodes; i++) s->score[i] = s->verdict[i] == V_GOOD ? 1 : 0;
    accept__pick_partners(s, s->suspects, s->nsuspects);
    s->phase = P_HPAIRS;
  }
}

/* After every pass of the last suspects' pairs: name those below the limit of the best pair
 * measured in the same passes (theirs and the control's). */
void accept__hpairs_evaluate(accept_search_t *s, accept_report_t *rep, const char *const *hosts) {
  double ref = accept_series_best(&s->ctl);
  for (int i = 0; i < s->nsuspects; i++) {
    int x = s->suspects[i];
    s->confirm_bw[x] = accept_series_best(&s->conf[x]);
    if (s->confirm_bw[x] > ref) ref = s->confirm_bw[x];
  }
  if (ref <= 0) ref = s->half_ref;
  update_eff(s);
  double limit = s->eff * ref;
  s->reference = ref;
  s->ctl_ref = ref;
  int named = 0;
  for (int i = 0; i < s->nsuspects; i++) named += s->confirm_bw[s->suspects[i]] < limit;
  /* The nodes of the slow half that are fast with a good node are good when another one
   * explains the slow half; when none does, the slowness was not reproduced. */
  for (int i = 0; i < s->nsuspects; i++) {
    int x = s->suspects[i];
    s->verdict[x] = s->confirm_bw[x] < limit ? V_BAD : named ? V_GOOD : V_NOT_REPRODUCED;
    add_meas(rep, "halving", &s->conf[x], (int[]){x, s->partner[x]}, 2, ref, s->verdict[x] == V_BAD, hosts);
  }
  if (s->ctl.n > 0) add_meas(rep, "control", &s->ctl, (int[]){s->ctl_a, s->ctl_b}, 2, ref, 0, hosts);
  snprintf(s->note, sizeof s->note, "halving: %d node(s) named among the last %d suspects, each paired "
           "with a good node (best of %d tries; reference %.3f GB/s, the best of these pairs and a "
           "control pair)", named, s->nsuspects, s->passes, ref);
  if (!named) s->inconclusive = 1;
  s->phase = P_DONE;
}

/* ---- the report ---- */

/* The search's results as checks: one "bad_node" per named node (in that node's suite), one
 * "bad_link" per confirmed slow pair, warnings for suspects that were not reproduced, and the
 * summary "pair_search" of the job, which says the rule applied. */
void accept_search_report(const accept_search_t *s, const char *const *hosts, accept_report_t *rep) {
  accept_check_t c;
  double ref = s->ctl_ref > 0 ? s->ctl_ref : s->reference;
  double limit = s->eff * ref;
  int named = 0;
  strbuf_t names = STRBUF_INIT;
  rep->fraction = s->eff;
  /* A pair marked slow under a higher limit early in the search (before the noise was known
   * in full) is shown against the limit finally applied, as every report prints it. */
  for (int i = 0; i < rep->nmeas; i++) {
    accept_meas_t *m = &rep->meas[i];
    if (m->flagged && m->reference > 0 && m->busbw >= s->eff * m->reference) m->flagged = 0;
  }
  rep->search_jitter = s->noise;
  snprintf(rep->search_rule, sizeof rep->search_rule, "%s", s->rule);
  for (int x = 0; x < s->nnodes; x++) {
    if (s->verdict[x] != V_BAD && s->verdict[x] != V_NOT_REPRODUCED) continue;
    const char *h = hosts ? hosts[x] : "";
    accept_check_init(&c, "bad_node", h, x, -1, h);
    const char *p = hosts && s->partner[x] >= 0 && s->partner[x] < s->nnodes ? hosts[s->partner[x]] : "a good node";
    accept_check_value(&c, s->confirm_bw[x], "GB/s", "%.3f GB/s with %s", s->confirm_bw[x], p);
    accept_check_threshold(&c, ">= %.3f GB/s (%.0f%% of %.3f)", limit, 100 * s->eff, ref);
    if (s->verdict[x] == V_BAD) {
      if (s->mode == ACCEPT_SEARCH_HALVING)
        accept_check_set(&c, ACCEPT_FAIL, "named by halving: its half was the slow one and its pair "
                         "with a good node measured %.3f GB/s at best (%d tries)", s->confirm_bw[x], s->conf[x].n);
      else
        accept_check_set(&c, ACCEPT_FAIL, "every ring pair of this node is slow (best %.3f GB/s in %d tries "
                         "each) and the pair with a third, good node measured %.3f GB/s at best", s->score[x],
                         s->passes, s->confirm_bw[x]);
      accept_report_add_bad_host(rep, h);
      strbuf_printf(&names, "%s%s", named++ ? ", " : "", h);
    } else {
      if (s->mode == ACCEPT_SEARCH_HALVING)
        accept_check_set(&c, ACCEPT_WARN, "in the slow half, but fast with a good node (%.3f GB/s): "
                         "a passing problem, or load from elsewhere", s->confirm_bw[x]);
      else
        accept_check_set(&c, ACCEPT_WARN, "slow in the ring (best %.3f GB/s) but not when measured "
                         "again (%.3f GB/s): a passing problem, or load from elsewhere", s->score[x],
                         s->confirm_bw[x]);
    }
    accept_report_add(rep, &c);
  }
  int nlinks_bad = 0;
  for (int l = 0; l < s->nlinks; l++) {
    if (s->link_state[l] != L_BAD && s->link_state[l] != L_NOT_REPRODUCED) continue;
    if (s->verdict[s->link_a[l]] != V_GOOD || s->verdict[s->link_b[l]] != V_GOOD) continue;
    char lab[192];
    label_of((int[]){s->link_a[l], s->link_b[l]}, 2, hosts, lab, sizeof lab);
    accept_check_init(&c, "bad_link", "", -1, -1, lab);
    double again = accept_series_best(&s->relink[l]);
    accept_check_value(&c, again, "GB/s", "%.3f GB/s (ring %.3f)", again, s->link_bw[l]);
    accept_check_threshold(&c, ">= %.3f GB/s", limit);
    if (s->link_state[l] == L_BAD) {
      accept_check_set(&c, ACCEPT_FAIL, "this pair is slow while both nodes are fast with others: the "
                       "path between them (cable, switch port, route)");
      accept_report_add_bad_link(rep, lab);
      nlinks_bad++;
    } else {
      accept_check_set(&c, ACCEPT_WARN, "slow in the ring, not when measured again");
    }
    accept_report_add(rep, &c);
  }
  accept_check_init(&c, "pair_search", "", -1, -1, "");
  if (s->reference > 0) {
    accept_check_value(&c, s->reference, "GB/s", "reference %.3f GB/s", s->reference);
    accept_check_threshold(&c, "pairs >= %.0f%% of reference%s", 100 * s->eff,
                           s->eff < s->fraction ? " (lowered: noise)" : "");
  }
  if (named || nlinks_bad) {
    if (nlinks_bad)
      accept_check_set(&c, ACCEPT_FAIL, "%s%s%s%d slow link(s). %s. Rule: %s", named ? "bad node(s): " : "",
                       strbuf_str(&names), named ? "; " : "", nlinks_bad, s->note, s->rule);
    else
      accept_check_set(&c, ACCEPT_FAIL, "bad node(s): %s. %s. Rule: %s", strbuf_str(&names), s->note, s->rule);
  } else if (s->na) {
    accept_check_set(&c, ACCEPT_SKIP, "%s", s->note);
  } else if (s->inconclusive) {
    accept_check_set(&c, ACCEPT_WARN, "%s. Rule: %s", s->note, s->rule);
  } else {
    accept_check_set(&c, ACCEPT_PASS, "%s. Rule: %s", s->note, s->rule);
  }
  accept_report_add(rep, &c);
  strbuf_free(&names);
}
