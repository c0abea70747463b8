/* The host reductions of comm/reduce.c for IEEE half: the F16C path and mpmath.h's portable path give
 * the same bits for every input, and both match an element-by-element reference built from mpmath.h. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../kernels/kern_testutil.h"
#include "comm/reduce.h"
#include "kernels/mpmath.h"

static const gpl_redop_t kOps[] = {GPL_OP_SUM, GPL_OP_PROD, GPL_OP_MAX, GPL_OP_MIN};

static int h_isnan(uint16_t h) { return (h & 0x7fffu) > 0x7c00u; }

/* the value reduce_into must give for one element: FROM(OP(TO(a), TO(b))), Open MPI's max/min rule */
static uint16_t ref_into(uint16_t a, uint16_t b, gpl_redop_t op) {
  float x = mp_f16_to_f32(a), y = mp_f16_to_f32(b), r;
  switch (op) {
    case GPL_OP_PROD: r = x * y; break;
    case GPL_OP_MAX: r = (y > x) ? y : x; break;
    case GPL_OP_MIN: r = (y < x) ? y : x; break;
    default: r = x + y; break;
  }
  return mp_f32_to_f16(r);
}

/* equal bits, or both NaN (which NaN a float operation returns is the hardware's choice) */
static void expect_same(uint16_t got, uint16_t want, const char *what, size_t i, uint16_t a, uint16_t b) {
  if (got == want || (h_isnan(got) && h_isnan(want))) return;
  fail_msg("%s, element %zu: a=%#06x b=%#06x -> %#06x, reference %#06x", what, i, a, b, got, want);
}

static uint16_t rand_half(void) {
  uint32_t r = kt_rand_below(16);
  if (r == 0) return (uint16_t)(kt_rand_below(2) ? 0x7c00u : 0xfc00u); /* +-inf */
  if (r == 1) return (uint16_t)(kt_rand_below(0x400)) | (uint16_t)(kt_rand_below(2) << 15); /* subnormal */
  if (r == 2) return (uint16_t)(0x7bffu | (kt_rand_below(2) << 15));                     /* +-max */
  return (uint16_t)kt_rand64();                                                         /* any */
}

/* reduce_into over random pairs, every op, lengths that leave tails and pointers off by one element:
 * the two conversion paths agree bit for bit and both match the reference. */
static void test_into_random(void **state) {
  (void)state;
  enum { N = 100003 };
  uint16_t *a = malloc((N + 1) * 2), *b = malloc((N + 1) * 2), *b0 = malloc((N + 1) * 2),
           *b1 = malloc((N + 1) * 2);
  for (size_t q = 0; q < sizeof kOps / sizeof kOps[0]; q++) {
    for (int rep = 0; rep < 3; rep++) {
      size_t n = rep == 0 ? N : 1 + kt_rand_below(40), off = kt_rand_below(2);
      for (size_t i = 0; i < n + 1; i++) { a[i] = rand_half(); b[i] = rand_half(); }
      memcpy(b0, b, (n + 1) * 2);
      memcpy(b1, b, (n + 1) * 2);
      reduce_use_f16c(0);
      reduce_into(b0 + off, a + off, n, GPL_HALF, kOps[q]);
      reduce_use_f16c(1);
      reduce_into(b1 + off, a + off, n, GPL_HALF, kOps[q]);
      for (size_t i = off; i < n + off; i++) {
        if (b0[i] != b1[i])
          fail_msg("op %d element %zu: portable %#06x, F16C %#06x", (int)kOps[q], i, b0[i], b1[i]);
        expect_same(b1[i], ref_into(a[i], b[i], kOps[q]), "reduce_into", i, a[i], b[i]);
      }
      if (off == 1 && (b0[0] != b[0] || b1[0] != b[0])) fail_msg("element before the range written");
      if (off == 0 && (b0[n] != b[n] || b1[n] != b[n])) fail_msg("element after the range written");
    }
  }
  free(a); free(b); free(b0); free(b1);
  reduce_use_f16c(1);
}

/* reduce_divide over every half and many divisors: float results of all kinds (ties, subnormals,
 * underflow to zero) go through the float -> half conversion, on both paths, bit for bit equal. */
static void test_divide_every_half(void **state) {
  (void)state;
  enum { N = 65536 };
  uint16_t *h0 = malloc(N * 2), *h1 = malloc(N * 2);
  for (int k = 1; k <= 300; k += (k < 20 ? 1 : 7)) {
    for (size_t i = 0; i < N; i++) h0[i] = h1[i] = (uint16_t)i;
    reduce_use_f16c(0);
    reduce_divide(h0, N, GPL_HALF, k);
    reduce_use_f16c(1);
    reduce_divide(h1, N, GPL_HALF, k);
    for (size_t i = 0; i < N; i++) {
      if (h0[i] != h1[i]) fail_msg("%#06zx / %d: portable %#06x, F16C %#06x", i, k, h0[i], h1[i]);
      uint16_t want = mp_f32_to_f16(mp_f16_to_f32((uint16_t)i) / (float)k);
      expect_same(h1[i], want, "reduce_divide", i, (uint16_t)i, (uint16_t)k);
    }
  }
  free(h0); free(h1);
}

/* reduce_many: sources in order, accumulated in float, rounded once; both paths agree. */
static void test_many(void **state) {
  (void)state;
  enum { N = 4099, S = 5 };
  uint16_t *src[S], *d0 = malloc(N * 2), *d1 = malloc(N * 2);
  for (int s = 0; s < S; s++) {
    src[s] = malloc(N * 2);
    for (size_t i = 0; i < N; i++) {
      /* moderate values, so that sums and products stay mostly finite and rounding matters */
      float f = (float)((int)kt_rand_below(20001) - 10000) / 997.0f;
      src[s][i] = kt_rand_below(50) == 0 ? rand_half() : mp_f32_to_f16(f);
    }
  }
  for (size_t q = 0; q < sizeof kOps / sizeof kOps[0]; q++) {
    for (int ns = 1; ns <= S; ns++) {
      reduce_use_f16c(0);
      reduce_many(d0, (const void *const *)src, ns, N, GPL_HALF, kOps[q]);
      reduce_use_f16c(1);
      reduce_many(d1, (const void *const *)src, ns, N, GPL_HALF, kOps[q]);
      for (size_t i = 0; i < N; i++) {
        if (d0[i] != d1[i]) fail_msg("op %d, %d sources, element %zu: %#06x vs %#06x", (int)kOps[q], ns, i, d0[i], d1[i]);
        float acc = mp_f16_to_f32(src[0][i]);
        for (int s = 1; s < ns; s++) {
          float t = mp_f16_to_f32(src[s][i]);
          acc = kOps[q] == GPL_OP_PROD ? acc * t
                : kOps[q] == GPL_OP_MAX ? ((t > acc) ? t : acc)
                : kOps[q] == GPL_OP_MIN ? ((t < acc) ? t : acc)
                                        : acc + t;
        }
        expect_same(d1[i], mp_f32_to_f16(acc), "reduce_many", i, src[0][i], ns > 1 ? src[1][i] : 0);
      }
    }
  }
  for (int s = 0; s < S; s++) free(src[s]);
  free(d0); free(d1);
}

int main(void) {
  kt_seed("test_comm_reduce");
  printf("F16C %s on this CPU\n", reduce_use_f16c(1) ? "used" : "not available: portable path only");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_into_random),
      cmocka_unit_test(test_divide_every_half),
      cmocka_unit_test(test_many),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
