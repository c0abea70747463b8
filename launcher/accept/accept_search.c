/* The bad-node / bad-link search as decisions only: which groups of nodes to measure next and
 * what the measured bandwidths say. The MPI side (accept_measure.c) runs the rounds it asks for.
 *
 * Noise. On a quiet dedicated fabric a pair measures within a few percent of itself from one
 * try to the next, and ClusterKit's rule (a pair below 93% of the best is bad) is right. On busy
 * or shared nodes -- namespaces or containers on one machine, where a "link" is CPU time -- a
 * healthy pair measures 30-50% below itself now and then, for seconds at a time, and that rule
 * names healthy nodes. So:
 *   - every group that is judged is measured `passes` times (ACCEPT_SEARCH_PASSES), the tries
 *     spread over the search (pass after pass over all groups, not back-to-back), and its best
 *     try counts: interference only ever slows a transfer down, a slow link slows every try;
 *   - the noise is measured, not assumed: how far a group's tries fall below its best one (the
 *     largest such spread among the groups; a consistently slow link spreads little, so it does
 *     not hide itself by raising the noise);
 *   - the fraction applied is accept_search_rule(pair_fraction, noise): pair_fraction when the
 *     noise is within what it tolerates, else lower, so that only what stands out of the noise is
 *     flagged (the report says so, with both numbers);
 *   - a confirmation is judged against a control pair of good nodes measured alongside it, so a
 *     machine that got busier since the ring does not make its suspects look bad.
 *
 * ring (default):
 *   1. Ring: every link (i, i+1 mod N) is measured, in rounds of disjoint pairs (2 rounds per
 *      pass for even N, 3 for odd N). A node's score is its best link; the reference is the
 *      median of the scores. A node whose best link is below the limit is suspect (every link it
 *      has is slow: the node is the common factor); a slow link whose two nodes both have a good
 *      link elsewhere is a suspect link. With the median of the scores a single bad node drags
 *      only its own score down, so the reference stays the healthy speed.
 *   2. Confirmation: each suspect node is measured again with a good node (not its ring
 *      neighbour when possible: a third partner), each suspect link again on its own, and a
 *      control pair of good nodes alongside; named only when the best of these is also below the
 *      limit of min(reference, control). Otherwise "not reproduced" (a warning).
 *   3. When the ring names nobody but the job's bus bandwidth failed, the driver switches to
 *      halving (accept_search_fallback_halving).
 * halving:
 *   The suspect set (all nodes at first) is split in two halves (both measured at once unless
 *   they share a machine). A half below the limit of the faster one holds the culprit; the faster
 *   half's nodes are good. Repeat on the slow half until 2 or 3 nodes remain, then measure each of
 *   them with a distinct good node, with a control pair alongside, and name those below the limit
 *   of the best of these pairs. Halves equally fast: no single node to blame. Needs 4 nodes
 *   (with fewer the ring is used). A culprit in each half is not resolved by halving (the faster
 *   half is taken as good); the ring finds such cases. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/accept/accept.h"
#include "launcher/accept/accept_search_int.h"


/* ---- the rule ---- */

/* How many times the measured noise the limit stays below the reference. The noise is the
 * largest spread among 3 tries per group, but a healthy group can also stay slow for all of its
 * tries: on shared cores a pair kept at ~0.6-0.8 of the reference for seconds while tries varied
 * only ~20% (measured on a 2-core machine shared with other jobs, 4 namespaces as hosts; 70 runs
 * with and without a busy loop: the closest healthy result was 2.4x above the limit at 3 x, 1.8x
 * at 2.5 x). On a quiet fabric, with tries within 2.3%, pair_fraction 0.93 still holds. */
#define NOISE_MARGIN 3.0

double accept_search_rule(double fraction, double noise, char *why, size_t len) {
  if (noise < 0) noise = 0;
  double room = 1 - NOISE_MARGIN * noise; /* what stands out of the noise */
  double eff = fraction;
  if (room < fraction) eff = room < ACCEPT_SEARCH_FLOOR ? ACCEPT_SEARCH_FLOOR : room;
  if (eff > fraction) eff = fraction; /* a low pair_fraction asked for is kept */
  if (why) {
    if (eff >= fraction)
      snprintf(why, len, "pairs below %.0f%% of the reference (pair_fraction %.2f; measured noise "
               "%.0f%%, within what it tolerates)", 100 * fraction, fraction, 100 * noise);
    else if (room < ACCEPT_SEARCH_FLOOR)
      snprintf(why, len, "noise %.0f%%: far too large for pair_fraction %.2f to mean anything; "
               "flagging only pairs below %.2f of the reference (several times slower)",
               100 * noise, fraction, eff);
    else
      snprintf(why, len, "noise %.0f%%: flagging below %.2f of the reference instead of %.2f (1 - "
               "%.1f x noise: healthy pairs measured up to %.0f%% below their best, busy or shared "
               "nodes; differences within that are not evidence)", 100 * noise, eff, fraction,
               NOISE_MARGIN, 100 * noise);
  }
  return eff;
}

/* ---- series ---- */

double accept_series_best(const accept_series_t *x) {
  double b = -1;
  for (int i = 0; i < x->n; i++)
    if (x->bw[i] > b) b = x->bw[i];
  return b;
}

static void series_add(accept_series_t *x, double bw, int round) {
  if (x->n >= ACCEPT_PASSES_MAX) return;
  x->bw[x->n] = bw >= 0 ? bw : -1;
  x->round[x->n] = round;
  x->n++;
}

/* How far the worst try fell below the best one (0..1); -1 when it cannot tell (fewer than 2
 * tries, or a failed one). */
double accept__series_spread(const accept_series_t *x) {
  if (x->n < 2) return -1;
  double lo = x->bw[0], hi = x->bw[0];
  for (int i = 1; i < x->n; i++) {
    if (x->bw[i] < lo) lo = x->bw[i];
    if (x->bw[i] > hi) hi = x->bw[i];
  }
  if (lo <= 0 || hi <= 0) return -1;
  return 1 - lo / hi;
}

/* ---- life cycle ---- */

static void round_clear(accept_search_t *s) {
  for (int g = 0; g < s->ngroups; g++) free(s->groups[g]);
  s->ngroups = 0;
}

int accept_search_init(accept_search_t *s, int nnodes, double fraction, accept_search_mode_t mode) {
  memset(s, 0, sizeof *s);
  s->nnodes = nnodes;
  s->fraction = fraction;
  s->eff = fraction;
  s->mode = mode;
  s->passes = ACCEPT_SEARCH_PASSES;
  s->ctl_a = s->ctl_b = -1;
  accept_search_rule(fraction, 0, s->rule, sizeof s->rule);
  int n = nnodes > 0 ? nnodes : 1;
  s->score = calloc((size_t)n, sizeof *s->score);
  s->verdict = calloc((size_t)n, sizeof *s->verdict);
  s->confirm_bw = calloc((size_t)n, sizeof *s->confirm_bw);
  s->conf = calloc((size_t)n, sizeof *s->conf);
  s->suspects = calloc((size_t)n, sizeof *s->suspects);
  s->link_a = calloc((size_t)n, sizeof *s->link_a);
  s->link_b = calloc((size_t)n, sizeof *s->link_b);
  s->link = calloc((size_t)n, sizeof *s->link);
  s->relink = calloc((size_t)n, sizeof *s->relink);
  s->link_bw = calloc((size_t)n, sizeof *s->link_bw);
  s->link_state = calloc((size_t)n, sizeof *s->link_state);
  s->groups = calloc((size_t)n, sizeof *s->groups);
  s->gsize = calloc((size_t)n, sizeof *s->gsize);
  s->gkind = calloc((size_t)n, sizeof *s->gkind);
  s->gref = calloc((size_t)n, sizeof *s->gref);
  s->machine = calloc((size_t)n, sizeof *s->machine);
  s->partner = calloc((size_t)n, sizeof *s->partner);
  if (!s->partner || !s->score || !s->verdict || !s->confirm_bw || !s->conf || !s->suspects || !s->link_a ||
      !s->link_b || !s->link || !s->relink || !s->link_bw || !s->link_state || !s->groups || !s->gsize ||
      !s->gkind || !s->gref || !s->machine) {
    accept_search_free(s);
    return GPL_ENOMEM;
  }
  for (int i = 0; i < n; i++) {
    s->machine[i] = i;
    s->confirm_bw[i] = -1;
    s->partner[i] = -1;
  }
  if (mode == ACCEPT_SEARCH_OFF || nnodes < 2) {
    s->phase = P_DONE;
    snprintf(s->note, sizeof s->note, "%s", mode == ACCEPT_SEARCH_OFF ? "search = off" : "one node: no node pairs");
    s->na = 1;
    return GPL_OK;
  }
  if (mode == ACCEPT_SEARCH_HALVING && nnodes >= 4) {
    s->phase = P_HALVING;
    s->nsuspects = nnodes;
    for (int i = 0; i < nnodes; i++) s->suspects[i] = i;
    return GPL_OK;
  }
  /* Ring links; two nodes have a single link. */
  s->nlinks = nnodes == 2 ? 1 : nnodes;
  for (int l = 0; l < s->nlinks; l++) {
    s->link_a[l] = l;
    s->link_b[l] = (l + 1) % nnodes;
    s->link_bw[l] = -2; /* not measured */
  }
  s->phase = P_RING;
  if (mode == ACCEPT_SEARCH_HALVING)
    snprintf(s->note, sizeof s->note, "halving needs 4 nodes; ring used for %d", nnodes);
  return GPL_OK;
}

void accept_search_free(accept_search_t *s) {
  if (s->groups) round_clear(s);
  free(s->score);
  free(s->verdict);
  free(s->confirm_bw);
  free(s->conf);
  free(s->suspects);
  free(s->link_a);
  free(s->link_b);
  free(s->link);
  free(s->relink);
  free(s->link_bw);
  free(s->link_state);
  free(s->groups);
  free(s->gsize);
  free(s->gkind);
  free(s->gref);
  free(s->machine);
  free(s->partner);
  free(s->jit);
  memset(s, 0, sizeof *s);
}

void accept_search_set_passes(accept_search_t *s, int passes) {
  s->passes = passes < 1 ? 1 : passes > ACCEPT_PASSES_MAX ? ACCEPT_PASSES_MAX : passes;
}

void accept_search_set_machines(accept_search_t *s, const int *machine) {
  for (int i = 0; i < s->nnodes; i++) s->machine[i] = machine[i];
}

/* ---- rounds ---- */

/* May a group of these nodes join the round? Its nodes must be free, and no machine of its nodes
 * may already be busy with another group of the round. */
static int group_fits(const accept_search_t *s, const int *color, const int *nodes, int n) {
  for (int i = 0; i < n; i++) {
    if (color[nodes[i]] >= 0) return 0;
    for (int j = 0; j < s->nnodes; j++)
      if (color[j] >= 0 && s->machine[j] == s->machine[nodes[i]]) return 0;
  }
  return 1;
}

/* Add a group of the nodes given to the round when it fits. \return 1 added, 0 not, or
 * GPL_ENOMEM. */
static int add_group(accept_search_t *s, int kind, int ref, const int *nodes, int n, int *color) {
  if (!group_fits(s, color, nodes, n)) return 0;
  int g = s->ngroups;
  s->groups[g] = malloc((size_t)n * sizeof(int));
  if (!s->groups[g]) return GPL_ENOMEM;
  memcpy(s->groups[g], nodes, (size_t)n * sizeof(int));
  s->gsize[g] = n;
  s->gkind[g] = kind;
  s->gref[g] = ref;
  for (int i = 0; i < n; i++) color[nodes[i]] = g;
  s->ngroups++;
  return 1;
}

static int is_neighbour(const accept_search_t *s, int a, int b) {
  if (s->nnodes < 3 || s->nlinks == 0) return 0;
  return (a + 1) % s->nnodes == b || (b + 1) % s->nnodes == a;
}

/* Good partners for the nodes to be confirmed (list x[0..nx)), and a control pair of two good
 * nodes. A partner is preferably not a ring neighbour (a third partner for a suspect: the ring
 * measured the two neighbours already) and not already another one's partner (so the pairs can
 * run at once on separate machines). The control: the two best scored good nodes that are
 * nobody's partner, else the two best scored good nodes. */
void accept__pick_partners(accept_search_t *s, const int *x, int nx) {
  int n = s->nnodes;
  int *used = calloc((size_t)n, sizeof *used);
  if (!used) return;
  for (int k = 0; k < nx; k++) {
    int best = -1, best_pen = 1 << 30;
    for (int i = 0; i < n; i++) {
      if (i == x[k] || s->verdict[i] != V_GOOD) continue;
      int pen = 2 * used[i] + is_neighbour(s, x[k], i);
      if (pen < best_pen) {
        best = i;
        best_pen = pen;
      }
    }
    s->partner[x[k]] = best;
    if (best >= 0) used[best]++;
  }
  int nfree = 0;
  for (int i = 0; i < n; i++) nfree += s->verdict[i] == V_GOOD && !used[i];
  s->ctl_a = s->ctl_b = -1;
  for (int k = 0; k < 2; k++) {
    int best = -1;
    for (int i = 0; i < n; i++) {
      if (s->verdict[i] != V_GOOD || i == s->ctl_a || (nfree >= 2 && used[i])) continue;
      if (best < 0 || s->score[i] > s->score[best]) best = i;
    }
    if (k == 0) s->ctl_a = best;
    else s->ctl_b = best;
  }
  if (s->ctl_a < 0 || s->ctl_b < 0) s->ctl_a = s->ctl_b = -1;
  free(used);
}

int accept_search_next(accept_search_t *s, int *color, const char **phase) {
  round_clear(s);
  for (int i = 0; i < s->nnodes; i++) color[i] = -1;
  static const char *const names[] = {"ring", "confirm", "halving", "halving", "done"};
  if (phase) *phase = names[s->phase];
  int p = s->pass;
  switch (s->phase) {
    case P_RING:
      /* Links not measured yet in this pass whose nodes are free this round. */
      for (int l = 0; l < s->nlinks; l++) {
        if (s->link[l].n > p) continue;
        CHECK(add_group(s, K_LINK, l, (int[]){s->link_a[l], s->link_b[l]}, 2, color));
      }
      break;
    case P_CONFIRM:
      for (int x = 0; x < s->nnodes; x++) {
        if (s->verdict[x] != V_SUSPECT || s->partner[x] < 0 || s->conf[x].n > p) continue;
        CHECK(add_group(s, K_CONFIRM_NODE, x, (int[]){x, s->partner[x]}, 2, color));
      }
      for (int l = 0; l < s->nlinks; l++) {
        if (s->link_state[l] != L_FLAGGED || s->relink[l].n > p) continue;
        if (s->verdict[s->link_a[l]] != V_GOOD || s->verdict[s->link_b[l]] != V_GOOD) continue;
        CHECK(add_group(s, K_CONFIRM_LINK, l, (int[]){s->link_a[l], s->link_b[l]}, 2, color));
      }
      if (s->ctl_a >= 0 && s->ctl.n <= p) CHECK(add_group(s, K_CONTROL, 0, (int[]){s->ctl_a, s->ctl_b}, 2, color));
      break;
    case P_HALVING: {
      /* Both halves at once, unless they share a machine: then one half per round. */
      int h0 = (s->nsuspects + 1) / 2;
      for (int h = 0; h < 2; h++) {
        const int *nodes = h == 0 ? s->suspects : s->suspects + h0;
        int n = h == 0 ? h0 : s->nsuspects - h0;
        if (s->half[h].n <= p) CHECK(add_group(s, K_HALF, h, nodes, n, color));
      }
      break;
    }
    case P_HPAIRS:
      for (int i = 0; i < s->nsuspects; i++) {
        int x = s->suspects[i];
        if (s->partner[x] < 0 || s->conf[x].n > p) continue;
        CHECK(add_group(s, K_HPAIR, x, (int[]){x, s->partner[x]}, 2, color));
      }
      if (s->ctl_a >= 0 && s->ctl.n <= p) CHECK(add_group(s, K_CONTROL, 0, (int[]){s->ctl_a, s->ctl_b}, 2, color));
      break;
    default:
      break;
  }
  if (s->ngroups > 0) {
    s->round++;
  } else if (s->phase != P_DONE) {
    /* Cannot happen (a confirmation always has its control, a halving its halves); should it,
     * the search ends saying so rather than waiting for measurements that never come. */
    snprintf(s->note, sizeof s->note, "the search found nothing left to measure in its %s phase", names[s->phase]);
    s->inconclusive = 1;
    s->phase = P_DONE;
  }
  return s->ngroups;
}

/* Has every group of the current pass been measured? */
static int pass_complete(const accept_search_t *s) {
  int p = s->pass;
  switch (s->phase) {
    case P_RING:
      for (int l = 0; l < s->nlinks; l++)
        if (s->link[l].n <= p) return 0;
      return 1;
    case P_CONFIRM:
      for (int x = 0; x < s->nnodes; x++)
        if (s->verdict[x] == V_SUSPECT && s->partner[x] >= 0 && s->conf[x].n <= p) return 0;
      for (int l = 0; l < s->nlinks; l++)
        if (s->link_state[l] == L_FLAGGED && s->verdict[s->link_a[l]] == V_GOOD &&
            s->verdict[s->link_b[l]] == V_GOOD && s->relink[l].n <= p)
          return 0;
      return s->ctl_a < 0 || s->ctl.n > p;
    case P_HALVING:
      return s->half[0].n > p && s->half[1].n > p;
    case P_HPAIRS:
      for (int i = 0; i < s->nsuspects; i++)
        if (s->partner[s->suspects[i]] >= 0 && s->conf[s->suspects[i]].n <= p) return 0;
      return s->ctl_a < 0 || s->ctl.n > p;
    default:
      return 1;
  }
}

void accept_search_feed(accept_search_t *s, const double *bw, const double *jitter,
                        accept_report_t *rep, const char *const *hosts) {
  for (int g = 0; jitter && g < s->ngroups; g++) {
    if (s->njit == s->capjit) {
      int cap = s->capjit ? 2 * s->capjit : 16;
      double *v = realloc(s->jit, (size_t)cap * sizeof *v);
      if (!v) break;
      s->jit = v;
      s->capjit = cap;
    }
    s->jit[s->njit++] = jitter[g];
  }
  for (int g = 0; g < s->ngroups; g++) {
    int r = s->gref[g];
    switch (s->gkind[g]) {
      case K_LINK: series_add(&s->link[r], bw[g], s->round); break;
      case K_CONFIRM_NODE:
      case K_HPAIR: series_add(&s->conf[r], bw[g], s->round); break;
      case K_CONFIRM_LINK: series_add(&s->relink[r], bw[g], s->round); break;
      case K_HALF: series_add(&s->half[r], bw[g], s->round); break;
      case K_CONTROL: series_add(&s->ctl, bw[g], s->round); break;
      default: break;
    }
  }
  round_clear(s);
  if (!pass_complete(s)) return;
  /* Two nodes: one pair, nothing to judge it against; one try says what it is. */
  if (++s->pass < s->passes && !(s->phase == P_RING && s->nlinks == 1)) return;
  switch (s->phase) {
    case P_RING: accept__ring_evaluate(s, rep, hosts); break;
    case P_CONFIRM: accept__confirm_evaluate(s, rep, hosts); break;
    case P_HALVING: accept__halving_evaluate(s, rep, hosts); break;
    case P_HPAIRS: accept__hpairs_evaluate(s, rep, hosts); break;
    default: break;
  }
}

void accept_search_fallback_halving(accept_search_t *s) {
  if (s->phase != P_DONE || s->nnodes < 4) return;
  for (int i = 0; i < s->nnodes; i++)
    if (s->verdict[i] == V_BAD) return; /* the ring named someone */
  s->mode = ACCEPT_SEARCH_HALVING;
  s->fallback = 1;
  s->phase = P_HALVING;
  s->pass = 0;
  memset(s->half, 0, sizeof s->half);
  memset(&s->ctl, 0, sizeof s->ctl);
  s->ctl_a = s->ctl_b = -1;
  s->nsuspects = s->nnodes;
  for (int i = 0; i < s->nnodes; i++) {
    s->suspects[i] = i;
    s->verdict[i] = V_UNKNOWN;
    s->confirm_bw[i] = -1;
    memset(&s->conf[i], 0, sizeof s->conf[i]);
  }
}
