/* Elementwise mixed-precision math shared by the C reference and the CUDA kernels: one definition,
 * so host and device compute the same function bit for bit. */
#ifndef GPL_KERNELS_MPMATH_H
#define GPL_KERNELS_MPMATH_H

/* Everything here is integer bit manipulation plus IEEE fp32 multiplies (no additions, so nothing
 * can be contracted into an FMA) and exact conversions; it never depends on the compiler's
 * float16/bfloat16 support, and gives the same bits under gcc (x86 SSE/AVX, no FTZ/DAZ) and nvcc
 * (no --use_fast_math: fp32 multiply is mul.rn without flush-to-zero, 1/x is div.rn).
 *
 * Under nvcc every function is __host__ __device__; in C they are static inline. */

#include <stdint.h>
#include <string.h>

#include "kernels/fused.h"

#if defined(__CUDACC__)
#define MP_FN static __host__ __device__ __forceinline__
#else
#define MP_FN static inline
#endif

#define MP_F32_ABS_MASK 0x7fffffffu
#define MP_F32_INF 0x7f800000u
#define MP_F32_QNAN 0x7fc00000u /* the default NaN, produced for inf*0 */
#define MP_F16_INF 0x7c00u
#define MP_F16_MAX 0x7bffu     /* 65504 */
#define MP_BF16_INF 0x7f80u

MP_FN uint32_t mp_f32_bits(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

MP_FN float mp_f32_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/* 1 when the fp32 bit pattern is a NaN. (A signed compare: SIMD integer compares are signed.) */
MP_FN uint32_t mp_bits_isnan(uint32_t u) { return (int32_t)(u & MP_F32_ABS_MASK) > (int32_t)MP_F32_INF; }

/* 1 when x is neither inf nor NaN (exponent field not all ones). */
MP_FN int mp_isfinite(float x) { return (mp_f32_bits(x) & MP_F32_INF) != MP_F32_INF; }

/* x * s, IEEE fp32 round-to-nearest-even, with NaN results defined the same on every machine
 * (hardware differs: x86 returns the NaN operand quieted, CUDA a canonical 0x7fffffff):
 * a NaN x comes out as x quieted (sign and payload kept); else a NaN s as s quieted; a NaN made
 * from inf*0 as the default quiet NaN 0x7fc00000. Written branch-free so loops vectorise. */
MP_FN float mp_mul(float x, float s) {
  float p = x * s;
  uint32_t px = mp_f32_bits(x), ps = mp_f32_bits(s), pp = mp_f32_bits(p);
  uint32_t nan = mp_bits_isnan(px) ? (px | 0x00400000u)
                 : mp_bits_isnan(ps) ? (ps | 0x00400000u)
                                     : MP_F32_QNAN;
  return mp_f32_from_bits(mp_bits_isnan(pp) ? nan : pp);
}

/* fp32 -> bfloat16, round to nearest, ties to even. Overflow goes to inf as IEEE (the largest fp32
 * values round up into the inf pattern); subnormals round like any other value; NaN stays NaN
 * (quieted, sign and the top payload bits kept). */
MP_FN uint16_t mp_f32_to_bf16(float f) {
  uint32_t u = mp_f32_bits(f);
  uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  uint32_t nan = (u >> 16) | 0x0040u;
  return (uint16_t)(mp_bits_isnan(u) ? nan : rounded);
}

/* bfloat16 -> fp32: exact (the top half of an fp32). */
MP_FN float mp_bf16_to_f32(uint16_t h) { return mp_f32_from_bits((uint32_t)h << 16); }

/* fp32 -> IEEE binary16, round to nearest, ties to even, in integer arithmetic:
 *  - 2^-14 <= |x| < 65520: rebias the exponent and round the mantissa at bit 13 (a carry into the
 *    exponent is the correct result); |x| >= 65520 (max 65504 plus half an ulp, inf included) is
 *    clamped to 65520 first, which rounds to exactly the inf pattern, as IEEE overflow does;
 *  - |x| < 2^-14: subnormal result round(|x| * 2^24), by shifting the 24-bit significand right by
 *    126 - exponent (14..25; 25 and beyond round to zero; fp32 subnormals all give 0);
 *  - NaN -> NaN, quieted, sign and the top payload bits kept.
 * All paths are computed and one is selected, so a loop over it vectorises (variable shifts);
 * compares are on values below 2^31, so signed SIMD compares do. */
MP_FN uint16_t mp_f32_to_f16(float f) {
  uint32_t u = mp_f32_bits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t a = u & MP_F32_ABS_MASK;
  /* normal and overflow: fp32 exponent bias 127 -> fp16 bias 15 is a subtraction of 112 << 23 */
  uint32_t an = (a < 0x477ff000u ? a : 0x477ff000u) - 0x38000000u;
  uint32_t normal = (an + 0x0fffu + ((an >> 13) & 1u)) >> 13;
  /* subnormal: shift s in [14, 25] (clamped for the lanes that take another path) */
  uint32_t e = a >> 23;
  uint32_t ec = e > 112u ? 112u : e;
  uint32_t s = 126u - ec;
  s = s > 25u ? 25u : s;
  uint32_t m = (a & 0x007fffffu) | 0x00800000u;
  uint32_t sub = (m + ((1u << (s - 1u)) - 1u) + ((m >> s) & 1u)) >> s;
  uint32_t nan = 0x7e00u | ((a >> 13) & 0x03ffu);
  uint32_t r = (int32_t)a > (int32_t)MP_F32_INF ? nan : (int32_t)a >= 0x38800000 ? normal : sub;
  return (uint16_t)(sign | r);
}

/* IEEE binary16 -> fp32: exact for every input (subnormals through an exact int->float conversion
 * times 2^-24; inf and NaN keep sign and payload). */
MP_FN float mp_f16_to_f32(uint16_t h) {
  uint32_t sign = ((uint32_t)h & 0x8000u) << 16;
  uint32_t a = (uint32_t)h & 0x7fffu;
  uint32_t normal = (a << 13) + 0x38000000u;           /* rebias exponent 15 -> 127 */
  uint32_t special = (a << 13) + 0x70000000u;          /* exponent 31 -> 255: inf / NaN */
  uint32_t sub = mp_f32_bits((float)(int32_t)a * 0x1p-24f); /* a < 1024: exact */
  uint32_t r = a >= MP_F16_INF ? special : a >= 0x0400u ? normal : sub;
  return mp_f32_from_bits(sign | r);
}

/* The dynamic loss-scale rule of torch.amp.GradScaler (_amp_update_scale_), applied in place:
 * found_inf: scale *= backoff, good_steps = 0, skipped = 1, overflow_steps += 1;
 * clean:     good_steps += 1; when it reaches growth_interval, scale *= growth (only if the result
 *            stays finite) and good_steps = 0; skipped = 0.
 * Then inv_scale = 1/scale (IEEE division on host and device) and found_inf = 0. */
MP_FN void mp_scaler_update(kern_scaler_t *sc) {
  if (sc->found_inf) {
    sc->scale = sc->scale * sc->backoff_factor;
    sc->good_steps = 0;
    sc->skipped = 1;
    sc->overflow_steps += 1;
  } else {
    sc->skipped = 0;
    sc->good_steps += 1;
    if (sc->good_steps >= sc->growth_interval) {
      float grown = sc->scale * sc->growth_factor;
      if (mp_isfinite(grown)) sc->scale = grown;
      sc->good_steps = 0;
    }
  }
  sc->inv_scale = 1.0f / sc->scale;
  sc->found_inf = 0;
}

#endif
