/* gpulaunch bench: the measurement. Buffers are allocated once for the largest size; per size and
 * placement: fill, one untimed call, a barrier, then the timed loop, which is the collective and
 * two clock reads (or two event records) per iteration and nothing else; then, outside the timed
 * region, the times of all ranks, and a separate checked call on fresh data. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "common/mpix.h"
#include "common/util.h"
#include "launcher/bench/bench.h"

/* Everything one placement of one size needs. */
typedef struct cell_args_s {
  const bench_ctx_t *ctx;
  const bench_cfg_t *cfg;
  const bench_geom_t *g;
  int inplace;
  size_t esize;
  void *sendbuf, *recvbuf; /* comm memory, for the largest size */
  void *stage;             /* host staging (device buffers only), else NULL */
  void *stream;
  bench_timer_t *timer;
  double *times;   /* iters */
  double *all;     /* iters * nranks */
  gpl_tensor_t *tensors;
  int ntensors;
  bench_data_t data;
} cell_args_t;

static int is_pow2(int n) { return n > 0 && (n & (n - 1)) == 0; }

/* The element types the buffers hold, and the type the reduction runs in. */
static size_t buf_esize(const bench_cfg_t *cfg) {
  return cfg->op == BENCH_FUSED || cfg->op == BENCH_UNFUSED ? sizeof(float)
                                                             : gpl_dtype_size(cfg->dtype);
}

/* The send and receive pointers of a placement (nccl-tests' in-place offsets). */
static void pointers(const cell_args_t *a, void **send, void **recv) {
  if (!a->inplace) {
    *send = a->sendbuf;
    *recv = a->recvbuf;
    return;
  }
  size_t r = (size_t)a->ctx->rank;
  *send = (char *)a->recvbuf + a->g->send_ip_off * r * a->esize;
  *recv = (char *)a->recvbuf + a->g->recv_ip_off * r * a->esize;
}

/* Fused/unfused: the tensors, back to back in the (in-place) buffer. */
static void make_tensors(cell_args_t *a) {
  size_t count = a->g->count, per = a->cfg->tensor_bytes / sizeof(float);
  if (per == 0 || per > count) per = count;
  a->ntensors = 0;
  for (size_t off = 0; off < count; off += per) {
    a->tensors[a->ntensors].data = (float *)a->recvbuf + off;
    a->tensors[a->ntensors].count = GPL_MIN(per, count - off);
    a->ntensors++;
  }
}

static size_t tensors_needed(const bench_cfg_t *cfg, size_t count) {
  size_t per = cfg->tensor_bytes / sizeof(float);
  if (per == 0 || per > count) return count ? 1 : 0;
  return (count + per - 1) / per;
}

/* One call of the collective. */
static int call(const cell_args_t *a, void *send, void *recv, float prescale) {
  const bench_cfg_t *c = a->cfg;
  gpl_comm_t *comm = a->ctx->comm;
  size_t n = a->g->count;
  switch (c->op) {
    case BENCH_ALLREDUCE: return gpl_allreduce(comm, send, recv, n, c->dtype, c->redop, a->stream);
    case BENCH_ALLGATHER: return gpl_allgather(comm, send, recv, n, c->dtype, a->stream);
    case BENCH_REDUCESCATTER:
      return gpl_reduce_scatter(comm, send, recv, n, c->dtype, c->redop, a->stream);
    case BENCH_BROADCAST: return gpl_broadcast(comm, send, recv, n, c->dtype, c->root, a->stream);
    case BENCH_ALLTOALL: return gpl_alltoall(comm, send, recv, n, c->dtype, a->stream);
    case BENCH_FUSED:
    case BENCH_UNFUSED: {
      gpl_fused_opts_t o;
      gpl_fused_opts_default(&o);
      o.wire = c->op == BENCH_FUSED ? c->dtype : GPL_FLOAT;
      o.bucket_mb = c->bucket_mb;
      o.prescale = prescale;
      return c->op == BENCH_FUSED ? gpl_fused_allreduce(comm, a->tensors, a->ntensors, &o, a->stream)
                                  : gpl_unfused_allreduce(comm, a->tensors, a->ntensors, &o, a->stream);
    }
    default: return GPL_EINVAL;
  }
}

/* The pre-scale of the fused allreduce: 1/n as DDP averages gradients when timing; when checking,
 * 1/n only where it is exact (n a power of two), else 1. */
static float prescale_of(const cell_args_t *a, int checking) {
  int n = a->ctx->nranks;
  if (checking && !is_pow2(n)) return 1.0f;
  return 1.0f / (float)n;
}

/* Write rank's inputs for indices first.. into comm memory at dst. */
static int fill(const cell_args_t *a, void *dst, size_t first, size_t n) {
  if (!n) return GPL_OK;
  if (!a->stage) {
    bench_fill(&a->data, a->ctx->rank, dst, first, n);
    return GPL_OK;
  }
  bench_fill(&a->data, a->ctx->rank, a->stage, first, n);
  return gpl_memcpy(a->ctx->comm, dst, a->stage, n * a->esize, GPL_COPY_TO_COMM, a->stream);
}

/* Inputs for the timed loop (and the check), and poison where the output goes, so that a call
 * that writes nothing is caught. */
static int prepare(const cell_args_t *a, int checking) {
  const bench_geom_t *g = a->g;
  size_t r = (size_t)a->ctx->rank;
  if (!a->inplace) {
    size_t nsend = g->send_count;
    if (a->cfg->op == BENCH_BROADCAST && a->ctx->rank != a->cfg->root) nsend = g->count;
    CHECK(fill(a, a->sendbuf, 0, nsend));
    if (checking)
      CHECK(bench_dev_poison(a->ctx->comm, a->recvbuf, g->recv_count * a->esize, a->stream));
    return GPL_OK;
  }
  size_t whole = GPL_MAX(g->send_count, g->recv_count);
  switch (a->cfg->op) {
    case BENCH_ALLGATHER: /* the rank's own block is its input, the rest is written by others */
      if (checking) CHECK(bench_dev_poison(a->ctx->comm, a->recvbuf, whole * a->esize, a->stream));
      return fill(a, (char *)a->recvbuf + r * g->send_ip_off * a->esize, 0, g->send_count);
    case BENCH_BROADCAST:
      if (a->ctx->rank != a->cfg->root) {
        return checking ? bench_dev_poison(a->ctx->comm, a->recvbuf, whole * a->esize, a->stream)
                        : GPL_OK;
      }
      return fill(a, a->recvbuf, 0, whole);
    default: /* allreduce, reducescatter, fused: the whole buffer is input, the output overwrites
              * it (a no-op collective leaves this rank's input, which differs from the result) */
      return fill(a, a->recvbuf, 0, whole);
  }
}

/* Wrong elements of this rank's output after a checked call. */
static int count_wrong(const cell_args_t *a, void *recv, int64_t *wrong) {
  const bench_geom_t *g = a->g;
  size_t n = g->recv_count;
  if (a->cfg->op == BENCH_BROADCAST || a->cfg->op == BENCH_FUSED || a->cfg->op == BENCH_UNFUSED)
    n = g->count;
  *wrong = 0;
  if (!n) return GPL_OK;
  void *view = recv;
  if (a->stage) {
    CHECK(gpl_memcpy(a->ctx->comm, a->stage, recv, n * a->esize, GPL_COPY_TO_HOST, a->stream));
    view = a->stage;
  }
  if (a->cfg->corrupt_rank == a->ctx->rank) {
    /* Test hook (GPULAUNCH_TEST_CORRUPT): flip a high bit of the first output element, as a
     * broken link or kernel would, so the tests can see it counted. */
    ((unsigned char *)view)[a->esize - 1] ^= 0x40;
  }
  *wrong = bench_count_wrong(&a->data, a->ctx->rank, view, 0, n, g->count);
  return GPL_OK;
}

/* Per iteration: the slowest rank's time (max over ranks), then the median over iterations. */
static int combine_times(cell_args_t *a, double *median) {
  const bench_ctx_t *ctx = a->ctx;
  int it = a->cfg->iters;
  CHECK(bench_timer_read(a->timer, it, a->times));
  CHECK(mpix_allgather(a->times, it * (int)sizeof(double), a->all, ctx->mpi, ctx->timeout,
                       "bench: gathering per-iteration times"));
  for (int i = 0; i < it; i++) {
    double m = 0;
    for (int r = 0; r < ctx->nranks; r++) m = GPL_MAX(m, a->all[(size_t)r * it + i]);
    a->times[i] = m;
  }
  *median = bench_median(a->times, it);
  return GPL_OK;
}

static void progress(const cell_args_t *a, int idx, int n, uint64_t size) {
  if (!a->cfg->progress || a->ctx->rank != 0) return;
  fprintf(a->cfg->progress_fp, "\r\033[K# bench %s: size %d/%d, %llu bytes, %s", bench_op_name(a->cfg->op),
          idx + 1, n, (unsigned long long)size, a->inplace ? "in-place" : "out-of-place");
  fflush(a->cfg->progress_fp);
}

static int measure(cell_args_t *a, bench_cell_t *out) {
  const bench_ctx_t *ctx = a->ctx;
  const bench_cfg_t *cfg = a->cfg;
  void *send, *recv;
  memset(out, 0, sizeof *out);
  out->nwrong = -1;
  if (a->inplace ? !bench_op_has_inplace(cfg->op) : !bench_op_has_oop(cfg->op)) return GPL_OK;
  pointers(a, &send, &recv);
  float pre = prescale_of(a, 0);

  /* nccl-tests' BenchTime: data, one call to synchronise, a barrier, the timed loop. */
  if (cfg->check) CHECK(prepare(a, 0));
  CHECK(call(a, send, recv, pre));
  CHECK(gpl_synchronize(ctx->comm, a->stream));
  CHECK(mpix_barrier(ctx->mpi, ctx->timeout, "bench: start of the timed loop"));
  for (int i = 0; i < cfg->iters; i++) {
    bench_timer_start(a->timer, i);
    int rc = call(a, send, recv, pre);
    bench_timer_stop(a->timer, i);
    if (rc < 0) return rc;
  }
  CHECK(gpl_synchronize(ctx->comm, a->stream));
  double t;
  CHECK(combine_times(a, &t));
  out->valid = 1;
  out->time_us = t * 1e6;
  bench_bandwidth(cfg->op, a->g, ctx->nranks, t, &out->algbw, &out->busbw);

  if (!cfg->check) return GPL_OK;
  CHECK(prepare(a, 1));
  CHECK(call(a, send, recv, prescale_of(a, 1)));
  CHECK(gpl_synchronize(ctx->comm, a->stream));
  int64_t wrong = 0;
  CHECK(count_wrong(a, recv, &wrong));
  double total = (double)wrong;
  CHECK(mpix_allreduce_double(&total, MPI_SUM, ctx->mpi, ctx->timeout, "bench: wrong elements"));
  out->nwrong = (int64_t)total;
  return GPL_OK;
}

/* Warm-up as nccl-tests: `warmup` calls at the largest size, then at the smallest. */
static int warmup(cell_args_t *a, const uint64_t *sizes, int n) {
  uint64_t two[2] = {sizes[n - 1], sizes[0]};
  for (int k = 0; k < 2 && a->cfg->warmup > 0; k++) {
    bench_geom_t g;
    bench_geom(a->cfg->op, two[k], a->esize, a->ctx->nranks, &g);
    a->g = &g;
    a->inplace = !bench_op_has_oop(a->cfg->op);
    if (a->tensors) make_tensors(a);
    void *send, *recv;
    pointers(a, &send, &recv);
    for (int i = 0; i < a->cfg->warmup; i++) CHECK(call(a, send, recv, prescale_of(a, 0)));
    CHECK(gpl_synchronize(a->ctx->comm, a->stream));
  }
  a->g = NULL;
  return GPL_OK;
}

int bench_run(const bench_ctx_t *ctx, const bench_cfg_t *cfg, const uint64_t *sizes, int n,
              bench_row_t *rows) {
  if (n < 1 || cfg->iters < 1) return GPL_EINVAL;
  cell_args_t a;
  memset(&a, 0, sizeof a);
  a.ctx = ctx;
  a.cfg = cfg;
  a.esize = buf_esize(cfg);
  if (!a.esize) return GPL_EINVAL;

  /* Buffers for the largest geometry of the sweep. */
  size_t max_send = 0, max_buf = 0, max_tensors = 0;
  for (int i = 0; i < n; i++) {
    bench_geom_t g;
    bench_geom(cfg->op, sizes[i], a.esize, ctx->nranks, &g);
    max_send = GPL_MAX(max_send, g.send_count);
    max_buf = GPL_MAX(max_buf, GPL_MAX(g.send_count, g.recv_count));
    max_tensors = GPL_MAX(max_tensors, tensors_needed(cfg, g.count));
  }
  int rc = GPL_OK;
  int fusedop = cfg->op == BENCH_FUSED || cfg->op == BENCH_UNFUSED;
  if (!fusedop) CHECKGOTO(gpl_mem_alloc(ctx->comm, &a.sendbuf, max_send * a.esize), rc, out);
  CHECKGOTO(gpl_mem_alloc(ctx->comm, &a.recvbuf, max_buf * a.esize), rc, out);
  if (ctx->cuda && max_buf && !(a.stage = malloc(max_buf * a.esize))) {
    rc = GPL_ENOMEM;
    goto out;
  }
  if (fusedop && max_tensors && !(a.tensors = calloc(max_tensors, sizeof *a.tensors))) {
    rc = GPL_ENOMEM;
    goto out;
  }
  a.times = calloc((size_t)cfg->iters, sizeof *a.times);
  a.all = calloc((size_t)cfg->iters * (size_t)ctx->nranks, sizeof *a.all);
  if (!a.times || !a.all) {
    rc = GPL_ENOMEM;
    goto out;
  }
  CHECKGOTO(bench_timer_create(&a.timer, ctx->cuda, ctx->device, cfg->iters, &a.stream), rc, out);

  a.data.op = cfg->op;
  a.data.dtype = cfg->op == BENCH_UNFUSED ? GPL_FLOAT : cfg->dtype;
  a.data.buf_dtype = fusedop ? GPL_FLOAT : cfg->dtype;
  a.data.redop = fusedop ? GPL_OP_SUM : cfg->redop;
  a.data.nranks = ctx->nranks;
  a.data.root = cfg->root;
  a.data.scale = fusedop ? (double)prescale_of(&a, 1) : 1.0;

  CHECKGOTO(warmup(&a, sizes, n), rc, out);
  for (int i = 0; i < n; i++) {
    bench_row_t *row = &rows[i];
    memset(row, 0, sizeof *row);
    row->requested = sizes[i];
    bench_geom(cfg->op, sizes[i], a.esize, ctx->nranks, &row->g);
    a.g = &row->g;
    a.data.seed = 0x5eed0000u + (uint32_t)i;
    if (a.tensors) make_tensors(&a);
    for (int ip = 0; ip < 2; ip++) {
      a.inplace = ip;
      progress(&a, i, n, row->g.bytes);
      CHECKGOTO(measure(&a, ip ? &row->inplace : &row->oop), rc, out);
    }
    if (cfg->progress && ctx->rank == 0) fprintf(cfg->progress_fp, "\r\033[K"), fflush(cfg->progress_fp);
    if (cfg->on_row) cfg->on_row(row, i, cfg->on_row_arg);
  }
out:
  if (cfg->progress && ctx->rank == 0) fprintf(cfg->progress_fp, "\r\033[K"), fflush(cfg->progress_fp);
  bench_timer_destroy(a.timer);
  free(a.times);
  free(a.all);
  free(a.tensors);
  free(a.stage);
  if (a.sendbuf) gpl_mem_free(ctx->comm, a.sendbuf);
  if (a.recvbuf) gpl_mem_free(ctx->comm, a.recvbuf);
  return rc;
}
