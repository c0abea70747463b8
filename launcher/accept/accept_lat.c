/* Latency measurements of `gpulaunch accept` over MPI: the job-wide allreduce of small sizes (8 B
 * to 64 KiB) and an 8-byte round trip between the first ranks of every pair of nodes, each as
 * p50 and p99 of many tries. Every wait has a deadline; every rank makes the same collective
 * calls in the same order. The verdicts are accept_lat_judge.c's. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/mpix.h"
#include "common/util.h"
#include "launcher/accept/accept.h"
#include "launcher/accept/accept_mpi_int.h"
#include "launcher/job/job.h"

const int accept_lat_sizes[ACCEPT_LAT_NSIZES] = {8, 64, 512, 4096, 32768, 65536};

#define ITERS_MAX 200  /* tries of one size or one pair at most ... */
#define ITERS_MIN 3    /* ... and at least, however slow (the p99 of so few is their slowest) */
#define WARMUP 2       /* untimed tries first: connections, first-touch */
#define PASSES 3       /* every pair is measured this many times, spread over the rounds, and its
                        * best p50 counts: a process that waited for a busy core slows one pass, a
                        * slow link every one (as the bandwidth search's repeated measurements) */
#define TAG_RTT 20000  /* + the slot (mod 4096): the pairs' messages on the job's world, clear of
                        * the tags of mpix (7104-7109 + 16k) and the supervisor's (7200-7301) */

double accept_percentile(double *v, int n, double p) {
  if (n <= 0) return -1;
  util_sort_doubles(v, (size_t)n);
  int k = (int)ceil(p / 100.0 * n) - 1;
  if (k < 0) k = 0;
  if (k > n - 1) k = n - 1;
  return v[k];
}

void accept_lat_free(accept_lat_t *l) {
  free(l->rtt_p50);
  free(l->rtt_p99);
  free(l->rtt_n);
  memset(l, 0, sizeof *l);
}

/* An MPI call's status as the project's code (logged). */
static int mpi_ok(int mpi_rc) {
  MPICHECK(mpi_rc);
  return GPL_OK;
}

static int iallreduce(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                      double timeout, const char *what) {
  MPI_Request req;
  MPICHECK(MPI_Iallreduce(send, recv, count, type, op, comm, &req));
  return accept_wait_req(&req, comm, timeout, what);
}

/* One size of the job-wide allreduce: the count of tries fits budget (decided from the slowest
 * rank's first try, so that every rank runs as many), then the slowest rank's p50 and p99. */
static int allreduce_size(const job_t *job, int bytes, double budget, double *p50, double *p99, int *iters) {
  const char *what = "accept: small allreduce (latency)";
  MPI_Comm w = job->world;
  int count = bytes / (int)sizeof(float), rc = GPL_OK;
  float *a = calloc((size_t)count, sizeof *a), *b = calloc((size_t)count, sizeof *b);
  double *t = calloc(ITERS_MAX, sizeof *t);
  if (!a || !b || !t) {
    rc = GPL_ENOMEM;
    goto done;
  }
  for (int i = 0; i < WARMUP; i++) CHECKGOTO(iallreduce(a, b, count, MPI_FLOAT, MPI_SUM, w, job->timeout, what), rc, done);
  double t0 = util_now();
  CHECKGOTO(iallreduce(a, b, count, MPI_FLOAT, MPI_SUM, w, job->timeout, what), rc, done);
  double first = util_now() - t0, slowest = 0;
  CHECKGOTO(iallreduce(&first, &slowest, 1, MPI_DOUBLE, MPI_MAX, w, job->timeout, what), rc, done);
  int k = slowest > 0 ? (int)(budget / slowest) : ITERS_MAX;
  k = k > ITERS_MAX ? ITERS_MAX : k < ITERS_MIN ? ITERS_MIN : k;
  for (int i = 0; i < k; i++) {
    t0 = util_now();
    CHECKGOTO(iallreduce(a, b, count, MPI_FLOAT, MPI_SUM, w, job->timeout, what), rc, done);
    t[i] = (util_now() - t0) * 1e6;
  }
  double mine[2] = {accept_percentile(t, k, 50), 0}, worst[2];
  mine[1] = accept_percentile(t, k, 99);
  CHECKGOTO(iallreduce(mine, worst, 2, MPI_DOUBLE, MPI_MAX, w, job->timeout, what), rc, done);
  *p50 = worst[0];
  *p99 = worst[1];
  *iters = k;
done:
  if (rc != GPL_ETIMEDOUT) { /* a timed-out request may still write its buffers */
    free(a);
    free(b);
  }
  free(t);
  return rc;
}

/* A round trip's wait: spin (as latency benchmarks do; a rank that naps measures the scheduler's
 * wake-up, not the network) for up to SPIN_S, then wait as the other measurements do. */
#define SPIN_S 0.01
static int wait_spin(MPI_Request *r, MPI_Comm comm, double timeout, const char *what) {
  double until = util_now() + SPIN_S;
  do {
    int done = 0;
    CHECK(mpi_ok(MPI_Test(r, &done, MPI_STATUS_IGNORE)));
    if (done) return GPL_OK;
  } while (util_now() < until);
  return accept_wait_req(r, comm, timeout, what);
}

/* The pair of node a in round r of a round-robin over n nodes (n even; the circle method: node
 * n-1 stays, the others turn), or -1. */
static int partner(int a, int r, int n) {
  if (n < 2) return -1;
  int m = n - 1;
  if (a == m) return r % m;
  if (a == r % m) return m;
  return ((2 * r - a) % m + m) % m;
}

/* One pair's round trips: the lower node's first rank sends 8 bytes (a sequence number, -1 to
 * end), the other sends them back. The lower side decides how many (budget), and keeps the times. */
static int pair_rtt(const job_t *job, int peer_rank, int lead, int tag, double budget, double *p50, double *p99,
                    int *n) {
  const char *what = "accept: round trips between nodes (latency)";
  MPI_Comm w = job->world;
  MPI_Request rq;
  int64_t msg = 0;
  int rc = GPL_OK;
  double *t = calloc(ITERS_MAX, sizeof *t);
  ALLOCCHECK(t);
  if (!lead) { /* echo until told to stop */
    for (;;) {
      CHECKGOTO(mpi_ok(MPI_Irecv(&msg, 1, MPI_INT64_T, peer_rank, tag, w, &rq)), rc, done);
      CHECKGOTO(wait_spin(&rq, w, job->timeout, what), rc, done);
      if (msg < 0) break;
      CHECKGOTO(mpi_ok(MPI_Isend(&msg, 1, MPI_INT64_T, peer_rank, tag, w, &rq)), rc, done);
      CHECKGOTO(wait_spin(&rq, w, job->timeout, what), rc, done);
    }
    goto done;
  }
  double start = util_now();
  int k = 0;
  for (int i = 0; i < WARMUP + ITERS_MAX; i++) {
    if (i >= WARMUP + ITERS_MIN && util_now() - start > budget) break;
    double t0 = util_now();
    msg = i;
    int64_t back = -1;
    MPI_Request r2[2];
    CHECKGOTO(mpi_ok(MPI_Irecv(&back, 1, MPI_INT64_T, peer_rank, tag, w, &r2[1])), rc, done);
    CHECKGOTO(mpi_ok(MPI_Isend(&msg, 1, MPI_INT64_T, peer_rank, tag, w, &r2[0])), rc, done);
    CHECKGOTO(wait_spin(&r2[0], w, job->timeout, what), rc, done);
    CHECKGOTO(wait_spin(&r2[1], w, job->timeout, what), rc, done);
    if (back != msg) {
      rc = GPL_EPROTO;
      goto done;
    }
    if (i >= WARMUP) t[k++] = (util_now() - t0) * 1e6;
  }
  msg = -1;
  CHECKGOTO(mpi_ok(MPI_Isend(&msg, 1, MPI_INT64_T, peer_rank, tag, w, &rq)), rc, done);
  CHECKGOTO(wait_spin(&rq, w, job->timeout, what), rc, done);
  *p50 = accept_percentile(t, k, 50);
  *p99 = accept_percentile(t, k, 99);
  *n = k;
done:
  free(t);
  return rc;
}

/* What each rank tells about the pairs it led: for each other node, p50, p99 and the count. */
typedef struct pair_row_s {
  double p50, p99;
  int32_t n;
  int32_t rc;
} pair_row_t;

/* The index of node a's pair among the pairs of round r (pairs ordered by their lower node). */
static int pair_index(int a, int r, int n) {
  int lo = a < partner(a, r, n) ? a : partner(a, r, n), k = 0;
  for (int x = 0; x < lo; x++)
    if (x < partner(x, r, n)) k++;
  return k;
}

int accept_latency_measure(const job_t *job, double budget_s, int serial, accept_lat_t *out) {
  memset(out, 0, sizeof *out);
  int nn = job->nnodes, rc = GPL_OK;
  out->nranks = job->size;
  out->nnodes = nn;
  out->rtt_p50 = malloc((size_t)nn * nn * sizeof(double));
  out->rtt_p99 = malloc((size_t)nn * nn * sizeof(double));
  out->rtt_n = calloc((size_t)nn * nn, sizeof(int));
  if (!out->rtt_p50 || !out->rtt_p99 || !out->rtt_n) return accept_lat_free(out), GPL_ENOMEM;
  for (int i = 0; i < nn * nn; i++) out->rtt_p50[i] = out->rtt_p99[i] = -1;
  for (int s = 0; s < ACCEPT_LAT_NSIZES; s++) out->ar_p50[s] = out->ar_p99[s] = -1;
  if (budget_s <= 0) budget_s = 10;
  /* half the budget for the allreduces, half for the pairs */
  if (job->size > 1)
    for (int s = 0; s < ACCEPT_LAT_NSIZES && rc == GPL_OK; s++)
      rc = allreduce_size(job, accept_lat_sizes[s], budget_s / 2 / ACCEPT_LAT_NSIZES, &out->ar_p50[s],
                          &out->ar_p99[s], &out->ar_iters[s]);
  CHECK(rc);
  if (nn < 2) return GPL_OK;
  /* Rounds of disjoint pairs; serial (nodes that share a machine's cores): one pair at a time,
   * since pairs measured at once would wait for each other's CPU, not for the network. Every
   * rank passes a barrier after each slot, so that the slots never overlap. */
  int n_even = nn + (nn & 1), rounds = n_even - 1, slots = serial ? n_even / 2 : 1;
  double each = budget_s / 2 / (PASSES * rounds * slots);
  pair_row_t *mine = calloc((size_t)nn, sizeof *mine), *all = NULL;
  ALLOCCHECK(mine);
  for (int b = 0; b < nn; b++) mine[b] = (pair_row_t){-1, -1, 0, 0};
  int me = job->node, leader = job->leader_of_node[me] == job->rank;
  for (int pass = 0; pass < PASSES && rc == GPL_OK; pass++)
  for (int r = 0; r < rounds && rc == GPL_OK; r++)
    for (int q = 0; q < slots && rc == GPL_OK; q++) {
      int p = partner(me, r, n_even);
      if (leader && p >= 0 && p < nn && (!serial || pair_index(me, r, n_even) == q)) {
        double p50 = -1, p99 = -1;
        int n = 0;
        int prc = pair_rtt(job, job->leader_of_node[p], me < p, TAG_RTT + (pass * n_even + r) % 4096, each, &p50, &p99, &n);
        pair_row_t *m = &mine[p];
        if (me < p && prc < 0 && m->rc == GPL_OK) m->rc = prc;
        if (me < p && prc == GPL_OK && (m->p50 < 0 || p50 < m->p50)) {
          m->p50 = p50; /* the best pass, with its own p99 */
          m->p99 = p99;
        }
        if (me < p && prc == GPL_OK) m->n += n;
      }
      /* a pair's own waits are bounded by the timeout; the slowest pair bounds this one */
      rc = mpix_barrier(job->world, each + 2 * job->timeout + 5, "accept: round trips between nodes (latency)");
    }
  if (rc < 0) {
    free(mine);
    return rc;
  }
  all = calloc((size_t)job->size * nn, sizeof *all);
  if (!all) {
    free(mine);
    return GPL_ENOMEM;
  }
  rc = mpix_allgather(mine, (int)(nn * sizeof *mine), all, job->world, job->timeout, "accept: round trips' results");
  for (int a = 0; rc == GPL_OK && a < nn; a++) {
    const pair_row_t *row = all + (size_t)job->leader_of_node[a] * nn;
    for (int b = a + 1; b < nn; b++) {
      if (row[b].rc < 0 && rc == GPL_OK) rc = row[b].rc;
      out->rtt_p50[a * nn + b] = row[b].p50;
      out->rtt_p99[a * nn + b] = row[b].p99;
      out->rtt_n[a * nn + b] = row[b].n;
    }
  }
  free(mine);
  free(all);
  return rc;
}
