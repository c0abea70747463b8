/* The fused gradient allreduce on the cpu backend against a plain reduction in float64, on a real
 * mpirun: every wire dtype, pre/post/loss scaling, bucket boundaries (tensors larger than a bucket,
 * many tiny tensors, zero-length ones, misaligned pointers), the overflow flag on every rank when
 * one rank has an inf or NaN, the loss scaler's rule, and the unfused baseline. */
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpulaunch/gpulaunch.h"
#include "tests/mpi_check.h"

static int g_size, g_rank;
static gpl_comm_t *g_c;

/* Deterministic values any rank can recompute for any other rank (counter-based hash). */
static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Value of rank r, tensor t, element j: uniform in [-1, 1) times 2^k with k in [-6, 6] per
 * tensor, so the tensors span magnitudes as gradients do. */
static float gen(uint64_t seed, int r, int t, size_t j) {
  uint64_t h = mix(seed ^ mix((uint64_t)r * 1000003u + (uint64_t)t) ^ mix(j + 17));
  double u = (double)(h >> 11) * 0x1p-53 * 2.0 - 1.0;
  int k = (int)(mix(seed + (uint64_t)t) % 13) - 6;
  return (float)ldexp(u, k);
}

typedef struct tcase_s {
  const char *name;
  int n;
  size_t *len;
  int misalign; /* odd tensors start one float past a 16-byte boundary */
} tcase_t;

/* Tensors of rank g_rank for a case (one allocation each, so misalignment is real). */
static gpl_tensor_t *make(const tcase_t *tc, uint64_t seed, float ***bases) {
  gpl_tensor_t *t = calloc((size_t)tc->n + 1, sizeof *t);
  *bases = calloc((size_t)tc->n + 1, sizeof **bases);
  for (int i = 0; i < tc->n; i++) {
    int off = tc->misalign && (i & 1);
    (*bases)[i] = aligned_alloc(16, ((tc->len[i] + (size_t)off) * sizeof(float) + 16) & ~(size_t)15);
    t[i].data = (*bases)[i] + off;
    t[i].count = tc->len[i];
    for (size_t j = 0; j < tc->len[i]; j++) t[i].data[j] = gen(seed, g_rank, i, j);
  }
  return t;
}

static void drop(const tcase_t *tc, gpl_tensor_t *t, float **bases) {
  for (int i = 0; i < tc->n; i++) free(bases[i]);
  free(bases);
  free(t);
}

/* Relative bound (to the sum of magnitudes) for wire w, whose unit roundoff is u: each value is
 * rounded once to w, and each of the size-1 additions rounds once in w, each error at most u of a
 * magnitude no larger than the sum of magnitudes: (2 size - 1) u; then one fp32 multiply. */
static double rel_bound(gpl_dtype_t w) {
  double u = w == GPL_FLOAT ? 0x1p-24 : w == GPL_BFLOAT16 ? 0x1p-8 : 0x1p-11;
  return (2 * g_size - 1) * u + 0x1p-23;
}

/* fp16 subnormals are spaced 2^-24: an absolute floor per rounding. */
static double abs_floor(gpl_dtype_t w) { return w == GPL_HALF ? 2 * g_size * 0x1p-24 : 0; }

/* Compare tensors after the call with the float64 reduction of everyone's inputs. */
static void verify(const tcase_t *tc, const gpl_tensor_t *t, uint64_t seed, gpl_dtype_t w,
                   double pre, double post, double scale) {
  long bad = 0;
  for (int i = 0; i < tc->n; i++)
    for (size_t j = 0; j < tc->len[i]; j++) {
      double sum = 0, mag = 0;
      for (int r = 0; r < g_size; r++) {
        double v = (double)(float)(pre * gen(seed, r, i, j)); /* the fp32 pre-scale multiply */
        sum += v;
        mag += fabs(v);
      }
      double f = post / scale, want = sum * f;
      double lim = rel_bound(w) * mag * fabs(f) + abs_floor(w) * fabs(f);
      double got = t[i].data[j];
      if (!(fabs(got - want) <= lim)) { /* a NaN never passes */
        if (bad++ < 5)
          MPI_CHECK_FAIL("%s wire %s: tensor %d[%zu] = %.9g, float64 reference %.9g (bound %.3g)",
                 tc->name, gpl_dtype_name(w), i, j, got, want, lim);
      }
    }
  if (bad > 5) MPI_CHECK_FAIL("%s wire %s: %ld elements out of bounds in all", tc->name, gpl_dtype_name(w), bad);
}

/* Every rank must hold the same bits (parameters stay in sync): compare a hash. */
static void same_on_all_ranks(const tcase_t *tc, const gpl_tensor_t *t, const char *what) {
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < tc->n; i++) {
    const unsigned char *p = (const unsigned char *)t[i].data;
    for (size_t b = 0; b < t[i].count * sizeof(float); b++) h = (h ^ p[b]) * 1099511628211ull;
  }
  uint64_t *all = calloc((size_t)g_size, sizeof *all);
  MPI_CHECK_OK(gpl_allgather(g_c, &h, all, 1, GPL_UINT64, NULL));
  for (int r = 1; r < g_size; r++)
    if (all[r] != all[0]) MPI_CHECK_FAIL("%s %s: rank %d's results differ from rank 0's", tc->name, what, r);
  free(all);
}

static void run_case(const tcase_t *tc, gpl_dtype_t w, double bucket_mb, float pre, float post,
                     float scale, int unfused) {
  uint64_t seed = mix((uint64_t)tc->n * 31u + (uint64_t)w);
  float **bases;
  gpl_tensor_t *t = make(tc, seed, &bases);
  gpl_fused_opts_t o;
  gpl_fused_opts_default(&o);
  o.bucket_mb = bucket_mb;
  o.wire = w;
  o.prescale = pre;
  o.postscale = post;
  gpl_scaler_t *sc = NULL;
  if (scale != 1.0f) {
    MPI_CHECK_OK(gpl_scaler_create(g_c, &sc, scale, 2.0f, 0.5f, 2000));
    o.scaler = sc;
  }
  int overflow = -1;
  o.overflow = &overflow;
  char name[128];
  snprintf(name, sizeof name, "%s/%s/%s", tc->name, gpl_dtype_name(w), unfused ? "unfused" : "fused");
  mpi_check_case = name;
  if (unfused) MPI_CHECK_OK(gpl_unfused_allreduce(g_c, t, tc->n, &o, NULL));
  else MPI_CHECK_OK(gpl_fused_allreduce(g_c, t, tc->n, &o, NULL));
  MPI_CHECK_INT(overflow, 0);
  verify(tc, t, seed, unfused ? GPL_FLOAT : w, pre, post, scale);
  same_on_all_ranks(tc, t, name);
  gpl_scaler_destroy(g_c, sc);
  drop(tc, t, bases);
}

/* An inf or NaN on one rank sets the flag on every rank, and drives the loss scaler. */
static void run_overflow(gpl_dtype_t w, float bad_value, int bad_rank) {
  size_t len[] = {5, 0, 1000, 3, 70000};
  tcase_t tc = {"overflow", 5, len, 1};
  float **bases;
  gpl_tensor_t *t = make(&tc, 7, &bases);
  char name[96];
  snprintf(name, sizeof name, "overflow %g on rank %d, wire %s", bad_value, bad_rank,
           gpl_dtype_name(w));
  mpi_check_case = name;
  if (g_rank == bad_rank) t[4].data[12345] = bad_value;
  gpl_scaler_t *sc;
  MPI_CHECK_OK(gpl_scaler_create(g_c, &sc, 65536.0f, 2.0f, 0.5f, 3));
  gpl_fused_opts_t o;
  gpl_fused_opts_default(&o);
  o.wire = w;
  o.bucket_mb = 0.1;
  o.scaler = sc;
  int overflow = -1;
  o.overflow = &overflow;
  MPI_CHECK_OK(gpl_fused_allreduce(g_c, t, tc.n, &o, NULL));
  MPI_CHECK_INT(overflow, 1);
  gpl_scaler_state_t st;
  MPI_CHECK_OK(gpl_scaler_read(g_c, sc, &st, NULL));
  MPI_CHECK_INT(st.found_inf, 1);
  MPI_CHECK_OK(gpl_scaler_update(g_c, sc, NULL));
  MPI_CHECK_OK(gpl_scaler_read(g_c, sc, &st, NULL));
  MPI_CHECK_INT(st.skipped, 1);
  MPI_CHECK_INT(st.overflow_steps, 1);
  MPI_CHECK_INT(st.found_inf, 0);
  MPI_CHECK(st.scale == 32768.0f);
  /* the next, clean step: no flag, a good step counted */
  drop(&tc, t, bases);
  t = make(&tc, 8, &bases);
  overflow = -1;
  MPI_CHECK_OK(gpl_fused_allreduce(g_c, t, tc.n, &o, NULL));
  MPI_CHECK_INT(overflow, 0);
  MPI_CHECK_OK(gpl_scaler_update(g_c, sc, NULL));
  MPI_CHECK_OK(gpl_scaler_read(g_c, sc, &st, NULL));
  MPI_CHECK_INT(st.skipped, 0);
  MPI_CHECK_INT(st.good_steps, 1);
  MPI_CHECK(st.scale == 32768.0f);
  gpl_scaler_destroy(g_c, sc);
  /* without a scaler, the flag alone */
  drop(&tc, t, bases);
  t = make(&tc, 9, &bases);
  if (g_rank == bad_rank) t[0].data[4] = bad_value;
  gpl_fused_opts_default(&o);
  o.wire = w;
  overflow = -1;
  o.overflow = &overflow;
  MPI_CHECK_OK(gpl_fused_allreduce(g_c, t, tc.n, &o, NULL));
  MPI_CHECK_INT(overflow, 1);
  drop(&tc, t, bases);
}

/* fp16's range: four ranks of 40000 overflow a plain sum (160000 > 65504); a pre-scale of 1/4 with
 * a post-scale of 4 keeps the wire in range, as FSDP does. */
static void run_fp16_range(void) {
  mpi_check_case = "fp16 range";
  float v[3] = {40000.0f, -40000.0f, 1.0f};
  gpl_tensor_t t = {v, 3};
  gpl_fused_opts_t o;
  gpl_fused_opts_default(&o);
  o.wire = GPL_HALF;
  int overflow = -1;
  o.overflow = &overflow;
  MPI_CHECK_OK(gpl_fused_allreduce(g_c, &t, 1, &o, NULL));
  MPI_CHECK_INT(overflow, g_size * 40000.0 > 65519.0);
  float w[3] = {40000.0f, -40000.0f, 1.0f};
  t.data = w;
  o.prescale = 1.0f / 8;
  o.postscale = 8.0f;
  MPI_CHECK_OK(gpl_fused_allreduce(g_c, &t, 1, &o, NULL));
  MPI_CHECK_INT(overflow, 0);
  MPI_CHECK(fabs(w[0] - 40000.0 * g_size) <= 40000.0 * g_size * 0x1p-10);
  MPI_CHECK(fabs(w[1] + 40000.0 * g_size) <= 40000.0 * g_size * 0x1p-10);
  MPI_CHECK(fabs(w[2] - g_size) <= g_size * 0x1p-10);
}

int main(int argc, char **argv) {
  /* gpl_init initialises MPI itself here (started by mpirun, MPI not yet up). */
  (void)argc;
  (void)argv;
  gpl_init_opts_t io;
  gpl_init_opts_default(&io);
  io.backend = GPL_BACKEND_CPU;
  MPI_CHECK_OK(gpl_init(&g_c, &io));
  g_size = gpl_comm_size(g_c);
  g_rank = mpi_check_rank = gpl_comm_rank(g_c);

  /* mixed lengths across buckets of 0.05 MiB (13107 fp32 / 26214 16-bit elements) */
  size_t mixed[] = {0, 1, 3, 1000, 4097, 17, 0, 65539, 2, 13107, 13108, 5, 26214, 26215, 1, 0, 777};
  tcase_t c_mixed = {"mixed", (int)(sizeof mixed / sizeof mixed[0]), mixed, 1};
  /* one tensor much larger than a bucket */
  size_t big[] = {300001};
  tcase_t c_big = {"larger than a bucket", 1, big, 0};
  /* many tiny tensors */
  size_t *tiny = malloc(5000 * sizeof *tiny);
  for (int i = 0; i < 5000; i++) tiny[i] = (size_t)(i % 4); /* 0..3, zero-length included */
  tcase_t c_tiny = {"5000 tiny tensors", 5000, tiny, 1};
  /* tensors that fill a bucket exactly (bucket of 4096 bytes: 1024 fp32 or 2048 16-bit) */
  size_t exact[] = {1024, 1024, 2048, 1024, 1023, 1, 2048};
  tcase_t c_exact = {"bucket-sized tensors", 7, exact, 0};
  size_t zeros[] = {0, 0, 0};
  tcase_t c_zero = {"zero-length only", 3, zeros, 0};
  tcase_t c_none = {"no tensors", 0, NULL, 0};

  static const gpl_dtype_t wires[] = {GPL_FLOAT, GPL_BFLOAT16, GPL_HALF};
  float p2 = 1.0f;
  while (p2 < (float)g_size) p2 *= 2;
  for (int k = 0; k < 3; k++) {
    gpl_dtype_t w = wires[k];
    run_case(&c_mixed, w, 0.05, 1.0f, 1.0f, 1.0f, 0);
    run_case(&c_mixed, w, 0.05, 1.0f / p2, p2, 1.0f, 0);         /* FSDP-style pre/post scale */
    run_case(&c_mixed, w, 25.0, 1.0f / (float)g_size, 1.0f, 1.0f, 0); /* average, one bucket */
    run_case(&c_mixed, w, 0.05, 1.0f, 1.0f, 1024.0f, 0);         /* loss scale 1024 undone */
    run_case(&c_big, w, 0.1, 1.0f, 1.0f, 1.0f, 0);
    run_case(&c_tiny, w, 25.0, 0.5f, 1.0f, 1.0f, 0);
    run_case(&c_tiny, w, 0.0001, 1.0f, 1.0f, 1.0f, 0);           /* buckets of 26-52 elements */
    run_case(&c_exact, w, 4096.0 / 1048576.0, 1.0f, 1.0f, 1.0f, 0);
    run_case(&c_zero, w, 25.0, 1.0f, 1.0f, 1.0f, 0);
    run_case(&c_none, w, 25.0, 1.0f, 1.0f, 1.0f, 0);
    run_overflow(w, INFINITY, g_size - 1);
    run_overflow(w, -INFINITY, 0);
    run_overflow(w, NAN, g_size > 1 ? 1 : 0);
  }
  run_case(&c_mixed, GPL_FLOAT, 0.05, 1.0f / p2, p2, 256.0f, 1); /* the unfused baseline */
  run_case(&c_tiny, GPL_FLOAT, 25.0, 1.0f, 1.0f, 1.0f, 1);
  run_fp16_range();

  /* bad options are refused */
  mpi_check_case = "options";
  gpl_fused_opts_t o;
  gpl_fused_opts_default(&o);
  float x = 1;
  gpl_tensor_t t1 = {&x, 1}, tnull = {NULL, 4};
  o.wire = GPL_INT32;
  MPI_CHECK_INT(gpl_fused_allreduce(g_c, &t1, 1, &o, NULL), GPL_EINVAL);
  gpl_fused_opts_default(&o);
  o.bucket_mb = 0;
  MPI_CHECK_INT(gpl_fused_allreduce(g_c, &t1, 1, &o, NULL), GPL_EINVAL);
  gpl_fused_opts_default(&o);
  MPI_CHECK_INT(gpl_fused_allreduce(g_c, &tnull, 1, &o, NULL), GPL_EINVAL);
  MPI_CHECK_INT(gpl_fused_allreduce(g_c, NULL, 2, &o, NULL), GPL_EINVAL);
  MPI_CHECK_INT(gpl_fused_allreduce(g_c, &t1, -1, &o, NULL), GPL_EINVAL);

  int bad = mpi_check_failures, all_bad = 0;
  MPI_CHECK_OK(gpl_allreduce(g_c, &bad, &all_bad, 1, GPL_INT32, GPL_OP_SUM, NULL));
  free(tiny);
  MPI_CHECK_OK(gpl_finalize(g_c)); /* finalises MPI too: gpl_init started it */
  if (g_rank == 0) printf("test_comm_fused: %d ranks, %d failures\n", g_size, all_bad);
  return all_bad ? 1 : 0;
}
