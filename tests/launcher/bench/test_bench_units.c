/* Unit tests of gpulaunch bench: nccl-tests' geometry and bus-bandwidth formulas per collective,
 * the size sweep, --min-busbw parsing, the number format, and the data/checker: every collective
 * is simulated in host memory in each dtype's own arithmetic (half and bfloat16 rounded after
 * every step, as the cpu backend and NCCL do) for many rank counts, and the checker must find 0
 * wrong elements, then exactly the ones a corruption or a no-op collective leaves. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "kernels/mpmath.h"
#include "launcher/bench/bench.h"

/* ---- formulas ---- */

static void test_busbw_factors(void **state) {
  (void)state;
  int ns[] = {1, 2, 3, 4, 8, 1000};
  for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
    double n = ns[k];
    assert_true(fabs(bench_busbw_factor(BENCH_ALLREDUCE, ns[k]) - 2 * (n - 1) / n) < 1e-12);
    assert_true(fabs(bench_busbw_factor(BENCH_FUSED, ns[k]) - 2 * (n - 1) / n) < 1e-12);
    assert_true(fabs(bench_busbw_factor(BENCH_UNFUSED, ns[k]) - 2 * (n - 1) / n) < 1e-12);
    assert_true(fabs(bench_busbw_factor(BENCH_ALLGATHER, ns[k]) - (n - 1) / n) < 1e-12);
    assert_true(fabs(bench_busbw_factor(BENCH_REDUCESCATTER, ns[k]) - (n - 1) / n) < 1e-12);
    assert_true(fabs(bench_busbw_factor(BENCH_ALLTOALL, ns[k]) - (n - 1) / n) < 1e-12);
    assert_true(bench_busbw_factor(BENCH_BROADCAST, ns[k]) == 1.0);
  }
  /* 1 rank: nothing crosses a bus */
  assert_true(bench_busbw_factor(BENCH_ALLREDUCE, 1) == 0.0);
}

static void test_bandwidth_values(void **state) {
  (void)state;
  bench_geom_t g;
  double alg, bus;
  /* allreduce of 1 GB (1e9 bytes) in 1 s on 4 ranks: algbw 1, busbw 1.5 */
  bench_geom(BENCH_ALLREDUCE, 1000000000ull, 4, 4, &g);
  assert_int_equal(g.bytes, 1000000000ull);
  bench_bandwidth(BENCH_ALLREDUCE, &g, 4, 1.0, &alg, &bus);
  assert_true(fabs(alg - 1.0) < 1e-12 && fabs(bus - 1.5) < 1e-12);
  /* allgather: nccl-tests' base is count*typesize*n = the size column */
  bench_geom(BENCH_ALLGATHER, 1200, 4, 3, &g);
  bench_bandwidth(BENCH_ALLGATHER, &g, 3, 1e-6, &alg, &bus);
  assert_true(fabs(alg - (double)g.count * 4 * 3 / 1e9 / 1e-6) < 1e-9);
  assert_true(fabs(bus - alg * 2.0 / 3.0) < 1e-9);
  /* broadcast: busbw = algbw */
  bench_geom(BENCH_BROADCAST, 4096, 2, 8, &g);
  bench_bandwidth(BENCH_BROADCAST, &g, 8, 2e-6, &alg, &bus);
  assert_true(fabs(alg - 4096 / 1e9 / 2e-6) < 1e-9 && alg == bus);
  bench_bandwidth(BENCH_BROADCAST, &g, 8, 0.0, &alg, &bus);
  assert_true(alg == 0.0 && bus == 0.0);
}

static void test_geometry(void **state) {
  (void)state;
  bench_geom_t g;
  /* 1000001 bytes of float on 3 ranks: count 250000, per rank 83333 */
  bench_geom(BENCH_ALLREDUCE, 1000001, 4, 3, &g);
  assert_int_equal(g.count, 250000);
  assert_int_equal(g.bytes, 1000000);
  assert_int_equal(g.send_count, 250000);
  assert_int_equal(g.recv_count, 250000);
  bench_geom(BENCH_ALLGATHER, 1000001, 4, 3, &g);
  assert_int_equal(g.count, 83333);
  assert_int_equal(g.send_count, 83333);
  assert_int_equal(g.recv_count, 249999);
  assert_int_equal(g.bytes, 249999 * 4);
  assert_int_equal(g.send_ip_off, 83333);
  assert_int_equal(g.recv_ip_off, 0);
  bench_geom(BENCH_REDUCESCATTER, 1000001, 4, 3, &g);
  assert_int_equal(g.count, 83333);
  assert_int_equal(g.send_count, 249999);
  assert_int_equal(g.recv_count, 83333);
  assert_int_equal(g.bytes, 249999 * 4);
  assert_int_equal(g.send_ip_off, 0);
  assert_int_equal(g.recv_ip_off, 83333);
  bench_geom(BENCH_ALLTOALL, 1000001, 4, 3, &g);
  assert_int_equal(g.count, 83333);
  assert_int_equal(g.send_count, 249999);
  assert_int_equal(g.recv_count, 249999);
  bench_geom(BENCH_BROADCAST, 7, 2, 5, &g);
  assert_int_equal(g.count, 3);
  assert_int_equal(g.bytes, 6);
  /* fewer elements than ranks: a count of 0, as nccl-tests */
  bench_geom(BENCH_ALLGATHER, 8, 4, 4, &g);
  assert_int_equal(g.count, 0);
  assert_int_equal(g.bytes, 0);
  /* fused: fp32 elements whatever -d says */
  bench_geom(BENCH_FUSED, 4096002, 4, 4, &g);
  assert_int_equal(g.count, 1024000);
}

static void test_sizes(void **state) {
  (void)state;
  uint64_t *s;
  int n;
  assert_int_equal(bench_sizes(1 << 20, 16 << 20, 4, &s, &n), GPL_OK);
  assert_int_equal(n, 3);
  assert_int_equal(s[0], 1 << 20);
  assert_int_equal(s[1], 4 << 20);
  assert_int_equal(s[2], 16 << 20);
  free(s);
  assert_int_equal(bench_sizes(1000, 70000, 7, &s, &n), GPL_OK);
  assert_int_equal(n, 3); /* 1000, 7000, 49000 */
  assert_int_equal(s[2], 49000);
  free(s);
  assert_int_equal(bench_sizes(100, 100, 2, &s, &n), GPL_OK);
  assert_int_equal(n, 1);
  free(s);
  assert_int_equal(bench_sizes(0, 4, 2, &s, &n), GPL_OK); /* 0 then +1 steps */
  assert_int_equal(n, 4);
  assert_int_equal(s[1], 1);
  assert_int_equal(s[3], 4);
  free(s);
  assert_int_equal(bench_sizes(10, 20, 1.5, &s, &n), GPL_OK); /* 10 15 22: stops at 15 */
  assert_int_equal(n, 2);
  free(s);
  assert_int_equal(bench_sizes(20, 10, 2, &s, &n), GPL_EINVAL);
  assert_int_equal(bench_sizes(1, 1ull << 40, 1.0001, &s, &n), GPL_EINVAL); /* > 4096 sizes */
}

static void test_thresholds(void **state) {
  (void)state;
  uint64_t sizes[] = {1 << 20, 4 << 20, 16 << 20};
  double thr[3];
  char err[512];
  assert_int_equal(bench_thresholds("", sizes, 3, thr, err, sizeof err), GPL_OK);
  assert_true(thr[0] == 0 && thr[1] == 0 && thr[2] == 0);
  assert_int_equal(bench_thresholds("8", sizes, 3, thr, err, sizeof err), GPL_OK);
  assert_true(thr[0] == 0 && thr[1] == 0 && thr[2] == 8);
  assert_int_equal(bench_thresholds("1M:2.5,16M:8", sizes, 3, thr, err, sizeof err), GPL_OK);
  assert_true(thr[0] == 2.5 && thr[1] == 0 && thr[2] == 8);
  assert_int_equal(bench_thresholds(" 4M : 3 , 0.5", sizes, 3, thr, err, sizeof err), GPL_OK);
  assert_true(thr[0] == 0 && thr[1] == 3 && thr[2] == 0.5);
  assert_int_equal(bench_thresholds("3M:1", sizes, 3, thr, err, sizeof err), GPL_EINVAL);
  assert_non_null(strstr(err, "not one of the sizes"));
  assert_non_null(strstr(err, "4194304"));
  assert_int_equal(bench_thresholds("fast", sizes, 3, thr, err, sizeof err), GPL_EINVAL);
  assert_int_equal(bench_thresholds("1M:", sizes, 3, thr, err, sizeof err), GPL_EINVAL);
  assert_int_equal(bench_thresholds("lots:3", sizes, 3, thr, err, sizeof err), GPL_EINVAL);
  assert_int_equal(bench_thresholds("-1", sizes, 3, thr, err, sizeof err), GPL_EINVAL);
}

static void test_median(void **state) {
  (void)state;
  double a[] = {5, 1, 4, 2, 3};
  assert_true(bench_median(a, 5) == 3);
  double b[] = {4, 1, 3, 2}; /* sorted[n/2], as nccl-tests' p50 */
  assert_true(bench_median(b, 4) == 3);
  double c[] = {7};
  assert_true(bench_median(c, 1) == 7);
}

static void test_number_format(void **state) {
  (void)state;
  char b[32];
  bench_fmt_num(12.3456, 7, b, sizeof b);
  assert_string_equal(b, "  12.35");
  bench_fmt_num(12345.6, 7, b, sizeof b);
  assert_string_equal(b, "12345.6");
  bench_fmt_num(1234567.0, 7, b, sizeof b);
  assert_string_equal(b, "1234567");
  bench_fmt_num(0.5, 6, b, sizeof b);
  assert_string_equal(b, "  0.50");
  bench_fmt_num(123.45, 6, b, sizeof b);
  assert_string_equal(b, "123.45");
  bench_fmt_num(1234.56, 6, b, sizeof b);
  assert_string_equal(b, "1234.6");
  bench_fmt_num(1e9, 6, b, sizeof b);
  assert_string_equal(b, "1.0e+09");
}

static void test_op_names(void **state) {
  (void)state;
  bench_op_t op;
  for (int i = 0; i < BENCH_OP_COUNT; i++) {
    assert_int_equal(bench_op_parse(bench_op_name((bench_op_t)i), &op), GPL_OK);
    assert_int_equal(op, i);
  }
  assert_int_equal(bench_op_parse("all_reduce_perf", &op), GPL_OK);
  assert_int_equal(op, BENCH_ALLREDUCE);
  assert_int_equal(bench_op_parse("reduce_scatter", &op), GPL_OK);
  assert_int_equal(op, BENCH_REDUCESCATTER);
  assert_int_equal(bench_op_parse("allreduse", &op), GPL_EINVAL);
  assert_false(bench_op_has_inplace(BENCH_ALLTOALL));
  assert_false(bench_op_has_oop(BENCH_FUSED));
  assert_true(bench_op_has_oop(BENCH_ALLREDUCE) && bench_op_has_inplace(BENCH_ALLREDUCE));
}

/* ---- the table row, parsed back ---- */

static void test_row_columns(void **state) {
  (void)state;
  bench_cfg_t cfg = {.op = BENCH_ALLREDUCE, .dtype = GPL_BFLOAT16, .redop = GPL_OP_MAX, .iters = 5};
  bench_row_t r;
  memset(&r, 0, sizeof r);
  bench_geom(BENCH_ALLREDUCE, 1 << 20, 2, 4, &r.g);
  r.oop = (bench_cell_t){1, 123.456, 8.49, 12.74, 0};
  r.inplace = (bench_cell_t){1, 99.5, 10.5, 15.8, 3};
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  bench_print_row(f, &cfg, &r);
  fclose(f);
  char size[32], count[32], type[32], redop[32], root[32], t1[32], a1[32], b1[32], w1[32], t2[32],
      a2[32], b2[32], w2[32], extra[32];
  int n = sscanf(buf, "%31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s", size,
                 count, type, redop, root, t1, a1, b1, w1, t2, a2, b2, w2, extra);
  assert_int_equal(n, 13);
  assert_string_equal(size, "1048576");
  assert_string_equal(count, "524288");
  assert_string_equal(type, "bfloat16");
  assert_string_equal(redop, "max");
  assert_string_equal(root, "-1");
  assert_string_equal(t1, "123.46");
  assert_string_equal(w1, "0");
  assert_string_equal(w2, "3");
  /* nccl-tests' fixed widths: size 12, count 12, type 8, redop 6, root 6 */
  assert_int_equal(strchr(buf, '\n') - buf, 12 + 2 + 12 + 2 + 8 + 2 + 6 + 2 + 6 + 2 * (2 + 7 + 2 + 6 + 2 + 6 + 2 + 6));
  free(buf);
  /* N/A cells: alltoall in place, unchecked */
  cfg.op = BENCH_ALLTOALL;
  r.inplace.valid = 0;
  r.oop.nwrong = -1;
  f = open_memstream(&buf, &len);
  bench_print_row(f, &cfg, &r);
  fclose(f);
  n = sscanf(buf, "%31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s %31s", size, count,
             type, redop, root, t1, a1, b1, w1, t2, a2, b2, w2);
  assert_int_equal(n, 13);
  assert_string_equal(redop, "none");
  assert_string_equal(w1, "N/A");
  assert_string_equal(t2, "N/A");
  free(buf);
}

/* ---- data and checker: collectives simulated in host memory ---- */

/* a op b in the dtype's own arithmetic (16-bit floats: in float, rounded back). */
static double red2(gpl_dtype_t dt, gpl_redop_t op, double a, double b) {
  double r;
  switch (op) {
    case GPL_OP_PROD: r = a * b; break;
    case GPL_OP_MAX: r = a > b ? a : b; break;
    case GPL_OP_MIN: r = a < b ? a : b; break;
    default: r = a + b; break; /* sum, avg */
  }
  unsigned char tmp[8];
  bench_store(tmp, dt, 0, r); /* round (and wrap) in the type, as a real reduction would */
  return bench_load(tmp, dt, 0);
}

static void reduce_into(gpl_dtype_t dt, gpl_redop_t op, void *acc, const void *in, size_t n) {
  for (size_t i = 0; i < n; i++)
    bench_store(acc, dt, i, red2(dt, op, bench_load(acc, dt, i), bench_load(in, dt, i)));
}

static void finish_avg(gpl_dtype_t dt, void *buf, size_t n, int nranks) {
  for (size_t i = 0; i < n; i++) {
    double v = bench_load(buf, dt, i);
    int integer = dt != GPL_HALF && dt != GPL_BFLOAT16 && dt != GPL_FLOAT && dt != GPL_DOUBLE;
    bench_store(buf, dt, i, integer ? floor(v / nranks) : v / nranks);
  }
}

/* Simulate op on nranks ranks, check every rank's output, then corrupt one element. */
static void check_collective(bench_op_t op, gpl_dtype_t dt, gpl_redop_t redop, int nranks,
                             uint64_t bytes) {
  size_t es = gpl_dtype_size(dt);
  bench_geom_t g;
  bench_geom(op, bytes, es, nranks, &g);
  bench_data_t d = {.op = op, .dtype = dt, .buf_dtype = dt, .redop = redop, .nranks = nranks,
                    .root = nranks > 2 ? 2 : 0, .scale = 1.0, .seed = 42};
  char *send = malloc((size_t)nranks * GPL_MAX(g.send_count, 1) * es);
  char *out = malloc(GPL_MAX(g.recv_count, 1) * es);
  char *acc = malloc(GPL_MAX(g.send_count, 1) * es);
  assert_non_null(send);
  assert_non_null(out);
  assert_non_null(acc);
  for (int r = 0; r < nranks; r++) bench_fill(&d, r, send + (size_t)r * g.send_count * es, 0, g.send_count);
  /* reduction family: acc = op over ranks (in rank order, the type's arithmetic) */
  if (op == BENCH_ALLREDUCE || op == BENCH_REDUCESCATTER) {
    memcpy(acc, send, g.send_count * es);
    for (int r = 1; r < nranks; r++) reduce_into(dt, redop, acc, send + (size_t)r * g.send_count * es, g.send_count);
    if (redop == GPL_OP_AVG) finish_avg(dt, acc, g.send_count, nranks);
  }
  for (int r = 0; r < nranks; r++) {
    switch (op) {
      case BENCH_ALLREDUCE: memcpy(out, acc, g.recv_count * es); break;
      case BENCH_REDUCESCATTER: memcpy(out, acc + (size_t)r * g.count * es, g.count * es); break;
      case BENCH_ALLGATHER:
        for (int p = 0; p < nranks; p++)
          memcpy(out + (size_t)p * g.count * es, send + (size_t)p * g.send_count * es, g.count * es);
        break;
      case BENCH_BROADCAST: memcpy(out, send + (size_t)d.root * g.send_count * es, g.count * es); break;
      case BENCH_ALLTOALL:
        for (int p = 0; p < nranks; p++)
          memcpy(out + (size_t)p * g.count * es,
                 send + ((size_t)p * g.send_count + (size_t)r * g.count) * es, g.count * es);
        break;
      default: break;
    }
    size_t n = op == BENCH_BROADCAST ? g.count : g.recv_count;
    int64_t w = bench_count_wrong(&d, r, out, 0, n, g.count);
    if (w != 0)
      print_error("%s %s %s n=%d rank %d: %lld wrong of %zu\n", bench_op_name(op), gpl_dtype_name(dt),
                  gpl_redop_name(redop), nranks, r, (long long)w, n);
    assert_int_equal(w, 0);
    if (n > 0 && r == nranks - 1) {
      /* a flipped high bit is one wrong element */
      out[es - 1] ^= 0x40;
      assert_int_equal(bench_count_wrong(&d, r, out, 0, n, g.count), 1);
      /* poison is always wrong */
      memset(out, BENCH_POISON_BYTE, n * es);
      assert_int_equal(bench_count_wrong(&d, r, out, 0, n, g.count), (int64_t)n);
    }
  }
  free(send);
  free(out);
  free(acc);
}

static const gpl_dtype_t g_dtypes[] = {GPL_INT8, GPL_UINT8, GPL_INT32, GPL_UINT32, GPL_INT64,
                                       GPL_UINT64, GPL_HALF, GPL_FLOAT, GPL_DOUBLE, GPL_BFLOAT16};
static const int g_nranks[] = {1, 2, 3, 4, 5, 8, 13, 64, 300, 1000};

static void test_reductions_exact(void **state) {
  (void)state;
  for (size_t t = 0; t < sizeof g_dtypes / sizeof g_dtypes[0]; t++)
    for (int o = 0; o < GPL_REDOP_COUNT; o++)
      for (size_t k = 0; k < sizeof g_nranks / sizeof g_nranks[0]; k++) {
        int n = g_nranks[k];
        uint64_t es = gpl_dtype_size(g_dtypes[t]), elems = n <= 8 ? 997 : 64;
        check_collective(BENCH_ALLREDUCE, g_dtypes[t], (gpl_redop_t)o, n, elems * es + 1);
        /* odd sizes, not a multiple of the rank count (every rank fills n blocks: keep them small
         * for many ranks) */
        if (n > 300) continue;
        elems = n <= 8 ? 331 : 3;
        check_collective(BENCH_REDUCESCATTER, g_dtypes[t], (gpl_redop_t)o, n, (elems * (uint64_t)n + 3) * es);
      }
}

static void test_moves_exact(void **state) {
  (void)state;
  bench_op_t ops[] = {BENCH_ALLGATHER, BENCH_BROADCAST, BENCH_ALLTOALL};
  for (size_t i = 0; i < 3; i++)
    for (size_t t = 0; t < sizeof g_dtypes / sizeof g_dtypes[0]; t++)
      for (size_t k = 0; k < 7; k++)
        check_collective(ops[i], g_dtypes[t], GPL_OP_SUM, g_nranks[k],
                         (uint64_t)1001 * gpl_dtype_size(g_dtypes[t]) + 1);
}

/* Inputs must differ between ranks (else a collective that does nothing passes): a no-op
 * allreduce / allgather leaves wrong elements. */
static void test_noop_is_caught(void **state) {
  (void)state;
  for (size_t t = 0; t < sizeof g_dtypes / sizeof g_dtypes[0]; t++) {
    gpl_dtype_t dt = g_dtypes[t];
    size_t es = gpl_dtype_size(dt), n = 1000;
    char *buf = malloc(n * es * 4);
    for (int o = 0; o < GPL_REDOP_COUNT; o++) {
      if (o == GPL_OP_AVG) continue; /* avg: every rank gives the same values, by design */
      bench_data_t d = {.op = BENCH_ALLREDUCE, .dtype = dt, .buf_dtype = dt, .redop = (gpl_redop_t)o,
                        .nranks = 4, .scale = 1.0, .seed = 7};
      bench_fill(&d, 1, buf, 0, n); /* rank 1's own input, left in place */
      assert_true(bench_count_wrong(&d, 1, buf, 0, n, n) > (int64_t)n / 4);
    }
    bench_data_t d = {.op = BENCH_ALLGATHER, .dtype = dt, .buf_dtype = dt, .nranks = 4, .scale = 1.0};
    bench_fill(&d, 0, buf, 0, n); /* a block of rank 0's data where rank 1's belongs */
    assert_true(bench_count_wrong(&d, 0, buf, n, n, n) > (int64_t)n / 2);
    free(buf);
  }
}

/* The fused allreduce's data: fp32 buffers, sums exact in the wire type after a 1/n pre-scale. */
static void test_fused_exact(void **state) {
  (void)state;
  gpl_dtype_t wires[] = {GPL_FLOAT, GPL_BFLOAT16, GPL_HALF};
  int ns[] = {1, 2, 4, 8, 64, 256};
  for (size_t w = 0; w < 3; w++)
    for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
      int n = ns[k];
      size_t count = 4099;
      float pre = 1.0f / (float)n;
      bench_data_t d = {.op = BENCH_FUSED, .dtype = wires[w], .buf_dtype = GPL_FLOAT,
                        .redop = GPL_OP_SUM, .nranks = n, .scale = pre, .seed = 9};
      float *x = malloc(count * sizeof *x), *sum = calloc(count, sizeof *sum);
      for (int r = 0; r < n; r++) {
        bench_fill(&d, r, x, 0, count);
        for (size_t i = 0; i < count; i++) {
          /* pack: wire(x * pre); sum in the wire type; unpack to fp32 */
          unsigned char a[4], b[4];
          bench_store(a, wires[w], 0, (double)(x[i] * pre));
          bench_store(b, wires[w], 0, (double)sum[i]);
          bench_store(b, wires[w], 0, bench_load(a, wires[w], 0) + bench_load(b, wires[w], 0));
          sum[i] = (float)bench_load(b, wires[w], 0);
        }
      }
      assert_int_equal(bench_count_wrong(&d, 0, sum, 0, count, count), 0);
      free(x);
      free(sum);
    }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_busbw_factors),   cmocka_unit_test(test_bandwidth_values),
      cmocka_unit_test(test_geometry),        cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_thresholds),      cmocka_unit_test(test_median),
      cmocka_unit_test(test_number_format),   cmocka_unit_test(test_op_names),
      cmocka_unit_test(test_row_columns),     cmocka_unit_test(test_reductions_exact),
      cmocka_unit_test(test_moves_exact),     cmocka_unit_test(test_noop_is_caught),
      cmocka_unit_test(test_fused_exact),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
