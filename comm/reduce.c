/* Elementwise host reductions for every dtype and op, as plain counted loops over restrict
 * pointers with branch-free bodies so gcc vectorises them (built at -O3 without trapping math; on
 * x86-64 with AVX-512 and AVX2 clones picked at load time, as kernels/fused_ref.c does). */
#include "comm/reduce.h"

#include <stdint.h>
#include <string.h>

#include "kernels/mpmath.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define RED_SIMD __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#else
#define RED_SIMD
#endif

#define OP_SUM(x, y) ((x) + (y))
#define OP_PROD(x, y) ((x) * (y))
#define OP_MAX(x, y) (((y) > (x)) ? (y) : (x))
#define OP_MIN(x, y) (((y) < (x)) ? (y) : (x))

/* One function per (type, op): b[i] = OP(a[i], b[i]), as MPI computes inout = in op inout. */
#define RED_NATIVE(name, T, OP)                                                          \
  RED_SIMD static void name(T *restrict b, const T *restrict a, size_t n) {             \
    for (size_t i = 0; i < n; i++) b[i] = (T)OP(a[i], b[i]);                            \
  }
#define RED_F16(name, TO, FROM, OP)                                                      \
  RED_SIMD static void name(uint16_t *restrict b, const uint16_t *restrict a, size_t n) { \
    for (size_t i = 0; i < n; i++) b[i] = FROM(OP(TO(a[i]), TO(b[i])));                 \
  }
#define RED_TYPE(tag, T)                                                                 \
  RED_NATIVE(tag##_sum, T, OP_SUM)                                                       \
  RED_NATIVE(tag##_prod, T, OP_PROD)                                                     \
  RED_NATIVE(tag##_max, T, OP_MAX)                                                       \
  RED_NATIVE(tag##_min, T, OP_MIN)

RED_TYPE(i8, int8_t)
RED_TYPE(u8, uint8_t)
RED_TYPE(i32, int32_t)
RED_TYPE(u32, uint32_t)
RED_TYPE(i64, int64_t)
RED_TYPE(u64, uint64_t)
RED_TYPE(f32, float)
RED_TYPE(f64, double)
RED_F16(h_sum, mp_f16_to_f32, mp_f32_to_f16, OP_SUM)
RED_F16(h_prod, mp_f16_to_f32, mp_f32_to_f16, OP_PROD)
RED_F16(h_max, mp_f16_to_f32, mp_f32_to_f16, OP_MAX)
RED_F16(h_min, mp_f16_to_f32, mp_f32_to_f16, OP_MIN)
RED_F16(b_sum, mp_bf16_to_f32, mp_f32_to_bf16, OP_SUM)
RED_F16(b_prod, mp_bf16_to_f32, mp_f32_to_bf16, OP_PROD)
RED_F16(b_max, mp_bf16_to_f32, mp_f32_to_bf16, OP_MAX)
RED_F16(b_min, mp_bf16_to_f32, mp_f32_to_bf16, OP_MIN)

typedef void (*red_fn)(void *restrict, const void *restrict, size_t);
#define ROW(tag) {(red_fn)tag##_sum, (red_fn)tag##_prod, (red_fn)tag##_max, (red_fn)tag##_min}

/* Rows in GPL_DTYPE_MAP order; columns sum, prod, max, min. */
static const red_fn g_table[GPL_DTYPE_COUNT][4] = {
    ROW(i8), ROW(u8), ROW(i32), ROW(u32), ROW(i64), ROW(u64), ROW(h), ROW(f32), ROW(f64), ROW(b),
};
_Static_assert(GPL_INT8 == 0 && GPL_UINT8 == 1 && GPL_INT32 == 2 && GPL_UINT32 == 3 &&
                   GPL_INT64 == 4 && GPL_UINT64 == 5 && GPL_HALF == 6 && GPL_FLOAT == 7 &&
                   GPL_DOUBLE == 8 && GPL_BFLOAT16 == 9,
               "g_table rows follow GPL_DTYPE_MAP");

void reduce_into(void *inout, const void *in, size_t n, gpl_dtype_t dt, gpl_redop_t op) {
  if ((unsigned)dt >= GPL_DTYPE_COUNT || n == 0) return;
  int o = op == GPL_OP_PROD ? 1 : op == GPL_OP_MAX ? 2 : op == GPL_OP_MIN ? 3 : 0;
  g_table[dt][o](inout, in, n);
}

/* ---- many sources at once ---- */

enum { BLOCK = 512 }; /* floats per block: the accumulator stays in L1 */

#define F16_CVT(tag, TO, FROM)                                                           \
  RED_SIMD static void tag##_to_f(float *restrict o, const uint16_t *restrict a, size_t n) { \
    for (size_t i = 0; i < n; i++) o[i] = TO(a[i]);                                     \
  }                                                                                      \
  RED_SIMD static void tag##_from_f(uint16_t *restrict o, const float *restrict a, size_t n) { \
    for (size_t i = 0; i < n; i++) o[i] = FROM(a[i]);                                   \
  }                                                                                      \
  RED_SIMD static void tag##_acc_sum(float *restrict c, const uint16_t *restrict a, size_t n) { \
    for (size_t i = 0; i < n; i++) c[i] = OP_SUM(c[i], TO(a[i]));                       \
  }                                                                                      \
  RED_SIMD static void tag##_acc_prod(float *restrict c, const uint16_t *restrict a, size_t n) { \
    for (size_t i = 0; i < n; i++) c[i] = OP_PROD(c[i], TO(a[i]));                      \
  }                                                                                      \
  RED_SIMD static void tag##_acc_max(float *restrict c, const uint16_t *restrict a, size_t n) { \
    for (size_t i = 0; i < n; i++) c[i] = OP_MAX(c[i], TO(a[i]));                       \
  }                                                                                      \
  RED_SIMD static void tag##_acc_min(float *restrict c, const uint16_t *restrict a, size_t n) { \
    for (size_t i = 0; i < n; i++) c[i] = OP_MIN(c[i], TO(a[i]));                       \
  }
F16_CVT(h, mp_f16_to_f32, mp_f32_to_f16)
F16_CVT(b, mp_bf16_to_f32, mp_f32_to_bf16)

typedef void (*acc_fn)(float *restrict, const uint16_t *restrict, size_t);

void reduce_many(void *dst, const void *const *src, int nsrc, size_t n, gpl_dtype_t dt,
                 gpl_redop_t op) {
  if ((unsigned)dt >= GPL_DTYPE_COUNT || n == 0 || nsrc < 1) return;
  int o = op == GPL_OP_PROD ? 1 : op == GPL_OP_MAX ? 2 : op == GPL_OP_MIN ? 3 : 0;
  if (dt == GPL_HALF || dt == GPL_BFLOAT16) {
    int h = dt == GPL_HALF;
    static const acc_fn accs[2][4] = {{b_acc_sum, b_acc_prod, b_acc_max, b_acc_min},
                                      {h_acc_sum, h_acc_prod, h_acc_max, h_acc_min}};
    float acc[BLOCK];
    for (size_t at = 0; at < n; at += BLOCK) {
      size_t m = n - at < BLOCK ? n - at : BLOCK;
      const uint16_t *first = (const uint16_t *)src[0] + at;
      if (h) h_to_f(acc, first, m);
      else b_to_f(acc, first, m);
      for (int q = 1; q < nsrc; q++) accs[h][o](acc, (const uint16_t *)src[q] + at, m);
      if (h) h_from_f((uint16_t *)dst + at, acc, m);
      else b_from_f((uint16_t *)dst + at, acc, m);
    }
    return;
  }
  /* native types: block by block, so the partial result stays in L1 across the sources */
  size_t esz = gpl_dtype_size(dt), step = BLOCK * 4 / esz;
  for (size_t at = 0; at < n; at += step) {
    size_t m = n - at < step ? n - at : step;
    char *d = (char *)dst + at * esz;
    if (dst != src[0]) memcpy(d, (const char *)src[0] + at * esz, m * esz);
    for (int q = 1; q < nsrc; q++) g_table[dt][o](d, (const char *)src[q] + at * esz, m);
  }
}

#define DIV_NATIVE(name, T)                                                              \
  RED_SIMD static void name(T *restrict p, size_t n, int k) {                           \
    for (size_t i = 0; i < n; i++) p[i] = (T)(p[i] / (T)k);                             \
  }
DIV_NATIVE(div_i8, int8_t)
DIV_NATIVE(div_u8, uint8_t)
DIV_NATIVE(div_i32, int32_t)
DIV_NATIVE(div_u32, uint32_t)
DIV_NATIVE(div_i64, int64_t)
DIV_NATIVE(div_u64, uint64_t)
DIV_NATIVE(div_f32, float)
DIV_NATIVE(div_f64, double)
RED_SIMD static void div_h(uint16_t *restrict p, size_t n, int k) {
  for (size_t i = 0; i < n; i++) p[i] = mp_f32_to_f16(mp_f16_to_f32(p[i]) / (float)k);
}
RED_SIMD static void div_b(uint16_t *restrict p, size_t n, int k) {
  for (size_t i = 0; i < n; i++) p[i] = mp_f32_to_bf16(mp_bf16_to_f32(p[i]) / (float)k);
}

void reduce_divide(void *buf, size_t n, gpl_dtype_t dt, int k) {
  switch (dt) {
    case GPL_INT8: div_i8(buf, n, k); break;
    case GPL_UINT8: div_u8(buf, n, k); break;
    case GPL_INT32: div_i32(buf, n, k); break;
    case GPL_UINT32: div_u32(buf, n, k); break;
    case GPL_INT64: div_i64(buf, n, k); break;
    case GPL_UINT64: div_u64(buf, n, k); break;
    case GPL_HALF: div_h(buf, n, k); break;
    case GPL_FLOAT: div_f32(buf, n, k); break;
    case GPL_DOUBLE: div_f64(buf, n, k); break;
    case GPL_BFLOAT16: div_b(buf, n, k); break;
    default: break;
  }
}
