/* Test helpers for the kernels: seeded random numbers, independent float64 decoders and a
 * round-to-nearest-even oracle, NaN-strict comparisons, poison patterns and misaligned layouts. */
#ifndef GPL_TESTS_KERN_TESTUTIL_H
#define GPL_TESTS_KERN_TESTUTIL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/fused.h"

/* ---- random numbers: splitmix64, seeded from the clock unless GPL_TEST_SEED replays a run ---- */

static uint64_t kt_rng_state;

static inline uint64_t kt_rand64(void) {
  uint64_t z = (kt_rng_state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Seed from GPL_TEST_SEED or the clock; print it so a failure can be replayed. */
static inline uint64_t kt_seed(const char *prog) {
  const char *s = getenv("GPL_TEST_SEED");
  uint64_t seed;
  if (s && *s) {
    seed = strtoull(s, NULL, 0);
  } else {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    seed = (uint64_t)ts.tv_sec * 1000000007ull ^ (uint64_t)ts.tv_nsec;
  }
  kt_rng_state = seed;
  printf("%s: seed %llu (replay with GPL_TEST_SEED=%llu)\n", prog, (unsigned long long)seed,
         (unsigned long long)seed);
  fflush(stdout);
  return seed;
}

static inline uint32_t kt_rand_below(uint32_t n) { return (uint32_t)(kt_rand64() % n); }

static inline float kt_bits_f(uint32_t u) {
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
}
static inline uint32_t kt_f_bits(float f) {
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
}

/* A random finite float of random sign with log2|x| uniform in [lo, hi). */
static inline float kt_rand_float(int lo, int hi) {
  double m = 1.0 + (double)(kt_rand64() >> 11) * 0x1p-53;
  int e = lo + (int)kt_rand_below((uint32_t)(hi - lo));
  double v = ldexp(m, e);
  if (kt_rand64() & 1) v = -v;
  return (float)v;
}

/* ---- independent decoders (float64 arithmetic on the fields, no bit tricks of mpmath.h) ---- */

static inline double kt_dec_bf16(uint16_t h) {
  int sign = h >> 15, e = (h >> 7) & 0xff, m = h & 0x7f;
  double v;
  if (e == 0xff) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp(m, -133);
  else v = ldexp(128 + m, e - 134);
  return sign ? -v : v;
}

static inline double kt_dec_f16(uint16_t h) {
  int sign = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  double v;
  if (e == 0x1f) v = m ? NAN : INFINITY;
  else if (e == 0) v = ldexp(m, -24);
  else v = ldexp(1024 + m, e - 25);
  return sign ? -v : v;
}

static inline double kt_dec_wire(const void *bucket, gpl_dtype_t wire, size_t k) {
  if (wire == GPL_FLOAT) return ((const float *)bucket)[k];
  uint16_t h = ((const uint16_t *)bucket)[k];
  return wire == GPL_BFLOAT16 ? kt_dec_bf16(h) : kt_dec_f16(h);
}

/* Round-to-nearest-even of a (not NaN) to a binary format with `frac` fraction bits, minimum
 * normal exponent emin and largest finite value maxf, in float64 (exact for fp32 inputs): the
 * quantum is 2^(max(floor(log2|a|), emin) - frac), rint() rounds ties to even, and anything that
 * rounds beyond maxf is inf. */
static inline double kt_round_oracle(double a, int frac, int emin, double maxf) {
  if (isinf(a) || a == 0) return a;
  double m = fabs(a);
  int e = ilogb(m);
  if (e < emin) e = emin;
  double q = ldexp(1.0, e - frac);
  double r = rint(m / q) * q;
  if (r > maxf) r = INFINITY;
  return a < 0 ? -r : r;
}
static inline double kt_oracle_bf16(float p) {
  return kt_round_oracle(p, 7, -126, ldexp(255, 120)); /* (2 - 2^-7) * 2^127 */
}
static inline double kt_oracle_f16(float p) { return kt_round_oracle(p, 10, -14, 65504.0); }

/* got matches want exactly: NaN only when want is NaN; zeros must agree in sign. */
static inline int kt_same(double got, double want) {
  if (isnan(want)) return isnan(got);
  if (isnan(got)) return 0;
  return got == want && signbit(got) == signbit(want);
}

/* got is within rel*|want| (plus abs) of want; NaN only when want is NaN, inf only when equal. */
static inline int kt_close(double got, double want, double rel, double abs_tol) {
  if (isnan(want)) return isnan(got);
  if (isnan(got)) return 0;
  if (isinf(want) || isinf(got)) return got == want;
  return fabs(got - want) <= rel * fabs(want) + abs_tol;
}

/* ---- poison: a NaN with a payload no conversion produces (signalling, so never a result) ---- */

#define KT_POISON_F32 0x7fa5a5a5u
/* Signalling NaNs, which no conversion produces (every NaN they output is quieted). One pattern
 * cannot serve both 16-bit types: 0x7da5 is a NaN in fp16 but a finite number (~2^124) in bf16. */
#define KT_POISON_F16 0x7da5u
#define KT_POISON_BF16 0x7fa5u
#define KT_POISON_16(wire) ((wire) == GPL_HALF ? KT_POISON_F16 : KT_POISON_BF16)

static inline void kt_poison(void *p, size_t count, gpl_dtype_t wire) {
  if (wire == GPL_FLOAT) {
    for (size_t i = 0; i < count; i++) ((uint32_t *)p)[i] = KT_POISON_F32;
  } else {
    for (size_t i = 0; i < count; i++) ((uint16_t *)p)[i] = (uint16_t)KT_POISON_16(wire);
  }
}

/* index of the first element still holding the poison, or count when none */
static inline size_t kt_find_poison(const void *p, size_t count, gpl_dtype_t wire) {
  for (size_t i = 0; i < count; i++) {
    if (wire == GPL_FLOAT ? ((const uint32_t *)p)[i] == KT_POISON_F32
                          : ((const uint16_t *)p)[i] == KT_POISON_16(wire))
      return i;
  }
  return count;
}

/* number of elements holding the poison */
static inline size_t kt_count_poison(const void *p, size_t count, gpl_dtype_t wire) {
  size_t c = 0;
  for (size_t i = 0; i < count; i++)
    c += wire == GPL_FLOAT ? ((const uint32_t *)p)[i] == KT_POISON_F32
                           : ((const uint16_t *)p)[i] == KT_POISON_16(wire);
  return c;
}

/* ---- layouts: n tensors of given sizes carved from one 64-byte aligned arena, each starting
 * `skew` floats (0..3) past a 64-byte boundary ---- */

typedef struct kt_layout_s {
  int n;
  kern_tensor_t *t;
  float *arena;
  size_t total;
} kt_layout_t;

static inline void kt_layout_make(kt_layout_t *L, int n, const size_t *sizes, const int *skew) {
  size_t cap = 0;
  for (int i = 0; i < n; i++) cap += (sizes[i] + 3 + 15) & ~(size_t)15;
  L->n = n;
  L->t = (kern_tensor_t *)calloc((size_t)(n > 0 ? n : 1), sizeof *L->t);
  L->arena = (float *)aligned_alloc(64, (cap + 16) * sizeof(float));
  L->total = 0;
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    L->t[i].data = L->arena + off + (size_t)skew[i];
    L->t[i].count = sizes[i];
    L->total += sizes[i];
    off += (sizes[i] + 3 + 15) & ~(size_t)15;
  }
}

static inline void kt_layout_free(kt_layout_t *L) {
  free(L->t);
  free(L->arena);
  memset(L, 0, sizeof *L);
}

#endif
