/* Bounded allgather and broadcast over the job's tree (common/tree.h): no process waits on more
 * than fanout + its node's ranks, a missing rank is named by the parent that waited for it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/mpix_int.h"
#include "common/strbuf.h"
#include "common/tree.h"
#include "common/util.h"

enum { TAG_UP = 7106, TAG_UPFAIL = 7107, TAG_DOWN = 7108, TAG_DOWNFAIL = 7109 };

/* Seconds a level of the tree waits beyond the one below it, so that the parent of a missing
 * rank times out first and its report (naming the rank) reaches the root before the root's own
 * deadline; and the extra time a receiver gives its parent's broadcast. */
#define LEVEL_S 0.5
#define DOWN_EXTRA_S 2.0

/* Who did not answer: ranks of the communicator, the first MISS_MAX of n. */
#define MISS_MAX 16
typedef struct miss_s {
  int32_t n;
  int32_t r[MISS_MAX];
} miss_t;

static void miss_add(miss_t *m, int r) {
  if (m->n < MISS_MAX) m->r[m->n] = r;
  m->n++;
}

/* A child's notice (bounded: it came over the wire). */
static void miss_merge(miss_t *m, const miss_t *o) {
  int n = o->n < 0 ? 0 : o->n > (1 << 24) ? 1 << 24 : o->n;
  int shown = n < MISS_MAX ? n : MISS_MAX;
  for (int i = 0; i < shown; i++) miss_add(m, o->r[i]);
  if (m->n < (1 << 24)) m->n += n - shown; /* those not listed still count */
}

/* ---- the world's shape (nodes known) ---- */

static tree_shape_t g_world;
static int g_world_set;

int mpix_set_nodes(const int *node_of, const int *leader_of_node, int nnodes, int size) {
  if (g_world_set) tree_shape_free(&g_world), g_world_set = 0;
  if (!node_of) return GPL_OK;
  g_world = (tree_shape_t){.size = size, .nnodes = nnodes, .fanout = tree_fanout_env(),
                           .node_of = node_of, .leader_of_node = leader_of_node};
  CHECK(tree_shape_index(&g_world));
  g_world_set = 1;
  return GPL_OK;
}

/* ---- one exchange ---- */

typedef struct tx_s {
  mpix_group_t g;          /* the members (a copy); the tree's root is member 0 */
  tree_shape_t flat;       /* the shape when the world's does not apply */
  const tree_shape_t *shape;
  int *order, *pos, *sub, *height; /* tree_preorder, by member index */
  int *kids, *kidt, nkids, parent; /* children: ranks of comm, member indices; parent rank (-1: root) */
} tx_t;

static void tx_free(tx_t *x) {
  free(x->order), free(x->pos), free(x->sub), free(x->height), free(x->kids), free(x->kidt);
  tree_shape_free(&x->flat);
}

static int tx_init(tx_t *x, const mpix_group_t *g) {
  memset(x, 0, sizeof *x);
  x->g = *g;
  if (g->me < 0 || g->n < 1) return GPL_EINVAL;
  if (g->comm == MPI_COMM_WORLD && !g->ranks && g_world_set && g_world.size == g->n) {
    x->shape = &g_world;
  } else {
    CHECK(tree_shape_flat(&x->flat, g->n, tree_fanout_env()));
    x->shape = &x->flat;
  }
  size_t n = (size_t)g->n;
  x->order = malloc(n * sizeof *x->order);
  x->pos = malloc(n * sizeof *x->pos);
  x->sub = malloc(n * sizeof *x->sub);
  x->height = malloc(n * sizeof *x->height);
  x->kids = malloc(n * sizeof *x->kids);
  x->kidt = malloc(n * sizeof *x->kidt);
  if (!x->order || !x->pos || !x->sub || !x->height || !x->kids || !x->kidt ||
      tree_preorder(x->shape, x->order, x->pos, x->sub, x->height) < 0) {
    tx_free(x);
    return GPL_ENOMEM;
  }
  x->nkids = tree_children(x->shape, g->me, x->kidt, g->n);
  for (int i = 0; i < x->nkids; i++) x->kids[i] = mpix_group_rank(g, x->kidt[i]);
  int p = tree_parent(x->shape, g->me);
  x->parent = p < 0 ? -1 : mpix_group_rank(g, p);
  return GPL_OK;
}

/* Drop a request nobody will complete now. Its buffer must stay (MPI may still use it), so a
 * failed exchange leaves its buffers allocated: the job ends after one. */
static void drop(MPI_Request *r) {
  if (*r == MPI_REQUEST_NULL) return;
  MPI_Cancel(r);
  MPI_Request_free(r);
}

/* ---- the exchange as a state machine (mpix.h: mpix_tx_*) ---- */

enum { PH_UP, PH_DOWN, PH_SEND, PH_DONE };

struct mpix_tx_s {
  tx_t x;
  mpix_tx_kind_t kind;
  int bytes;               /* per member (ALLGATHER, GATHER) or of the message (BCAST) */
  int down_bytes;          /* what goes down: the table, the verdict, the message */
  double t0, timeout, up_end, down_end;
  const char *what;
  int (*decide)(void *arg, const void *table, int n);
  void *decide_arg;
  char *full;              /* the table in depth-first order (ALLGATHER, GATHER) */
  char *down;              /* what came down (non-root) or goes down (root) */
  int32_t verdict;         /* GATHER: what the root decided */
  MPI_Request *rq;         /* 2 per child (data, failure), then down data, down failure */
  MPI_Request up, *snd;    /* the report up; the sends down */
  miss_t *kf;              /* the children's failure notices, then mine, then the parent's */
  char *state, *late;      /* per child: 1 data in, 2 failure notice in; send not taken */
  int left, phase, rc, clean, sent_up;
  mpix__nap_t z;
};

static void log_missing(const tx_t *x, const miss_t *m, double timeout_s, const char *what) {
  strbuf_t b = STRBUF_INIT;
  int shown = m->n < MISS_MAX ? m->n : MISS_MAX;
  for (int i = 0; i < shown; i++) {
    char name[300];
    strbuf_printf(&b, "%s%s", i ? ", " : "", mpix_rank_name(mpix_world_rank(x->g.comm, m->r[i]), name, sizeof name));
  }
  if (m->n > shown) strbuf_printf(&b, " and %d more", m->n - shown);
  LOG_ERROR("timed out after %.1f s in %s: no answer from %s", timeout_s, what,
            m->n ? strbuf_str(&b) : "(unknown ranks)");
  strbuf_free(&b);
}

/* A failure notice to every child (their exchange ends at once instead of at its deadline). */
static void fail_down(mpix_tx_t *t, const miss_t *m) {
  tx_t *x = &t->x;
  for (int i = 0; i < x->nkids; i++) MPI_Isend(m, (int)sizeof *m, MPI_BYTE, x->kids[i], TAG_DOWNFAIL + x->g.tag, x->g.comm, &t->snd[i]);
  t->phase = PH_SEND;
  t->rc = GPL_ETIMEDOUT;
  t->clean = 0;
  t->down_end = util_now() + 1.0;
}

static void send_down(mpix_tx_t *t, const void *buf) {
  tx_t *x = &t->x;
  for (int i = 0; i < x->nkids; i++) MPI_Isend(buf, t->down_bytes, MPI_BYTE, x->kids[i], TAG_DOWN + x->g.tag, x->g.comm, &t->snd[i]);
  t->phase = PH_SEND;
  t->down_end = util_now() + t->timeout;
}

/* Up: the children's subtrees (or failure notices) until up_end; then my report to the parent,
 * or at the root the verdict and the way down. */
static void poll_up(mpix_tx_t *t) {
  tx_t *x = &t->x;
  miss_t *miss = &t->kf[x->nkids];
  for (int i = 0; i < x->nkids && t->left > 0; i++) {
    if (t->state[i]) continue;
    int f = 0;
    MPI_Test(&t->rq[2 * i], &f, MPI_STATUS_IGNORE);
    if (f) {
      t->state[i] = 1;
      MPI_Cancel(&t->rq[2 * i + 1]);
      MPI_Wait(&t->rq[2 * i + 1], MPI_STATUS_IGNORE);
      t->left--;
      continue;
    }
    MPI_Test(&t->rq[2 * i + 1], &f, MPI_STATUS_IGNORE);
    if (f) {
      t->state[i] = 2;
      drop(&t->rq[2 * i]);
      miss_merge(miss, &t->kf[i]);
      t->clean = 0;
      t->left--;
    }
  }
  if (t->left > 0 && util_now() < t->up_end) return;
  for (int i = 0; i < x->nkids; i++)
    if (!t->state[i]) {
      miss_add(miss, x->kids[i]);
      drop(&t->rq[2 * i]);
      drop(&t->rq[2 * i + 1]);
      t->clean = 0;
    }
  if (x->parent >= 0) {
    if (miss->n) MPI_Isend(miss, (int)sizeof *miss, MPI_BYTE, x->parent, TAG_UPFAIL + x->g.tag, x->g.comm, &t->up);
    else MPI_Isend(t->full + (size_t)x->pos[x->g.me] * (size_t)t->bytes, t->bytes * x->sub[x->g.me], MPI_BYTE, x->parent,
                   TAG_UP + x->g.tag, x->g.comm, &t->up);
    t->sent_up = 1;
    t->phase = PH_DOWN;
    return;
  }
  if (miss->n) {
    log_missing(x, miss, t->timeout, t->what);
    fail_down(t, miss);
    return;
  }
  if (t->kind == MPIX_TX_GATHER) {
    t->verdict = t->decide ? t->decide(t->decide_arg, t->full, x->g.n) : 0;
    send_down(t, &t->verdict);
  } else {
    send_down(t, t->full);
  }
}

/* Down, at a rank other than the root: the parent's message or failure notice, passed on. */
static void poll_down(mpix_tx_t *t) {
  tx_t *x = &t->x;
  MPI_Request *rd = &t->rq[2 * x->nkids], *rf = rd + 1;
  miss_t *pf = &t->kf[x->nkids + 1];
  int f = 0;
  MPI_Test(rd, &f, MPI_STATUS_IGNORE);
  if (f) {
    MPI_Cancel(rf);
    MPI_Wait(rf, MPI_STATUS_IGNORE);
    if (t->kind == MPIX_TX_GATHER) memcpy(&t->verdict, t->down, sizeof t->verdict);
    send_down(t, t->down);
    return;
  }
  MPI_Test(rf, &f, MPI_STATUS_IGNORE);
  if (f) {
    drop(rd);
    fail_down(t, pf);
    return;
  }
  if (util_now() < t->down_end) return;
  /* Nothing from the parent: it is the one missing (the root names it when it can). */
  drop(rd);
  drop(rf);
  miss_t *m = &t->kf[x->nkids];
  memset(m, 0, sizeof *m);
  miss_add(m, x->parent);
  log_missing(x, m, t->timeout, t->what);
  fail_down(t, m);
}

/* The sends down (and my report up) taken, or their deadline: a child that did not take its copy
 * is gone (its receive was posted when it entered the exchange), and named. */
static void poll_send(mpix_tx_t *t) {
  tx_t *x = &t->x;
  int done = 0, up_done = 1;
  MPI_Testall(x->nkids, t->snd, &done, MPI_STATUSES_IGNORE);
  if (t->sent_up) MPI_Test(&t->up, &up_done, MPI_STATUS_IGNORE);
  if (done && up_done) {
    t->phase = PH_DONE;
    return;
  }
  if (util_now() < t->down_end) return;
  miss_t m = {0};
  for (int i = 0; i < x->nkids; i++) {
    int f = t->snd[i] == MPI_REQUEST_NULL;
    if (!f) MPI_Test(&t->snd[i], &f, MPI_STATUS_IGNORE);
    if (!f) miss_add(&m, x->kids[i]);
    drop(&t->snd[i]);
  }
  drop(&t->up);
  t->clean = 0;
  if (m.n && t->rc == GPL_OK) {
    log_missing(x, &m, t->timeout, t->what);
    t->rc = GPL_ETIMEDOUT;
  }
  t->phase = PH_DONE;
}

int mpix_tx_start(mpix_tx_t **out, const mpix_group_t *g, mpix_tx_kind_t kind, const void *data, int bytes,
                  double timeout_s, const char *what) {
  *out = NULL;
  mpix_tx_t *t = calloc(1, sizeof *t);
  ALLOCCHECK(t);
  int rc = tx_init(&t->x, g);
  if (rc < 0) {
    free(t);
    return rc;
  }
  tx_t *x = &t->x;
  int n = x->g.n;
  t->kind = kind;
  t->bytes = bytes;
  t->t0 = util_now();
  t->timeout = timeout_s;
  t->what = what;
  t->clean = 1;
  t->up = MPI_REQUEST_NULL;
  if (kind != MPIX_TX_BCAST && (long long)bytes * n > INT32_MAX) {
    tx_free(x);
    free(t);
    return GPL_EINVAL;
  }
  size_t b = (size_t)bytes;
  t->down_bytes = kind == MPIX_TX_ALLGATHER ? bytes * n : kind == MPIX_TX_GATHER ? (int)sizeof(int32_t) : bytes;
  t->rq = malloc((2 * (size_t)x->nkids + 2) * sizeof *t->rq);
  t->snd = malloc(((size_t)x->nkids + 1) * sizeof *t->snd);
  t->kf = calloc((size_t)x->nkids + 2, sizeof *t->kf);
  t->state = calloc((size_t)x->nkids + 1, 1);
  t->full = kind == MPIX_TX_BCAST ? NULL : malloc(b * (size_t)n);
  t->down = x->parent >= 0 || kind == MPIX_TX_BCAST ? malloc((size_t)t->down_bytes + 1) : NULL;
  if (!t->rq || !t->snd || !t->kf || !t->state || (kind != MPIX_TX_BCAST && !t->full) ||
      ((x->parent >= 0 || kind == MPIX_TX_BCAST) && !t->down)) {
    mpix_tx_free(t);
    return GPL_ENOMEM;
  }
  for (int i = 0; i < 2 * x->nkids + 2; i++) t->rq[i] = MPI_REQUEST_NULL;
  for (int i = 0; i < x->nkids + 1; i++) t->snd[i] = MPI_REQUEST_NULL;
  int depth = 0, rh = x->height[0];
  for (int q = x->g.me; (q = tree_parent(x->shape, q)) >= 0;) depth++;
  /* The way down's receives first (into a buffer of its own: my report up may still be read). */
  if (x->parent >= 0) {
    MPI_Irecv(t->down, t->down_bytes, MPI_BYTE, x->parent, TAG_DOWN + x->g.tag, x->g.comm, &t->rq[2 * x->nkids]);
    MPI_Irecv(&t->kf[x->nkids + 1], (int)sizeof(miss_t), MPI_BYTE, x->parent, TAG_DOWNFAIL + x->g.tag, x->g.comm,
              &t->rq[2 * x->nkids + 1]);
  }
  if (kind == MPIX_TX_BCAST) {
    /* A receiver deeper down waits longer: its parent passes the message on once it has it. */
    t->down_end = t->t0 + timeout_s + DOWN_EXTRA_S + LEVEL_S * (depth > 0 ? depth - 1 : 0);
    if (x->parent < 0) {
      memcpy(t->down, data, b);
      send_down(t, t->down);
    } else {
      t->phase = PH_DOWN;
    }
    *out = t;
    return GPL_OK;
  }
  memcpy(t->full + (size_t)x->pos[x->g.me] * b, data, b);
  for (int i = 0; i < x->nkids; i++) {
    int k = x->kids[i], kt = x->kidt[i];
    MPI_Irecv(t->full + (size_t)x->pos[kt] * b, bytes * x->sub[kt], MPI_BYTE, k, TAG_UP + x->g.tag, x->g.comm, &t->rq[2 * i]);
    MPI_Irecv(&t->kf[i], (int)sizeof t->kf[i], MPI_BYTE, k, TAG_UPFAIL + x->g.tag, x->g.comm, &t->rq[2 * i + 1]);
  }
  /* The parent of a missing rank times out first: half a second per level below. */
  int h = x->height[x->g.me];
  t->up_end = t->t0 + timeout_s + LEVEL_S * (h > 0 ? h - 1 : 0);
  t->down_end = t->t0 + timeout_s + LEVEL_S * rh + DOWN_EXTRA_S;
  t->left = x->nkids;
  t->phase = PH_UP;
  *out = t;
  return GPL_OK;
}

void mpix_tx_set_decide(mpix_tx_t *t, int (*decide)(void *arg, const void *table, int n), void *arg) {
  t->decide = decide;
  t->decide_arg = arg;
}

int mpix_tx_poll(mpix_tx_t *t) {
  if (t->phase == PH_UP) poll_up(t);
  if (t->phase == PH_DOWN) poll_down(t);
  if (t->phase == PH_SEND) poll_send(t);
  return t->phase == PH_DONE ? (t->rc < 0 ? t->rc : 0) : 1;
}

int mpix_tx_wait(mpix_tx_t *t) {
  int rc;
  while ((rc = mpix_tx_poll(t)) == 1) mpix__nap(&t->z);
  return rc;
}

int mpix_tx_result(const mpix_tx_t *t, void *out) {
  if (t->phase != PH_DONE || t->rc < 0) return t->rc < 0 ? t->rc : GPL_EINVAL;
  const tx_t *x = &t->x;
  size_t b = (size_t)t->bytes;
  if (t->kind == MPIX_TX_BCAST) {
    if (x->parent >= 0) memcpy(out, t->down, b);
  } else if (t->kind == MPIX_TX_GATHER) {
    if (x->parent < 0 && out) /* the root: the table */
      for (int p = 0; p < x->g.n; p++) memcpy((char *)out + (size_t)x->order[p] * b, t->full + (size_t)p * b, b);
    return t->verdict;
  } else {
    const char *tab = x->parent >= 0 ? t->down : t->full;
    for (int p = 0; p < x->g.n; p++) memcpy((char *)out + (size_t)x->order[p] * b, tab + (size_t)p * b, b);
  }
  return GPL_OK;
}

void mpix_tx_free(mpix_tx_t *t) {
  if (!t) return;
  if (t->clean) { /* else MPI may still use the buffers: they stay (the job is ending) */
    free(t->full), free(t->down), free(t->rq), free(t->snd), free(t->kf);
  }
  free(t->state);
  tx_free(&t->x);
  free(t);
}

/* ---- blocking forms ---- */

static int tx_run(const mpix_group_t *g, mpix_tx_kind_t kind, const void *data, int bytes, void *out,
                  double timeout_s, const char *what) {
  if (g->n == 1) {
    if (kind != MPIX_TX_BCAST) memcpy(out, data, (size_t)bytes);
    return GPL_OK;
  }
  mpix_tx_t *t;
  CHECK(mpix_tx_start(&t, g, kind, data, bytes, timeout_s, what));
  int rc = mpix_tx_wait(t);
  if (rc == GPL_OK) rc = mpix_tx_result(t, out);
  mpix_tx_free(t);
  return rc;
}

int mpix_gallgather(const mpix_group_t *g, const void *send, int bytes, void *recv, double timeout_s,
                    const char *what) {
  return tx_run(g, MPIX_TX_ALLGATHER, send, bytes, recv, timeout_s, what);
}

int mpix_gbcast(const mpix_group_t *g, void *buf, int bytes, int root, double timeout_s, const char *what) {
  if (root != 0) return GPL_EINVAL; /* the tree's root is member 0 */
  return tx_run(g, MPIX_TX_BCAST, buf, bytes, buf, timeout_s, what);
}

int mpix_group_of(MPI_Comm comm, mpix_group_t *g) {
  memset(g, 0, sizeof *g);
  g->comm = comm;
  return mpix_comm_size(comm, &g->me, &g->n);
}

int mpix_allgather(const void *send, int bytes, void *recv, MPI_Comm comm, double timeout_s, const char *what) {
  mpix_group_t g;
  CHECK(mpix_group_of(comm, &g));
  return mpix_gallgather(&g, send, bytes, recv, timeout_s, what);
}

int mpix_bcast(void *buf, int bytes, int root, MPI_Comm comm, double timeout_s, const char *what) {
  mpix_group_t g;
  CHECK(mpix_group_of(comm, &g));
  return mpix_gbcast(&g, buf, bytes, root, timeout_s, what);
}
