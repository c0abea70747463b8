/* Unit tests of the kernels' C reference: conversions against float64 oracles on fresh random
 * inputs, rounding edge cases, bucket layouts (empty, odd, misaligned, many tensors), the overflow
 * flag and the loss-scale rule. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "gpulaunch/error.h"
#include "kern_testutil.h"
#include "kernels/mpmath.h"

static uint64_t g_seed;

static const gpl_dtype_t kWires[] = {GPL_FLOAT, GPL_BFLOAT16, GPL_HALF};

/* ---- conversions, element by element ---- */

/* Every bf16 and fp16 bit pattern decodes exactly (against the float64 decoder) and, unless NaN,
 * converts back to itself; NaN patterns stay NaN with their sign. */
static void test_decode_exhaustive(void **state) {
  for (uint32_t h = 0; h < 65536; h++) {
    double want = kt_dec_bf16((uint16_t)h);
    float got = mp_bf16_to_f32((uint16_t)h);
    if (!kt_same(got, want)) fail_msg("bf16 %#06x decodes to %a, want %a", h, got, want);
    if (isnan(want)) {
      assert_int_equal(signbit(got) != 0, (h & 0x8000) != 0);
      uint16_t back = mp_f32_to_bf16(got);
      assert_true(isnan(kt_dec_bf16(back)));
      assert_int_equal(back & 0x8040, (h & 0x8000) | 0x40); /* sign kept, quiet */
    } else {
      assert_int_equal(mp_f32_to_bf16(got), h);
    }
    want = kt_dec_f16((uint16_t)h);
    got = mp_f16_to_f32((uint16_t)h);
    if (!kt_same(got, want)) fail_msg("fp16 %#06x decodes to %a, want %a", h, got, want);
    if (isnan(want)) {
      assert_int_equal(signbit(got) != 0, (h & 0x8000) != 0);
      uint16_t back = mp_f32_to_f16(got);
      assert_true(isnan(kt_dec_f16(back)));
      assert_int_equal(back & 0x8200, (h & 0x8000) | 0x200);
    } else {
      assert_int_equal(mp_f32_to_f16(got), h);
    }
  }
}

/* fp32 -> bf16/fp16 on random bit patterns (all classes: subnormal, normal, huge, inf, NaN) and on
 * random values near the fp16 range, against the float64 round-to-nearest-even oracle. */
static void test_convert_random_vs_oracle(void **state) {
  for (int i = 0; i < 1 << 20; i++) {
    uint32_t u;
    if (i & 1) u = (uint32_t)kt_rand64();
    else u = kt_f_bits(kt_rand_float(-27, 17)); /* fp16 subnormals ... overflow */
    float x = kt_bits_f(u);
    double wb = isnan(x) ? NAN : kt_oracle_bf16(x);
    double wh = isnan(x) ? NAN : kt_oracle_f16(x);
    uint16_t b = mp_f32_to_bf16(x), h = mp_f32_to_f16(x);
    if (!kt_same(kt_dec_bf16(b), wb))
      fail_msg("bf16(%#010x = %a) = %#06x (%a), want %a", u, x, b, kt_dec_bf16(b), wb);
    if (!kt_same(kt_dec_f16(h), wh))
      fail_msg("fp16(%#010x = %a) = %#06x (%a), want %a", u, x, h, kt_dec_f16(h), wh);
    if (isnan(x)) { /* sign kept, quiet bit set */
      assert_int_equal(b >> 15, u >> 31);
      assert_int_equal(h >> 15, u >> 31);
      assert_true(b & 0x40);
      assert_true(h & 0x200);
    }
  }
}

/* Hand-picked cases: exact ties (to even), just off ties, subnormals, max finite, overflow, inf,
 * NaN, signed zeros. Expected bits worked out by hand from the formats. */
static void test_convert_edges(void **state) {
  static const struct {
    uint32_t in;
    uint16_t bf16, f16;
  } cases[] = {
      {0x3f800000, 0x3f80, 0x3c00}, /* 1.0 */
      {0x00000000, 0x0000, 0x0000}, /* +0 */
      {0x80000000, 0x8000, 0x8000}, /* -0 */
      /* bf16 ties: 1 + 2^-8 lies halfway between 0x3f80 and 0x3f81 -> even 0x3f80 */
      {0x3f808000, 0x3f80, 0x3c04},
      {0x3f818000, 0x3f82, 0x3c0c}, /* halfway 0x3f81/0x3f82 -> 0x3f82 */
      {0x3f808001, 0x3f81, 0x3c04}, /* just above the tie */
      {0x3f807fff, 0x3f80, 0x3c04}, /* just below the tie */
      {0xbf818000, 0xbf82, 0xbc0c}, /* negative tie */
      /* fp16 ties: 1 + 2^-11 halfway 0x3c00/0x3c01 -> 0x3c00; 1 + 3*2^-11 -> 0x3c02 */
      {0x3f801000, 0x3f80, 0x3c00},
      {0x3f803000, 0x3f80, 0x3c02},
      {0x3f801001, 0x3f80, 0x3c01},
      {0x3f800fff, 0x3f80, 0x3c00},
      /* fp16 max finite 65504, the last value below the overflow threshold, the threshold */
      {0x477fe000, 0x4780, 0x7bff},
      {0x477fefff, 0x4780, 0x7bff},
      {0x477ff000, 0x4780, 0x7c00}, /* 65520 -> inf (tie to even: 0x7bff is odd) */
      {0xc77ff000, 0xc780, 0xfc00},
      {0x4e6e6b28, 0x4e6e, 0x7c00}, /* 1e9 */
      /* bf16 max finite and overflow */
      {0x7f7f0000, 0x7f7f, 0x7c00},
      {0x7f7f7fff, 0x7f7f, 0x7c00},
      {0x7f7f8000, 0x7f80, 0x7c00}, /* tie between 0x7f7f (odd) and inf -> inf */
      {0x7f7fffff, 0x7f80, 0x7c00}, /* FLT_MAX */
      {0xff7fffff, 0xff80, 0xfc00},
      /* infinities */
      {0x7f800000, 0x7f80, 0x7c00},
      {0xff800000, 0xff80, 0xfc00},
      /* fp16 subnormals: 2^-24 the smallest; 2^-25 a tie with 0 -> 0; 3*2^-25 tie 1/2 -> 2 */
      {0x33800000, 0x3380, 0x0001},
      {0x33000000, 0x3300, 0x0000},
      {0x33000001, 0x3300, 0x0001},
      {0x33c00000, 0x33c0, 0x0002},
      {0xb3800000, 0xb380, 0x8001},
      {0x387fc000, 0x3880, 0x03ff}, /* 1023 * 2^-24, the largest subnormal */
      {0x387fe000, 0x3880, 0x0400}, /* 1023.5 * 2^-24: tie -> even 0x400, the smallest normal */
      {0x38800000, 0x3880, 0x0400}, /* 2^-14 */
      {0x32ffffff, 0x3300, 0x0000}, /* just below 2^-25 */
      /* fp32 subnormals: bf16 keeps them (rounded), fp16 flushes by rounding to 0 */
      {0x00010000, 0x0001, 0x0000},
      {0x00008000, 0x0000, 0x0000}, /* tie -> 0 */
      {0x00018000, 0x0002, 0x0000}, /* tie -> 2 */
      {0x80000001, 0x8000, 0x8000},
      /* NaN: quiet, sign and the top payload bits kept */
      {0x7fc00000, 0x7fc0, 0x7e00},
      {0xffc00000, 0xffc0, 0xfe00},
      {0x7f800001, 0x7fc0, 0x7e00}, /* signalling NaN, low payload: quietened */
      {0x7fa00000, 0x7fe0, 0x7f00},
      {0xff812345, 0xffc1, 0xfe09},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    float x = kt_bits_f(cases[i].in);
    uint16_t b = mp_f32_to_bf16(x), h = mp_f32_to_f16(x);
    if (b != cases[i].bf16) fail_msg("bf16(%#010x) = %#06x, want %#06x", cases[i].in, b, cases[i].bf16);
    if (h != cases[i].f16) fail_msg("fp16(%#010x) = %#06x, want %#06x", cases[i].in, h, cases[i].f16);
    /* the independent oracle agrees with the hand-written table */
    if (!isnan(x)) {
      assert_true(kt_same(kt_dec_bf16(b), kt_oracle_bf16(x)));
      assert_true(kt_same(kt_dec_f16(h), kt_oracle_f16(x)));
    }
  }
}

/* The NaN-aware multiply: ordinary products are IEEE products; NaN results defined. */
static void test_mul(void **state) {
  for (int i = 0; i < 100000; i++) {
    float x = kt_rand_float(-140, 120), s = kt_rand_float(-30, 30);
    float want = (float)((double)x * (double)s); /* one rounding of an exact product */
    assert_int_equal(kt_f_bits(mp_mul(x, s)), kt_f_bits(want));
  }
  assert_int_equal(kt_f_bits(mp_mul(kt_bits_f(0xffa00001), 2.0f)), 0xffe00001); /* x's NaN */
  assert_int_equal(kt_f_bits(mp_mul(3.0f, kt_bits_f(0x7f800005))), 0x7fc00005); /* s's NaN */
  assert_int_equal(kt_f_bits(mp_mul(INFINITY, 0.0f)), 0x7fc00000);
  assert_int_equal(kt_f_bits(mp_mul(-INFINITY, 0.5f)), 0xff800000);
  assert_int_equal(kt_f_bits(mp_mul(-0.0f, 4.0f)), 0x80000000);
  assert_false(mp_isfinite(INFINITY));
  assert_false(mp_isfinite(NAN));
  assert_true(mp_isfinite(3.4e38f));
  assert_true(mp_isfinite(kt_bits_f(1)));
}

/* ---- pack / unpack over buckets ---- */

/* Random layout: n tensors, sizes 0..maxsz (some empty, many odd), each skewed 0..3 floats. */
static void random_layout(kt_layout_t *L, int n, size_t maxsz) {
  size_t *sizes = malloc((size_t)n * sizeof *sizes);
  int *skew = malloc((size_t)n * sizeof *skew);
  for (int i = 0; i < n; i++) {
    uint32_t r = kt_rand_below(8);
    sizes[i] = r == 0 ? 0 : r == 1 ? 1 + 2 * kt_rand_below(8) : kt_rand_below((uint32_t)maxsz + 1);
    skew[i] = (int)kt_rand_below(4);
  }
  kt_layout_make(L, n, sizes, skew);
  free(sizes);
  free(skew);
}

/* The wire bits for x packed with scale s, from mpmath.h alone. */
static uint32_t wire_bits(float x, float s, gpl_dtype_t wire) {
  float p = mp_mul(x, s);
  return wire == GPL_FLOAT ? kt_f_bits(p) : wire == GPL_BFLOAT16 ? mp_f32_to_bf16(p) : mp_f32_to_f16(p);
}

/* Pack random values of all magnitudes with a random prescale and check every bucket element
 * against the float64 reference: written (no poison left), within the dtype's relative bound of
 * x*s computed in float64, and exactly the nearest-even rounding of the fp32 product. */
static void check_pack(gpl_dtype_t wire, int n, size_t maxsz) {
  kt_layout_t L;
  random_layout(&L, n, maxsz);
  for (int i = 0; i < n; i++) {
    for (size_t j = 0; j < L.t[i].count; j++) {
      uint32_t r = kt_rand_below(64);
      L.t[i].data[j] = r == 0 ? kt_bits_f((uint32_t)kt_rand64()) /* any class, NaN included */
                       : r == 1 ? 0.0f
                       : kt_rand_float(-30, 18);
    }
  }
  float s = kt_rand_below(2) ? ldexpf(1.0f, (int)kt_rand_below(8) - 4)
                             : (float)(0.25 + (double)(kt_rand64() >> 11) * 0x1p-53);
  size_t ws = gpl_dtype_size(wire);
  void *bucket = aligned_alloc(64, ((L.total * ws + 63) / 64 + 1) * 64);
  kt_poison(bucket, L.total, wire);
  assert_int_equal(kern_pack_ref(L.t, n, bucket, wire, s), 0);
  size_t p = kt_find_poison(bucket, L.total, wire);
  if (p != L.total) fail_msg("bucket element %zu of %zu not written", p, L.total);

  /* relative bounds per dtype (normal range) and absolute ones for fp16 subnormals */
  const double rel = wire == GPL_FLOAT ? 0x1p-24 : wire == GPL_BFLOAT16 ? 0x1p-8 : 0x1p-11;
  const double abs_tol = wire == GPL_HALF ? 0x1p-25 : wire == GPL_BFLOAT16 ? 0x1p-134 : 0x1p-150;
  size_t k = 0;
  for (int i = 0; i < n; i++) {
    for (size_t j = 0; j < L.t[i].count; j++, k++) {
      float x = L.t[i].data[j];
      double ref = (double)x * (double)s;        /* float64 reference */
      float p32 = x * s;                          /* the fp32 product the spec rounds */
      double got = kt_dec_wire(bucket, wire, k);
      double exact = isnan(p32) ? NAN
                     : wire == GPL_FLOAT ? (double)p32
                     : wire == GPL_BFLOAT16 ? kt_oracle_bf16(p32)
                                            : kt_oracle_f16(p32);
      if (!kt_same(got, exact))
        fail_msg("wire %s, tensor %d elem %zu: x=%a s=%a -> %a, want %a", gpl_dtype_name(wire), i, j,
                 x, s, got, exact);
      /* and bit for bit the composition of mpmath.h functions (NaN payloads included) */
      uint32_t bits = wire == GPL_FLOAT ? ((const uint32_t *)bucket)[k] : ((const uint16_t *)bucket)[k];
      if (bits != wire_bits(x, s, wire))
        fail_msg("wire %s, tensor %d elem %zu: x=%#x s=%a -> %#x, mpmath.h gives %#x",
                 gpl_dtype_name(wire), i, j, kt_f_bits(x), s, bits, wire_bits(x, s, wire));
      /* the independent oracle says the wire type overflowed (fp16 from 65520, bf16 from 0x1.ffp127) */
      int overflow = isinf(exact);
      if (!overflow && !kt_close(got, ref, rel, abs_tol))
        fail_msg("wire %s, tensor %d elem %zu: x=%a s=%a -> %a, float64 %a out of bounds",
                 gpl_dtype_name(wire), i, j, x, s, got, ref);
    }
  }
  free(bucket);
  kt_layout_free(&L);
}

static void test_pack_random(void **state) {
  for (size_t w = 0; w < 3; w++) {
    check_pack(kWires[w], 1, 100000);
    check_pack(kWires[w], 17, 5000);
    check_pack(kWires[w], 1000, 64); /* many small tensors in one bucket */
  }
}

/* Scales that make NaNs from non-NaN inputs (0, inf, NaN) or that are tiny: pack and unpack still
 * give exactly mpmath.h's bits, whichever internal loop the reference picks for the scale. */
static void test_special_scales(void **state) {
  const float scales[] = {0.0f, -0.0f, INFINITY, -INFINITY, kt_bits_f(0x7fc00001), kt_bits_f(0xff800003),
                          0x1p-149f, -3.0f, 0x1p127f};
  enum { N = 301 };
  float in[N], out[N];
  uint32_t bucket[N];
  for (int i = 0; i < N; i++) {
    uint32_t r = kt_rand_below(4);
    in[i] = r == 0 ? kt_bits_f((uint32_t)kt_rand64()) : r == 1 ? (kt_rand64() & 1 ? INFINITY : -INFINITY)
                                                       : kt_rand_float(-140, 127);
  }
  for (size_t q = 0; q < sizeof scales / sizeof scales[0]; q++) {
    for (size_t w = 0; w < 3; w++) {
      gpl_dtype_t wire = kWires[w];
      kern_tensor_t t = {in, N};
      assert_int_equal(kern_pack_ref(&t, 1, bucket, wire, scales[q]), 0);
      for (int i = 0; i < N; i++) {
        uint32_t got = wire == GPL_FLOAT ? bucket[i] : ((uint16_t *)bucket)[i];
        if (got != wire_bits(in[i], scales[q], wire))
          fail_msg("pack %s scale %a: x=%#x -> %#x, want %#x", gpl_dtype_name(wire), scales[q],
                   kt_f_bits(in[i]), got, wire_bits(in[i], scales[q], wire));
      }
      /* unpack the same bucket with the scale as postscale: mp_mul(float(wire), factor) */
      kern_tensor_t to = {out, N};
      assert_int_equal(kern_unpack_ref(bucket, wire, &to, 1, scales[q], NULL), 0);
      for (int i = 0; i < N; i++) {
        double w64 = kt_dec_wire(bucket, wire, (size_t)i);
        float wf = wire == GPL_FLOAT ? kt_bits_f(bucket[i])
                   : wire == GPL_BFLOAT16 ? mp_bf16_to_f32(((uint16_t *)bucket)[i])
                                          : mp_f16_to_f32(((uint16_t *)bucket)[i]);
        assert_true(kt_same(wf, w64));
        uint32_t want = kt_f_bits(mp_mul(wf, scales[q]));
        if (kt_f_bits(out[i]) != want)
          fail_msg("unpack %s scale %a: %#x -> %#x, want %#x", gpl_dtype_name(wire), scales[q],
                   kt_f_bits(wf), kt_f_bits(out[i]), want);
      }
    }
  }
}

/* Unpack: every output written, equal to float(wire) * (postscale * inv_scale) rounded once (the
 * exact float64 product rounded to fp32), found_inf exactly when an output is inf or NaN. */
static void check_unpack(gpl_dtype_t wire, int n, size_t maxsz, int with_bad) {
  kt_layout_t L;
  random_layout(&L, n, maxsz);
  size_t ws = gpl_dtype_size(wire);
  void *bucket = aligned_alloc(64, ((L.total * ws + 63) / 64 + 1) * 64);
  for (size_t k = 0; k < L.total; k++) {
    float v = kt_rand_float(-20, 14);
    if (wire == GPL_FLOAT) ((float *)bucket)[k] = v;
    else if (wire == GPL_BFLOAT16) ((uint16_t *)bucket)[k] = mp_f32_to_bf16(v);
    else ((uint16_t *)bucket)[k] = mp_f32_to_f16(v);
  }
  int planted = 0;
  if (with_bad && L.total > 0) {
    size_t k = kt_rand_below((uint32_t)L.total);
    uint32_t which = kt_rand_below(3);
    if (wire == GPL_FLOAT) ((uint32_t *)bucket)[k] = which == 0 ? 0x7f800000 : which == 1 ? 0xff800000 : 0x7fc00123;
    else if (wire == GPL_BFLOAT16) ((uint16_t *)bucket)[k] = which == 0 ? 0x7f80 : which == 1 ? 0xff80 : 0x7fc1;
    else ((uint16_t *)bucket)[k] = which == 0 ? 0x7c00 : which == 1 ? 0xfc00 : 0x7e01;
    planted = 1;
  }
  kern_scaler_t sc;
  kern_scaler_init(&sc, ldexpf(1.0f, (int)kt_rand_below(20)), 2.0f, 0.5f, 100);
  float post = 1.0f / (float)(1 + kt_rand_below(8));
  for (int i = 0; i < n; i++) kt_poison(L.t[i].data, L.t[i].count, GPL_FLOAT);
  assert_int_equal(kern_unpack_ref(bucket, wire, L.t, n, post, &sc), 0);
  float factor = post * sc.inv_scale;
  size_t k = 0;
  int any_bad = 0;
  for (int i = 0; i < n; i++) {
    size_t p = kt_find_poison(L.t[i].data, L.t[i].count, GPL_FLOAT);
    if (p != L.t[i].count) fail_msg("tensor %d element %zu not written", i, p);
    for (size_t j = 0; j < L.t[i].count; j++, k++) {
      double w = kt_dec_wire(bucket, wire, k);
      float want = (float)(w * (double)factor);
      if (!kt_same(L.t[i].data[j], want))
        fail_msg("wire %s tensor %d elem %zu: %a * %a -> %a, want %a", gpl_dtype_name(wire), i, j, w,
                 factor, L.t[i].data[j], want);
      any_bad |= !isfinite(want);
    }
  }
  assert_int_equal(any_bad, planted);
  assert_int_equal(sc.found_inf, planted);
  free(bucket);
  kt_layout_free(&L);
}

static void test_unpack_random(void **state) {
  for (size_t w = 0; w < 3; w++) {
    for (int bad = 0; bad < 2; bad++) {
      check_unpack(kWires[w], 1, 100000, bad);
      check_unpack(kWires[w], 23, 3000, bad);
      check_unpack(kWires[w], 1000, 50, bad);
    }
  }
}

/* Layout contract: tensors lie back to back in the bucket in list order, empty ones take no room;
 * odd lengths and misaligned pointers move the right elements, and nothing past the bucket's end
 * or outside a tensor is touched. */
static void test_layout_and_bounds(void **state) {
  const size_t sizes[] = {0, 1, 3, 0, 7, 16, 33, 0, 1, 1023, 4097, 2, 0};
  const int n = (int)(sizeof sizes / sizeof sizes[0]);
  for (int skew0 = 0; skew0 < 4; skew0++) {
    int skew[sizeof sizes / sizeof sizes[0]];
    for (int i = 0; i < n; i++) skew[i] = (skew0 + i) % 4;
    kt_layout_t L;
    kt_layout_make(&L, n, sizes, skew);
    for (size_t w = 0; w < 3; w++) {
      gpl_dtype_t wire = kWires[w];
      size_t ws = gpl_dtype_size(wire);
      /* fill every tensor with values made of its index and element number; they are compared
       * through the rounding oracle, since bf16/fp16 cannot hold them all exactly */
      for (int i = 0; i < n; i++)
        for (size_t j = 0; j < L.t[i].count; j++) L.t[i].data[j] = (float)(i + 1) * 1000.0f + (float)j;
      /* a bucket with guard elements on both sides */
      size_t guard = 9;
      char *raw = aligned_alloc(64, ((L.total + 2 * guard) * ws + 63) / 64 * 64);
      kt_poison(raw, L.total + 2 * guard, wire);
      void *bucket = raw + guard * ws;
      assert_int_equal(kern_pack_ref(L.t, n, bucket, wire, 1.0f), 0);
      assert_int_equal(kt_count_poison(raw, guard, wire), guard);                   /* front */
      assert_int_equal(kt_count_poison(bucket, L.total, wire), 0);                  /* written */
      assert_int_equal(kt_count_poison(raw + (guard + L.total) * ws, guard, wire), guard); /* end */
      size_t k = 0;
      for (int i = 0; i < n; i++) {
        for (size_t j = 0; j < L.t[i].count; j++, k++) {
          float x = L.t[i].data[j];
          double want = wire == GPL_FLOAT ? x : wire == GPL_BFLOAT16 ? kt_oracle_bf16(x) : kt_oracle_f16(x);
          if (!kt_same(kt_dec_wire(bucket, wire, k), want))
            fail_msg("skew %d wire %s: bucket[%zu] is not tensor %d element %zu", skew0,
                     gpl_dtype_name(wire), k, i, j);
        }
      }
      /* unpack into poisoned tensors; the floats around each tensor must stay untouched */
      for (size_t q = 0; q < (size_t)(L.t[n - 1].data - L.arena) + 16; q++)
        ((uint32_t *)L.arena)[q] = KT_POISON_F32;
      assert_int_equal(kern_unpack_ref(bucket, wire, L.t, n, 1.0f, NULL), 0);
      k = 0;
      size_t written = 0;
      for (int i = 0; i < n; i++) {
        for (size_t j = 0; j < L.t[i].count; j++, k++) {
          assert_true(kt_same(L.t[i].data[j], kt_dec_wire(bucket, wire, k)));
          written++;
        }
      }
      size_t span = (size_t)(L.t[n - 1].data - L.arena) + 16;
      assert_int_equal(kt_count_poison(L.arena, span, GPL_FLOAT) + written, span);
      free(raw);
    }
    kt_layout_free(&L);
  }
}

/* fp32 wire with unit scales is the identity, bit for bit, NaN payloads included. */
static void test_roundtrip_f32_identity(void **state) {
  const size_t sizes[] = {5, 0, 4096, 13};
  const int skew[] = {1, 0, 2, 3};
  kt_layout_t L;
  kt_layout_make(&L, 4, sizes, skew);
  uint32_t *orig = malloc(L.total * 4);
  size_t k = 0;
  for (int i = 0; i < 4; i++)
    for (size_t j = 0; j < L.t[i].count; j++) {
      uint32_t u = (uint32_t)kt_rand64();
      if ((u & 0x7fffffff) > 0x7f800000) u |= 0x00400000; /* a NaN comes back quiet */
      L.t[i].data[j] = kt_bits_f(u);
      orig[k++] = u;
    }
  float *bucket = aligned_alloc(64, (L.total * 4 + 63) / 64 * 64);
  assert_int_equal(kern_pack_ref(L.t, 4, bucket, GPL_FLOAT, 1.0f), 0);
  for (int i = 0; i < 4; i++) kt_poison(L.t[i].data, L.t[i].count, GPL_FLOAT);
  kern_scaler_t sc;
  kern_scaler_init(&sc, 1.0f, 2.0f, 0.5f, 10);
  assert_int_equal(kern_unpack_ref(bucket, GPL_FLOAT, L.t, 4, 1.0f, &sc), 0);
  k = 0;
  int any_bad = 0;
  for (int i = 0; i < 4; i++)
    for (size_t j = 0; j < L.t[i].count; j++, k++) {
      assert_int_equal(kt_f_bits(L.t[i].data[j]), orig[k]);
      any_bad |= !isfinite(L.t[i].data[j]);
    }
  assert_int_equal(sc.found_inf, any_bad);
  free(orig);
  free(bucket);
  kt_layout_free(&L);
}

/* ---- the overflow flag ---- */

static void test_overflow_flag(void **state) {
  float data[37];
  kern_tensor_t t[2] = {{data, 20}, {data + 20, 17}};
  uint16_t bucket[37];
  kern_scaler_t sc;
  kern_scaler_init(&sc, 65536.0f, 2.0f, 0.5f, 2000);
  for (int i = 0; i < 37; i++) bucket[i] = mp_f32_to_bf16((float)i);
  /* clean */
  assert_int_equal(kern_unpack_ref(bucket, GPL_BFLOAT16, t, 2, 1.0f, &sc), 0);
  assert_int_equal(sc.found_inf, 0);
  assert_true(data[36] == 36.0f / 65536.0f);
  /* one inf in the second tensor's last element */
  bucket[36] = 0x7f80;
  assert_int_equal(kern_unpack_ref(bucket, GPL_BFLOAT16, t, 2, 1.0f, &sc), 0);
  assert_int_equal(sc.found_inf, 1);
  /* sticky until the update, even after a clean unpack */
  bucket[36] = mp_f32_to_bf16(1.0f);
  assert_int_equal(kern_unpack_ref(bucket, GPL_BFLOAT16, t, 2, 1.0f, &sc), 0);
  assert_int_equal(sc.found_inf, 1);
  kern_scaler_update_ref(&sc);
  assert_int_equal(sc.found_inf, 0);
  /* a NaN */
  bucket[0] = 0xffc0;
  assert_int_equal(kern_unpack_ref(bucket, GPL_BFLOAT16, t, 2, 1.0f, &sc), 0);
  assert_int_equal(sc.found_inf, 1);
  kern_scaler_update_ref(&sc);
  /* finite on the wire, overflowing once scaled: the flag is about the outputs */
  bucket[0] = mp_f32_to_bf16(3e38f);
  assert_int_equal(kern_unpack_ref(bucket, GPL_BFLOAT16, t, 2, 4.0f * sc.scale, &sc), 0);
  assert_true(isinf(data[0]));
  assert_int_equal(sc.found_inf, 1);
  /* no scaler: factor is the postscale, and no flag to set */
  bucket[0] = 0x7f80;
  assert_int_equal(kern_unpack_ref(bucket, GPL_BFLOAT16, t, 2, 0.5f, NULL), 0);
  assert_true(isinf(data[0]));
  assert_true(data[5] == 2.5f);
  /* fp16 overflow at the pack side comes back as inf and is flagged */
  float big[3] = {1.0f, 70000.0f, -2.0f};
  kern_tensor_t tb = {big, 3};
  uint16_t hb[3];
  assert_int_equal(kern_pack_ref(&tb, 1, hb, GPL_HALF, 1.0f), 0);
  assert_int_equal(hb[1], 0x7c00);
  kern_scaler_init(&sc, 1.0f, 2.0f, 0.5f, 2000);
  assert_int_equal(kern_unpack_ref(hb, GPL_HALF, &tb, 1, 1.0f, &sc), 0);
  assert_int_equal(sc.found_inf, 1);
  assert_true(big[0] == 1.0f && isinf(big[1]) && big[2] == -2.0f);
}

/* ---- the loss-scale rule against a plain model of GradScaler ---- */

static void test_scaler_rule(void **state) {
  kern_scaler_t sc;
  kern_scaler_init(&sc, 65536.0f, 2.0f, 0.5f, 3);
  assert_true(sc.scale == 65536.0f && sc.inv_scale == 1.0f / 65536.0f);
  assert_int_equal(sc.good_steps, 0);
  assert_int_equal(sc.found_inf, 0);
  assert_int_equal(sc.skipped, 0);
  assert_int_equal(sc.overflow_steps, 0);

  /* overflow: halve, skip, count, reset the clean-step counter */
  sc.good_steps = 2;
  sc.found_inf = 1;
  kern_scaler_update_ref(&sc);
  assert_true(sc.scale == 32768.0f && sc.inv_scale == 1.0f / 32768.0f);
  assert_int_equal(sc.skipped, 1);
  assert_int_equal(sc.overflow_steps, 1);
  assert_int_equal(sc.good_steps, 0);
  assert_int_equal(sc.found_inf, 0);
  /* two clean steps: no growth yet, not skipped */
  kern_scaler_update_ref(&sc);
  assert_int_equal(sc.skipped, 0);
  kern_scaler_update_ref(&sc);
  assert_true(sc.scale == 32768.0f);
  assert_int_equal(sc.good_steps, 2);
  /* the third clean step grows */
  kern_scaler_update_ref(&sc);
  assert_true(sc.scale == 65536.0f && sc.inv_scale == 1.0f / 65536.0f);
  assert_int_equal(sc.good_steps, 0);
  assert_int_equal(sc.overflow_steps, 1);

  /* growth that would overflow fp32 is refused, the counter still resets */
  kern_scaler_init(&sc, 0x1p127f, 2.0f, 0.5f, 1);
  kern_scaler_update_ref(&sc);
  assert_true(sc.scale == 0x1p127f);
  assert_int_equal(sc.good_steps, 0);

  /* a random sequence against a float64 model of the rule */
  kern_scaler_init(&sc, 1024.0f, 2.0f, 0.5f, 5);
  double scale = 1024.0;
  int good = 0;
  long long over = 0;
  for (int step = 0; step < 2000; step++) {
    int inf = kt_rand_below(7) == 0;
    sc.found_inf = inf;
    kern_scaler_update_ref(&sc);
    if (inf) {
      scale *= 0.5;
      good = 0;
      over++;
    } else if (++good == 5) {
      if (scale * 2 < 0x1p128) scale *= 2;
      good = 0;
    }
    assert_true((double)sc.scale == scale);
    assert_true(sc.inv_scale == 1.0f / sc.scale);
    assert_int_equal(sc.skipped, inf);
    assert_int_equal(sc.good_steps, good);
    assert_int_equal(sc.overflow_steps, over);
    assert_int_equal(sc.found_inf, 0);
  }
}

/* ---- arguments, counts, the no-CUDA contract ---- */

static void test_args_and_counts(void **state) {
  float d[8] = {0};
  uint16_t b[8];
  kern_tensor_t t[3] = {{d, 3}, {NULL, 0}, {d + 3, 5}};
  assert_int_equal(kern_total_count(t, 3), 8);
  assert_int_equal(kern_total_count(t, 0), 0);
  /* nothing to do is fine, even with no bucket */
  assert_int_equal(kern_pack_ref(NULL, 0, NULL, GPL_HALF, 1.0f), 0);
  assert_int_equal(kern_pack_ref(t + 1, 1, NULL, GPL_HALF, 1.0f), 0);
  assert_int_equal(kern_unpack_ref(NULL, GPL_BFLOAT16, t + 1, 1, 1.0f, NULL), 0);
  /* errors */
  assert_int_equal(kern_pack_ref(t, -1, b, GPL_HALF, 1.0f), GPL_EINVAL);
  assert_int_equal(kern_pack_ref(NULL, 2, b, GPL_HALF, 1.0f), GPL_EINVAL);
  assert_int_equal(kern_pack_ref(t, 3, b, GPL_DOUBLE, 1.0f), GPL_EINVAL);
  assert_int_equal(kern_pack_ref(t, 3, NULL, GPL_HALF, 1.0f), GPL_EINVAL);
  assert_int_equal(kern_pack_ref(t, 3, (char *)b + 1, GPL_HALF, 1.0f), GPL_EINVAL);
  assert_int_equal(kern_unpack_ref(b, GPL_INT32, t, 3, 1.0f, NULL), GPL_EINVAL);
  kern_tensor_t bad = {NULL, 4};
  assert_int_equal(kern_pack_ref(&bad, 1, b, GPL_HALF, 1.0f), GPL_EINVAL);
  assert_int_equal(kern_unpack_ref(b, GPL_HALF, &bad, 1, 1.0f, NULL), GPL_EINVAL);
#ifndef GPL_TEST_HAVE_CUDA
  assert_int_equal(kern_have_cuda(), 0);
  assert_int_equal(kern_pack_cuda(t, 3, b, GPL_HALF, 1.0f, NULL), GPL_ENOCUDA);
  assert_int_equal(kern_unpack_cuda(b, GPL_HALF, t, 3, 1.0f, NULL, NULL), GPL_ENOCUDA);
  assert_int_equal(kern_scaler_update_cuda(NULL, NULL), GPL_ENOCUDA);
#else
  assert_int_equal(kern_have_cuda(), 1);
  assert_int_equal(kern_pack_cuda(t, -1, b, GPL_HALF, 1.0f, NULL), GPL_EINVAL);
  assert_int_equal(kern_scaler_update_cuda(NULL, NULL), GPL_EINVAL);
#endif
}

int main(void) {
  g_seed = kt_seed("test_kernels");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode_exhaustive),
      cmocka_unit_test(test_convert_random_vs_oracle),
      cmocka_unit_test(test_convert_edges),
      cmocka_unit_test(test_mul),
      cmocka_unit_test(test_pack_random),
      cmocka_unit_test(test_special_scales),
      cmocka_unit_test(test_unpack_random),
      cmocka_unit_test(test_layout_and_bounds),
      cmocka_unit_test(test_roundtrip_f32_identity),
      cmocka_unit_test(test_overflow_flag),
      cmocka_unit_test(test_scaler_rule),
      cmocka_unit_test(test_args_and_counts),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc != 0) printf("test_kernels: failed with seed %llu\n", (unsigned long long)g_seed);
  return rc;
}
