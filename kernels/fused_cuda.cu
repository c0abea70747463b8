/* CUDA versions of the fused gradient ops: one launch per bucket over a tensor table passed by value
 * (multi_tensor_apply style; unpack adds one for the tensors' unaligned ends), 128-bit stores
 * throughout, 128-bit loads where the other side is in phase, mpmath.h for the math. */
#include <cuda_runtime.h>
#include <stdint.h>

/* common/ is plain C without extern "C" guards; give its declarations C linkage here. */
extern "C" {
#include "common/check.h"
}
#include "kernels/fused.h"
#include "kernels/fused_cuda_dev.cuh"

namespace {

/* A CUDA call's error as a gpulaunch code, logged with CUDA's own message. No device or an old
 * driver is "no usable GPU"; anything else is a CUDA error. */
int cuda_fail(cudaError_t e, const char *what, const char *file, int line) {
  log_write(LOG_LVL_WARN, LOG_ALL, file, line, "kern: %s failed: %s (%s)", what, cudaGetErrorString(e),
            cudaGetErrorName(e));
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver) return GPL_ENOGPU;
  return GPL_ECUDA;
}

#define KERN_CUDACHECK(call)                                                                 \
  do {                                                                                       \
    cudaError_t kern_e_ = (call);                                                            \
    if (kern_e_ != cudaSuccess) return cuda_fail(kern_e_, #call, __FILE__, __LINE__);        \
  } while (0)

/* The shared checks, and one of the launch's own: a tensor's chunk count fits the table's int. */
int check_args(const kern_tensor_t *t, int n, const void *bucket, gpl_dtype_t wire) {
  CHECK(kern_check_args(t, n, bucket, wire));
  for (int i = 0; i < n; i++)
    if (t[i].count / kChunk >= 0x7fffffffull) {
      LOG_WARN("kern: tensor %d is too large (%zu elements)", i, t[i].count);
      return GPL_EINVAL;
    }
  return 0;
}

/* The launches for one table: pack; or unpack's units, then its edges (when it has any). */
template <gpl_dtype_t W, int MAXT>
int launch(Op op, const Table<MAXT> &tab, int edges, void *bucket, kern_scaler_t *sc, cudaStream_t st) {
  unsigned blocks = tab.block0[tab.n];
  if (op == kPack) {
    pack_kernel<W, MAXT><<<blocks, kThreads, 0, st>>>(tab, bucket);
  } else {
    if (blocks > 0) unpack_kernel<W, MAXT><<<blocks, kThreads, 0, st>>>(tab, bucket, sc);
    if (edges) edge_kernel<W, MAXT><<<edge_blocks(tab.n), kThreads, 0, st>>>(tab, bucket, sc);
  }
  KERN_CUDACHECK(cudaGetLastError());
  return 0;
}

/* One launch per table filling (one per bucket unless it has more than kLargeTable tensors). */
template <gpl_dtype_t W, int MAXT>
int run(Op op, const kern_tensor_t *t, int n, void *bucket, float scale, kern_scaler_t *sc,
        cudaStream_t st) {
  /* large: not on the stack; copied into the launch parameters, so reusable at once */
  static thread_local Table<MAXT> tab;
  return for_each_table<W, MAXT>(op, t, n, bucket, scale, tab, [&](const Table<MAXT> &filled, int edges) {
    return launch<W, MAXT>(op, filled, edges, bucket, sc, st);
  });
}

template <gpl_dtype_t W>
int dispatch_table(Op op, const kern_tensor_t *t, int n, void *bucket, float scale, kern_scaler_t *sc,
                   cudaStream_t st) {
  int nonempty = count_nonempty(t, n);
  if (nonempty == 0) return 0;
  if (nonempty <= kSmallTable) return run<W, kSmallTable>(op, t, n, bucket, scale, sc, st);
  return run<W, kLargeTable>(op, t, n, bucket, scale, sc, st);
}

int dispatch(Op op, const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire, float scale,
             kern_scaler_t *sc, void *stream) {
  CHECK(check_args(t, n, bucket, wire));
  cudaStream_t st = static_cast<cudaStream_t>(stream);
  switch (wire) {
  case GPL_FLOAT: return dispatch_table<GPL_FLOAT>(op, t, n, bucket, scale, sc, st);
  case GPL_BFLOAT16: return dispatch_table<GPL_BFLOAT16>(op, t, n, bucket, scale, sc, st);
  default: return dispatch_table<GPL_HALF>(op, t, n, bucket, scale, sc, st);
  }
}

/* kern_selftest_cuda's kernel: every fp32 bit pattern (and every fp16 one) through the device's
 * fp16 conversions against the mp_* reference functions, compared bit for bit. */
__global__ void selftest_kernel(unsigned long long *bad, unsigned *first) {
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (unsigned long long x = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
       x < (1ull << 32); x += stride) {
    float f = __uint_as_float((unsigned)x);
    if (f32_to_f16_dev(f) != mp_f32_to_f16(f)) {
      atomicAdd(&bad[0], 1ull);
      atomicMin(&first[0], (unsigned)x);
    }
    if (x < 65536u && __float_as_uint(f16_to_f32_dev((uint16_t)x)) !=
                          __float_as_uint(mp_f16_to_f32((uint16_t)x))) {
      atomicAdd(&bad[1], 1ull);
      atomicMin(&first[1], (unsigned)x);
    }
  }
}

} // namespace

extern "C" int kern_have_cuda(void) { return 1; }

extern "C" int kern_pack_cuda(const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire,
                              float prescale, void *stream) {
  return dispatch(kPack, t, n, bucket, wire, prescale, NULL, stream);
}

extern "C" int kern_unpack_cuda(const void *bucket, gpl_dtype_t wire, const kern_tensor_t *t, int n,
                                float postscale, kern_scaler_t *sc_dev, void *stream) {
  return dispatch(kUnpack, t, n, const_cast<void *>(bucket), wire, postscale, sc_dev, stream);
}

extern "C" int kern_scaler_update_cuda(kern_scaler_t *sc_dev, void *stream) {
  if (sc_dev == NULL) {
    LOG_WARN("kern: scaler_update_cuda needs a device scaler");
    return GPL_EINVAL;
  }
  scaler_update_kernel<<<1, 1, 0, static_cast<cudaStream_t>(stream)>>>(sc_dev);
  KERN_CUDACHECK(cudaGetLastError());
  return 0;
}

extern "C" int kern_selftest_cuda(unsigned long long bad[2], unsigned first[2]) {
  unsigned long long *dbad = NULL;
  unsigned *dfirst = NULL;
  unsigned init[2] = {0xffffffffu, 0xffffffffu};
  int rc = 0;
  KERN_CUDACHECK(cudaMalloc(&dbad, 2 * sizeof *dbad));
  if (cudaMalloc(&dfirst, 2 * sizeof *dfirst) != cudaSuccess ||
      cudaMemset(dbad, 0, 2 * sizeof *dbad) != cudaSuccess ||
      cudaMemcpy(dfirst, init, sizeof init, cudaMemcpyHostToDevice) != cudaSuccess) {
    rc = GPL_ECUDA;
  } else {
    selftest_kernel<<<4096, kThreads>>>(dbad, dfirst);
    if (cudaGetLastError() != cudaSuccess ||
        cudaMemcpy(bad, dbad, 2 * sizeof *dbad, cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(first, dfirst, 2 * sizeof *dfirst, cudaMemcpyDeviceToHost) != cudaSuccess)
      rc = GPL_ECUDA;
  }
  if (rc) LOG_WARN("kern: selftest: %s", cudaGetErrorString(cudaGetLastError()));
  cudaFree(dbad);
  cudaFree(dfirst);
  return rc;
}
