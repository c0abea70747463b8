/* Bandwidth measurements of `gpulaunch accept` over MPI: the job-wide allreduce through comm/
 * and the search's rounds, where groups of nodes each run an allreduce in a sub-communicator of
 * their own at the same time. Every wait has a deadline. */
#include <stdlib.h>
#include <string.h>

#include "comm/comm_job.h"
#include "common/check.h"
#include "common/mpix.h"
#include "common/util.h"
#include "gpulaunch/comm.h"
#include "launcher/accept/accept.h"
#include "launcher/accept/accept_mpi_int.h"
#include "launcher/job/job.h"

/* ---- the job-wide allreduce ---- */

#define WARMUP_BYTES_AR (4u << 20)

int accept_allreduce(const job_t *job, const char *backend, uint64_t size, int iters, double budget,
                     accept_ar_t *out) {
  memset(out, 0, sizeof *out);
  comm_job_t cj;
  job_to_comm(job, &cj);
  gpl_init_opts_t io;
  gpl_init_opts_default(&io);
  io.timeout = job->timeout;
  if (backend && gpl_backend_parse(backend, &io.backend) < 0) io.backend = GPL_BACKEND_AUTO;
  gpl_comm_t *c = NULL;
  CHECK(comm_init(&c, &cj, &io));
  int rc = GPL_OK;
  void *buf = NULL;
  gpl_backend_t be = gpl_comm_backend(c);
  snprintf(out->backend, sizeof out->backend, "%s", gpl_backend_name(be));
  uint64_t bytes = size ? size : be == GPL_BACKEND_NCCL ? (1ull << 30) : (64ull << 20);
  bytes -= bytes % 4;
  if (bytes < 4) bytes = 4;
  size_t count = (size_t)(bytes / 4);
  out->bytes = (double)bytes;
  out->nranks = job->size;
  CHECKGOTO(gpl_mem_alloc(c, &buf, (size_t)bytes), rc, done);
  if (be == GPL_BACKEND_CPU) memset(buf, 0, (size_t)bytes); /* zeros: no denormal slow path */
  /* Warm-up (connections, registration) on a small piece: at full size it would cost a whole
   * iteration, tens of seconds on a slow link. Then one timed iteration decides how many fit the
   * budget: every rank must run the same count, so the slowest rank's time decides. */
  size_t wcount = count < (WARMUP_BYTES_AR / 4) ? count : (WARMUP_BYTES_AR / 4);
  CHECKGOTO(gpl_allreduce(c, buf, buf, wcount, GPL_FLOAT, GPL_OP_SUM, NULL), rc, done);
  CHECKGOTO(gpl_synchronize(c, NULL), rc, done);
  double t0 = util_now();
  CHECKGOTO(gpl_allreduce(c, buf, buf, count, GPL_FLOAT, GPL_OP_SUM, NULL), rc, done);
  CHECKGOTO(gpl_synchronize(c, NULL), rc, done);
  double t1 = util_now() - t0;
  CHECKGOTO(mpix_allreduce_double(&t1, MPI_MAX, job->world, job->timeout, "accept: allreduce timing"), rc, done);
  int k = iters;
  if (t1 > 0 && budget > 0 && t1 * iters > budget) k = (int)(budget / t1);
  double t = t1;
  if (k < 2 && budget > 0 && t1 * 2 > budget) {
    k = 1; /* one iteration is all the budget holds: the one just timed is the measurement */
  } else {
    if (k < 1) k = 1;
    CHECKGOTO(gpl_barrier(c), rc, done);
    t0 = util_now();
    for (int i = 0; i < k; i++) CHECKGOTO(gpl_allreduce(c, buf, buf, count, GPL_FLOAT, GPL_OP_SUM, NULL), rc, done);
    CHECKGOTO(gpl_synchronize(c, NULL), rc, done);
    t = (util_now() - t0) / k;
    CHECKGOTO(mpix_allreduce_double(&t, MPI_MAX, job->world, job->timeout, "accept: allreduce timing"), rc, done);
  }
  out->iters = k;
  out->seconds = t;
  out->algbw = t > 0 ? (double)bytes / t / 1e9 : 0;
  out->busbw = accept_busbw((double)bytes, t, job->size);
done:
  if (buf) gpl_mem_free(c, buf);
  gpl_finalize(c);
  return rc;
}

/* ---- the search's rounds ---- */

/* Between polls of a long wait: short enough that a transfer is not slept through (MPI moves
 * data only inside MPI_Test, and the kernel's socket buffers hold far more than a link moves in
 * this time), long enough to leave the core. Sleeping rather than sched_yield() matters on shared
 * cores: a rank that yields to a CPU hog on its core hands it a whole time slice per poll and its
 * transfer stalls (a healthy pair measured 3-6x slow for seconds next to a busy loop), while a
 * rank that wakes from a sleep preempts the hog at once. Measured on 2 cores with a busy loop:
 * the slowest healthy pair's best try went from 0.15-0.53 of the reference to 0.44-0.81. */
#define POLL_NAP_S 50e-6

/* Wait for one request until the deadline: poll, then poll with naps. On timeout mpix_wait
 * names the ranks that did not answer. */
int accept_wait_req(MPI_Request *r, MPI_Comm comm, double timeout, const char *what) {
  double deadline = util_now() + timeout;
  for (long spins = 0;; spins++) {
    int done = 0;
    MPICHECK(MPI_Test(r, &done, MPI_STATUS_IGNORE));
    if (done) return GPL_OK;
    if (util_now() > deadline) return mpix_wait(r, 1, NULL, comm, 0.0, what);
    if (spins > 64) util_sleep(POLL_NAP_S);
  }
}

/* An allreduce in comm, waited for as wait_req waits (a timeout names the ranks). */
static int iallreduce_wait(const void *send, void *recv, int count, MPI_Datatype type, MPI_Op op, MPI_Comm comm,
                           double timeout, const char *what) {
  MPI_Request req;
  MPICHECK(MPI_Iallreduce(send, recv, count, type, op, comm, &req));
  return accept_wait_req(&req, comm, timeout, what);
}

/* The warm-up only has to open the connections of the group (a search measures every group
 * several times, and a full-size warm-up on a slow link costs as much as a try). */
#define WARMUP_BYTES (64u << 10)

/* A slow path must not spend the budget on a few full-size iterations (64 MiB at 50 Mbit/s is
 * 11 s a try, and the search makes several): when a 1 MiB probe says a full-size iteration would
 * not fit budget / iters, the group measures a size that takes about SLOW_ITER_S instead, at most
 * SLOW_ITERS times. A path that slow is link-bound at that size, so its bandwidth is the same; a
 * healthy path is never shrunk below what SLOW_ITER_S moves on it. */
#define PROBE_BYTES (1u << 20)
#define SLOW_ITER_S 0.5
#define SLOW_ITERS 3

/* The group's bus bandwidth (the same on its ranks): a small warm-up, a probe on large sizes,
 * one timed iteration to fit the budget, then the best iteration of the slowest rank. */
static int group_measure(MPI_Comm sub, size_t bytes, int iters, double budget, double timeout, double *bw,
                         double *jitter) {
  int n, rc = GPL_OK;
  MPICHECK(MPI_Comm_size(sub, &n));
  size_t count = bytes / sizeof(float);
  if (count < 1) count = 1;
  float *a = malloc(count * sizeof *a), *b = malloc(count * sizeof *b);
  double *times = calloc((size_t)iters + 1, sizeof *times);
  if (!a || !b || !times) {
    rc = GPL_ENOMEM;
    goto done;
  }
  /* Written before the clock starts: page faults are not the link's time. Zeros: no denormals. */
  memset(a, 0, count * sizeof *a);
  memset(b, 0, count * sizeof *b);
  const char *what = "accept: search measurement";
  size_t wcount = count < WARMUP_BYTES / sizeof(float) ? count : WARMUP_BYTES / sizeof(float);
  CHECKGOTO(iallreduce_wait(a, b, (int)wcount, MPI_FLOAT, MPI_SUM, sub, timeout, what), rc, done);
  int shrunk = 0;
  if (budget > 0 && count > 2 * (PROBE_BYTES / sizeof(float))) {
    size_t pcount = PROBE_BYTES / sizeof(float);
    double tp0 = util_now(), tp = 0, tpmax = 0;
    CHECKGOTO(iallreduce_wait(a, b, (int)pcount, MPI_FLOAT, MPI_SUM, sub, timeout, what), rc, done);
    tp = util_now() - tp0;
    CHECKGOTO(iallreduce_wait(&tp, &tpmax, 1, MPI_DOUBLE, MPI_MAX, sub, timeout, what), rc, done);
    double projected = tpmax * (double)count / (double)pcount;
    if (tpmax > 0 && projected > budget / iters) {
      double fit = (double)pcount * SLOW_ITER_S / tpmax;
      if (fit < (double)pcount) fit = (double)pcount;
      if (fit < (double)count) {
        count = (size_t)fit;
        shrunk = 1;
      }
    }
  }
  double t0 = util_now();
  CHECKGOTO(iallreduce_wait(a, b, (int)count, MPI_FLOAT, MPI_SUM, sub, timeout, what), rc, done);
  double t1 = util_now() - t0, tmax = 0;
  CHECKGOTO(iallreduce_wait(&t1, &tmax, 1, MPI_DOUBLE, MPI_MAX, sub, timeout, what), rc, done);
  int k = iters;
  if (tmax > 0 && budget > 0 && tmax * iters > budget) k = (int)(budget / tmax);
  if (shrunk && k > SLOW_ITERS) k = SLOW_ITERS;
  if (k < 1) k = 1;
  times[0] = t1;
  int nt = 1;
  for (int i = 1; i < k; i++) {
    t0 = util_now();
    CHECKGOTO(iallreduce_wait(a, b, (int)count, MPI_FLOAT, MPI_SUM, sub, timeout, what), rc, done);
    times[nt++] = util_now() - t0;
  }
  /* The fastest iteration: interference (other groups, other processes on the cores) only ever
   * slows an iteration down, while a slow link slows every one of them, so the best iteration
   * measures what the path can do. The group's time is its slowest rank's. */
  util_sort_doubles(times, (size_t)nt);
  /* How much a typical iteration lost to interference: 1 - best/median. */
  double mine[2] = {times[0], times[nt / 2] > 0 ? 1 - times[0] / times[nt / 2] : 0}, worst[2] = {0, 0};
  CHECKGOTO(iallreduce_wait(mine, worst, 2, MPI_DOUBLE, MPI_MAX, sub, timeout, what), rc, done);
  *bw = n > 1 ? accept_busbw((double)(count * sizeof(float)), worst[0], n) : 0;
  *jitter = worst[1];
done:
  /* A timed-out request may still write its buffers: they are not freed then. */
  if (rc != GPL_ETIMEDOUT) {
    free(a);
    free(b);
  }
  free(times);
  return rc;
}

typedef struct round_res_s {
  int32_t color; /* group, or -1 */
  int32_t lead;  /* rank 0 of its group */
  double bw;
  double jitter;
} round_res_t;

int accept_measure_round(const job_t *job, const int *color_of_node, int ngroups, size_t bytes,
                         int iters, double budget, double *bw, double *jitter) {
  int rc = GPL_OK, sub_rank = -1;
  for (int g = 0; g < ngroups; g++) {
    bw[g] = -1;
    if (jitter) jitter[g] = 0;
  }
  /* MPI_Comm_split waits for every rank without a deadline: check they are all here first, and
   * let the watchdog bound it should the network fail now. */
  CHECK(mpix_barrier(job->world, job->timeout, "accept: start of a search round"));
  int color = color_of_node[job->node];
  MPI_Comm sub = MPI_COMM_NULL;
  MPIX_GUARDED(job->timeout, "accept: MPI_Comm_split (a search round)",
               MPI_Comm_split(job->world, color >= 0 ? color : MPI_UNDEFINED, job->rank, &sub));
  round_res_t mine = {color, 0, -1, 0};
  int mrc = GPL_OK;
  if (sub != MPI_COMM_NULL) {
    MPI_Comm_rank(sub, &sub_rank);
    mine.lead = sub_rank == 0;
    double b = -1, j = 0;
    mrc = group_measure(sub, bytes, iters, budget, job->timeout, &b, &j);
    mine.bw = mrc == GPL_OK ? b : -1;
    mine.jitter = j;
  }
  round_res_t *all = calloc((size_t)job->size, sizeof *all);
  ALLOCCHECK(all);
  /* Groups finish at different times; the slowest bounds the wait: its warm-up, its first
   * iteration and its timing exchanges (each at most timeout), plus the budget. */
  double limit = 3 * job->timeout + budget + 10;
  rc = mpix_allgather(&mine, sizeof mine, all, job->world, limit, "accept: search round results");
  if (rc == GPL_OK) {
    for (int r = 0; r < job->size; r++)
      if (all[r].color >= 0 && all[r].color < ngroups && all[r].lead) {
        bw[all[r].color] = all[r].bw;
        if (jitter) jitter[all[r].color] = all[r].jitter;
      }
  }
  free(all);
  if (sub != MPI_COMM_NULL && mrc != GPL_ETIMEDOUT) MPI_Comm_free(&sub);
  /* A group that failed shows as bw < 0 on every rank, so all ranks take the same next step. */
  return rc;
}
