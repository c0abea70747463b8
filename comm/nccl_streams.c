/* Stream order of the nccl backend with CUDA events: a NULL stream is ordered with the legacy
 * default stream both ways; the shared scratch bucket is handed from stream to stream. */
#include "comm/nccl_streams.h"

#include "common/check.h"
#include "common/util.h"

int nccl_streams_init(nccl_streams_t *s) {
  s->own = NULL;
  s->legacy_mark = s->own_mark = s->scratch_free = NULL;
  s->scratch_used = 0;
  CUDACHECK(cudaStreamCreateWithFlags(&s->own, cudaStreamNonBlocking));
  /* Timing off: these events only order work, and such events are cheaper to record and wait on. */
  CUDACHECK(cudaEventCreateWithFlags(&s->legacy_mark, cudaEventDisableTiming));
  CUDACHECK(cudaEventCreateWithFlags(&s->own_mark, cudaEventDisableTiming));
  CUDACHECK(cudaEventCreateWithFlags(&s->scratch_free, cudaEventDisableTiming));
  return GPL_OK;
}

void nccl_streams_destroy(nccl_streams_t *s) {
  if (s->scratch_free) cudaEventDestroy(s->scratch_free);
  if (s->own_mark) cudaEventDestroy(s->own_mark);
  if (s->legacy_mark) cudaEventDestroy(s->legacy_mark);
  if (s->own) cudaStreamDestroy(s->own);
  s->own = NULL;
  s->legacy_mark = s->own_mark = s->scratch_free = NULL;
  s->scratch_used = 0;
}

int nccl_streams_enter(nccl_streams_t *s, void *stream, cudaStream_t *use) {
  if (stream) {
    *use = (cudaStream_t)stream;
    return GPL_OK;
  }
  /* cudaStreamLegacy, not 0: this must mean the legacy stream even in a translation unit built
   * with per-thread default streams. A wait captures the event as recorded at the time of the
   * call, so one event serves every call. */
  CUDACHECK(cudaEventRecord(s->legacy_mark, cudaStreamLegacy));
  CUDACHECK(cudaStreamWaitEvent(s->own, s->legacy_mark, 0));
  *use = s->own;
  return GPL_OK;
}

int nccl_streams_leave(nccl_streams_t *s, void *stream, cudaStream_t use) {
  if (stream) return GPL_OK;
  CUDACHECK(cudaEventRecord(s->own_mark, use));
  CUDACHECK(cudaStreamWaitEvent(cudaStreamLegacy, s->own_mark, 0));
  return GPL_OK;
}

int nccl_streams_scratch_acquire(nccl_streams_t *s, cudaStream_t use) {
  /* On the stream that used it last this wait is already satisfied by stream order; on another
   * it is what keeps this call's pack from overwriting a bucket the other call still unpacks. */
  if (s->scratch_used) CUDACHECK(cudaStreamWaitEvent(use, s->scratch_free, 0));
  return GPL_OK;
}

int nccl_streams_scratch_release(nccl_streams_t *s, cudaStream_t use) {
  CUDACHECK(cudaEventRecord(s->scratch_free, use));
  s->scratch_used = 1;
  return GPL_OK;
}

int nccl_streams_scratch_idle(nccl_streams_t *s, double timeout) {
  if (!s->scratch_used) return GPL_OK;
  double deadline = util_now() + timeout, nap = 2e-5;
  for (;;) {
    cudaError_t e = cudaEventQuery(s->scratch_free);
    if (e == cudaSuccess) return GPL_OK;
    if (e != cudaErrorNotReady) {
      LOG_WARN("CUDA event of the fused scratch failed: %s (%s)", cudaGetErrorString(e),
               cudaGetErrorName(e));
      return GPL_ECUDA;
    }
    if (util_now() >= deadline) {
      LOG_ERROR("the fused allreduce's scratch was still in use after %.1f s", timeout);
      return GPL_ETIMEDOUT;
    }
    util_sleep(nap);
    if (nap < 1e-3) nap *= 2;
  }
}
