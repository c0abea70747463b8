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

/* Initialise a scaler (host memory). */
void kern_scaler_init(kern_scaler_t *s, float init_scale, float growth_factor, float backoff_factor,
                      int growth_interval);

/* ---- C reference (host memory). Wire dtype: GPL_FLOAT, GPL_BFLOAT16 or GPL_HALF. ---- */

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
 * GPL_ENOCUDA. One launch per call over all tensors (a tensor table), 16-byte vector loads where
 * aligned, a scalar path where not. sc points to device memory. ---- */
int kern_pack_cuda(const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire, float prescale,
                   void *stream);
int kern_unpack_cuda(const void *bucket, gpl_dtype_t wire, const kern_tensor_t *t, int n,
                     float postscale, kern_scaler_t *sc_dev, void *stream);
int kern_scaler_update_cuda(kern_scaler_t *sc_dev, void *stream);
/* 1 when this build has the CUDA kernels. */
int kern_have_cuda(void);

#ifdef __cplusplus
}
#endif
#endif
