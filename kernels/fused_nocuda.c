/* Stand-ins for the CUDA kernels in a build without CUDA: each says "not built with CUDA". */
#include "common/check.h"
#include "kernels/fused.h"

int kern_have_cuda(void) { return 0; }

int kern_pack_cuda(const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire, float prescale,
                   void *stream) {
  return GPL_ENOCUDA;
}

int kern_unpack_cuda(const void *bucket, gpl_dtype_t wire, const kern_tensor_t *t, int n,
                     float postscale, kern_scaler_t *sc_dev, void *stream) {
  return GPL_ENOCUDA;
}

int kern_scaler_update_cuda(kern_scaler_t *sc_dev, void *stream) { return GPL_ENOCUDA; }

int kern_selftest_cuda(unsigned long long bad[2], unsigned first[2]) { return GPL_ENOCUDA; }
