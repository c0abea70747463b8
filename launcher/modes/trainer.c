/* The built-in demo trainer ([job] builtin = mlp): data-parallel SGD of a small MLP on synthetic
 * data, gradients through comm/'s fused allreduce with dynamic loss scaling; N ranks compute the
 * same training as one, up to float rounding and the wire dtype. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/comm_job.h"
#include "common/check.h"
#include "common/log.h"
#include "common/util.h"
#include "gpulaunch/gpulaunch.h"
#include "launcher/launcher.h"

/*
 * The problem. A fixed random teacher MLP 16 -> 8 -> 1 (tanh) labels inputs x uniform in
 * [-1, 1]^16; the student, 16 -> hidden -> 1 (tanh), learns it under MSE. Every number comes from
 * a counter-based hash of (seed, stream, indices), so any rank makes any sample without making the
 * others, and the data do not depend on the number of ranks.
 *
 * Why 1 and N ranks agree. Step t uses samples t*B .. t*B+B-1 of the global batch B; rank r takes
 * a contiguous share (B/N each, the first B%N ranks one more). The loss is the mean over the global
 * batch, so each rank's gradient is its samples' sum divided by B (not by its own count), summed in
 * double and rounded once to fp32; the allreduce's sum of the shares is then the full-batch
 * gradient whatever N is. The pre-scale 1/p2 and post-scale p2 (p2: the power of two at or above N,
 * as FSDP does to keep fp16 sums in range) are exact in binary floating point. What remains is
 * rounding: fp32 for the shares (2^-24), and the wire dtype (bf16: 2^-8 per value and per partial
 * sum; with one rank the gradient is rounded to the wire once, with N ranks each share and each
 * partial sum are). Gradients are multiplied by the loss scale before the allreduce (as AMP scales
 * the loss) and divided by it in the unpack, a power of two: exact. Every rank ends with the same
 * bits (the summary checks it), so the model never drifts between ranks.
 *
 * The nccl path does the MLP math on the host and moves the gradients to device buffers for the
 * fused allreduce (which then runs the CUDA pack/unpack kernels and NCCL): the point here is the
 * communication path, not GPU math.
 */

enum { IN = 16, TEACHER_HIDDEN = 8, EVAL_SAMPLES = 1024 };
enum { STREAM_TEACHER = 1, STREAM_INIT = 2, STREAM_TRAIN = 3, STREAM_EVAL = 4 };

typedef struct mlp_s {
  int hidden;
  float *w1; /* hidden x IN */
  float *b1; /* hidden */
  float *w2; /* hidden */
  float *b2; /* 1 */
  float *all;
  size_t count; /* all four, back to back */
} mlp_t;

static uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Uniform in [-1, 1) from (seed, stream, a, b). */
static double unif(uint64_t seed, uint64_t stream, uint64_t a, uint64_t b) {
  uint64_t h = mix64(seed ^ mix64(stream * 0x100000001b3ull ^ mix64(a ^ mix64(b + 0x51ed27ull))));
  return (double)(h >> 11) * 0x1p-53 * 2.0 - 1.0;
}

static int mlp_alloc(mlp_t *m, int hidden) {
  m->hidden = hidden;
  m->count = (size_t)hidden * IN + (size_t)hidden + (size_t)hidden + 1;
  m->all = calloc(m->count, sizeof *m->all);
  if (!m->all) return GPL_ENOMEM;
  m->w1 = m->all;
  m->b1 = m->w1 + (size_t)hidden * IN;
  m->w2 = m->b1 + hidden;
  m->b2 = m->w2 + hidden;
  return GPL_OK;
}

/* Weights uniform in +-1/sqrt(fan_in) (PyTorch's default), biases zero. */
static void mlp_init(mlp_t *m, uint64_t seed, uint64_t stream) {
  double a1 = 1.0 / sqrt((double)IN), a2 = 1.0 / sqrt((double)m->hidden);
  for (size_t i = 0; i < (size_t)m->hidden * IN; i++) m->w1[i] = (float)(a1 * unif(seed, stream, 1, i));
  for (int j = 0; j < m->hidden; j++) m->w2[j] = (float)(a2 * unif(seed, stream, 2, (uint64_t)j));
  memset(m->b1, 0, (size_t)m->hidden * sizeof *m->b1);
  m->b2[0] = 0;
}

static void sample_x(uint64_t seed, uint64_t stream, uint64_t id, float *x) {
  for (int k = 0; k < IN; k++) x[k] = (float)unif(seed, stream, id, (uint64_t)k);
}

/* Forward pass; h (hidden values) may be NULL. */
static double mlp_forward(const mlp_t *m, const float *x, float *h) {
  double y = m->b2[0];
  for (int j = 0; j < m->hidden; j++) {
    float pre = m->b1[j];
    const float *w = m->w1 + (size_t)j * IN;
    for (int k = 0; k < IN; k++) pre += w[k] * x[k];
    float hj = tanhf(pre);
    if (h) h[j] = hj;
    y += (double)m->w2[j] * hj;
  }
  return y;
}

/* Gradient of this rank's share of the batch: scale * d(mean loss over B)/d(params), accumulated
 * in double; returns the share's sum of squared errors. */
static double mlp_backward(const mlp_t *m, const mlp_t *teacher, uint64_t seed, uint64_t step,
                           long lo, long hi, long batch, double scale, double *acc, float *grad) {
  float x[IN], *h = malloc((size_t)m->hidden * sizeof *h);
  double sse = 0;
  size_t H = (size_t)m->hidden;
  memset(acc, 0, m->count * sizeof *acc);
  double *gw1 = acc, *gb1 = acc + H * IN, *gw2 = gb1 + H, *gb2 = gw2 + H;
  for (long i = lo; i < hi; i++) {
    uint64_t id = step * (uint64_t)batch + (uint64_t)i;
    sample_x(seed, STREAM_TRAIN, id, x);
    double e = mlp_forward(m, x, h) - mlp_forward(teacher, x, NULL);
    sse += e * e;
    double g = 2.0 * e / (double)batch * scale; /* d(scale * mean e^2)/dy */
    gb2[0] += g;
    for (size_t j = 0; j < H; j++) {
      gw2[j] += g * h[j];
      double gp = g * m->w2[j] * (1.0 - (double)h[j] * h[j]);
      gb1[j] += gp;
      for (int k = 0; k < IN; k++) gw1[j * IN + (size_t)k] += gp * x[k];
    }
  }
  for (size_t p = 0; p < m->count; p++) grad[p] = (float)acc[p];
  free(h);
  return sse;
}

/* The contiguous share [lo, hi) of n items for rank r of size. */
static void share(long n, int r, int size, long *lo, long *hi) {
  long q = n / size, rem = n % size;
  *lo = (long)r * q + (r < rem ? r : rem);
  *hi = *lo + q + (r < rem ? 1 : 0);
}

/* Host values through a collective: staged in comm memory (device memory on nccl). */
typedef struct stage_s {
  gpl_comm_t *c;
  void *buf; /* comm memory, 1 KiB */
} stage_t;

static int stage_allreduce_double(stage_t *s, double *v, int n) {
  size_t bytes = (size_t)n * sizeof *v;
  CHECK(gpl_memcpy(s->c, s->buf, v, bytes, GPL_COPY_TO_COMM, NULL));
  CHECK(gpl_allreduce(s->c, s->buf, s->buf, (size_t)n, GPL_DOUBLE, GPL_OP_SUM, NULL));
  return gpl_memcpy(s->c, v, s->buf, bytes, GPL_COPY_TO_HOST, NULL);
}

/* Do all ranks hold the same bits? (FNV-1a of the parameters, compared through a MIN and a MAX.) */
static int stage_same_everywhere(stage_t *s, const mlp_t *m, int *same) {
  uint64_t h = 1469598103934665603ull;
  const unsigned char *p = (const unsigned char *)m->all;
  for (size_t b = 0; b < m->count * sizeof(float); b++) h = (h ^ p[b]) * 1099511628211ull;
  uint64_t lo = h, hi = h;
  char *buf = s->buf;
  CHECK(gpl_memcpy(s->c, buf, &lo, sizeof lo, GPL_COPY_TO_COMM, NULL));
  CHECK(gpl_memcpy(s->c, buf + 8, &hi, sizeof hi, GPL_COPY_TO_COMM, NULL));
  CHECK(gpl_allreduce(s->c, buf, buf, 1, GPL_UINT64, GPL_OP_MIN, NULL));
  CHECK(gpl_allreduce(s->c, buf + 8, buf + 8, 1, GPL_UINT64, GPL_OP_MAX, NULL));
  CHECK(gpl_memcpy(s->c, &lo, buf, sizeof lo, GPL_COPY_TO_HOST, NULL));
  CHECK(gpl_memcpy(s->c, &hi, buf + 8, sizeof hi, GPL_COPY_TO_HOST, NULL));
  *same = lo == hi && lo == h;
  return GPL_OK;
}

/* Mean squared error on the evaluation set (split over the ranks, summed). */
static int evaluate(stage_t *s, const mlp_t *m, const mlp_t *teacher, uint64_t seed, int rank,
                    int size, double *mse) {
  long lo, hi;
  share(EVAL_SAMPLES, rank, size, &lo, &hi);
  float x[IN];
  double sse = 0;
  for (long i = lo; i < hi; i++) {
    sample_x(seed, STREAM_EVAL, (uint64_t)i, x);
    double e = mlp_forward(m, x, NULL) - mlp_forward(teacher, x, NULL);
    sse += e * e;
  }
  CHECK(stage_allreduce_double(s, &sse, 1));
  *mse = sse / EVAL_SAMPLES;
  return GPL_OK;
}

/* Bounds the schema does not say: the trainer's own sense of the [train]/[comm] values. */
static int settings_ok(const conf_train_t *t, const conf_comm_t *cm) {
  if (t->steps < 1 || t->batch < 1 || t->hidden < 1 || t->log_every < 1 || !(t->lr >= 0) ||
      !(t->loss_scale > 0) || t->growth_interval < 1 || !(cm->bucket_mb > 0))
    return GPL_ECONFIG;
  return GPL_OK;
}

/* The training loop, on a communicator that is up. */
static int train(launch_t *L, gpl_comm_t *c, const conf_train_t *t, const conf_comm_t *cm,
                 gpl_dtype_t wire) {
  int rank = gpl_comm_rank(c), size = gpl_comm_size(c), rc = GPL_OK;
  uint64_t seed = (uint64_t)t->seed;
  mlp_t m, teacher;
  memset(&m, 0, sizeof m);
  memset(&teacher, 0, sizeof teacher);
  double *acc = NULL;
  float *grad = NULL, *dgrad = NULL;
  stage_t st = {c, NULL};
  gpl_scaler_t *sc = NULL;
  CHECKGOTO(mlp_alloc(&m, (int)t->hidden), rc, out);
  CHECKGOTO(mlp_alloc(&teacher, TEACHER_HIDDEN), rc, out);
  mlp_init(&teacher, seed, STREAM_TEACHER);
  for (int j = 0; j < TEACHER_HIDDEN; j++) teacher.w2[j] *= 2.0f; /* a target worth learning */
  mlp_init(&m, seed, STREAM_INIT);
  acc = calloc(m.count, sizeof *acc);
  grad = calloc(m.count, sizeof *grad);
  if (!acc || !grad) {
    rc = GPL_ENOMEM;
    goto out;
  }
  CHECKGOTO(gpl_mem_alloc(c, (void **)&dgrad, m.count * sizeof *dgrad), rc, out);
  CHECKGOTO(gpl_mem_alloc(c, &st.buf, 1024), rc, out);
  CHECKGOTO(gpl_scaler_create(c, &sc, (float)t->loss_scale, 2.0f, 0.5f, (int)t->growth_interval),
            rc, out);

  /* The four gradient tensors, views of one buffer in comm memory. */
  size_t H = (size_t)m.hidden;
  gpl_tensor_t tens[4] = {{dgrad, H * IN}, {dgrad + H * IN, H}, {dgrad + H * IN + H, H},
                          {dgrad + H * IN + 2 * H, 1}};
  float p2 = 1.0f;
  while (p2 < (float)size) p2 *= 2.0f;
  gpl_fused_opts_t fo;
  gpl_fused_opts_default(&fo);
  fo.bucket_mb = cm->bucket_mb;
  fo.wire = wire;
  fo.prescale = 1.0f / p2;
  fo.postscale = p2;
  fo.scaler = sc;

  double initial = 0, final_loss = 0, train_loss = 0;
  CHECKGOTO(evaluate(&st, &m, &teacher, seed, rank, size, &initial), rc, out);
  if (rank == 0)
    printf("train: mlp %d-%ld-1, %ld steps, global batch %ld over %d rank%s, backend %s, wire %s, "
           "bucket %g MiB; initial loss %.6f\n",
           IN, t->hidden, t->steps, t->batch, size, size > 1 ? "s" : "",
           gpl_backend_name(gpl_comm_backend(c)), cm->wire_dtype, cm->bucket_mb, initial);
  long lo, hi;
  share(t->batch, rank, size, &lo, &hi);
  double t0 = util_now();
  gpl_scaler_state_t ss;
  memset(&ss, 0, sizeof ss);
  long skipped = 0;
  for (long step = 0; step < t->steps; step++) {
    CHECKGOTO(gpl_scaler_read(c, sc, &ss, NULL), rc, out);
    double sse = mlp_backward(&m, &teacher, seed, (uint64_t)step, lo, hi, t->batch, ss.scale, acc,
                              grad);
    CHECKGOTO(gpl_memcpy(c, dgrad, grad, m.count * sizeof *grad, GPL_COPY_TO_COMM, NULL), rc, out);
    CHECKGOTO(gpl_fused_allreduce(c, tens, 4, &fo, NULL), rc, out);
    CHECKGOTO(gpl_scaler_update(c, sc, NULL), rc, out);
    CHECKGOTO(gpl_scaler_read(c, sc, &ss, NULL), rc, out);
    if (ss.skipped) {
      skipped++; /* an inf/NaN in the gradients: AMP skips the step, the scale was halved */
    } else {
      CHECKGOTO(gpl_memcpy(c, grad, dgrad, m.count * sizeof *grad, GPL_COPY_TO_HOST, NULL), rc,
                out);
      for (size_t p = 0; p < m.count; p++) m.all[p] -= (float)t->lr * grad[p];
    }
    if ((step + 1) % t->log_every == 0 || step + 1 == t->steps) {
      CHECKGOTO(stage_allreduce_double(&st, &sse, 1), rc, out);
      train_loss = sse / (double)t->batch;
      if (rank == 0)
        printf("train: step %ld/%ld loss %.6f scale %g overflow steps %lld\n", step + 1, t->steps,
               train_loss, ss.scale, ss.overflow_steps);
    }
  }
  double secs = util_now() - t0;
  int same = 0;
  CHECKGOTO(evaluate(&st, &m, &teacher, seed, rank, size, &final_loss), rc, out);
  CHECKGOTO(stage_same_everywhere(&st, &m, &same), rc, out);
  if (rank == 0) {
    printf("train: done: %ld steps in %.2f s (%.1f steps/s), loss %.6f -> %.6f, overflow steps "
           "%lld, final loss scale %g, parameters identical on all ranks: %s\n",
           t->steps, secs, (double)t->steps / (secs > 0 ? secs : 1e-9), initial, final_loss,
           ss.overflow_steps, ss.scale, same ? "yes" : "NO");
    fflush(stdout);
  }
  if (!same) {
    LOG_ERROR("the ranks' parameters differ after training: the allreduce gave ranks different "
              "results");
    rc = GPL_ECHECK;
  }
  if (L->summary) {
    cJSON *o = cJSON_AddObjectToObject(L->summary, "train");
    cJSON_AddNumberToObject(o, "steps", (double)t->steps);
    cJSON_AddNumberToObject(o, "initial_loss", initial);
    cJSON_AddNumberToObject(o, "final_loss", final_loss);
    cJSON_AddNumberToObject(o, "last_train_loss", train_loss);
    cJSON_AddStringToObject(o, "wire_dtype", cm->wire_dtype);
    cJSON_AddNumberToObject(o, "overflow_steps", (double)ss.overflow_steps);
    cJSON_AddNumberToObject(o, "skipped_steps", (double)skipped);
    cJSON_AddNumberToObject(o, "final_loss_scale", ss.scale);
    cJSON_AddNumberToObject(o, "ranks", size);
    cJSON_AddStringToObject(o, "backend", gpl_backend_name(gpl_comm_backend(c)));
    cJSON_AddNumberToObject(o, "batch", (double)t->batch);
    cJSON_AddNumberToObject(o, "hidden", (double)t->hidden);
    cJSON_AddNumberToObject(o, "lr", t->lr);
    cJSON_AddNumberToObject(o, "seed", (double)t->seed);
    cJSON_AddNumberToObject(o, "bucket_mb", cm->bucket_mb);
    cJSON_AddNumberToObject(o, "parameters", (double)m.count);
    cJSON_AddBoolToObject(o, "params_in_sync", same);
    cJSON_AddNumberToObject(o, "seconds", secs);
  }
out:
  gpl_scaler_destroy(c, sc);
  if (st.buf) gpl_mem_free(c, st.buf);
  if (dgrad) gpl_mem_free(c, dgrad);
  free(acc);
  free(grad);
  free(m.all);
  free(teacher.all);
  return rc;
}

int trainer_run(launch_t *L) {
  conf_t *own = NULL;
  const conf_t *conf = L->conf;
  if (!conf) { /* no config: the schema's defaults */
    if (conf_load(&own, NULL) < 0) return GPL_EXIT_CONFIG;
    conf = own;
  }
  const conf_train_t *t = &conf->train;
  const conf_comm_t *cm = &conf->comm;
  gpl_dtype_t wire;
  gpl_init_opts_t io;
  gpl_init_opts_default(&io);
  int rc = settings_ok(t, cm);
  if (rc == GPL_OK && gpl_dtype_parse(cm->wire_dtype, &wire) < 0) rc = GPL_ECONFIG;
  if (rc == GPL_OK && gpl_backend_parse(cm->backend, &io.backend) < 0) rc = GPL_ECONFIG;
  if (rc < 0) {
    LOG_ERROR("train: invalid [train]/[comm] settings");
    conf_free(own);
    return GPL_EXIT_CONFIG;
  }
  if (cm->init_timeout > 0) io.init_timeout = cm->init_timeout;

  const job_t *j = L->job;
  comm_job_t cj;
  job_to_comm(j, &cj);
  io.timeout = j->timeout;
  gpl_comm_t *c = NULL;
  rc = comm_init(&c, &cj, &io);
  if (rc == GPL_OK) rc = train(L, c, t, cm, wire);
  if (rc < 0) LOG_ERROR("train: failed: %s", gpl_strerror(rc));
  int frc = gpl_finalize(c);
  if (rc == GPL_OK) rc = frc;
  conf_free(own);
  return rc == GPL_EINVAL ? GPL_EXIT_CONFIG : exitcode_of(rc); /* EINVAL: settings comm refused */
}
