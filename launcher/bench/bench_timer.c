/* gpulaunch bench: per-iteration timers, host clock around each call (cpu backend, where a
 * collective is done when it returns) or CUDA events on the stream (nccl backend). */
#include <stdlib.h>

#include "common/check.h"
#include "common/util.h"
#include "launcher/bench/bench.h"
#include "launcher/bench/bench_cuda.h"

struct bench_timer_s {
  int iters;
  double *t; /* host: start and end of each iteration, 2 per iteration */
  void *ev;  /* CUDA events, or NULL */
};

int bench_timer_create(bench_timer_t **out, int cuda, int device, int iters, void **stream) {
  *out = NULL;
  if (stream) *stream = NULL;
  if (iters < 1) return GPL_EINVAL;
  bench_timer_t *t = calloc(1, sizeof *t);
  ALLOCCHECK(t);
  t->iters = iters;
  int rc = GPL_OK;
  if (cuda) {
    rc = bench_cuda_events_create(&t->ev, device, iters, stream);
  } else if (!(t->t = calloc(2 * (size_t)iters, sizeof *t->t))) {
    rc = GPL_ENOMEM;
  }
  if (rc < 0) {
    bench_timer_destroy(t);
    return rc;
  }
  *out = t;
  return GPL_OK;
}

void bench_timer_start(bench_timer_t *t, int i) {
  if (t->ev) bench_cuda_record(t->ev, 2 * i);
  else t->t[2 * i] = util_now();
}

void bench_timer_stop(bench_timer_t *t, int i) {
  if (t->ev) bench_cuda_record(t->ev, 2 * i + 1);
  else t->t[2 * i + 1] = util_now();
}

int bench_timer_read(bench_timer_t *t, int n, double *secs) {
  if (n > t->iters) return GPL_EINVAL;
  if (t->ev) return bench_cuda_elapsed(t->ev, n, secs);
  for (int i = 0; i < n; i++) secs[i] = t->t[2 * i + 1] - t->t[2 * i];
  return GPL_OK;
}

void bench_timer_destroy(bench_timer_t *t) {
  if (!t) return;
  if (t->ev) bench_cuda_events_destroy(t->ev);
  free(t->t);
  free(t);
}
