/* C reference of the fused gradient ops (pack, unpack, loss-scale update), one pass over memory each,
 * written so that the compiler vectorises the loops; uses the same math as the CUDA kernels. */
#include <stdint.h>

#include "common/check.h"
#include "kernels/fused.h"
#include "kernels/mpmath.h"

/* Each per-tensor loop is a plain counted loop over restrict pointers with a branch-free body, so
 * gcc -O3 turns it into SIMD code (the fp16 path needs per-lane variable shifts: AVX2). On x86-64
 * with GNU ifunc support, an AVX2 clone is built next to the baseline and picked at load time. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__) && \
    !defined(GPL_KERN_NO_CLONES)
#define KERN_SIMD __attribute__((target_clones("avx2", "default")))
#else
#define KERN_SIMD
#endif

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

/* Arguments shared by pack and unpack: a valid tensor list, a wire type we can convert to, and a
 * bucket aligned to its element size when there is anything to move. */
static int check_args(const kern_tensor_t *t, int n, const void *bucket, gpl_dtype_t wire) {
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

/* ---- pack: one tensor into its place in the bucket ---- */

KERN_SIMD static void pack_f32(const float *restrict in, float *restrict out, size_t n, float s) {
  for (size_t i = 0; i < n; i++) out[i] = mp_mul(in[i], s);
}

KERN_SIMD static void pack_bf16(const float *restrict in, uint16_t *restrict out, size_t n, float s) {
  for (size_t i = 0; i < n; i++) out[i] = mp_f32_to_bf16(mp_mul(in[i], s));
}

KERN_SIMD static void pack_f16(const float *restrict in, uint16_t *restrict out, size_t n, float s) {
  for (size_t i = 0; i < n; i++) out[i] = mp_f32_to_f16(mp_mul(in[i], s));
}

int kern_pack_ref(const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire, float prescale) {
  CHECK(check_args(t, n, bucket, wire));
  size_t k = 0;
  for (int i = 0; i < n; i++) {
    size_t c = t[i].count;
    if (c == 0) continue;
    switch (wire) {
    case GPL_FLOAT: pack_f32(t[i].data, (float *)bucket + k, c, prescale); break;
    case GPL_BFLOAT16: pack_bf16(t[i].data, (uint16_t *)bucket + k, c, prescale); break;
    default: pack_f16(t[i].data, (uint16_t *)bucket + k, c, prescale); break;
    }
    k += c;
  }
  return 0;
}

/* ---- unpack: one tensor back from the bucket; returns 1 when any output is inf or NaN ---- */

KERN_SIMD static int unpack_f32(const float *restrict in, float *restrict out, size_t n, float f) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    float y = mp_mul(in[i], f);
    out[i] = y;
    bad |= (mp_f32_bits(y) & MP_F32_INF) == MP_F32_INF;
  }
  return bad != 0;
}

KERN_SIMD static int unpack_bf16(const uint16_t *restrict in, float *restrict out, size_t n, float f) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    float y = mp_mul(mp_bf16_to_f32(in[i]), f);
    out[i] = y;
    bad |= (mp_f32_bits(y) & MP_F32_INF) == MP_F32_INF;
  }
  return bad != 0;
}

KERN_SIMD static int unpack_f16(const uint16_t *restrict in, float *restrict out, size_t n, float f) {
  uint32_t bad = 0;
  for (size_t i = 0; i < n; i++) {
    float y = mp_mul(mp_f16_to_f32(in[i]), f);
    out[i] = y;
    bad |= (mp_f32_bits(y) & MP_F32_INF) == MP_F32_INF;
  }
  return bad != 0;
}

int kern_unpack_ref(const void *bucket, gpl_dtype_t wire, const kern_tensor_t *t, int n,
                    float postscale, kern_scaler_t *sc) {
  CHECK(check_args(t, n, bucket, wire));
  /* The same product, in the same order, as the CUDA kernel forms on the device. */
  float factor = sc ? postscale * sc->inv_scale : postscale;
  size_t k = 0;
  int bad = 0;
  for (int i = 0; i < n; i++) {
    size_t c = t[i].count;
    if (c == 0) continue;
    switch (wire) {
    case GPL_FLOAT: bad |= unpack_f32((const float *)bucket + k, t[i].data, c, factor); break;
    case GPL_BFLOAT16: bad |= unpack_bf16((const uint16_t *)bucket + k, t[i].data, c, factor); break;
    default: bad |= unpack_f16((const uint16_t *)bucket + k, t[i].data, c, factor); break;
    }
    k += c;
  }
  if (sc && bad) sc->found_inf = 1;
  return 0;
}
