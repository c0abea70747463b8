/* The liveness tree's protocol core: no sockets, no clock of its own, no threads (livetree.h). */
#include "launcher/live/livetree.h"

#include <stdlib.h>
#include <string.h>

#include "gpulaunch/error.h"

typedef struct kid_s {
  int rank;
  int up, bye, lost; /* connected (said hello); said goodbye; its loss was told */
  double last;       /* last frame from it */
  int *sub, nsub;    /* rank 0: the ranks of its subtree (whose ages it reports) */
  lt_ent_t ages[LT_AGES_MAX];
  int nages;
  int32_t rest_ms;   /* the age of its subtree's ranks not in ages, -1: none */
  double ages_at;
  int susp;          /* its subtree's suspects, as it last said (LT_SUSPECT) */
} kid_t;

struct lt_s {
  lt_cfg_t c;
  lt_io_t io;
  int parent;
  int up_up, up_bye;     /* the parent's connection is up; the parent said goodbye */
  double up_last;        /* last frame from the parent (0: never connected) */
  int nkids;
  kid_t *kids;
  double t0, last_tick;
  int stopping, told;    /* lt_stop; io.lost was called */
  double orphan_at;      /* the parent was lost: end (told) at this time */
  int orphan_rank;
  live_why_t orphan_why;
  double orphan_silent;
  int *mark;             /* rank 0: scratch, size entries */
  int susp_sent;         /* the suspects last told the parent */
  int stalled;           /* the last tick's: a hung supervisor sends nothing up */
  /* rank 0: a loss held back while there are suspects (settle), so that hosts lost together are
   * named together */
  int pend_n;
  int pend_ranks[LT_LIST_MAX];
  int32_t pend_ms[LT_LIST_MAX];
  live_why_t pend_why;
  double pend_since;
  lt_stats_t st;
};

#define SUSPECT_BEATS 2.0 /* a child silent this many heartbeat intervals may be lost too */
#define SUSPECT_MAX (1 << 24)

long lt_frame_len(const void *buf, size_t len) {
  lt_hdr_t h;
  if (len < sizeof h) return 0;
  memcpy(&h, buf, sizeof h);
  if (h.magic != LT_MAGIC || h.type < LT_HELLO || h.type > LT_SUSPECT || h.n > LT_LIST_MAX) return -1;
  return (long)(sizeof h + (size_t)h.n * sizeof(lt_ent_t));
}

/* The ranks below kid (itself included): its node's when it leads one, and so on down. */
static int subtree(const lt_t *t, int kid, int *out) { return tree_subtree(&t->c.shape, kid, out); }

/* r is kid or below it: only those may a LOST frame from kid name. */
static int in_subtree(const lt_t *t, int kid, int r) {
  for (int x = r, hops = 0; x >= 0 && hops < 64; x = tree_parent(&t->c.shape, x), hops++) {
    if (x == kid) return 1;
    if (x == t->c.rank) return 0;
  }
  return 0;
}

/* ---- frames ---- */

static void send_to(lt_t *t, int to, int type, int arg, const lt_ent_t *e, int n) {
  unsigned char buf[LT_FRAME_MAX];
  if (n > LT_LIST_MAX) n = LT_LIST_MAX;
  lt_hdr_t h = {LT_MAGIC, (uint16_t)type, (uint16_t)n, t->c.rank, arg, t->c.token};
  memcpy(buf, &h, sizeof h);
  if (n > 0) memcpy(buf + sizeof h, e, (size_t)n * sizeof *e);
  size_t len = sizeof h + (size_t)n * sizeof *e;
  t->st.sent++;
  t->st.sent_bytes += len;
  t->io.send(t->io.arg, to, buf, len);
}

static void tell(lt_t *t, const int *ranks, int n, live_why_t why, double silent) {
  if (t->told || t->stopping || n <= 0) return;
  t->told = 1;
  t->io.lost(t->io.arg, ranks, n, why, silent);
}

static void abort_kids(lt_t *t, int lost_rank) {
  for (int i = 0; i < t->nkids; i++)
    if (t->kids[i].up && !t->kids[i].bye && !t->kids[i].lost) send_to(t, t->kids[i].rank, LT_ABORT, lost_rank, NULL, 0);
}

static int suspect_kid(const lt_t *t, const kid_t *k, double now) {
  return k->up && !k->lost && !k->bye && k->last > 0 && now - k->last > SUSPECT_BEATS * t->c.interval;
}

/* The suspects below this process: its children silent for more than SUSPECT_BEATS beats (neither
 * heard again nor past the deadline), and those its children said they have. */
static int suspects(const lt_t *t, double now) {
  int s = 0;
  for (int i = 0; i < t->nkids; i++) {
    const kid_t *k = &t->kids[i];
    if (!k->up || k->lost || k->bye) continue;
    s += suspect_kid(t, k, now) + k->susp;
    if (s > SUSPECT_MAX) s = SUSPECT_MAX;
  }
  return s;
}

/* Not rank 0: tell the parent the suspects below when their number changed (a frame only then:
 * nothing in the steady state). A LOST goes up first, so the parent never sees the suspect
 * gone before the loss. */
static void suspect_up(lt_t *t, double now) {
  if (t->parent < 0 || !t->up_up || t->up_bye || t->told || t->stopping || t->stalled) return;
  int s = suspects(t, now);
  if (s == t->susp_sent) return;
  t->susp_sent = s;
  send_to(t, t->parent, LT_SUSPECT, s, NULL, 0);
}

/* Rank 0: tell the losses held back, unless there are suspects left anywhere in the tree. Hosts
 * that go together (a rack's switch, a spot reclaim of several machines) reach their deadlines
 * up to two beats apart, each at its own parent; the first alone would restart an elastic job on
 * hosts that are gone too, and a failure would name one host of several. A suspect settles when
 * it is heard again or reaches its deadline, so the wait is bounded by the timeout, and a lone
 * loss (its parent's LOST, then its SUSPECT going to zero) is told at once. */
static void settle(lt_t *t, double now) {
  if (t->pend_n <= 0 || t->told || t->stopping) return;
  if (now - t->pend_since < t->c.timeout && suspects(t, now) > 0) return;
  double sil = 0;
  for (int i = 0; i < t->pend_n; i++)
    if (t->pend_ms[i] / 1e3 > sil) sil = t->pend_ms[i] / 1e3;
  /* rank order, as the star named them */
  for (int i = 1; i < t->pend_n; i++)
    for (int j = i; j > 0 && t->pend_ranks[j] < t->pend_ranks[j - 1]; j--) {
      int tr = t->pend_ranks[j];
      int32_t tm = t->pend_ms[j];
      t->pend_ranks[j] = t->pend_ranks[j - 1];
      t->pend_ms[j] = t->pend_ms[j - 1];
      t->pend_ranks[j - 1] = tr;
      t->pend_ms[j - 1] = tm;
    }
  tell(t, t->pend_ranks, t->pend_n, t->pend_why, sil);
}

/* ranks[0..n) below this process were lost: rank 0 tells its driver (settle), the others pass it
 * up at once (not at the next beat). */
static void report(lt_t *t, const int *ranks, const int32_t *silent_ms, int n, live_why_t why, double now) {
  if (n <= 0 || t->stopping) return;
  if (t->parent < 0) {
    if (t->told) return;
    if (t->pend_n == 0) {
      t->pend_why = why;
      t->pend_since = now;
    }
    for (int i = 0; i < n && t->pend_n < LT_LIST_MAX; i++) {
      t->pend_ranks[t->pend_n] = ranks[i];
      t->pend_ms[t->pend_n++] = silent_ms[i];
    }
    settle(t, now);
    return;
  }
  if (!t->up_up || t->told) return; /* cut off from rank 0: this process ends on its own */
  lt_ent_t e[LT_LIST_MAX];
  if (n > LT_LIST_MAX) n = LT_LIST_MAX;
  for (int i = 0; i < n; i++) e[i] = (lt_ent_t){ranks[i], silent_ms[i]};
  send_to(t, t->parent, LT_LOST, (int)why, e, n);
}

/* A child was lost: a silent leader stands for its whole host (its ranks are watched through
 * it); a closed one, or any other rank, for itself. */
static void kid_lost(lt_t *t, kid_t *k, live_why_t why, double now) {
  if (k->lost || k->bye) return;
  k->lost = 1;
  const tree_shape_t *s = &t->c.shape;
  int n = s->node_of[k->rank];
  int32_t ms = why == LIVE_SILENT ? (int32_t)((now - k->last) * 1e3) : 0;
  int ranks[LT_LIST_MAX];
  int32_t sil[LT_LIST_MAX];
  int c = 0;
  ranks[c] = k->rank;
  sil[c++] = ms;
  if (why == LIVE_SILENT && k->rank == tree_leader(s, n) && n != s->node_of[t->c.rank])
    for (int i = s->node_first[n]; i < s->node_first[n + 1] && c < LT_LIST_MAX; i++)
      if (s->node_ranks[i] != k->rank) {
        ranks[c] = s->node_ranks[i];
        sil[c++] = ms;
      }
  /* rank order, as the star named them */
  for (int i = 1; i < c; i++)
    for (int j = i; j > 0 && ranks[j] < ranks[j - 1]; j--) {
      int tr = ranks[j];
      ranks[j] = ranks[j - 1];
      ranks[j - 1] = tr;
    }
  report(t, ranks, sil, c, why, now);
}

/* The parent was lost. Its parent names it to rank 0, which ends the job; this subtree cannot
 * hear that, so it ends on its own, a little later (two beats and a half second), so that the
 * cause rank 0 names first is the lost host, not these orphans. Losing rank 0: at once. */
static void parent_lost(lt_t *t, live_why_t why, double silent, double now) {
  if (t->orphan_at > 0 || t->told || t->stopping) return;
  t->orphan_rank = t->parent;
  t->orphan_why = why;
  t->orphan_silent = silent;
  t->orphan_at = t->parent == 0 ? now : now + 2 * t->c.interval + 0.5;
  if (t->parent == 0) {
    abort_kids(t, t->parent);
    tell(t, &t->orphan_rank, 1, why, silent);
  }
}

static kid_t *kid_of(lt_t *t, int rank) {
  int i = lt_kid_index(t, rank);
  return i < 0 ? NULL : &t->kids[i];
}

void lt_on_frame(lt_t *t, int peer, const void *frame, size_t len, double now) {
  long need = lt_frame_len(frame, len);
  if (need <= 0 || (size_t)need != len) return;
  lt_hdr_t h;
  memcpy(&h, frame, sizeof h);
  if (h.token != t->c.token || h.rank != peer) return;
  lt_ent_t e[LT_LIST_MAX];
  int n = h.n;
  if (n) memcpy(e, (const unsigned char *)frame + sizeof h, (size_t)n * sizeof *e);
  t->st.recv++;
  t->st.recv_bytes += len;
  if (peer == t->parent) {
    t->up_last = now;
    if (h.type == LT_BYE) t->up_bye = 1;
    if (h.type == LT_ABORT && !t->told && !t->stopping) {
      int r = h.arg >= 0 && h.arg < t->c.shape.size ? h.arg : peer; /* the rank the job lost */
      abort_kids(t, r);
      tell(t, &r, 1, LIVE_ABORT, 0);
    }
    return;
  }
  kid_t *k = kid_of(t, peer);
  if (!k || k->lost) return;
  int was_suspect = suspect_kid(t, k, now);
  k->last = now;
  switch (h.type) {
    case LT_BYE:
      k->bye = 1;
      break;
    case LT_BEAT:
      if (t->parent < 0 && t->io.progress) {
        /* Rank 0: the listed ranks' ages, the rest at most rest_ms old. */
        for (int i = 0; i < n; i++)
          if (e[i].rank > 0 && e[i].rank < t->c.shape.size) t->mark[e[i].rank] = 1;
        if (h.arg >= 0)
          for (int i = 0; i < k->nsub; i++)
            if (!t->mark[k->sub[i]]) t->io.progress(t->io.arg, k->sub[i], h.arg);
        for (int i = 0; i < n; i++)
          if (e[i].rank > 0 && e[i].rank < t->c.shape.size) {
            t->mark[e[i].rank] = 0;
            t->io.progress(t->io.arg, e[i].rank, e[i].val);
          }
      } else {
        k->nages = n > LT_AGES_MAX ? LT_AGES_MAX : n;
        memcpy(k->ages, e, (size_t)k->nages * sizeof *e);
        k->rest_ms = h.arg;
        k->ages_at = now;
      }
      break;
    case LT_LOST: {
      int ranks[LT_LIST_MAX];
      int32_t sil[LT_LIST_MAX];
      int c = 0;
      for (int i = 0; i < n; i++)
        if (e[i].rank >= 0 && e[i].rank < t->c.shape.size && in_subtree(t, peer, e[i].rank)) {
          ranks[c] = e[i].rank;
          sil[c++] = e[i].val;
        }
      if (c < n) t->st.refused += (uint64_t)(n - c);
      if (c == 0) break;
      live_why_t why = h.arg >= LIVE_CLOSED && h.arg <= LIVE_NEVER ? (live_why_t)h.arg : LIVE_SILENT;
      report(t, ranks, sil, c, why, now);
      break;
    }
    case LT_SUSPECT:
      k->susp = h.arg < 0 ? 0 : h.arg > SUSPECT_MAX ? SUSPECT_MAX : h.arg;
      was_suspect = 1;
      break;
    default:
      break;
  }
  if (was_suspect) {
    suspect_up(t, now);
    settle(t, now);
  }
}

void lt_on_closed(lt_t *t, int peer, double now) {
  if (peer == t->parent) {
    t->up_up = 0;
    if (!t->up_bye) parent_lost(t, LIVE_CLOSED, 0, now);
    return;
  }
  kid_t *k = kid_of(t, peer);
  if (!k) return;
  k->up = 0;
  if (t->stopping) return;
  kid_lost(t, k, LIVE_CLOSED, now);
  suspect_up(t, now);
  settle(t, now);
}

/* This subtree's oldest progress ages, for the beat up. */
typedef struct age_s {
  int32_t rank, ms;
} age_t;

static int age_cmp(const void *a, const void *b) {
  const age_t *x = a, *y = b;
  return x->ms != y->ms ? (x->ms < y->ms ? 1 : -1) : (x->rank > y->rank) - (x->rank < y->rank);
}

static void beat_up(lt_t *t, double now) {
  if (!t->io.progress) {
    send_to(t, t->parent, LT_BEAT, -1, NULL, 0);
    return;
  }
  age_t a[1 + LT_AGES_MAX * 64];
  int na = 0, cap = (int)(sizeof a / sizeof a[0]);
  int32_t rest = -1;
  int32_t own = t->io.progress(t->io.arg, -1, 0);
  a[na++] = (age_t){t->c.rank, own < 0 ? LT_AGE_UNKNOWN : own};
  for (int i = 0; i < t->nkids; i++) {
    kid_t *k = &t->kids[i];
    if (!k->up || k->lost || k->bye) continue;
    int32_t d = (int32_t)((now - k->ages_at) * 1e3);
    for (int j = 0; j < k->nages; j++) {
      int32_t ms = k->ages[j].val >= LT_AGE_UNKNOWN - d ? LT_AGE_UNKNOWN : k->ages[j].val + d;
      if (na < cap) a[na++] = (age_t){k->ages[j].rank, ms};
      else if (ms > rest) rest = ms;
    }
    if (k->rest_ms >= 0) {
      int32_t ms = k->rest_ms >= LT_AGE_UNKNOWN - d ? LT_AGE_UNKNOWN : k->rest_ms + d;
      if (ms > rest) rest = ms;
    }
  }
  qsort(a, (size_t)na, sizeof *a, age_cmp);
  int n = na < LT_AGES_MAX ? na : LT_AGES_MAX;
  for (int i = n; i < na; i++)
    if (a[i].ms > rest) rest = a[i].ms;
  lt_ent_t e[LT_AGES_MAX];
  for (int i = 0; i < n; i++) e[i] = (lt_ent_t){a[i].rank, a[i].ms};
  send_to(t, t->parent, LT_BEAT, rest, e, n);
}

int lt_on_tick(lt_t *t, double now, int stalled) {
  /* This process did not run for a long while (stopped, starved): the silence it would see is
   * its own, not its neighbours'. Count again. */
  if (t->last_tick > 0 && now - t->last_tick > t->c.timeout / 2) {
    if (t->up_last > 0) t->up_last = now;
    for (int i = 0; i < t->nkids; i++)
      if (t->kids[i].last > 0) t->kids[i].last = now;
  }
  t->last_tick = now;
  t->stalled = stalled;
  if (t->stopping || t->told) return 0;
  if (t->orphan_at > 0) {
    if (now >= t->orphan_at) {
      abort_kids(t, t->orphan_rank);
      tell(t, &t->orphan_rank, 1, t->orphan_why, t->orphan_silent);
    } else if (!stalled) {
      for (int i = 0; i < t->nkids; i++)
        if (t->kids[i].up && !t->kids[i].lost && !t->kids[i].bye) send_to(t, t->kids[i].rank, LT_BEAT, -1, NULL, 0);
    }
    return 0;
  }
  if (!stalled) {
    for (int i = 0; i < t->nkids; i++)
      if (t->kids[i].up && !t->kids[i].lost && !t->kids[i].bye) send_to(t, t->kids[i].rank, LT_BEAT, -1, NULL, 0);
    if (t->parent >= 0 && t->up_up && !t->up_bye) beat_up(t, now);
  }
  /* Children: silent past the deadline, or never come. Those of one tick go up together. */
  int ranks[LT_LIST_MAX];
  int32_t sil[LT_LIST_MAX];
  int c = 0;
  for (int i = 0; i < t->nkids; i++) {
    kid_t *k = &t->kids[i];
    if (k->lost || k->bye) continue;
    if (k->last == 0 && now - t->t0 > t->c.connect_s) {
      k->lost = 1;
      if (c < LT_LIST_MAX) {
        ranks[c] = k->rank;
        sil[c++] = 0;
      }
    } else if (k->last > 0 && now - k->last > t->c.timeout) {
      kid_lost(t, k, LIVE_SILENT, now);
    }
  }
  report(t, ranks, sil, c, LIVE_NEVER, now);
  suspect_up(t, now);
  settle(t, now);
  if (t->parent >= 0 && !t->up_bye) {
    if (t->up_last == 0 && now - t->t0 > t->c.connect_s) parent_lost(t, LIVE_NEVER, 0, now);
    else if (t->up_last > 0 && now - t->up_last > t->c.timeout) parent_lost(t, LIVE_SILENT, now - t->up_last, now);
  }
  return t->parent >= 0 && t->up_last == 0 && !t->up_up;
}

int lt_abort(lt_t *t, int lost_rank) {
  uint64_t before = t->st.sent;
  abort_kids(t, lost_rank);
  return (int)(t->st.sent - before);
}

void lt_stop(lt_t *t) {
  if (t->stopping) return;
  t->stopping = 1;
  if (t->parent >= 0 && t->up_up) send_to(t, t->parent, LT_BYE, 0, NULL, 0);
  for (int i = 0; i < t->nkids; i++)
    if (t->kids[i].up && !t->kids[i].lost) send_to(t, t->kids[i].rank, LT_BYE, 0, NULL, 0);
}

int lt_all_bye(const lt_t *t) {
  for (int i = 0; i < t->nkids; i++)
    if (t->kids[i].up && !t->kids[i].bye) return 0;
  return 1;
}

int lt_hello_rank(const lt_t *t, const void *frame, size_t len) {
  long need = lt_frame_len(frame, len);
  if (need <= 0 || (size_t)need != len) return -1;
  lt_hdr_t h;
  memcpy(&h, frame, sizeof h);
  if (h.type != LT_HELLO || h.token != t->c.token) return -1;
  return lt_kid_index(t, h.rank) >= 0 ? h.rank : -1;
}

void lt_up(lt_t *t, int peer, double now) {
  if (peer == t->parent) {
    t->up_up = 1;
    t->up_last = now;
    send_to(t, peer, LT_HELLO, 0, NULL, 0);
    return;
  }
  kid_t *k = kid_of(t, peer);
  if (!k) return;
  k->up = 1;
  k->last = now;
}

/* ---- life cycle ---- */

int lt_parent_of(const lt_t *t) { return t->parent; }
int lt_nkids(const lt_t *t) { return t->nkids; }
int lt_kid(const lt_t *t, int i) { return i >= 0 && i < t->nkids ? t->kids[i].rank : -1; }
const lt_stats_t *lt_stats(const lt_t *t) { return &t->st; }

int lt_kid_index(const lt_t *t, int rank) {
  int lo = 0, hi = t->nkids - 1; /* kids are sorted by rank (lt_init) */
  while (lo <= hi) {
    int mid = (lo + hi) / 2;
    if (t->kids[mid].rank == rank) return mid;
    if (t->kids[mid].rank < rank) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

static int int_cmp(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

int lt_init(lt_t **out, const lt_cfg_t *cfg, const lt_io_t *io, double now) {
  *out = NULL;
  const tree_shape_t *s = &cfg->shape;
  if (s->size < 1 || s->nnodes < 1 || !s->node_first || cfg->rank < 0 || cfg->rank >= s->size)
    return GPL_EINVAL;
  lt_t *t = calloc(1, sizeof *t);
  if (!t) return GPL_ENOMEM;
  t->c = *cfg;
  t->io = *io;
  t->t0 = now;
  t->parent = tree_parent(s, cfg->rank);
  int nk = tree_children(s, cfg->rank, NULL, 0);
  int *kr = calloc((size_t)nk + 1, sizeof *kr);
  t->kids = calloc((size_t)nk + 1, sizeof *t->kids);
  int rc = kr && t->kids ? GPL_OK : GPL_ENOMEM;
  if (rc == GPL_OK) {
    tree_children(s, cfg->rank, kr, nk);
    qsort(kr, (size_t)nk, sizeof *kr, int_cmp);
    t->nkids = nk;
    for (int i = 0; i < nk; i++) t->kids[i] = (kid_t){.rank = kr[i], .rest_ms = -1};
  }
  if (rc == GPL_OK && t->parent < 0) {
    t->mark = calloc((size_t)s->size, sizeof *t->mark);
    int *buf = calloc((size_t)s->size, sizeof *buf);
    if (!t->mark || !buf) rc = GPL_ENOMEM;
    for (int i = 0; rc == GPL_OK && i < nk; i++) {
      int c = subtree(t, kr[i], buf);
      t->kids[i].sub = malloc((size_t)c * sizeof(int));
      if (!t->kids[i].sub) {
        rc = GPL_ENOMEM;
        break;
      }
      memcpy(t->kids[i].sub, buf, (size_t)c * sizeof(int));
      t->kids[i].nsub = c;
    }
    free(buf);
  }
  free(kr);
  if (rc != GPL_OK) {
    lt_free(t);
    return rc;
  }
  *out = t;
  return GPL_OK;
}

void lt_free(lt_t *t) {
  if (!t) return;
  for (int i = 0; t->kids && i < t->nkids; i++) free(t->kids[i].sub);
  free(t->kids);
  free(t->mark);
  free(t);
}
