/* The bad-node / bad-link search as decisions only: which groups of nodes to measure next and
 * what the measured bandwidths say. The MPI side (accept_measure.c) runs the rounds it asks for.
 *
 * ring (default):
 *   1. Ring: every link (i, i+1 mod N) is measured once, in rounds of disjoint pairs (2 rounds
 *      for even N, 3 for odd N). A node's score is its best link; the reference is the median
 *      of the scores. A node whose best link is below fraction x reference is suspect (every
 *      link it has is slow: the node is the common factor); a slow link whose two nodes both
 *      have a good link elsewhere is a suspect link. With the median of the scores a single bad
 *      node drags only its own score down, so the reference stays the healthy speed (the median
 *      of the links would not: in a ring of 3 a bad node owns 2 of the 3 links).
 *   2. Pairs: each suspect node is measured again with a good node (not its ring neighbour
 *      when possible), each suspect link again on its own. Named only when the second
 *      measurement is also below fraction x reference; otherwise "not reproduced".
 *   3. When the ring names nobody but the job's bus bandwidth failed, the driver switches to
 *      halving (accept_search_fallback_halving).
 * halving:
 *   The suspect set (all nodes at first) is split in two halves, both measured at once (an
 *   allreduce in each half). A half below fraction x the faster one holds the culprit; the
 *   faster half's nodes are good. Repeat on the slow half until 2 or 3 nodes remain, then
 *   measure each of them with a distinct good node and name those below fraction x the best of
 *   these pairs and the last good half. Halves equally fast: no single node to blame.
 *   Needs 4 nodes (with fewer the ring is used). A culprit in each half is not resolved by
 *   halving (the faster half is taken as good); the ring finds such cases. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/strbuf.h"
#include "launcher/accept.h"

enum { P_RING = 0, P_CONFIRM, P_HALVING, P_HPAIRS, P_DONE };
enum { K_LINK = 0, K_CONFIRM_NODE, K_CONFIRM_LINK, K_HALF, K_HPAIR };
enum { V_UNKNOWN = 0, V_GOOD, V_SUSPECT, V_BAD, V_NOT_REPRODUCED };
enum { L_OK = 0, L_FLAGGED, L_BAD, L_NOT_REPRODUCED };

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
  int n = nnodes > 0 ? nnodes : 1;
  s->score = calloc((size_t)n, sizeof *s->score);
  s->verdict = calloc((size_t)n, sizeof *s->verdict);
  s->confirm_bw = calloc((size_t)n, sizeof *s->confirm_bw);
  s->suspects = calloc((size_t)n, sizeof *s->suspects);
  s->link_a = calloc((size_t)n, sizeof *s->link_a);
  s->link_b = calloc((size_t)n, sizeof *s->link_b);
  s->link_bw = calloc((size_t)n, sizeof *s->link_bw);
  s->link_state = calloc((size_t)n, sizeof *s->link_state);
  s->groups = calloc((size_t)n, sizeof *s->groups);
  s->gsize = calloc((size_t)n, sizeof *s->gsize);
  s->gkind = calloc((size_t)n, sizeof *s->gkind);
  s->gref = calloc((size_t)n, sizeof *s->gref);
  s->machine = calloc((size_t)n, sizeof *s->machine);
  s->partner = calloc((size_t)n, sizeof *s->partner);
  s->confirm_round = calloc((size_t)n, sizeof *s->confirm_round);
  if (!s->partner || !s->confirm_round ||!s->score || !s->verdict || !s->confirm_bw || !s->suspects || !s->link_a || !s->link_b ||
      !s->link_bw || !s->link_state || !s->groups || !s->gsize || !s->gkind || !s->gref || !s->machine) {
    accept_search_free(s);
    return GPL_ENOMEM;
  }
  for (int i = 0; i < n; i++) s->machine[i] = i;
  for (int i = 0; i < n; i++) s->confirm_bw[i] = -1;
  if (mode == ACCEPT_SEARCH_OFF || nnodes < 2) {
    s->phase = P_DONE;
    snprintf(s->note, sizeof s->note, "%s", mode == ACCEPT_SEARCH_OFF ? "search = off" : "one node: no node pairs");
    s->na = 1;
    return GPL_OK;
  }
  s->half_bw[0] = s->half_bw[1] = -2;
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
  free(s->suspects);
  free(s->link_a);
  free(s->link_b);
  free(s->link_bw);
  free(s->link_state);
  free(s->groups);
  free(s->gsize);
  free(s->gkind);
  free(s->gref);
  free(s->machine);
  free(s->partner);
  free(s->confirm_round);
  free(s->jit);
  memset(s, 0, sizeof *s);
}

void accept_search_set_machines(accept_search_t *s, const int *machine) {
  for (int i = 0; i < s->nnodes; i++) s->machine[i] = machine[i];
}

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

/* Add a group of the nodes given to the round. */
static int add_group(accept_search_t *s, int kind, int ref, const int *nodes, int n, int *color) {
  int g = s->ngroups;
  s->groups[g] = malloc((size_t)n * sizeof(int));
  if (!s->groups[g]) return GPL_ENOMEM;
  memcpy(s->groups[g], nodes, (size_t)n * sizeof(int));
  s->gsize[g] = n;
  s->gkind[g] = kind;
  s->gref[g] = ref;
  for (int i = 0; i < n; i++) color[nodes[i]] = g;
  s->ngroups++;
  return GPL_OK;
}

static int is_neighbour(const accept_search_t *s, int a, int b) {
  if (s->nnodes < 3) return 1;
  return (a + 1) % s->nnodes == b || (b + 1) % s->nnodes == a;
}

/* A good node not used in this round, preferring one that is not a ring neighbour of x. */
static int free_good_node(const accept_search_t *s, const int *color, int x) {
  int fallback = -1;
  for (int i = 0; i < s->nnodes; i++) {
    if (i == x || color[i] >= 0 || s->verdict[i] != V_GOOD) continue;
    if (!is_neighbour(s, x, i)) return i;
    if (fallback < 0) fallback = i;
  }
  return fallback;
}

int accept_search_next(accept_search_t *s, int *color, const char **phase) {
  round_clear(s);
  for (int i = 0; i < s->nnodes; i++) color[i] = -1;
  static const char *const names[] = {"ring", "confirm", "halving", "halving", "done"};
  if (phase) *phase = names[s->phase];
  switch (s->phase) {
    case P_RING:
      /* Unmeasured links whose nodes are both free this round. */
      for (int l = 0; l < s->nlinks; l++) {
        if (s->link_bw[l] > -2) continue;
        int pair[2] = {s->link_a[l], s->link_b[l]};
        if (!group_fits(s, color, pair, 2)) continue;
        CHECK(add_group(s, K_LINK, l, pair, 2, color));
      }
      break;
    case P_CONFIRM:
      for (int x = 0; x < s->nnodes; x++) {
        if (s->verdict[x] != V_SUSPECT || s->confirm_bw[x] > -1 || color[x] >= 0) continue;
        int g = free_good_node(s, color, x);
        if (g < 0) continue; /* all good nodes busy this round: the next one */
        int pair[2] = {x, g};
        if (!group_fits(s, color, pair, 2)) continue;
        CHECK(add_group(s, K_CONFIRM_NODE, x, pair, 2, color));
      }
      for (int l = 0; l < s->nlinks; l++) {
        if (s->link_state[l] != L_FLAGGED) continue;
        int a = s->link_a[l], b = s->link_b[l];
        if (s->verdict[a] != V_GOOD || s->verdict[b] != V_GOOD) continue;
        int pair[2] = {a, b};
        if (!group_fits(s, color, pair, 2)) continue;
        CHECK(add_group(s, K_CONFIRM_LINK, l, pair, 2, color));
      }
      break;
    case P_HALVING: {
      /* Both halves at once, unless they share a machine: then one half per round. */
      int h0 = (s->nsuspects + 1) / 2;
      for (int h = 0; h < 2; h++) {
        const int *nodes = h == 0 ? s->suspects : s->suspects + h0;
        int n = h == 0 ? h0 : s->nsuspects - h0;
        if (s->half_bw[h] <= -2 && group_fits(s, color, nodes, n)) CHECK(add_group(s, K_HALF, h, nodes, n, color));
      }
      break;
    }
    case P_HPAIRS:
      for (int i = 0; i < s->nsuspects; i++) {
        int x = s->suspects[i];
        if (s->confirm_bw[x] > -1) continue;
        int g = free_good_node(s, color, x);
        if (g < 0) continue;
        int pair[2] = {x, g};
        if (!group_fits(s, color, pair, 2)) continue;
        CHECK(add_group(s, K_HPAIR, x, pair, 2, color));
      }
      break;
    default:
      break;
  }
  if (s->ngroups > 0) s->round++;
  return s->ngroups;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(const double *v, int n) {
  if (n <= 0) return 0;
  double *c = malloc((size_t)n * sizeof *c);
  if (!c) return 0;
  memcpy(c, v, (size_t)n * sizeof *c);
  qsort(c, (size_t)n, sizeof *c, cmp_double);
  double m = n % 2 ? c[n / 2] : 0.5 * (c[n / 2 - 1] + c[n / 2]);
  free(c);
  return m;
}

/* The fraction to apply, from the noise seen so far. */
static void update_eff(accept_search_t *s) {
  s->noise = median(s->jit, s->njit);
  if (s->noise < 0) s->noise = 0;
  if (s->noise > 0.9) s->noise = 0.9;
  s->eff = s->fraction < 1 - s->noise ? s->fraction : 1 - s->noise;
}

/* "; pair_fraction 0.93 lowered to 0.55: ..." when the noise lowered it, else "". */
static const char *eff_note(const accept_search_t *s, char *buf, size_t len) {
  buf[0] = 0;
  if (s->eff < s->fraction)
    snprintf(buf, len, " (pair_fraction %.2f lowered to %.2f: a typical iteration ran %.0f%% slower than "
             "the best one, busy or shared nodes; differences within that noise are not evidence)",
             s->fraction, s->eff, 100 * s->noise);
  return buf;
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

static void add_meas(accept_report_t *rep, const char *phase, int round, const int *nodes, int n,
                     double bw, double ref, int flagged, const char *const *hosts) {
  if (!rep) return;
  accept_meas_t m;
  memset(&m, 0, sizeof m);
  snprintf(m.phase, sizeof m.phase, "%s", phase);
  m.round = round;
  m.nnodes = n;
  m.nodes = (int *)nodes;
  label_of(nodes, n, hosts, m.label, sizeof m.label);
  m.busbw = bw;
  m.reference = ref;
  m.flagged = flagged;
  accept_report_add_meas(rep, &m);
}

/* After the whole ring: scores, reference, suspects. */
static void ring_evaluate(accept_search_t *s, accept_report_t *rep, const char *const *hosts,
                          const int *rounds) {
  int n = s->nnodes;
  if (s->nlinks == 1) {
    s->reference = 0;
    for (int i = 0; i < n; i++) s->verdict[i] = V_UNKNOWN;
    add_meas(rep, "ring", rounds[0], (int[]){s->link_a[0], s->link_b[0]}, 2, s->link_bw[0], 0, 0, hosts);
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
  update_eff(s);
  double limit = s->eff * s->reference;
  char en[300];
  eff_note(s, en, sizeof en);
  int nsus = 0, nflag = 0;
  for (int i = 0; i < n; i++) {
    s->verdict[i] = s->score[i] < limit ? V_SUSPECT : V_GOOD;
    nsus += s->verdict[i] == V_SUSPECT;
  }
  for (int l = 0; l < s->nlinks; l++) {
    double bw = s->link_bw[l] > 0 ? s->link_bw[l] : 0;
    s->link_state[l] = bw < limit ? L_FLAGGED : L_OK;
    nflag += s->link_state[l] == L_FLAGGED;
    add_meas(rep, "ring", rounds[l], (int[]){s->link_a[l], s->link_b[l]}, 2, s->link_bw[l],
             s->reference, s->link_state[l] == L_FLAGGED, hosts);
  }
  if (nflag == 0) {
    snprintf(s->note, sizeof s->note,
             "%d ring pairs, all at or above %.0f%% of the median node score %.3f GB/s%s", s->nlinks,
             100 * s->eff, s->reference, en);
    s->phase = P_DONE;
    return;
  }
  snprintf(s->note, sizeof s->note, "%d of %d ring pairs below %.0f%% of the median node score "
           "%.3f GB/s; %d suspect node(s)%s", nflag, s->nlinks, 100 * s->eff, s->reference, nsus, en);
  s->phase = P_CONFIRM;
}

static void confirm_done_check(accept_search_t *s) {
  for (int x = 0; x < s->nnodes; x++)
    if (s->verdict[x] == V_SUSPECT) return;
  for (int l = 0; l < s->nlinks; l++)
    if (s->link_state[l] == L_FLAGGED && s->verdict[s->link_a[l]] == V_GOOD &&
        s->verdict[s->link_b[l]] == V_GOOD)
      return;
  s->phase = P_DONE;
}

void accept_search_feed(accept_search_t *s, const double *bw, const double *jitter,
                        accept_report_t *rep, const char *const *hosts) {
  double limit;
  char en[300];
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
  switch (s->phase) {
    case P_RING: {
      for (int g = 0; g < s->ngroups; g++) {
        s->link_bw[s->gref[g]] = bw[g] >= 0 ? bw[g] : -1;
        s->link_state[s->gref[g]] = s->round; /* the round, until evaluated */
      }
      int left = 0;
      for (int l = 0; l < s->nlinks; l++) left += s->link_bw[l] <= -2;
      if (!left) {
        int *rounds = calloc((size_t)(s->nlinks > 0 ? s->nlinks : 1), sizeof *rounds);
        for (int l = 0; rounds && l < s->nlinks; l++) rounds[l] = s->link_state[l];
        if (rounds) ring_evaluate(s, rep, hosts, rounds);
        else s->phase = P_DONE;
        free(rounds);
      }
      break;
    }
    case P_CONFIRM:
      limit = s->eff * s->reference; /* the ring's: one yardstick for ring and confirmation */
      for (int g = 0; g < s->ngroups; g++) {
        double b = bw[g] >= 0 ? bw[g] : 0;
        int slow = b < limit;
        if (s->gkind[g] == K_CONFIRM_NODE) {
          int x = s->gref[g];
          s->confirm_bw[x] = b;
          s->partner[x] = s->groups[g][1];
          s->verdict[x] = slow ? V_BAD : V_NOT_REPRODUCED;
        } else {
          int l = s->gref[g];
          s->link_state[l] = slow ? L_BAD : L_NOT_REPRODUCED;
        }
        add_meas(rep, "confirm", s->round, s->groups[g], s->gsize[g], bw[g], s->reference, slow, hosts);
      }
      /* A suspect with no good node free in any round would wait for ever: none can exist,
       * since at least half of the nodes score at or above the median. */
      confirm_done_check(s);
      break;
    case P_HALVING: {
      for (int g = 0; g < s->ngroups; g++) {
        s->half_bw[s->gref[g]] = bw[g] >= 0 ? bw[g] : -1;
        s->half_round[s->gref[g]] = s->round;
      }
      if (s->half_bw[0] <= -2 || s->half_bw[1] <= -2) break; /* the other half next round */
      int h0 = (s->nsuspects + 1) / 2;
      const int *nodes[2] = {s->suspects, s->suspects + h0};
      int n[2] = {h0, s->nsuspects - h0};
      double b0 = s->half_bw[0] > 0 ? s->half_bw[0] : 0, b1 = s->half_bw[1] > 0 ? s->half_bw[1] : 0;
      double ref = b0 > b1 ? b0 : b1;
      update_eff(s);
      limit = s->eff * ref;
      int slow0 = b0 < limit, slow1 = b1 < limit;
      add_meas(rep, "halving", s->half_round[0], nodes[0], n[0], s->half_bw[0], ref, slow0, hosts);
      add_meas(rep, "halving", s->half_round[1], nodes[1], n[1], s->half_bw[1], ref, slow1, hosts);
      s->half_bw[0] = s->half_bw[1] = -2;
      if (!slow0 && !slow1) {
        snprintf(s->note, sizeof s->note,
                 "halving: the two halves of %d nodes measured %.3f and %.3f GB/s, the slower at or "
                 "above %.0f%% of the faster: %s%s", s->nsuspects, b0, b1, 100 * s->eff,
                 s->fallback ? "no single node to blame" : "no slow half", eff_note(s, en, sizeof en));
        s->inconclusive = s->fallback;
        s->phase = P_DONE;
        break;
      }
      int keep = slow0 ? 0 : 1;
      for (int i = 0; i < n[!keep]; i++) s->verdict[nodes[!keep][i]] = V_GOOD;
      /* nodes[keep] points into suspects: move it to the front. */
      memmove(s->suspects, nodes[keep], (size_t)n[keep] * sizeof(int));
      s->nsuspects = n[keep];
      for (int i = 0; i < s->nsuspects; i++) s->verdict[s->suspects[i]] = V_SUSPECT;
      s->half_ref = ref;
      snprintf(s->note, sizeof s->note, "halving: culprit among %d node(s)", s->nsuspects);
      if (s->nsuspects <= 3) s->phase = P_HPAIRS;
      break;
    }
    case P_HPAIRS: {
      for (int g = 0; g < s->ngroups; g++) {
        int x = s->gref[g];
        s->confirm_bw[x] = bw[g] >= 0 ? bw[g] : 0;
        s->partner[x] = s->groups[g][1];
        s->confirm_round[x] = s->round;
      }
      int left = 0;
      for (int i = 0; i < s->nsuspects; i++) left += s->confirm_bw[s->suspects[i]] <= -1;
      if (left) break; /* the flags are decided once every suspect has its pair */
      double ref = s->half_ref;
      for (int i = 0; i < s->nsuspects; i++)
        if (s->confirm_bw[s->suspects[i]] > ref) ref = s->confirm_bw[s->suspects[i]];
      update_eff(s);
      limit = s->eff * ref;
      s->reference = ref;
      int named = 0;
      for (int i = 0; i < s->nsuspects; i++) named += s->confirm_bw[s->suspects[i]] < limit;
      /* The nodes of the slow half that are fast with a good node are good when another one
       * explains the slow half; when none does, the slowness was not reproduced. */
      for (int i = 0; i < s->nsuspects; i++) {
        int x = s->suspects[i];
        s->verdict[x] = s->confirm_bw[x] < limit ? V_BAD : named ? V_GOOD : V_NOT_REPRODUCED;
      }
      for (int i = 0; i < s->nsuspects; i++) {
        int x = s->suspects[i];
        add_meas(rep, "halving", s->confirm_round[x], (int[]){x, s->partner[x]}, 2, s->confirm_bw[x], ref,
                 s->verdict[x] == V_BAD, hosts);
      }
      snprintf(s->note, sizeof s->note, "halving: %d node(s) named among the last %d suspects "
               "(reference %.3f GB/s)%s", named, s->nsuspects, ref, eff_note(s, en, sizeof en));
      if (!named) s->inconclusive = 1;
      s->phase = P_DONE;
      break;
    }
    default:
      break;
  }
  round_clear(s);
}

void accept_search_fallback_halving(accept_search_t *s) {
  if (s->phase != P_DONE || s->nnodes < 4) return;
  for (int i = 0; i < s->nnodes; i++)
    if (s->verdict[i] == V_BAD) return; /* the ring named someone */
  s->mode = ACCEPT_SEARCH_HALVING;
  s->fallback = 1;
  s->phase = P_HALVING;
  s->half_bw[0] = s->half_bw[1] = -2;
  s->nsuspects = s->nnodes;
  for (int i = 0; i < s->nnodes; i++) {
    s->suspects[i] = i;
    s->verdict[i] = V_UNKNOWN;
    s->confirm_bw[i] = -1;
  }
}

int accept_search_bad_nodes(const accept_search_t *s, int *bad) {
  int n = 0;
  for (int i = 0; i < s->nnodes; i++) {
    bad[i] = s->verdict[i] == V_BAD;
    n += bad[i];
  }
  return n;
}


/* The search's results as checks: one "bad_node" per named node (in that node's suite), one
 * "bad_link" per confirmed slow pair, warnings for suspects that were not reproduced, and the
 * summary "pair_search" of the job. */
void accept_search_report(const accept_search_t *s, const char *const *hosts, accept_report_t *rep) {
  accept_check_t c;
  double limit = s->eff * s->reference;
  int named = 0;
  strbuf_t names = STRBUF_INIT;
  for (int x = 0; x < s->nnodes; x++) {
    if (s->verdict[x] != V_BAD && s->verdict[x] != V_NOT_REPRODUCED) continue;
    const char *h = hosts ? hosts[x] : "";
    accept_check_init(&c, "bad_node", h, x, -1, h);
    const char *p = hosts && s->partner[x] >= 0 && s->partner[x] < s->nnodes ? hosts[s->partner[x]] : "a good node";
    accept_check_value(&c, s->confirm_bw[x], "GB/s", "%.3f GB/s with %s", s->confirm_bw[x], p);
    accept_check_threshold(&c, ">= %.3f GB/s (%.0f%% of %.3f)", limit, 100 * s->eff, s->reference);
    if (s->verdict[x] == V_BAD) {
      if (s->mode == ACCEPT_SEARCH_HALVING)
        accept_check_set(&c, ACCEPT_FAIL, "named by halving: its half was the slow one and its pair "
                         "with a good node measured %.3f GB/s", s->confirm_bw[x]);
      else
        accept_check_set(&c, ACCEPT_FAIL, "every ring pair of this node is slow (best %.3f GB/s) and "
                         "the pair with a good node measured %.3f GB/s again", s->score[x], s->confirm_bw[x]);
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
    accept_check_value(&c, s->link_bw[l], "GB/s", "%.3f GB/s", s->link_bw[l]);
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
    accept_check_threshold(&c, "pairs >= %.0f%% of reference", 100 * s->eff);
  }
  if (named || nlinks_bad) {
    if (nlinks_bad)
      accept_check_set(&c, ACCEPT_FAIL, "%s%s%s%d slow link(s). %s", named ? "bad node(s): " : "",
                       strbuf_str(&names), named ? "; " : "", nlinks_bad, s->note);
    else
      accept_check_set(&c, ACCEPT_FAIL, "bad node(s): %s. %s", strbuf_str(&names), s->note);
  } else if (s->na) {
    accept_check_set(&c, ACCEPT_SKIP, "%s", s->note);
  } else if (s->inconclusive) {
    accept_check_set(&c, ACCEPT_WARN, "%s", s->note);
  } else {
    accept_check_set(&c, ACCEPT_PASS, "%s", s->note);
  }
  accept_report_add(rep, &c);
  strbuf_free(&names);
}
