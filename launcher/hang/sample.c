/* The straggler by stack sampling: the waiting table, each rank's window of classified samples
 * and its report, and rank 0's verdict (the rank that waits least while the others wait most). */
#include "launcher/hang/sample.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"

/* Thresholds of the verdict. A balanced job (every rank doing the same phases, evaluation and
 * checkpoints included) has every rank's waiting share near the others'; these need a gap that
 * sampling noise over SAMPLE_MIN samples does not make (sd ~ 0.11 at n = 20). */
#define OTHERS_MIN 0.5   /* the others' median waiting share is at least this */
#define SELF_FRAC 0.5    /* and the straggler's at most this fraction of it */
#define GAP_MIN 0.3      /* and at least this much below it */
/* A short job (SAMPLE_FEW to SAMPLE_MIN samples) is judged with a wider gap (sd ~ 0.14 at n = 12). */
#define FEW_SELF_FRAC 0.34
#define FEW_GAP_MIN 0.45
#define NEAR_BEST 0.15   /* functions whose over-representation is this close to the best's */
#define NEAR_FRAC 0.6    /* ... or at least this fraction of it (a function only it runs): more
                          * than half, so two such functions share samples (one calls the
                          * other), never two apart */
/* And the gap a significant one: the candidate's waiting share against the others' pooled, a
 * two-proportion z of at least this (the rank that waits least among many is chosen for being
 * low, so its share is biased low; with 3-8 alike ranks of 12-32 samples the thresholds above
 * alone flagged 2-6 % of balanced runs, this and two judgments in a row (sample_confirm) 0.4 %). */
#define Z_MIN 3.0

/* The waiting table: a frame whose function contains one of these names (any case) is a wait in
 * a collective, a barrier or a synchronisation; so is any frame of torch.distributed. With NCCL
 * the collectives return at once and the wait shows in the synchronisations (cudaStreamSynchronize,
 * torch.cuda.synchronize, ncclCommGetAsyncError polling). DistributedDataParallel all-reduces the
 * gradients inside backward() (torch/autograd/), where a Python stack shows its wait: backward is
 * a wait too (every rank spends the same share computing there, so it weighs alike on all). */
static const char *const wait_names[] = {
    "all_reduce", "allreduce", "all_gather", "allgather", "reduce_scatter", "reducescatter",
    "all_to_all", "alltoall", "broadcast", "barrier", "synchronize", "ncclGroupEnd",
    "ncclCommGetAsyncError", "gloo::", "c10d::", "MPI_Wait", "MPI_Recv", "MPI_Barrier",
    "MPI_Allreduce", "MPI_Bcast", "MPI_Allgather", "MPI_Test", "wait_all", "_wait_for_work",
};
static const char *const wait_wheres[] = {"torch/distributed/", "torch/cuda/streams", "/libgloo",
                                          "/libnccl", "/libmpi", "torch/autograd/"};

/* Start-up, not training: importing modules and the process group's rendezvous. A rank that
 * imports slower than the others while they wait in the rendezvous is no straggler of the
 * training; such samples are not counted. */
static const char *const startup_names[] = {"init_process_group", "rendezvous", "_store_based_barrier",
                                            "_new_group_with_tag"};
static const char *const startup_wheres[] = {"<frozen importlib"};

static int in_table(const char *s, const char *const *t, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (strstr(s, t[i])) return 1;
  return 0;
}

/* Library code: a frame there is not "where the program's time goes" itself. */
static const char *const lib_wheres[] = {"/site-packages/", "/dist-packages/", "/lib/python",
                                         "<frozen", ".so", "/libexec/"};

int sample_is_wait(const char *func, const char *where) {
  for (size_t i = 0; i < sizeof wait_names / sizeof *wait_names; i++)
    if (strcasestr(func, wait_names[i])) return 1;
  for (size_t i = 0; where && i < sizeof wait_wheres / sizeof *wait_wheres; i++)
    if (strstr(where, wait_wheres[i])) return 1;
  return 0;
}

static int is_lib(const char *func, const char *where) {
  if (!*func || strcmp(func, "??") == 0 || *func == '<' || strncmp(func, "_start", 6) == 0 ||
      strncmp(func, "__libc_start", 12) == 0)
    return 1;
  for (size_t i = 0; i < sizeof lib_wheres / sizeof *lib_wheres; i++)
    if (strstr(where, lib_wheres[i])) return 1;
  return 0;
}

int sample_classify(const char *stack, sample_t *out) {
  char first[SAMPLE_NAME] = "", waitf[SAMPLE_NAME] = "", waitw[SAMPLE_NAME] = "";
  int any = 0;
  memset(out, 0, sizeof *out);
  for (const char *p = stack; p && *p;) {
    const char *eol = strchr(p, '\n');
    size_t n = eol ? (size_t)(eol - p) : strlen(p);
    char line[512], *where;
    if (n >= sizeof line) n = sizeof line - 1;
    memcpy(line, p, n);
    line[n] = 0;
    p = eol ? eol + 1 : NULL;
    where = strchr(line, '\t');
    if (where) *where++ = 0;
    else where = line + n;
    if (!*line) continue;
    if (in_table(line, startup_names, sizeof startup_names / sizeof *startup_names) ||
        in_table(where, startup_wheres, sizeof startup_wheres / sizeof *startup_wheres))
      return SAMPLE_STARTUP;
    if (!any) util_strlcpy(first, line, sizeof first);
    any = 1;
    if (sample_is_wait(line, where)) {
      out->wait = 1;
      /* the outermost matching name: the call the program made (all_reduce), not its insides */
      int named = 0;
      for (size_t i = 0; i < sizeof wait_names / sizeof *wait_names; i++) named |= strcasestr(line, wait_names[i]) != NULL;
      util_strlcpy(named ? waitf : waitw, line, SAMPLE_NAME);
    } else if (out->nf < SAMPLE_DEPTH && !is_lib(line, where)) {
      int dup = 0;
      for (int i = 0; i < out->nf; i++) dup |= strcmp(out->f[i], line) == 0;
      if (!dup) util_strlcpy(out->f[out->nf++], line, SAMPLE_NAME);
    }
  }
  if (!any) return -1;
  if (out->wait) {
    util_strlcpy(out->f[0], *waitf ? waitf : waitw, SAMPLE_NAME);
    out->nf = 1;
  } else if (!out->nf) {
    util_strlcpy(out->f[0], first, SAMPLE_NAME);
    out->nf = 1;
  }
  return out->wait;
}

void sample_add(sample_window_t *w, const sample_t *s) {
  w->v[w->next] = *s;
  w->next = (w->next + 1) % SAMPLE_WINDOW;
  if (w->n < SAMPLE_WINDOW) w->n++;
}

/* The most frequent names among the window's samples of one kind (each counted once per sample),
 * most first, into top[k]. */
static void top_names(const sample_window_t *w, int wait, sample_func_t *top, int k) {
  memset(top, 0, (size_t)k * sizeof *top);
  enum { MAXN = SAMPLE_WINDOW * SAMPLE_DEPTH };
  sample_func_t all[MAXN];
  int na = 0;
  for (int i = 0; i < w->n; i++) {
    if (w->v[i].wait != wait) continue;
    for (int j = 0; j < w->v[i].nf; j++) {
      int a = 0;
      while (a < na && strcmp(all[a].name, w->v[i].f[j]) != 0) a++;
      if (a == na) {
        util_strlcpy(all[na].name, w->v[i].f[j], SAMPLE_NAME);
        all[na++].n = 0;
      }
      all[a].n++;
    }
  }
  for (int a = 0; a < na; a++)
    for (int t = 0; t < k; t++) {
      if (all[a].n <= top[t].n) continue;
      memmove(top + t + 1, top + t, (size_t)(k - t - 1) * sizeof *top);
      top[t] = all[a];
      break;
    }
}

void sample_report(const sample_window_t *w, sample_report_t *r) {
  memset(r, 0, sizeof *r);
  r->n = w->n;
  for (int i = 0; i < w->n; i++) r->nwait += w->v[i].wait;
  top_names(w, 0, r->work, SAMPLE_TOP);
  top_names(w, 1, &r->wait, 1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* A rank's share of samples working in func (0 when not among its top functions). */
static double share_of(const sample_report_t *r, const char *func) {
  for (int t = 0; t < SAMPLE_TOP; t++)
    if (r->work[t].n > 0 && strcmp(r->work[t].name, func) == 0) return (double)r->work[t].n / r->n;
  return 0;
}

void sample_judge(const sample_report_t *reports, int size, sample_verdict_t *v) {
  memset(v, 0, sizeof *v);
  v->rank = -1;
  double *w = calloc((size_t)size + 1, sizeof *w);
  if (!w) return;
  /* Every rank is judged on its SAMPLE_MIN samples, or, where a rank has fewer (a short job), every
   * rank on its SAMPLE_FEW with the stricter thresholds. */
  int few = 0, cand = -1, min_n = SAMPLE_MIN;
  for (int r = 0; r < size; r++) few += reports[r].n >= SAMPLE_FEW && reports[r].n < SAMPLE_MIN;
  if (few) min_n = SAMPLE_FEW;
  for (int r = 0; r < size; r++) {
    if (reports[r].n < min_n) continue;
    v->nranks++;
    double s = (double)reports[r].nwait / reports[r].n;
    if (cand < 0 || s < (double)reports[cand].nwait / reports[cand].n) cand = r;
  }
  if (v->nranks < 2) goto out;
  int k = 0;
  for (int r = 0; r < size; r++)
    if (r != cand && reports[r].n >= min_n) w[k++] = (double)reports[r].nwait / reports[r].n;
  double med = median(w, k), self = (double)reports[cand].nwait / reports[cand].n;
  v->wait_self = self;
  v->wait_others = med;
  double frac = few ? FEW_SELF_FRAC : SELF_FRAC, gap = few ? FEW_GAP_MIN : GAP_MIN;
  if (!(med >= OTHERS_MIN && self <= frac * med && med - self >= gap)) goto out;
  double no = 0, wo = 0;
  for (int r = 0; r < size; r++)
    if (r != cand && reports[r].n >= min_n) no += reports[r].n, wo += reports[r].nwait;
  double nc = reports[cand].n, pool = (wo + reports[cand].nwait) / (no + nc), diff = wo / no - self;
  if (diff <= 0 || diff * diff < Z_MIN * Z_MIN * pool * (1 - pool) * (1 / no + 1 / nc)) goto out;
  /* Where its extra time goes: its working function most over-represented against the others
   * (its share less twice theirs: a function every rank runs, main() or the training step that
   * calls the slow part, is not it). */
  double score[SAMPLE_TOP], theirs[SAMPLE_TOP], best = -1e9;
  const sample_report_t *c = &reports[cand];
  int nt = 0;
  for (; nt < SAMPLE_TOP && c->work[nt].n > 0; nt++) {
    k = 0;
    for (int r = 0; r < size; r++)
      if (r != cand && reports[r].n >= min_n) w[k++] = share_of(&reports[r], c->work[nt].name);
    theirs[nt] = median(w, k);
    score[nt] = (double)c->work[nt].n / c->n - 2 * theirs[nt];
    best = GPL_MAX(best, score[nt]);
  }
  /* Of the functions near the best, the one with the fewest samples: the callee that holds the
   * time (slow_augment) rather than its caller (train_step, main) where the others have no sample
   * of either; near: within NEAR_BEST, or, for a function the others have no sample of, NEAR_FRAC
   * of the best (the others all waiting, main is on every working stack of the straggler's and
   * nothing counts against it; a helper the others run too, spin(), stays out). */
  for (int t = 0; t < nt; t++) {
    double mine = (double)c->work[t].n / c->n;
    int near = score[t] >= best - NEAR_BEST || (best > 0 && theirs[t] == 0 && score[t] >= NEAR_FRAC * best);
    if (!near || (v->func[0] && mine >= v->share)) continue;
    v->share = mine;
    util_strlcpy(v->func, c->work[t].name, sizeof v->func);
  }
  if (!v->func[0]) util_strlcpy(v->func, "?", sizeof v->func);
  /* Where the others wait: the call most of them wait in. */
  int most = 0;
  for (int r = 0; r < size; r++) {
    if (r == cand || reports[r].n < min_n || !reports[r].wait.n) continue;
    int same = 0;
    for (int q = 0; q < size; q++)
      same += q != cand && reports[q].n >= min_n && strcmp(reports[q].wait.name, reports[r].wait.name) == 0;
    if (same > most) {
      most = same;
      util_strlcpy(v->wait_func, reports[r].wait.name, sizeof v->wait_func);
    }
  }
  v->rank = cand;
out:
  free(w);
}

int sample_confirm(sample_streak_t *s, const sample_verdict_t *v, long gen) {
  if (v->rank < 0 || v->rank != s->rank) {
    *s = (sample_streak_t){.rank = v->rank < 0 ? -1 : v->rank, .gen = gen};
    return 0;
  }
  if (gen > s->gen) s->confirmed = 1;
  s->gen = gen;
  return s->confirmed;
}

void sample_describe(const sample_verdict_t *v, const char *host, char *out, size_t len) {
  snprintf(out, len, "rank %d (host %s) is the straggler: %.0f %% of its samples in %s; the other ranks "
           "spend %.0f %% waiting%s%s", v->rank, host ? host : "?", 100 * v->share, v->func,
           100 * v->wait_others, v->wait_func[0] ? " in " : "", v->wait_func);
}
