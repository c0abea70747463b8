/* Elementwise host reductions for every dtype and op, as plain counted loops over restrict
 * pointers with branch-free bodies so gcc vectorises them (built at -O3 without trapping math; on
 * x86-64 with AVX-512 and AVX2 clones picked at load time, as kernels/fused_ref.c does). */
#include "comm/reduce.h"

#include <stdint.h>
#include <string.h>

#include "kernels/mpmath.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__ELF__)
#define RED_SIMD __attribute__((target_clones("arch=x86-64-v4", "avx2", "default")))
#define RED_HAVE_F16C 1
#include <immintrin.h>
#else
#define RED_SIMD
#define RED_HAVE_F16C 0
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
RED_F16(b_sum, mp_bf16_to_f32, mp_f32_to_bf16, OP_SUM)
RED_F16(b_prod, mp_bf16_to_f32, mp_f32_to_bf16, OP_PROD)
RED_F16(b_max, mp_bf16_to_f32, mp_f32_to_bf16, OP_MAX)
RED_F16(b_min, mp_bf16_to_f32, mp_f32_to_bf16, OP_MIN)

/* ---- IEEE half through blocks of float ----
 * The integer-arithmetic conversions of mpmath.h cost more than the reduction itself; where the CPU
 * has F16C (every x86-64 since 2012) one instruction per 8 values does the same conversion, bit for
 * bit (round to nearest even, overflow to inf, NaN quieted with its top payload bits: see
 * test_comm_reduce, which compares both over every half and a sweep of floats). Half is therefore
 * converted a block at a time into float and reduced there, with the float operations in the same
 * operand order as everywhere else in this file. */

enum { BLOCK = 512 }; /* floats per block: the accumulator stays in L1 */

RED_SIMD static void h_to_f_ref(float *restrict o, const uint16_t *restrict a, size_t n) {
  for (size_t i = 0; i < n; i++) o[i] = mp_f16_to_f32(a[i]);
}
RED_SIMD static void h_from_f_ref(uint16_t *restrict o, const float *restrict a, size_t n) {
  for (size_t i = 0; i < n; i++) o[i] = mp_f32_to_f16(a[i]);
}

#if RED_HAVE_F16C
__attribute__((target("avx,f16c"))) static void h_to_f_f16c(float *restrict o,
                                                             const uint16_t *restrict a, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(o + i, _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)(a + i))));
  for (; i < n; i++) o[i] = mp_f16_to_f32(a[i]);
}
__attribute__((target("avx,f16c"))) static void h_from_f_f16c(uint16_t *restrict o,
                                                               const float *restrict a, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128((__m128i *)(void *)(o + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(a + i), _MM_FROUND_TO_NEAREST_INT));
  for (; i < n; i++) o[i] = mp_f32_to_f16(a[i]);
}
#endif

typedef void (*h_to_f_fn)(float *restrict, const uint16_t *restrict, size_t);
typedef void (*h_from_f_fn)(uint16_t *restrict, const float *restrict, size_t);
static h_to_f_fn g_h_to_f = h_to_f_ref;
static h_from_f_fn g_h_from_f = h_from_f_ref;

static int f16c_available(void) {
#if RED_HAVE_F16C
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
#else
  return 0;
#endif
}

int reduce_use_f16c(int on) {
  int use = on && f16c_available();
#if RED_HAVE_F16C
  g_h_to_f = use ? h_to_f_f16c : h_to_f_ref;
  g_h_from_f = use ? h_from_f_f16c : h_from_f_ref;
#endif
  return use;
}

__attribute__((constructor)) static void reduce_pick_f16c(void) { (void)reduce_use_f16c(1); }

/* c[i] = OP(c[i], t[i]) in float: the accumulation step of reduce_many */
#define ACC_F32(name, OP)                                                                \
  RED_SIMD static void name(float *restrict c, const float *restrict t, size_t n) {     \
    for (size_t i = 0; i < n; i++) c[i] = OP(c[i], t[i]);                               \
  }
ACC_F32(f_acc_sum, OP_SUM)
ACC_F32(f_acc_prod, OP_PROD)
ACC_F32(f_acc_max, OP_MAX)
ACC_F32(f_acc_min, OP_MIN)
typedef void (*f_op_fn)(float *restrict, const float *restrict, size_t);

/* b[i] = OP(a[i], b[i]), reduce_into's rule: the accumulation step with a in the accumulator */
static void h_into(uint16_t *b, const uint16_t *a, size_t n, f_op_fn acc) {
  float fa[BLOCK], fb[BLOCK];
  for (size_t at = 0; at < n; at += BLOCK) {
    size_t m = n - at < BLOCK ? n - at : BLOCK;
    g_h_to_f(fa, a + at, m);
    g_h_to_f(fb, b + at, m);
    acc(fa, fb, m);
    g_h_from_f(b + at, fa, m);
  }
}
static void h_sum(uint16_t *b, const uint16_t *a, size_t n) { h_into(b, a, n, f_acc_sum); }
static void h_prod(uint16_t *b, const uint16_t *a, size_t n) { h_into(b, a, n, f_acc_prod); }
static void h_max(uint16_t *b, const uint16_t *a, size_t n) { h_into(b, a, n, f_acc_max); }
static void h_min(uint16_t *b, const uint16_t *a, size_t n) { h_into(b, a, n, f_acc_min); }

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

/* ---- many sources at once (bfloat16: its conversions are a shift and a rounding add) ---- */

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
F16_CVT(b, mp_bf16_to_f32, mp_f32_to_bf16)

typedef void (*acc_fn)(float *restrict, const uint16_t *restrict, size_t);

void reduce_many(void *dst, const void *const *src, int nsrc, size_t n, gpl_dtype_t dt,
                 gpl_redop_t op) {
  if ((unsigned)dt >= GPL_DTYPE_COUNT || n == 0 || nsrc < 1) return;
  int o = op == GPL_OP_PROD ? 1 : op == GPL_OP_MAX ? 2 : op == GPL_OP_MIN ? 3 : 0;
  if (dt == GPL_HALF || dt == GPL_BFLOAT16) {
    static const acc_fn b_accs[4] = {b_acc_sum, b_acc_prod, b_acc_max, b_acc_min};
    static const f_op_fn f_accs[4] = {f_acc_sum, f_acc_prod, f_acc_max, f_acc_min};
    float acc[BLOCK], tmp[BLOCK];
    for (size_t at = 0; at < n; at += BLOCK) {
      size_t m = n - at < BLOCK ? n - at : BLOCK;
      const uint16_t *first = (const uint16_t *)src[0] + at;
      if (dt == GPL_HALF) {
        g_h_to_f(acc, first, m);
        for (int q = 1; q < nsrc; q++) {
          g_h_to_f(tmp, (const uint16_t *)src[q] + at, m);
          f_accs[o](acc, tmp, m);
        }
        g_h_from_f((uint16_t *)dst + at, acc, m);
      } else {
        b_to_f(acc, first, m);
        for (int q = 1; q < nsrc; q++) b_accs[o](acc, (const uint16_t *)src[q] + at, m);
        b_from_f((uint16_t *)dst + at, acc, m);
      }
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
RED_SIMD static void div_f32_block(float *restrict p, size_t n, float k) {
  for (size_t i = 0; i < n; i++) p[i] = p[i] / k;
}
static void div_h(uint16_t *p, size_t n, int k) {
  float f[BLOCK];
  for (size_t at = 0; at < n; at += BLOCK) {
    size_t m = n - at < BLOCK ? n - at : BLOCK;
    g_h_to_f(f, p + at, m);
    div_f32_block(f, m, (float)k);
    g_h_from_f(p + at, f, m);
  }
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
