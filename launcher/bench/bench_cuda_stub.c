/* gpulaunch bench without CUDA: host clocks only; the CUDA pieces say "not built with CUDA". */
#include <string.h>

#include "common/check.h"
#include "launcher/bench/bench.h"
#include "launcher/bench/bench_cuda.h"

int bench_cuda_events_create(void **ev, int device, int iters, void **stream) {
  (void)device;
  (void)iters;
  *ev = NULL;
  if (stream) *stream = NULL;
  LOG_WARN("bench: CUDA timing asked for, but this gpulaunch was built without CUDA");
  return GPL_ENOCUDA;
}

void bench_cuda_record(void *ev, int k) {
  (void)ev;
  (void)k;
}

int bench_cuda_elapsed(void *ev, int n, double *secs) {
  (void)ev;
  (void)n;
  (void)secs;
  return GPL_ENOCUDA;
}

void bench_cuda_events_destroy(void *ev) { (void)ev; }

void bench_dev_describe(int device, char *buf, size_t len) {
  (void)device;
  if (len) buf[0] = '\0';
}

int bench_dev_poison(gpl_comm_t *comm, void *p, size_t bytes, void *stream) {
  (void)comm;
  (void)stream;
  if (bytes) memset(p, BENCH_POISON_BYTE, bytes);
  return GPL_OK;
}
