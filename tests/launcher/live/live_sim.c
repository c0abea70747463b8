/* Liveness at scale, simulated: N supervisors' real protocol cores (launcher/live/livetree.c) in
 * one process, an in-memory transport with per-link latency, a simulated clock. Kills one host
 * (all its ranks silent) and, in a second run, hangs one supervisor (it stops beating); reports
 * detection times, the busiest process's fan-in, messages and bytes per interval, and totals.
 * --check asserts the bounds (fan-in and per-interval messages <= fanout + ranks per node,
 * detection within timeout + interval, the right ranks named). Exit 0, or 1 with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "launcher/live/livetree.h"

/* ---- the simulated world ---- */

typedef struct ev_s {
  double t;
  uint64_t seq;
  int kind, dst, src;
  unsigned char *frame;
  size_t len;
} ev_t;
enum { EV_TICK, EV_DELIVER, EV_CONNECT, EV_ABORT };

typedef struct proc_s {
  lt_t *core;
  int dead, stalled;
  double told_at;
  live_why_t why;
  int nlost, lost[LT_LIST_MAX];
  char *bound;       /* per child index: its HELLO arrived */
  double prog_stop;  /* its program stops making progress at this time (0: never) */
} proc_t;

static struct {
  ev_t *heap;
  size_t n, cap;
  uint64_t seq;
  double now, interval, latency;
  int size;
  proc_t *p;
  double *root_age; /* rank 0's view of each rank's progress age (ms) and when it heard it */
  double *root_age_at;
  uint64_t dropped;
} W;

static void push(ev_t e) {
  if (W.n == W.cap) {
    W.cap = W.cap ? W.cap * 2 : 1 << 16;
    W.heap = realloc(W.heap, W.cap * sizeof *W.heap);
    if (!W.heap) abort();
  }
  e.seq = W.seq++;
  size_t i = W.n++;
  while (i > 0) {
    size_t up = (i - 1) / 2;
    ev_t *u = &W.heap[up];
    if (u->t < e.t || (u->t == e.t && u->seq < e.seq)) break;
    W.heap[i] = *u;
    i = up;
  }
  W.heap[i] = e;
}

static ev_t pop(void) {
  ev_t top = W.heap[0], last = W.heap[--W.n];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= W.n) break;
    if (c + 1 < W.n && (W.heap[c + 1].t < W.heap[c].t || (W.heap[c + 1].t == W.heap[c].t && W.heap[c + 1].seq < W.heap[c].seq))) c++;
    if (last.t < W.heap[c].t || (last.t == W.heap[c].t && last.seq < W.heap[c].seq)) break;
    W.heap[i] = W.heap[c];
    i = c;
  }
  W.heap[i] = last;
  return top;
}

/* A link's latency: fixed per pair (so a link keeps its order, as TCP does), 0.2..0.5 ms. */
static double link_latency(int a, int b) {
  unsigned h = (unsigned)a * 2654435761u ^ (unsigned)b * 40503u;
  return W.latency * (1.0 + (double)(h % 1000) / 666.0);
}

static void io_send(void *arg, int to, const void *frame, size_t len) {
  int from = (int)(intptr_t)arg;
  ev_t e = {W.now + link_latency(from, to), 0, EV_DELIVER, to, from, malloc(len), len};
  if (!e.frame) abort();
  memcpy(e.frame, frame, len);
  push(e);
}

static void io_lost(void *arg, const int *ranks, int n, live_why_t why, double silent) {
  proc_t *p = &W.p[(int)(intptr_t)arg];
  (void)silent;
  p->told_at = W.now;
  p->why = why;
  p->nlost = n < LT_LIST_MAX ? n : LT_LIST_MAX;
  memcpy(p->lost, ranks, (size_t)p->nlost * sizeof *ranks);
  /* rank 0's supervisor then ends the job: live_abort_all, a moment later */
  if (p == &W.p[0]) push((ev_t){W.now + 0.001, 0, EV_ABORT, 0, ranks[0], NULL, 0});
}

static int32_t io_progress(void *arg, int from, int32_t age_ms) {
  int me = (int)(intptr_t)arg;
  if (from < 0) {
    /* every program makes progress every 0.5 s, until prog_stop */
    double stop = W.p[me].prog_stop, last = stop > 0 && W.now > stop ? stop : W.now - 0.25;
    return (int32_t)((W.now - last) * 1e3);
  }
  if (me == 0 && from < W.size) {
    W.root_age[from] = age_ms;
    W.root_age_at[from] = W.now;
  }
  return 0;
}

/* ---- one run ---- */

typedef struct cfg_s {
  int size, per_node, fanout;
  double interval, timeout, latency_ms;
  int quiet;
} cfg_t;

typedef struct fig_s {
  int busiest, fanin, max_fanin;
  double recv_pi, sent_pi, recv_bytes_pi, sent_bytes_pi; /* per interval, at the busiest */
  double total_pi;  /* messages per interval, all processes */
  uint64_t total;   /* messages in the whole run */
  double detect;    /* seconds from the fault to rank 0's naming it */
  double all_end;   /* seconds from the fault until every live process was told */
  double first_orphan; /* seconds from the fault to the first other process told (-1 none) */
  int named_ok;
  char named[256];
  int depth;
} fig_t;

enum { FAULT_NONE, FAULT_HOST, FAULT_HANG, FAULT_TWO_HOSTS };
#define SECOND_AFTER 0.6 /* FAULT_TWO_HOSTS: the second host goes this many intervals after the first */

static int depth_of(const tree_shape_t *s, int r) {
  int d = 0;
  while ((r = tree_parent(s, r)) >= 0) d++;
  return d;
}

static int run(const cfg_t *c, int fault, int victim, int victim2, fig_t *fig) {
  memset(fig, 0, sizeof *fig);
  memset(&W, 0, sizeof W);
  W.interval = c->interval;
  W.latency = c->latency_ms / 1e3;
  W.size = c->size;
  int nnodes = (c->size + c->per_node - 1) / c->per_node;
  int *node_of = malloc((size_t)c->size * sizeof *node_of), *leader = malloc((size_t)nnodes * sizeof *leader);
  W.p = calloc((size_t)c->size, sizeof *W.p);
  W.root_age = calloc((size_t)c->size, sizeof *W.root_age);
  W.root_age_at = calloc((size_t)c->size, sizeof *W.root_age_at);
  if (!node_of || !leader || !W.p || !W.root_age || !W.root_age_at) return -1;
  for (int r = 0; r < c->size; r++) node_of[r] = r / c->per_node;
  for (int n = 0; n < nnodes; n++) leader[n] = n * c->per_node;
  tree_shape_t shape = {.size = c->size, .nnodes = nnodes, .fanout = c->fanout, .node_of = node_of, .leader_of_node = leader};
  if (tree_shape_index(&shape) < 0) return -1;
  for (int r = 0; r < c->size; r++) {
    lt_cfg_t lc = {shape, r, 0x5eed5eedull, c->interval, c->timeout, 10.0};
    lt_io_t io = {(void *)(intptr_t)r, io_send, io_lost, io_progress};
    if (lt_init(&W.p[r].core, &lc, &io, 0) < 0) return -1;
    W.p[r].bound = calloc((size_t)lt_nkids(W.p[r].core) + 1, 1);
    /* ticks at a phase of their own; connections up within the first 0.1 s */
    push((ev_t){c->interval * (double)((unsigned)r * 2654435761u % 1000) / 1000.0, 0, EV_TICK, r, r, NULL, 0});
    if (r > 0) push((ev_t){0.1 * (double)((unsigned)r * 40503u % 1000) / 1000.0, 0, EV_CONNECT, r, tree_parent(&shape, r), NULL, 0});
  }
  int slow = c->size - 1; /* one program stops making progress at 1 s: rank 0 must see its age */
  W.p[slow].prog_stop = 1.0;
  double t_fault = 3.37 * c->interval, win0 = 1.5 * c->interval, win1 = win0 + 1.0 * c->interval;
  double end = t_fault + c->timeout + 6 * c->interval + 1.0;
  lt_stats_t *s0 = calloc((size_t)c->size, sizeof *s0), *s1 = calloc((size_t)c->size, sizeof *s1);
  if (!s0 || !s1) return -1;
  int snap = 0, faulted = 0;
  while (W.n > 0) {
    ev_t e = pop();
    if (e.t > end) {
      free(e.frame);
      continue; /* drain */
    }
    /* The window for the per-interval figures: [win0, win1) of the steady state. */
    if (snap == 0 && e.t >= win0) {
      for (int r = 0; r < c->size; r++) s0[r] = *lt_stats(W.p[r].core);
      snap = 1;
    }
    if (snap == 1 && e.t >= win1) {
      for (int r = 0; r < c->size; r++) s1[r] = *lt_stats(W.p[r].core);
      snap = 2;
    }
    if (!faulted && e.t >= t_fault) {
      faulted = 1;
      if (fault == FAULT_HOST || fault == FAULT_TWO_HOSTS)
        for (int r = 0; r < c->size; r++)
          if (node_of[r] == node_of[victim]) W.p[r].dead = 1;
      if (fault == FAULT_HANG) W.p[victim].stalled = 1;
    }
    if (faulted == 1 && fault == FAULT_TWO_HOSTS && e.t >= t_fault + SECOND_AFTER * c->interval) {
      faulted = 2;
      for (int r = 0; r < c->size; r++)
        if (node_of[r] == node_of[victim2]) W.p[r].dead = 1;
    }
    W.now = e.t;
    proc_t *p = &W.p[e.dst];
    if (p->dead) {
      W.dropped += e.kind == EV_DELIVER;
      free(e.frame);
      continue;
    }
    switch (e.kind) {
      case EV_TICK:
        lt_on_tick(p->core, W.now, p->stalled);
        push((ev_t){W.now + c->interval, 0, EV_TICK, e.dst, e.dst, NULL, 0});
        break;
      case EV_CONNECT:
        lt_up(p->core, e.src, W.now);
        break;
      case EV_ABORT:
        lt_abort(p->core, e.src);
        break;
      case EV_DELIVER: {
        int i = lt_kid_index(p->core, e.src);
        if (i >= 0 && !p->bound[i]) {
          if (lt_hello_rank(p->core, e.frame, e.len) == e.src) {
            p->bound[i] = 1;
            lt_up(p->core, e.src, W.now);
          }
        } else {
          lt_on_frame(p->core, e.src, e.frame, e.len, W.now);
        }
        free(e.frame);
        break;
      }
    }
  }
  /* figures */
  double best = -1;
  for (int r = 0; r < c->size; r++) {
    int fanin = lt_nkids(W.p[r].core) + (lt_parent_of(W.p[r].core) >= 0);
    if (fanin > fig->max_fanin) fig->max_fanin = fanin;
    double recv = (double)(s1[r].recv - s0[r].recv);
    fig->total_pi += recv;
    if (recv > best) {
      best = recv;
      fig->busiest = r;
    }
    fig->total += lt_stats(W.p[r].core)->recv;
    int d = depth_of(&shape, r);
    if (d > fig->depth) fig->depth = d;
  }
  int b = fig->busiest;
  fig->fanin = lt_nkids(W.p[b].core) + (lt_parent_of(W.p[b].core) >= 0);
  fig->recv_pi = (double)(s1[b].recv - s0[b].recv);
  fig->sent_pi = (double)(s1[b].sent - s0[b].sent);
  fig->recv_bytes_pi = (double)(s1[b].recv_bytes - s0[b].recv_bytes);
  fig->sent_bytes_pi = (double)(s1[b].sent_bytes - s0[b].sent_bytes);
  fig->detect = fig->all_end = fig->first_orphan = -1;
  if (fault != FAULT_NONE) {
    proc_t *root = &W.p[0];
    if (root->told_at > 0) fig->detect = root->told_at - t_fault;
    /* rank 0 must name exactly: the host's ranks (host loss), the hung rank (hang) */
    int want[LT_LIST_MAX], nw = 0;
    for (int r = 0; r < c->size && nw < LT_LIST_MAX; r++)
      if (fault == FAULT_HANG ? r == victim
                              : node_of[r] == node_of[victim] ||
                                    (fault == FAULT_TWO_HOSTS && node_of[r] == node_of[victim2]))
        want[nw++] = r;
    fig->named_ok = root->told_at > 0 && root->why == LIVE_SILENT && root->nlost == nw &&
                    memcmp(root->lost, want, (size_t)nw * sizeof *want) == 0;
    size_t off = 0;
    for (int i = 0; i < root->nlost && off + 16 < sizeof fig->named; i++)
      off += (size_t)snprintf(fig->named + off, sizeof fig->named - off, "%s%d", i ? "," : "", root->lost[i]);
    double last = 0;
    int all = 1;
    for (int r = 1; r < c->size; r++) {
      if (W.p[r].dead || (fault == FAULT_HANG && r == victim)) continue;
      if (W.p[r].told_at <= 0) all = 0;
      else if (W.p[r].told_at - t_fault > last) last = W.p[r].told_at - t_fault;
      if (W.p[r].told_at > 0 && W.p[r].why != LIVE_ABORT &&
          (fig->first_orphan < 0 || W.p[r].told_at - t_fault < fig->first_orphan))
        fig->first_orphan = W.p[r].told_at - t_fault;
    }
    fig->all_end = all ? last : -1;
  }
  /* rank 0's view of the slow program's age (its progress stopped at 1 s) */
  double seen = W.root_age[slow] / 1e3 + (end - W.root_age_at[slow]), real = end - 1.0;
  int age_ok = W.root_age_at[slow] > 0 && seen > real - (fig->depth + 1) * c->interval - 0.1 && seen < real + 0.1;
  if (!c->quiet && fault == FAULT_NONE)
    printf("  rank 0's view of rank %d's progress age at the end: %.1f s (really %.1f s)\n", slow, seen, real);
  for (int r = 0; r < c->size; r++) {
    lt_free(W.p[r].core);
    free(W.p[r].bound);
  }
  tree_shape_free(&shape);
  free(W.p);
  free(W.root_age);
  free(W.root_age_at);
  free(W.heap);
  free(s0);
  free(s1);
  free(node_of);
  free(leader);
  return fault == FAULT_NONE && !age_ok ? 1 : 0;
}

/* The leader of the last node that is not in first's subtree (-1: none, one subtree only). */
static int second_victim(const cfg_t *c, int first) {
  int nnodes = (c->size + c->per_node - 1) / c->per_node, second = -1;
  int *node_of = malloc((size_t)c->size * sizeof *node_of), *leader = malloc((size_t)nnodes * sizeof *leader);
  if (!node_of || !leader) abort();
  for (int r = 0; r < c->size; r++) node_of[r] = r / c->per_node;
  for (int n = 0; n < nnodes; n++) leader[n] = n * c->per_node;
  tree_shape_t shape = {.size = c->size, .nnodes = nnodes, .fanout = c->fanout, .node_of = node_of, .leader_of_node = leader};
  if (tree_shape_index(&shape) < 0) abort();
  for (int n = nnodes - 1; n > 0 && second < 0; n--) {
    int a = leader[n];
    while (a > 0 && node_of[a] != node_of[first]) a = tree_parent(&shape, a);
    if (a == 0) second = leader[n];
  }
  tree_shape_free(&shape);
  free(node_of);
  free(leader);
  return second;
}

static int usage(void) {
  fprintf(stderr, "usage: live_sim [--ranks N] [--per-node R] [--fanout K] [--interval S] [--timeout S]\n"
                  "                [--latency-ms L] [--star] [--check]\n");
  return 2;
}

int main(int argc, char **argv) {
  cfg_t c = {4096, 8, TREE_FANOUT_DEFAULT, 1.0, 5.0, 0.2, 0};
  int check = 0, star = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!strcmp(a, "--check")) check = 1;
    else if (!strcmp(a, "--star")) star = 1;
    else if (!v) return usage();
    else if (!strcmp(a, "--ranks")) c.size = atoi(v), i++;
    else if (!strcmp(a, "--per-node")) c.per_node = atoi(v), i++;
    else if (!strcmp(a, "--fanout")) c.fanout = atoi(v), i++;
    else if (!strcmp(a, "--interval")) c.interval = atof(v), i++;
    else if (!strcmp(a, "--timeout")) c.timeout = atof(v), i++;
    else if (!strcmp(a, "--latency-ms")) c.latency_ms = atof(v), i++;
    else return usage();
  }
  if (c.size < 2 || c.per_node < 1 || c.fanout < 2 || c.interval <= 0 || c.timeout <= c.interval) return usage();
  int fail = 0;
  fig_t f;
  cfg_t sc = c;
  if (star) {
    sc.per_node = 1;
    sc.fanout = c.size; /* every rank a child of rank 0: the star as it was */
  }
  int nnodes = (sc.size + sc.per_node - 1) / sc.per_node;
  printf("%s: %d supervisors, %d per node (%d nodes), fanout %d, interval %.1f s, timeout %.1f s, "
         "link latency %.1f-%.1f ms\n", star ? "star" : "tree", sc.size, sc.per_node, nnodes, sc.fanout,
         sc.interval, sc.timeout, sc.latency_ms, sc.latency_ms * 2.5);
  if (run(&sc, FAULT_NONE, 0, -1, &f) != 0) {
    printf("FAIL: rank 0 did not learn the slow program's progress age\n");
    fail = 1;
  }
  printf("  depth %d; busiest process rank %d: fan-in %d connections, per interval %.0f messages in "
         "(%.0f bytes), %.0f out (%.0f bytes)\n", f.depth, f.busiest, f.fanin, f.recv_pi, f.recv_bytes_pi,
         f.sent_pi, f.sent_bytes_pi);
  printf("  all processes: %.0f messages per interval, %llu in the run\n", f.total_pi, (unsigned long long)f.total);
  int bound = sc.fanout + sc.per_node;
  if (check && !star && (f.max_fanin > bound || f.recv_pi > bound || f.sent_pi > bound)) {
    printf("FAIL: fan-in %d / messages in %.0f, out %.0f per interval over the bound fanout + ranks per node = %d\n",
           f.max_fanin, f.recv_pi, f.sent_pi, bound);
    fail = 1;
  }
  double deadline = sc.timeout + sc.interval + 0.05;
  /* The host to lose: the second node, which leads the most others (a whole subtree orphaned). */
  int host_victim = nnodes > 1 ? sc.per_node : 1;
  /* The supervisor to hang: the last node's second rank (a leaf at the bottom of the tree). */
  int hang_victim = sc.per_node > 1 ? (nnodes - 1) * sc.per_node + 1 : sc.size - 1;
  if (hang_victim >= sc.size) hang_victim = sc.size - 1;
  /* Two hosts lost 0.6 beats apart (a spot reclaim of two machines), in different subtrees: the
   * first's and the last node outside the first's subtree (its loss is told by another parent).
   * Rank 0 must name both in one report, not the first alone. */
  int second = second_victim(&sc, host_victim);
  const struct { int fault, victim, victim2; double late; const char *what; } runs[] = {
      {FAULT_HOST, host_victim, -1, 0, "host lost (all its ranks silent)"},
      {FAULT_HANG, hang_victim, -1, 0, "supervisor hung (stops beating)"},
      {FAULT_TWO_HOSTS, host_victim, second, SECOND_AFTER * sc.interval, "two hosts lost 0.6 beats apart"}};
  for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
    if (runs[i].fault == FAULT_TWO_HOSTS && second < 0) continue; /* one subtree only */
    if (run(&sc, runs[i].fault, runs[i].victim, runs[i].victim2, &f) < 0) return 1;
    double dl = deadline + runs[i].late;
    printf("  %s, rank %d%s: rank 0 named [%s] %.2f s after (deadline %.2f s)%s; every other rank "
           "ended %.2f s after; first rank to end on its own %.2f s after\n", runs[i].what, runs[i].victim,
           runs[i].victim2 >= 0 ? " and the host of the one below" : "", f.named, f.detect, dl,
           f.named_ok ? "" : " WRONG", f.all_end, f.first_orphan);
    if (check && (!f.named_ok || f.detect < 0 || f.detect > dl)) {
      printf("FAIL: %s: named [%s] after %.2f s\n", runs[i].what, f.named, f.detect);
      fail = 1;
    }
    if (check && f.first_orphan >= 0 && f.first_orphan <= f.detect) {
      printf("FAIL: %s: a rank ended on its own (%.2f s) before rank 0 named the cause (%.2f s)\n",
             runs[i].what, f.first_orphan, f.detect);
      fail = 1;
    }
    if (check && f.all_end < 0) {
      printf("FAIL: %s: some rank never ended\n", runs[i].what);
      fail = 1;
    }
  }
  if (!star && !fail) {
    /* The star's figures for comparison (the shape before the tree): rank 0 holds N - 1. */
    printf("  (the star at this size: rank 0's fan-in %d, %d messages in per interval)\n", sc.size - 1, sc.size - 1);
  }
  return fail;
}
