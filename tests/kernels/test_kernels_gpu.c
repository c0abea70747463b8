/* GPU tests of the kernels: kern_*_cuda against the C reference, bit for bit, on random and edge
 * inputs, misaligned tensors and buckets, many tensors, chunk boundaries, and the device-side
 * loss-scale update. Exits 77 (CTest SKIP_RETURN_CODE) when there is no usable CUDA device. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>

#include "gpulaunch/error.h"
#include "kern_testutil.h"
#include "kernels/mpmath.h"

#define KT_SKIP 77

static uint64_t g_seed;
static cudaStream_t g_stream;

#define CU(call)                                                                               \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) fail_msg("%s: %s", #call, cudaGetErrorString(e_));                  \
  } while (0)

static const gpl_dtype_t kWires[] = {GPL_FLOAT, GPL_BFLOAT16, GPL_HALF};

/* Inputs: mostly ordinary gradients, some of every class, and the rounding edge cases. */
static float rand_input(void) {
  static const uint32_t edges[] = {
      0x3f808000, 0x3f818000, 0x3f801000, 0x3f803000, 0x477fe000, 0x477fefff, 0x477ff000,
      0x7f7f8000, 0x7f7fffff, 0x7f800000, 0xff800000, 0x33800000, 0x33000000, 0x33c00000,
      0x387fe000, 0x00018000, 0x80000000, 0x7fc00000, 0xff812345, 0x7f800001, 0x00000001};
  uint32_t r = kt_rand_below(32);
  if (r == 0) return kt_bits_f((uint32_t)kt_rand64());
  if (r == 1) return kt_bits_f(edges[kt_rand_below(sizeof edges / sizeof edges[0])]);
  return kt_rand_float(-30, 17);
}

/* Device copy of a host layout: the same offsets from a 256-byte aligned device arena, so each
 * tensor has the same misalignment on both sides. */
typedef struct dev_layout_s {
  float *arena;
  size_t arena_floats;
  kern_tensor_t *t;
} dev_layout_t;

static size_t arena_floats(const kt_layout_t *L) {
  size_t cap = 0;
  for (int i = 0; i < L->n; i++) cap += (L->t[i].count + 3 + 15) & ~(size_t)15;
  return cap + 16;
}

static void dev_layout_make(dev_layout_t *D, const kt_layout_t *L) {
  D->arena_floats = arena_floats(L);
  CU(cudaMalloc((void **)&D->arena, D->arena_floats * sizeof(float)));
  D->t = calloc((size_t)(L->n > 0 ? L->n : 1), sizeof *D->t);
  for (int i = 0; i < L->n; i++) {
    D->t[i].data = D->arena + (L->t[i].data - L->arena);
    D->t[i].count = L->t[i].count;
  }
}

static void dev_layout_free(dev_layout_t *D) {
  CU(cudaFree(D->arena));
  free(D->t);
}

static void expect_same_bits(const void *got, const void *want, size_t bytes, size_t esize,
                             const char *what) {
  if (memcmp(got, want, bytes) == 0) return;
  for (size_t k = 0; k < bytes / esize; k++) {
    if (memcmp((const char *)got + k * esize, (const char *)want + k * esize, esize) != 0) {
      uint32_t g = 0, w = 0;
      memcpy(&g, (const char *)got + k * esize, esize);
      memcpy(&w, (const char *)want + k * esize, esize);
      fail_msg("%s: element %zu is %#x on the GPU, %#x in the C reference", what, k, g, w);
    }
  }
}

/* Pack and unpack one layout on host and device and compare every byte of the bucket and of the
 * whole tensor arena (so the gaps between tensors must be untouched on both). bucket_skew moves the
 * bucket start by that many wire elements off 256-byte alignment. */
static void compare_layout(const kt_layout_t *L, gpl_dtype_t wire, int bucket_skew, float pre,
                           float post, int with_scaler) {
  char what[128];
  size_t ws = gpl_dtype_size(wire);
  size_t nf = arena_floats(L);
  for (int i = 0; i < L->n; i++)
    for (size_t j = 0; j < L->t[i].count; j++) L->t[i].data[j] = rand_input();
  dev_layout_t D;
  dev_layout_make(&D, L);
  CU(cudaMemcpy(D.arena, L->arena, nf * sizeof(float), cudaMemcpyHostToDevice));

  size_t bbytes = (L->total + (size_t)bucket_skew) * ws + 16;
  char *hb_raw = aligned_alloc(64, (bbytes + 63) / 64 * 64), *db_raw;
  char *hb_gpu = malloc(bbytes);
  CU(cudaMalloc((void **)&db_raw, bbytes));
  kt_poison(hb_raw, bbytes / ws, wire);
  CU(cudaMemcpy(db_raw, hb_raw, bbytes, cudaMemcpyHostToDevice));
  void *hb = hb_raw + (size_t)bucket_skew * ws, *db = db_raw + (size_t)bucket_skew * ws;

  /* pack */
  assert_int_equal(kern_pack_ref(L->t, L->n, hb, wire, pre), 0);
  assert_int_equal(kern_pack_cuda(D.t, L->n, db, wire, pre, g_stream), 0);
  CU(cudaStreamSynchronize(g_stream));
  CU(cudaMemcpy(hb_gpu, db_raw, bbytes, cudaMemcpyDeviceToHost));
  snprintf(what, sizeof what, "pack %s, %d tensors, bucket skew %d", gpl_dtype_name(wire), L->n,
           bucket_skew);
  expect_same_bits(hb_gpu, hb_raw, bbytes, ws, what);

  /* unpack the reference bucket into poisoned arenas on both sides */
  float *ha_gpu = malloc(nf * sizeof(float));
  kt_poison(L->arena, nf, GPL_FLOAT);
  CU(cudaMemcpy(D.arena, L->arena, nf * sizeof(float), cudaMemcpyHostToDevice));
  kern_scaler_t hs, *ds = NULL, ds_host;
  kern_scaler_init(&hs, ldexpf(1.0f, (int)kt_rand_below(16)), 2.0f, 0.5f, 10);
  if (with_scaler) {
    CU(cudaMalloc((void **)&ds, sizeof *ds));
    CU(cudaMemcpy(ds, &hs, sizeof hs, cudaMemcpyHostToDevice));
  }
  assert_int_equal(kern_unpack_ref(hb, wire, L->t, L->n, post, with_scaler ? &hs : NULL), 0);
  assert_int_equal(kern_unpack_cuda(db, wire, D.t, L->n, post, ds, g_stream), 0);
  CU(cudaStreamSynchronize(g_stream));
  CU(cudaMemcpy(ha_gpu, D.arena, nf * sizeof(float), cudaMemcpyDeviceToHost));
  snprintf(what, sizeof what, "unpack %s, %d tensors, bucket skew %d", gpl_dtype_name(wire), L->n,
           bucket_skew);
  expect_same_bits(ha_gpu, L->arena, nf * sizeof(float), sizeof(float), what);
  if (with_scaler) {
    CU(cudaMemcpy(&ds_host, ds, sizeof ds_host, cudaMemcpyDeviceToHost));
    assert_int_equal(ds_host.found_inf, hs.found_inf);
    CU(cudaFree(ds));
  }
  CU(cudaFree(db_raw));
  free(hb_raw);
  free(hb_gpu);
  free(ha_gpu);
  dev_layout_free(&D);
}

static void run_layout(int n, const size_t *sizes, const int *skews) {
  kt_layout_t L;
  kt_layout_make(&L, n, sizes, skews);
  for (size_t w = 0; w < 3; w++) {
    for (int bskew = 0; bskew < 3; bskew++) {
      float pre = kt_rand_below(2) ? 1.0f / 3.0f : ldexpf(1.0f, (int)kt_rand_below(6) - 3);
      float post = kt_rand_below(2) ? 0.125f : 1.0f / 7.0f;
      compare_layout(&L, kWires[w], bskew, pre, post, bskew != 1);
    }
  }
  kt_layout_free(&L);
}

static void random_sizes(int n, size_t maxsz, size_t *sizes, int *skews) {
  for (int i = 0; i < n; i++) {
    uint32_t r = kt_rand_below(8);
    sizes[i] = r == 0 ? 0 : r == 1 ? 1 + 2 * kt_rand_below(8) : kt_rand_below((uint32_t)maxsz + 1);
    skews[i] = (int)kt_rand_below(4);
  }
}

static void test_one_large_tensor(void **state) {
  size_t sizes[1] = {(1u << 20) + 3};
  for (int skew = 0; skew < 4; skew++) {
    int skews[1] = {skew};
    run_layout(1, sizes, skews);
  }
}

static void test_chunk_boundaries(void **state) {
  size_t sizes[] = {8191, 8192, 8193, 16385, 1, 0, 24576, 7};
  int skews[] = {0, 1, 2, 3, 0, 1, 2, 3};
  run_layout(8, sizes, skews);
}

static void test_random_buckets(void **state) {
  /* around the small table (32 tensors), and a typical bucket of mixed tensors */
  static const int counts[] = {1, 5, 31, 32, 33, 90};
  for (size_t c = 0; c < sizeof counts / sizeof counts[0]; c++) {
    size_t sizes[128];
    int skews[128];
    random_sizes(counts[c], 50000, sizes, skews);
    run_layout(counts[c], sizes, skews);
  }
}

static void test_many_tensors(void **state) {
  /* more non-empty tensors than one launch's table holds (1024): several launches */
  enum { N = 2600 };
  size_t *sizes = malloc(N * sizeof *sizes);
  int *skews = malloc(N * sizeof *skews);
  random_sizes(N, 300, sizes, skews);
  run_layout(N, sizes, skews);
  free(sizes);
  free(skews);
}

static void test_empty(void **state) {
  size_t sizes[] = {0, 0, 0};
  int skews[] = {0, 1, 2};
  run_layout(3, sizes, skews);
  assert_int_equal(kern_pack_cuda(NULL, 0, NULL, GPL_HALF, 1.0f, g_stream), 0);
  assert_int_equal(kern_pack_cuda(NULL, -1, NULL, GPL_HALF, 1.0f, g_stream), GPL_EINVAL);
  assert_int_equal(kern_unpack_cuda(NULL, GPL_DOUBLE, NULL, 0, 1.0f, NULL, g_stream), GPL_EINVAL);
}

/* The device-side AMP update equals the reference step by step, struct for struct; and an unpack
 * that sees an inf followed by the update halves the scale without the host reading anything. */
static void test_scaler_device(void **state) {
  kern_scaler_t hs, got, *ds;
  kern_scaler_init(&hs, 32768.0f, 2.0f, 0.5f, 4);
  CU(cudaMalloc((void **)&ds, sizeof *ds));
  CU(cudaMemcpy(ds, &hs, sizeof hs, cudaMemcpyHostToDevice));
  for (int step = 0; step < 300; step++) {
    int inf = kt_rand_below(5) == 0;
    if (inf) {
      hs.found_inf = 1;
      CU(cudaMemcpyAsync(&ds->found_inf, &hs.found_inf, sizeof(int), cudaMemcpyHostToDevice, g_stream));
    }
    kern_scaler_update_ref(&hs);
    assert_int_equal(kern_scaler_update_cuda(ds, g_stream), 0);
    CU(cudaStreamSynchronize(g_stream));
    CU(cudaMemcpy(&got, ds, sizeof got, cudaMemcpyDeviceToHost));
    if (memcmp(&got, &hs, sizeof got) != 0)
      fail_msg("step %d: device scale %a good %d skipped %d, reference %a %d %d", step, got.scale,
               got.good_steps, got.skipped, hs.scale, hs.good_steps, hs.skipped);
  }
  /* unpack with an inf on the wire, then update: all queued, one sync at the end */
  float *dt;
  uint16_t hb[64], *db;
  for (int i = 0; i < 64; i++) hb[i] = mp_f32_to_bf16((float)i);
  hb[41] = 0x7f80;
  CU(cudaMalloc((void **)&dt, 64 * sizeof(float)));
  CU(cudaMalloc((void **)&db, sizeof hb));
  CU(cudaMemcpy(db, hb, sizeof hb, cudaMemcpyHostToDevice));
  kern_tensor_t t = {dt, 64};
  float before = hs.scale;
  assert_int_equal(kern_unpack_cuda(db, GPL_BFLOAT16, &t, 1, 1.0f, ds, g_stream), 0);
  assert_int_equal(kern_scaler_update_cuda(ds, g_stream), 0);
  CU(cudaStreamSynchronize(g_stream));
  CU(cudaMemcpy(&got, ds, sizeof got, cudaMemcpyDeviceToHost));
  assert_true(got.scale == before * 0.5f);
  assert_int_equal(got.skipped, 1);
  assert_int_equal(got.found_inf, 0);
  assert_int_equal(got.overflow_steps, hs.overflow_steps + 1);
  CU(cudaFree(dt));
  CU(cudaFree(db));
  CU(cudaFree(ds));
}

/* The kernels' fp16 conversions are the device's instructions with NaN lanes patched, not mp_*'s
 * integer code: equal to it for every fp32 input (2^32) and every fp16 input (2^16). */
static void test_fp16_conversions_exhaustive(void **state) {
  unsigned long long bad[2] = {1, 1};
  unsigned first[2] = {0, 0};
  assert_int_equal(kern_selftest_cuda(bad, first), 0);
  if (bad[0] || bad[1])
    fail_msg("fp32->fp16: %llu inputs differ (first 0x%08x); fp16->fp32: %llu differ (first 0x%04x)",
             bad[0], first[0], bad[1], first[1]);
  printf("test_kernels_gpu: fp16 conversions equal the reference for all 2^32 + 2^16 inputs\n");
}

int main(void) {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    printf("SKIP: no usable CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return KT_SKIP;
  }
  e = cudaFree(NULL); /* create the context now, so a broken device skips here and not mid-test */
  if (e != cudaSuccess) {
    printf("SKIP: CUDA device unusable (%s)\n", cudaGetErrorString(e));
    return KT_SKIP;
  }
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess)
    printf("test_kernels_gpu: device 0: %s, sm_%d%d\n", prop.name, prop.major, prop.minor);
  if (cudaStreamCreateWithFlags(&g_stream, cudaStreamNonBlocking) != cudaSuccess) return 1;
  g_seed = kt_seed("test_kernels_gpu");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_large_tensor), cmocka_unit_test(test_chunk_boundaries),
      cmocka_unit_test(test_random_buckets),   cmocka_unit_test(test_many_tensors),
      cmocka_unit_test(test_empty),            cmocka_unit_test(test_scaler_device),
      cmocka_unit_test(test_fp16_conversions_exhaustive),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc != 0) printf("test_kernels_gpu: failed with seed %llu\n", (unsigned long long)g_seed);
  cudaStreamDestroy(g_stream);
  return rc;
}
