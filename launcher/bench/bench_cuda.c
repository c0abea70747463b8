/* gpulaunch bench with CUDA: per-iteration CUDA events on a stream of our own, device memset for
 * the poison before a check, and the device's PCI address and name for the table's header. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/check.h"
#include "launcher/bench/bench.h"
#include "launcher/bench/bench_cuda.h"

typedef struct cuda_events_s {
  int n;
  cudaEvent_t *ev;
  cudaStream_t stream;
} cuda_events_t;

void bench_cuda_events_destroy(void *p) {
  cuda_events_t *e = p;
  if (!e) return;
  for (int k = 0; k < e->n; k++)
    if (e->ev[k]) cudaEventDestroy(e->ev[k]);
  if (e->stream) cudaStreamDestroy(e->stream);
  free(e->ev);
  free(e);
}

static int events_init(cuda_events_t *e, int device, int iters) {
  CUDACHECK(cudaSetDevice(device));
  CUDACHECK(cudaStreamCreateWithFlags(&e->stream, cudaStreamNonBlocking));
  e->ev = calloc(2 * (size_t)iters, sizeof *e->ev);
  ALLOCCHECK(e->ev);
  for (e->n = 0; e->n < 2 * iters; e->n++) CUDACHECK(cudaEventCreate(&e->ev[e->n]));
  return GPL_OK;
}

int bench_cuda_events_create(void **out, int device, int iters, void **stream) {
  *out = NULL;
  cuda_events_t *e = calloc(1, sizeof *e);
  ALLOCCHECK(e);
  int rc = events_init(e, device < 0 ? 0 : device, iters);
  if (rc < 0) {
    bench_cuda_events_destroy(e);
    return rc;
  }
  *out = e;
  if (stream) *stream = e->stream;
  return GPL_OK;
}

void bench_cuda_record(void *p, int k) {
  cuda_events_t *e = p;
  /* An error here shows again, with its message, in bench_cuda_elapsed. */
  (void)cudaEventRecord(e->ev[k], e->stream);
}

int bench_cuda_elapsed(void *p, int n, double *secs) {
  cuda_events_t *e = p;
  if (2 * n > e->n) return GPL_EINVAL;
  if (n > 0) CUDACHECK(cudaEventSynchronize(e->ev[2 * n - 1]));
  for (int i = 0; i < n; i++) {
    float ms = 0;
    CUDACHECK(cudaEventElapsedTime(&ms, e->ev[2 * i], e->ev[2 * i + 1]));
    secs[i] = ms * 1e-3;
  }
  return GPL_OK;
}

/* Set bytes of device memory to `byte`, ordered on stream. */
static int bench_cuda_memset(void *p, int byte, size_t bytes, void *stream) {
  CUDACHECK(cudaMemsetAsync(p, byte, bytes, (cudaStream_t)stream));
  return GPL_OK;
}

void bench_dev_describe(int device, char *buf, size_t len) {
  if (!len) return;
  buf[0] = '\0';
  struct cudaDeviceProp prop;
  if (device < 0 || cudaGetDeviceProperties(&prop, device) != cudaSuccess) return;
  snprintf(buf, len, "[%04x:%02x:%02x] %s", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID,
           prop.name);
}

int bench_dev_poison(gpl_comm_t *comm, void *p, size_t bytes, void *stream) {
  if (!bytes) return GPL_OK;
  if (gpl_comm_backend(comm) == GPL_BACKEND_NCCL) return bench_cuda_memset(p, BENCH_POISON_BYTE, bytes, stream);
  memset(p, BENCH_POISON_BYTE, bytes);
  return GPL_OK;
}
