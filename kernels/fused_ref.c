/* C reference of the fused gradient ops (pack, unpack, loss-scale update), one pass over memory each,
 * written so that the compiler vectorises the loops; uses the same math as the CUDA kernels. */
#include <stdint.h>

#include "common/check.h"
#include "kernels/fused.h"
#include "kernels/mpmath.h"

/* Each per-tensor loop is a plain counted loop over restrict pointers with a branch-free body, so
 * gcc -O3 turns it into SIMD code (the fp16 path needs per-lane variable shifts: AVX2). On x86-64
 * with GNU ifunc support, AVX-512 and AVX2 clones are built next to the baseline and the best one
 * the CPU runs is picked at load time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__) && \
    !defined(GPL_KERN_NO_CLONES)
#define KERN_SIMD __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define KERN_SIMD
#endif

/* mp_mul pins down the NaN a product makes, which costs as much as the rest of a conversion. On
 * x86 (SSE/AVX arithmetic) the plain product already equals it whenever the scale is finite and
 * non-zero: then a NaN result can only come from a NaN x, and x86 returns that operand quieted,
 * sign and payload kept, which is mp_mul's definition. So the loops are built twice: with the
 * plain product (taken only in that case) and with mp_mul (any other scale, or another CPU). */
#if defined(__x86_64__) || (defined(__i386__) && defined(__SSE2_MATH__))
#define KERN_PLAIN_MUL_OK(s) (mp_isfinite(s) && (s) != 0.0f)
#else
#define KERN_PLAIN_MUL_OK(s) 0
#endif
static inline float mul_plain(float x, float s) { return x * s; }

size_t kern_total_count(const kern_tensor_t *t, int n) {
  size_t total = 0;
  for (int i = 0; i < n; i++) total += t[i].count;
  return total;
}

void kern_scaler_init(kern_scaler_t *s, float init_scale, float growth_factor, float backoff_factor,
                      int growth_interval) {
  memset(s, 0, sizeof *s);
  s->scale = init_scale;
  s->inv_scale = 1.0f / init_scale;
  s->growth_factor = growth_factor;
  s->backoff_factor = backoff_factor;
  s->growth_interval = growth_interval;
}

void kern_scaler_update_ref(kern_scaler_t *sc) { mp_scaler_update(sc); }

int kern_check_args(const kern_tensor_t *t, int n, const void *bucket, gpl_dtype_t wire) {
  if (n < 0 || (n > 0 && t == NULL)) {
    LOG_WARN("kern: bad tensor list (n=%d, t=%p)", n, (const void *)t);
    return GPL_EINVAL;
  }
  if (wire != GPL_FLOAT && wire != GPL_BFLOAT16 && wire != GPL_HALF) {
    LOG_WARN("kern: wire dtype %s is not one of float, bfloat16, half", gpl_dtype_name(wire));
    return GPL_EINVAL;
  }
  size_t total = 0;
  for (int i = 0; i < n; i++) {
    if (t[i].count > 0 && t[i].data == NULL) {
      LOG_WARN("kern: tensor %d has %zu elements and no data", i, t[i].count);
      return GPL_EINVAL;
    }
    total += t[i].count;
  }
  if (total > 0 && (bucket == NULL || (uintptr_t)bucket % gpl_dtype_size(wire) != 0)) {
    LOG_WARN("kern: bucket %p is NULL or not aligned to %zu bytes", bucket, gpl_dtype_size(wire));
    return GPL_EINVAL;
  }
  return 0;
}

/* ---- the per-tensor loops, for both products ---- */

/* pack: one tensor into its place in the bucket. unpack: one tensor back from the bucket; returns
 * 1 when any output is inf or NaN. */
#define KERN_LOOPS(SFX, MUL)                                                                      \
  KERN_SIMD static void pack_f32##SFX(const float *restrict in, float *restrict out, size_t n,   \
                                      float s) {                                                 \
    for (size_t i = 0; i < n; i++) out[i] = MUL(in[i], s);                                       \
  }                                                                                              \
  KERN_SIMD static void pack_bf16##SFX(const float *restrict in, uint16_t *restrict out,         \
                                       size_t n, float s) {                                      \
    for (size_t i = 0; i < n; i++) out[i] = mp_f32_to_bf16(MUL(in[i], s));                       \
  }                                                                                              \
  KERN_SIMD static void pack_f16##SFX(const float *restrict in, uint16_t *restrict out, size_t n, \
                                      float s) {                                                 \
    for (size_t i = 0; i < n; i++) out[i] = mp_f32_to_f16(MUL(in[i], s));                        \
  }                                                                                              \
  KERN_SIMD static int unpack_f32##SFX(const float *restrict in, float *restrict out, size_t n,  \
                                       float f) {                                                \
    uint32_t bad = 0;                                                                            \
    for (size_t i = 0; i < n; i++) {                                                             \
      float y = MUL(in[i], f);                                                                   \
      out[i] = y;                                                                                \
      bad |= (mp_f32_bits(y) & MP_F32_INF) == MP_F32_INF;                                        \
    }                                                                                            \
    return bad != 0;                                                                             \
  }                                                                                              \
  KERN_SIMD static int unpack_bf16##SFX(const uint16_t *restrict in, float *restrict out,        \
                                        size_t n, float f) {                                     \
    uint32_t bad = 0;                                                                            \
    for (size_t i = 0; i < n; i++) {                                                             \
      float y = MUL(mp_bf16_to_f32(in[i]), f);                                                   \
      out[i] = y;                                                                                \
      bad |= (mp_f32_bits(y) & MP_F32_INF) == MP_F32_INF;                                        \
    }                                                                                            \
    return bad != 0;                                                                             \
  }                                                                                              \
  KERN_SIMD static int unpack_f16##SFX(const uint16_t *restrict in, float *restrict out,         \
                                       size_t n, float f) {                                      \
    uint32_t bad = 0;                                                                            \
    for (size_t i = 0; i < n; i++) {                                                             \
      float y = MUL(mp_f16_to_f32(in[i]), f);                                                    \
      out[i] = y;                                                                                \
      bad |= (mp_f32_bits(y) & MP_F32_INF) == MP_F32_INF;                                        \
    }                                                                                            \
    return bad != 0;                                                                             \
  }

KERN_LOOPS(_any, mp_mul)
KERN_LOOPS(_plain, mul_plain)

int kern_pack_ref(const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire, float prescale) {
  CHECK(kern_check_args(t, n, bucket, wire));
  const int plain = KERN_PLAIN_MUL_OK(prescale);
  size_t k = 0;
  for (int i = 0; i < n; i++) {
    size_t c = t[i].count;
    if (c == 0) continue;
    const float *in = t[i].data;
    switch (wire) {
    case GPL_FLOAT:
      if (plain) pack_f32_plain(in, (float *)bucket + k, c, prescale);
      else pack_f32_any(in, (float *)bucket + k, c, prescale);
      break;
    case GPL_BFLOAT16:
      if (plain) pack_bf16_plain(in, (uint16_t *)bucket + k, c, prescale);
      else pack_bf16_any(in, (uint16_t *)bucket + k, c, prescale);
      break;
    default:
      if (plain) pack_f16_plain(in, (uint16_t *)bucket + k, c, prescale);
      else pack_f16_any(in, (uint16_t *)bucket + k, c, prescale);
      break;
    }
    k += c;
  }
  return 0;
}

int kern_unpack_ref(const void *bucket, gpl_dtype_t wire, const kern_tensor_t *t, int n,
                    float postscale, kern_scaler_t *sc) {
  CHECK(kern_check_args(t, n, bucket, wire));
  /* The same product, in the same order, as the CUDA kernel forms on the device. */
  const float factor = sc ? postscale * sc->inv_scale : postscale;
  const int plain = KERN_PLAIN_MUL_OK(factor);
  size_t k = 0;
  int bad = 0;
  for (int i = 0; i < n; i++) {
    size_t c = t[i].count;
    if (c == 0) continue;
    float *out = t[i].data;
    switch (wire) {
    case GPL_FLOAT: {
      const float *in = (const float *)bucket + k;
      bad |= plain ? unpack_f32_plain(in, out, c, factor) : unpack_f32_any(in, out, c, factor);
      break;
    }
    case GPL_BFLOAT16: {
      const uint16_t *in = (const uint16_t *)bucket + k;
      bad |= plain ? unpack_bf16_plain(in, out, c, factor) : unpack_bf16_any(in, out, c, factor);
      break;
    }
    default: {
      const uint16_t *in = (const uint16_t *)bucket + k;
      bad |= plain ? unpack_f16_plain(in, out, c, factor) : unpack_f16_any(in, out, c, factor);
      break;
    }
    }
    k += c;
  }
  if (sc && bad) sc->found_inf = 1;
  return 0;
}
