/* CPU emulation of the CUDA kernels: runs the kernel bodies of kernels/fused_cuda_dev.cuh block by
 * block, thread by thread, and compares them bit for bit with the C reference; checks that every
 * 16-byte vector access is aligned and that the vector path is really taken. Needs no GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <initializer_list>

extern "C" {
#include <cmocka.h>
}

/* ---- the CUDA names the kernels use, for one emulated thread at a time ---- */
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(n)
struct float4 {
  float x, y, z, w;
};
struct uint4 {
  unsigned x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
static inline float4 make_float4(float a, float b, float c, float d) { return float4{a, b, c, d}; }
struct emul_dim {
  unsigned x;
};
static emul_dim blockIdx, threadIdx;
static int emul_block_or;     /* __syncthreads_or over the threads run so far in this block */
static size_t emul_vectors;   /* 16-byte accesses made */
static size_t emul_misaligned; /* ... of which misaligned */
static inline int __syncthreads_or(int p) {
  emul_block_or |= p != 0;
  return emul_block_or;
}
static inline int atomicOr(int *a, int v) {
  int old = *a;
  *a |= v;
  return old;
}
#define KERN_VECTOR_ACCESS(p) \
  (emul_vectors++, emul_misaligned += ((uintptr_t)(const void *)(p) & 15u) != 0)

extern "C" {
#include "gpulaunch/error.h"
}
#include "kern_testutil.h"
#include "kernels/fused_cuda_dev.cuh"

static uint64_t g_seed;
static size_t g_unpack_vectors; /* 16-byte accesses of the last emulated unpack */

/* Run a grid: threads in reverse order, so thread 0 (the one that publishes the block's OR) runs
 * last and sees every thread's flag, as after a real __syncthreads_or. */
template <typename K> static void run_grid(unsigned blocks, K kernel) {
  for (unsigned b = 0; b < blocks; b++) {
    blockIdx.x = b;
    emul_block_or = 0;
    for (int t = kThreads - 1; t >= 0; t--) {
      threadIdx.x = (unsigned)t;
      kernel();
    }
  }
}

/* kern_pack_cuda / kern_unpack_cuda with the launches emulated: the same table building, the same
 * choice of table size, the same kernels (unpack: the units, then the edges). */
template <gpl_dtype_t W, int MAXT>
static int emul_run(int pack, const kern_tensor_t *t, int n, void *bucket, float scale, kern_scaler_t *sc,
                    int *launches) {
  static Table<MAXT> tab;
  return for_each_table<W, MAXT>(pack ? kPack : kUnpack, t, n, bucket, scale, tab,
                                 [&](const Table<MAXT> &filled, int edges) {
    ++*launches;
    unsigned blocks = filled.block0[filled.n];
    if (pack) {
      run_grid(blocks, [&] { pack_kernel<W, MAXT>(filled, bucket); });
    } else {
      run_grid(blocks, [&] { unpack_kernel<W, MAXT>(filled, bucket, sc); });
      if (edges) run_grid(edge_blocks(filled.n), [&] { edge_kernel<W, MAXT>(filled, bucket, sc); });
    }
    return 0;
  });
}

template <gpl_dtype_t W>
static int emul_op(int pack, const kern_tensor_t *t, int n, void *bucket, float scale, kern_scaler_t *sc) {
  int launches = 0, ne = count_nonempty(t, n);
  if (ne == 0) return 0;
  if (ne <= kSmallTable) emul_run<W, kSmallTable>(pack, t, n, bucket, scale, sc, &launches);
  else emul_run<W, kLargeTable>(pack, t, n, bucket, scale, sc, &launches);
  return launches;
}

static int emul(int pack, const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire, float scale,
                kern_scaler_t *sc) {
  switch (wire) {
  case GPL_FLOAT: return emul_op<GPL_FLOAT>(pack, t, n, bucket, scale, sc);
  case GPL_BFLOAT16: return emul_op<GPL_BFLOAT16>(pack, t, n, bucket, scale, sc);
  default: return emul_op<GPL_HALF>(pack, t, n, bucket, scale, sc);
  }
}

static float rand_input(void) {
  uint32_t r = kt_rand_below(32);
  if (r == 0) return kt_bits_f((uint32_t)kt_rand64());
  if (r == 1) return kt_rand64() & 1 ? INFINITY : 0x1p-140f;
  return kt_rand_float(-30, 17);
}

static void expect_same_bits(const void *got, const void *want, size_t bytes, size_t esize, const char *what) {
  if (memcmp(got, want, bytes) == 0) return;
  for (size_t k = 0; k < bytes / esize; k++) {
    uint32_t g = 0, w = 0;
    memcpy(&g, (const char *)got + k * esize, esize);
    memcpy(&w, (const char *)want + k * esize, esize);
    if (g != w) fail_msg("%s: element %zu is %#x in the emulated kernel, %#x in the C reference", what, k, g, w);
  }
}

/* One layout, one wire, one bucket skew: reference and emulated kernel on separate copies of the
 * tensors and buckets, compared over the whole arena and bucket (gaps included). Returns the
 * number of launches the emulated call made. */
static int compare(const size_t *sizes, const int *skews, int n, gpl_dtype_t wire, int bskew) {
  kt_layout_t A, B; /* reference side, kernel side: same sizes and skews */
  kt_layout_make(&A, n, sizes, skews);
  kt_layout_make(&B, n, sizes, skews);
  size_t nf = 16;
  for (int i = 0; i < n; i++) nf += (sizes[i] + 3 + 15) & ~(size_t)15;
  for (int i = 0; i < n; i++)
    for (size_t j = 0; j < sizes[i]; j++) A.t[i].data[j] = rand_input();
  memcpy(B.arena, A.arena, nf * sizeof(float));
  size_t ws = gpl_dtype_size(wire), bbytes = (A.total + (size_t)bskew) * ws + 64;
  char *ba = (char *)aligned_alloc(64, (bbytes + 63) / 64 * 64), *bb = (char *)aligned_alloc(64, (bbytes + 63) / 64 * 64);
  kt_poison(ba, bbytes / ws, wire);
  kt_poison(bb, bbytes / ws, wire);
  void *hba = ba + (size_t)bskew * ws, *hbb = bb + (size_t)bskew * ws;
  float pre = kt_rand_below(2) ? 1.0f / 3.0f : 0.25f;
  char what[96];

  assert_int_equal(kern_pack_ref(A.t, n, hba, wire, pre), 0);
  int launches = emul(1, B.t, n, hbb, wire, pre, NULL);
  snprintf(what, sizeof what, "pack %s n=%d bucket skew %d", gpl_dtype_name(wire), n, bskew);
  expect_same_bits(bb, ba, bbytes, ws, what);

  kern_scaler_t sa, sb;
  kern_scaler_init(&sa, 512.0f, 2.0f, 0.5f, 100);
  sb = sa;
  kt_poison(A.arena, nf, GPL_FLOAT);
  kt_poison(B.arena, nf, GPL_FLOAT);
  float post = 1.0f / 7.0f;
  assert_int_equal(kern_unpack_ref(hba, wire, A.t, n, post, &sa), 0);
  size_t before_unpack = emul_vectors;
  emul(0, B.t, n, hba, wire, post, &sb);
  g_unpack_vectors = emul_vectors - before_unpack;
  snprintf(what, sizeof what, "unpack %s n=%d bucket skew %d", gpl_dtype_name(wire), n, bskew);
  expect_same_bits(B.arena, A.arena, nf * sizeof(float), sizeof(float), what);
  assert_int_equal(sb.found_inf, sa.found_inf);
  free(ba);
  free(bb);
  kt_layout_free(&A);
  kt_layout_free(&B);
  return launches;
}

static void run_all(const size_t *sizes, const int *skews, int n) {
  for (gpl_dtype_t wire : {GPL_FLOAT, GPL_BFLOAT16, GPL_HALF})
    for (int bskew = 0; bskew < 3; bskew++) compare(sizes, skews, n, wire, bskew);
}

static void test_aligned_uses_vectors(void **state) {
  /* aligned tensors and bucket: the body is all 16-byte vectors, every one aligned */
  size_t sizes[] = {8192 * 3, 4096, 64};
  int skews[] = {0, 0, 0};
  emul_vectors = emul_misaligned = 0;
  for (gpl_dtype_t wire : {GPL_FLOAT, GPL_BFLOAT16, GPL_HALF}) {
    size_t before = emul_vectors;
    compare(sizes, skews, 3, wire, 0);
    size_t vw = wire == GPL_FLOAT ? 4 : 8, elems = 8192 * 3 + 4096 + 64;
    /* 16-byte accesses per unit: pack one load (counted once for a 16-bit unit's two) and one
     * store; unpack one load and one store of an fp32 unit, two float4 stores of a 16-bit one */
    assert_int_equal(emul_vectors - before, 2 * 2 * (elems / vw));
  }
  assert_int_equal(emul_misaligned, 0);
}

/* The bucket out of phase with every tensor (skew of one wire element): the old kernels went
 * scalar for the whole tensor; now unpack still stores every unit with 16-byte stores (its loads
 * from the bucket are the scalar ones), so its vector accesses are exactly its float4 stores:
 * one per 4 elements of every unit. */
static void test_out_of_phase_bucket_still_vector_stores(void **state) {
  size_t sizes[] = {8192 * 2 + 64, 4096, 512, 8};
  int skews[] = {0, 0, 0, 0};
  for (gpl_dtype_t wire : {GPL_FLOAT, GPL_BFLOAT16, GPL_HALF}) {
    emul_misaligned = 0;
    compare(sizes, skews, 4, wire, 1);
    size_t vw = wire == GPL_FLOAT ? 4 : 8, units = 0;
    for (size_t s : sizes) units += s / vw;
    assert_int_equal(g_unpack_vectors, units * (vw / 4));
    assert_int_equal(emul_misaligned, 0);
  }
}

static void test_misaligned_and_boundaries(void **state) {
  size_t sizes[] = {8191, 8192, 8193, 16385, 1, 0, 24576, 7, 3, 100};
  int skews[] = {0, 1, 2, 3, 0, 1, 2, 3, 1, 3};
  emul_vectors = emul_misaligned = 0;
  run_all(sizes, skews, 10);
  assert_true(emul_vectors > 0);
  assert_int_equal(emul_misaligned, 0);
}

static void test_random_buckets(void **state) {
  for (int n : {1, 5, 31, 32, 33, 90}) {
    size_t sizes[128];
    int skews[128];
    for (int i = 0; i < n; i++) {
      uint32_t r = kt_rand_below(8);
      sizes[i] = r == 0 ? 0 : r == 1 ? 1 + 2 * kt_rand_below(8) : kt_rand_below(20000);
      skews[i] = (int)kt_rand_below(4);
    }
    emul_misaligned = 0;
    run_all(sizes, skews, n);
    assert_int_equal(emul_misaligned, 0);
  }
}

static void test_many_tensors_several_launches(void **state) {
  enum { N = 2100 };
  static size_t sizes[N];
  static int skews[N];
  for (int i = 0; i < N; i++) {
    sizes[i] = i % 7 == 0 ? 0 : 1 + kt_rand_below(40);
    skews[i] = (int)kt_rand_below(4);
  }
  int nonempty = 0;
  for (int i = 0; i < N; i++) nonempty += sizes[i] > 0;
  int launches = compare(sizes, skews, N, GPL_BFLOAT16, 1);
  assert_int_equal(launches, (nonempty + kLargeTable - 1) / kLargeTable);
  /* up to kSmallTable tensors: one launch of the small table */
  assert_int_equal(compare(sizes + 1, skews, 6, GPL_HALF, 0), 1);
}

static void test_scaler_kernel(void **state) {
  kern_scaler_t a, b;
  kern_scaler_init(&a, 4096.0f, 2.0f, 0.5f, 3);
  b = a;
  for (int step = 0; step < 200; step++) {
    a.found_inf = b.found_inf = kt_rand_below(4) == 0;
    kern_scaler_update_ref(&a);
    scaler_update_kernel(&b);
    assert_memory_equal(&a, &b, sizeof a);
  }
}

int main(void) {
  g_seed = kt_seed("test_kernels_emul");
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_aligned_uses_vectors),
      cmocka_unit_test(test_out_of_phase_bucket_still_vector_stores),
      cmocka_unit_test(test_misaligned_and_boundaries),
      cmocka_unit_test(test_random_buckets),
      cmocka_unit_test(test_many_tensors_several_launches),
      cmocka_unit_test(test_scaler_kernel),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  if (rc != 0) printf("test_kernels_emul: failed with seed %llu\n", (unsigned long long)g_seed);
  return rc;
}
