/* Fused mixed-precision gradient ops: pack (scale+cast into a bucket), unpack (cast+unscale+inf/NaN
 * check), and the dynamic loss-scale update; a C reference and CUDA versions of each. */
#ifndef GPL_KERNELS_FUSED_H
#define GPL_KERNELS_FUSED_H

#include <stddef.h>

#include "gpulaunch/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One fp32 tensor: any length (0 allowed), any alignment. Host memory for the *_ref functions,
 * device memory for the *_cuda functions. */
typedef struct kern_tensor_s {
  float *data;
  size_t count;
} kern_tensor_t;

/* Dynamic loss scaling state, as torch.cuda.amp.GradScaler. Lives in host memory for the C
 * reference and in device memory for the CUDA path (so no host sync is needed per step). */
typedef struct kern_scaler_s {
  float scale;          /* current loss scale */
  float inv_scale;      /* 1/scale, kept in step with scale */
  float growth_factor;  /* e.g. 2.0 */
  float backoff_factor; /* e.g. 0.5 */
  int growth_interval;  /* clean steps before growing, e.g. 2000 */
  int good_steps;       /* clean steps since the last growth or overflow */
  int found_inf;        /* set by unpack when any value was inf or NaN; cleared by update */
  int skipped;          /* set by update: 1 when the last step must be skipped */
  long long overflow_steps; /* steps skipped so far */
} kern_scaler_t;

/* Total elements of n tensors (the bucket holds them back to back, no padding). */
size_t kern_total_count(const kern_tensor_t *t, int n);

/* The arguments of pack and unpack, checked alike by the C reference and the CUDA versions: a
 * valid tensor list (n >= 0, data for every non-empty tensor), a wire type we convert to (GPL_FLOAT,
 * GPL_BFLOAT16, GPL_HALF), and a bucket aligned to its element size when there is anything to
 * move. 0, or GPL_EINVAL with the reason logged. */
int kern_check_args(const kern_tensor_t *t, int n, const void *bucket, gpl_dtype_t wire);

/* Initialise a scaler (host memory). */
void kern_scaler_init(kern_scaler_t *s, float init_scale, float growth_factor, float backoff_factor,
                      int growth_interval);

/* ---- Contract shared by the C reference and the CUDA versions ----
 * - The bucket holds kern_total_count() elements of the wire type, tensors back to back in list
 *   order; it must be aligned to the wire element size (GPL_EINVAL otherwise) and must not overlap
 *   any tensor. Empty tensors take no room; n == 0 (or only empty tensors) does nothing.
 * - The math is kernels/mpmath.h on both sides, so both give the same bits: products are IEEE fp32
 *   (round to nearest even, no flush to zero); a NaN x stays x quieted (sign, payload); inf*0
 *   gives 0x7fc00000; fp32 -> bf16/fp16 rounds to nearest even, overflows to inf as IEEE does.
 * - found_inf is sticky: unpack only ever sets it; kern_scaler_update_* clears it.
 * - Returns 0, or GPL_EINVAL for a bad list, bucket or wire dtype (nothing written then).
 * ---- C reference (host memory). Wire dtype: GPL_FLOAT, GPL_BFLOAT16 or GPL_HALF. ---- */

/* bucket[k] = wire(t[i].data[j] * prescale) for all tensors back to back, in one pass.
 * Rounding fp32 -> bf16/fp16 is round-to-nearest-even; inf and NaN are preserved. */
int kern_pack_ref(const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire, float prescale);

/* t[i].data[j] = float(bucket[k]) * (postscale * sc->inv_scale), in one pass; sets sc->found_inf
 * when any output is inf or NaN. sc may be NULL (then the factor is postscale, no flag). */
int kern_unpack_ref(const void *bucket, gpl_dtype_t wire, const kern_tensor_t *t, int n,
                    float postscale, kern_scaler_t *sc);

/* AMP rule: on found_inf halve (backoff) the scale, reset good_steps, set skipped and count the
 * overflow; otherwise count a good step and grow after growth_interval of them. Clears found_inf. */
void kern_scaler_update_ref(kern_scaler_t *sc);

/* ---- CUDA (device memory). stream is a cudaStream_t passed as void*. Without CUDA these return
 * GPL_ENOCUDA. One launch per call over all tensors (a tensor table; unpack adds a small one for
 * the tensors' unaligned ends). sc points to device memory. ----
 * Asynchronous on the stream: they return once the work is queued. The tensor list itself is copied
 * into the launch (the kern_tensor_t array may be reused at once); the device memory it points to
 * must stay valid until the stream has run the work. Up to 1024 non-empty tensors go in one launch;
 * more take one launch per 1024. Stores are 16-byte vectors everywhere but a tensor's ends (fewer
 * than 8 elements at each, where it is not 16-byte aligned); loads are 16-byte vectors where the
 * tensor and its place in the bucket have the same 16-byte phase (best: tensors at 16-byte
 * multiples), element by element where not (correct, a little slower). unpack reads sc_dev->inv_scale on
 * the device, so a scale changed by kern_scaler_update_cuda on the same stream is used without any
 * host sync. Errors: GPL_EINVAL (arguments), GPL_ENOGPU (no device / driver too old), GPL_ECUDA;
 * a fault inside a kernel shows at the next synchronisation, as with any CUDA launch. */
int kern_pack_cuda(const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire, float prescale,
                   void *stream);
int kern_unpack_cuda(const void *bucket, gpl_dtype_t wire, const kern_tensor_t *t, int n,
                     float postscale, kern_scaler_t *sc_dev, void *stream);
int kern_scaler_update_cuda(kern_scaler_t *sc_dev, void *stream);
/* The device's fp16 conversions (hardware instructions, NaN lanes patched) against the C reference's
 * mp_f32_to_f16 / mp_f16_to_f32, run on the device over all 2^32 fp32 and 2^16 fp16 inputs:
 * bad[0], bad[1] = mismatches of each direction, first[] = the smallest input that differs
 * (0xffffffff when none). GPL_ENOCUDA without CUDA. */
int kern_selftest_cuda(unsigned long long bad[2], unsigned first[2]);
/* 1 when this build has the CUDA kernels. */
int kern_have_cuda(void);

#ifdef __cplusplus
}
#endif
#endif
