/* The straggler view: rank 0 gathers every rank's last steps (star-shaped, bounded), lines them
 * up by step number and finds the rank that reports its steps latest; then the job's one
 * straggler verdict with the stack samples'. */
#include "launcher/hang/straggler.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/util.h"
#include "launcher/hang/sample.h"

#define TAG_STEPS 7301

typedef struct pack_s {
  int n;
  int pad;
  prog_step_t s[STRAG_STEPS];
} pack_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  if (n <= 0) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The time rank r reported step `step`, or NAN. */
static double when(prog_step_t *const *steps, const int *nsteps, int r, double step) {
  for (int i = nsteps[r] - 1; i >= 0; i--)
    if (steps[r][i].step == step) return steps[r][i].t;
  return NAN;
}

void strag_compute(prog_step_t *const *steps, const int *nsteps, int size, strag_rank_t *out,
                   double *median_step_s, int *slowest) {
  *slowest = -1;
  *median_step_s = NAN;
  double *v = calloc((size_t)(size + STRAG_STEPS + 1), sizeof *v);
  double *med = calloc(STRAG_STEPS, sizeof *med), *num = calloc(STRAG_STEPS, sizeof *num);
  if (!v || !med || !num) goto out;
  /* The steps to compare: those of the rank with the most, reported by at least half the ranks. */
  int ref = 0;
  for (int r = 1; r < size; r++)
    if (nsteps[r] > nsteps[ref]) ref = r;
  int nm = 0;
  for (int i = 0; i < nsteps[ref] && nm < STRAG_STEPS; i++) {
    int c = 0;
    for (int r = 0; r < size; r++) {
      double t = when(steps, nsteps, r, steps[ref][i].step);
      if (!isnan(t)) v[c++] = t;
    }
    if (c * 2 < size || c < 1) continue;
    num[nm] = steps[ref][i].step;
    med[nm++] = median(v, c);
  }
  /* The median rank's step time: between consecutive compared steps, per step number. */
  int nd = 0;
  for (int i = 1; i < nm; i++)
    if (num[i] > num[i - 1]) v[nd++] = (med[i] - med[i - 1]) / (num[i] - num[i - 1]);
  *median_step_s = median(v, nd);
  for (int r = 0; r < size; r++) {
    out[r].rank = r;
    out[r].nsteps = nsteps[r];
    int k = 0;
    for (int i = 1; i < nsteps[r]; i++)
      if (steps[r][i].step > steps[r][i - 1].step)
        v[k++] = (steps[r][i].t - steps[r][i - 1].t) / (steps[r][i].step - steps[r][i - 1].step);
    out[r].step_s = median(v, k);
    k = 0;
    for (int i = 0; i < nm; i++) {
      double t = when(steps, nsteps, r, num[i]);
      if (!isnan(t)) v[k++] = t - med[i];
    }
    out[r].lag_s = median(v, k);
    if (!isnan(out[r].lag_s) && (*slowest < 0 || out[r].lag_s > out[*slowest].lag_s)) *slowest = r;
  }
out:
  free(v);
  free(med);
  free(num);
}

static void add_num(cJSON *o, const char *k, double v) {
  if (isnan(v)) cJSON_AddNullToObject(o, k);
  else cJSON_AddNumberToObject(o, k, v);
}

int strag_job_summary(const prog_t *p, MPI_Comm comm, char *const *hosts, double fraction,
                      const sample_verdict_t *sampled, double timeout_s, FILE *f, cJSON *summary) {
  int rank, size, rc = GPL_OK;
  CHECK(mpix_comm_size(comm, &rank, &size));
  pack_t mine;
  memset(&mine, 0, sizeof mine);
  mine.n = prog_steps(p, mine.s, STRAG_STEPS);
  pack_t *all = rank == 0 ? calloc((size_t)size, sizeof *all) : NULL;
  MPI_Request *reqs = rank == 0 ? calloc((size_t)size, sizeof *reqs) : NULL;
  int *peers = rank == 0 ? calloc((size_t)size, sizeof *peers) : NULL;
  if (rank == 0 && (!all || !reqs || !peers)) {
    rc = GPL_ENOMEM;
    goto out;
  }
  if (size > 1 && rank != 0) {
    MPI_Request req;
    int zero = 0;
    MPI_Isend(&mine, (int)sizeof mine, MPI_BYTE, 0, TAG_STEPS, comm, &req);
    rc = mpix_wait(&req, 1, &zero, comm, timeout_s, "the straggler view (steps to rank 0)");
    goto out;
  }
  all[0] = mine;
  for (int r = 1; r < size; r++) {
    peers[r - 1] = r;
    MPI_Irecv(&all[r], (int)sizeof *all, MPI_BYTE, r, TAG_STEPS, comm, &reqs[r - 1]);
  }
  if (size > 1) CHECKGOTO(mpix_wait(reqs, size - 1, peers, comm, timeout_s, "the straggler view (steps)"), rc, out);
  prog_step_t **steps = calloc((size_t)size, sizeof *steps);
  int *ns = calloc((size_t)size, sizeof *ns);
  strag_rank_t *res = calloc((size_t)size, sizeof *res);
  strag_steps_t st = {.size = 0, .ranks = res, .median_step_s = NAN, .fraction = fraction, .slowest = -1};
  if (steps && ns && res) {
    int any = 0;
    for (int r = 0; r < size; r++) {
      steps[r] = all[r].s;
      ns[r] = GPL_MIN(GPL_MAX(all[r].n, 0), STRAG_STEPS);
      any += ns[r] > 1;
    }
    if (any) {
      strag_compute(steps, ns, size, res, &st.median_step_s, &st.slowest);
      st.size = size;
      /* A lag of a fraction of a step that is itself too short to tell from noise is none. */
      double med = st.median_step_s;
      st.flagged = st.slowest >= 0 && !isnan(med) && med > 0 && res[st.slowest].lag_s > fraction * med &&
                   res[st.slowest].lag_s > STRAG_MIN_LAG_S;
    }
  }
  strag_verdict(&st, sampled, hosts, f, summary);
  free(steps);
  free(ns);
  free(res);
out:
  free(all);
  free(reqs);
  free(peers);
  return rc;
}

void strag_verdict(const strag_steps_t *st, const sample_verdict_t *sv, char *const *hosts, FILE *f,
                   cJSON *summary) {
  int sampled = sv && sv->nranks >= 2, stepped = st && st->size > 0 && st->ranks;
  if (!sampled && !stepped) return;
  int by_sample = sampled && sv->rank >= 0, by_steps = !by_sample && stepped && st->flagged;
  int rank = by_sample ? sv->rank : by_steps ? st->slowest : -1;
  const char *host = rank >= 0 && hosts ? hosts[rank] : "?";
  if (f && by_sample) {
    char line[512];
    sample_describe(sv, host, line, sizeof line);
    fprintf(f, "gpulaunch: %s\n", line);
  }
  if (f && stepped && st->flagged && st->slowest == rank) {
    const strag_rank_t *r = &st->ranks[rank];
    fprintf(f, "gpulaunch: straggler: rank %d (host %s) reports its steps %.0f ms after the median "
            "rank (%.0f%% of the median step time %.0f ms; flagged above %.0f%%, [job] straggler_fraction)\n",
            rank, host, r->lag_s * 1e3, 100 * r->lag_s / st->median_step_s, st->median_step_s * 1e3,
            100 * st->fraction);
  }
  if (!summary) return;
  cJSON *o = cJSON_AddObjectToObject(summary, "straggler");
  cJSON_AddStringToObject(o, "method", by_sample || (sampled && !by_steps) ? "sample" : "steps");
  cJSON_AddBoolToObject(o, "flagged", rank >= 0);
  if (rank >= 0) {
    cJSON_AddNumberToObject(o, "rank", rank);
    cJSON_AddStringToObject(o, "host", hosts ? hosts[rank] : "");
  }
  if (by_sample) {
    cJSON_AddStringToObject(o, "function", sv->func);
    cJSON_AddNumberToObject(o, "function_fraction", sv->share);
    cJSON_AddNumberToObject(o, "waiting_fraction", sv->wait_self);
    cJSON_AddStringToObject(o, "others_waiting_in", sv->wait_func);
  }
  if (by_steps) {
    double med = st->median_step_s, lag = st->ranks[rank].lag_s;
    add_num(o, "lag_s", lag);
    add_num(o, "lag_fraction", isnan(med) || med <= 0 ? NAN : lag / med);
  }
  if (sampled) {
    cJSON_AddNumberToObject(o, "ranks_sampled", sv->nranks);
    cJSON_AddNumberToObject(o, "others_waiting_fraction", sv->wait_others);
  }
  if (!stepped) return;
  add_num(o, "median_step_s", st->median_step_s);
  cJSON_AddNumberToObject(o, "threshold_fraction", st->fraction);
  cJSON *ra = cJSON_AddArrayToObject(o, "ranks");
  for (int r = 0; r < st->size; r++) {
    cJSON *e = cJSON_CreateObject();
    cJSON_AddNumberToObject(e, "rank", r);
    cJSON_AddStringToObject(e, "host", hosts ? hosts[r] : "");
    cJSON_AddNumberToObject(e, "steps", st->ranks[r].nsteps);
    add_num(e, "step_s", st->ranks[r].step_s);
    add_num(e, "lag_s", st->ranks[r].lag_s);
    cJSON_AddItemToArray(ra, e);
  }
}
