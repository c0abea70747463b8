/* Every collective of the cpu backend on a real mpirun: all dtypes (half and bfloat16 included),
 * all reduction ops (avg too), counts that the rank count does not divide, in place and not, and
 * the argument checks. Run with any number of ranks (the suite uses 4). */
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpulaunch/gpulaunch.h"
#include "kernels/mpmath.h"
#include "tests/mpi_check.h"

static int g_size, g_rank;

/* The value rank r contributes at element i: small integers, so every sum, product, max and min
 * is exact in every dtype and the expected results need no tolerance. */
static double val(gpl_dtype_t dt, gpl_redop_t op, int r, size_t i) {
  int uns = dt == GPL_UINT8 || dt == GPL_UINT32 || dt == GPL_UINT64;
  if (op == GPL_OP_PROD) return 1 + (double)((r + i) % 2); /* at most 2^size */
  int v = (int)((r * 7 + i * 3) % 11);
  return uns ? v : v - 5;
}

static void set(gpl_dtype_t dt, void *buf, size_t i, double v) {
  switch (dt) {
    case GPL_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case GPL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case GPL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case GPL_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case GPL_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case GPL_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case GPL_HALF: ((uint16_t *)buf)[i] = mp_f32_to_f16((float)v); break;
    case GPL_FLOAT: ((float *)buf)[i] = (float)v; break;
    case GPL_DOUBLE: ((double *)buf)[i] = v; break;
    case GPL_BFLOAT16: ((uint16_t *)buf)[i] = mp_f32_to_bf16((float)v); break;
    default: break;
  }
}

static double get(gpl_dtype_t dt, const void *buf, size_t i) {
  switch (dt) {
    case GPL_INT8: return ((const int8_t *)buf)[i];
    case GPL_UINT8: return ((const uint8_t *)buf)[i];
    case GPL_INT32: return ((const int32_t *)buf)[i];
    case GPL_UINT32: return ((const uint32_t *)buf)[i];
    case GPL_INT64: return (double)((const int64_t *)buf)[i];
    case GPL_UINT64: return (double)((const uint64_t *)buf)[i];
    case GPL_HALF: return mp_f16_to_f32(((const uint16_t *)buf)[i]);
    case GPL_FLOAT: return ((const float *)buf)[i];
    case GPL_DOUBLE: return ((const double *)buf)[i];
    case GPL_BFLOAT16: return mp_bf16_to_f32(((const uint16_t *)buf)[i]);
    default: return NAN;
  }
}

static int is_int(gpl_dtype_t dt) { return dt <= GPL_UINT64; }

/* op over all ranks of val(., j), as the dtype computes it. */
static double expect(gpl_dtype_t dt, gpl_redop_t op, size_t j) {
  double acc = val(dt, op, 0, j);
  for (int r = 1; r < g_size; r++) {
    double v = val(dt, op, r, j);
    if (op == GPL_OP_SUM || op == GPL_OP_AVG) acc += v;
    else if (op == GPL_OP_PROD) acc *= v;
    else if (op == GPL_OP_MAX) acc = v > acc ? v : acc;
    else acc = v < acc ? v : acc;
  }
  if (op == GPL_OP_AVG) acc = is_int(dt) ? trunc(acc / g_size) : acc / g_size;
  return acc;
}

/* avg divides: exact for integers (truncation) and when size is a power of two; otherwise allow the
 * rounding of the dtype. */
static double tol(gpl_dtype_t dt, gpl_redop_t op) {
  if (op != GPL_OP_AVG || is_int(dt)) return 0;
  return dt == GPL_HALF ? 1e-3 : dt == GPL_BFLOAT16 ? 8e-3 : dt == GPL_FLOAT ? 1e-6 : 1e-12;
}

static void check(const char *what, gpl_dtype_t dt, gpl_redop_t op, const void *buf, size_t i,
                  double want) {
  double got = get(dt, buf, i);
  double err = fabs(got - want), lim = tol(dt, op) * (fabs(want) > 1 ? fabs(want) : 1);
  if (!(err <= lim)) /* NaN fails too */
    MPI_CHECK_FAIL("%s %s %s: element %zu = %g, expected %g", what, gpl_dtype_name(dt), gpl_redop_name(op),
           i, got, want);
}

static void *poisoned(size_t bytes) {
  void *p = malloc(bytes ? bytes : 1);
  if (!p) abort();
  memset(p, 0xA5, bytes);
  return p;
}

static void run_dtype(gpl_comm_t *c, gpl_dtype_t dt, size_t n) {
  size_t e = gpl_dtype_size(dt), S = (size_t)g_size;
  char name[64];
  snprintf(name, sizeof name, "%s count %zu", gpl_dtype_name(dt), n);
  mpi_check_case = name;

  for (int op = 0; op < GPL_REDOP_COUNT; op++) {
    gpl_redop_t o = (gpl_redop_t)op;
    /* allreduce, out of place and in place */
    void *send = poisoned(n * e), *recv = poisoned(n * e);
    for (size_t i = 0; i < n; i++) set(dt, send, i, val(dt, o, g_rank, i));
    MPI_CHECK_OK(gpl_allreduce(c, send, recv, n, dt, o, NULL));
    for (size_t i = 0; i < n; i++) check("allreduce", dt, o, recv, i, expect(dt, o, i));
    MPI_CHECK_OK(gpl_allreduce(c, send, send, n, dt, o, NULL));
    for (size_t i = 0; i < n; i++) check("allreduce in place", dt, o, send, i, expect(dt, o, i));
    free(send);
    free(recv);

    /* reduce-scatter: rank r gets block r; in place = output inside the input (NCCL's rule) */
    send = poisoned(S * n * e);
    recv = poisoned(n * e);
    for (size_t j = 0; j < S * n; j++) set(dt, send, j, val(dt, o, g_rank, j));
    MPI_CHECK_OK(gpl_reduce_scatter(c, send, recv, n, dt, o, NULL));
    for (size_t i = 0; i < n; i++)
      check("reduce-scatter", dt, o, recv, i, expect(dt, o, (size_t)g_rank * n + i));
    char *inplace = (char *)send + (size_t)g_rank * n * e;
    MPI_CHECK_OK(gpl_reduce_scatter(c, send, inplace, n, dt, o, NULL));
    for (size_t i = 0; i < n; i++)
      check("reduce-scatter in place", dt, o, inplace, i, expect(dt, o, (size_t)g_rank * n + i));
    free(send);
    free(recv);
  }

  /* allgather, out of place and in place (own block already in recv) */
  void *send = poisoned(n * e), *recv = poisoned(S * n * e);
  for (size_t i = 0; i < n; i++) set(dt, send, i, val(dt, GPL_OP_SUM, g_rank, i));
  MPI_CHECK_OK(gpl_allgather(c, send, recv, n, dt, NULL));
  for (int r = 0; r < g_size; r++)
    for (size_t i = 0; i < n; i++)
      check("allgather", dt, GPL_OP_SUM, recv, (size_t)r * n + i, val(dt, GPL_OP_SUM, r, i));
  free(recv);
  recv = poisoned(S * n * e);
  char *mine = (char *)recv + (size_t)g_rank * n * e;
  if (n) memcpy(mine, send, n * e);
  MPI_CHECK_OK(gpl_allgather(c, mine, recv, n, dt, NULL));
  for (int r = 0; r < g_size; r++)
    for (size_t i = 0; i < n; i++)
      check("allgather in place", dt, GPL_OP_SUM, recv, (size_t)r * n + i,
            val(dt, GPL_OP_SUM, r, i));
  free(send);
  free(recv);

  /* broadcast from a root that changes with the count; in place too */
  int root = (int)(n % S);
  send = poisoned(n * e);
  recv = poisoned(n * e);
  for (size_t i = 0; i < n; i++) set(dt, send, i, val(dt, GPL_OP_SUM, g_rank, i));
  MPI_CHECK_OK(gpl_broadcast(c, send, recv, n, dt, root, NULL));
  for (size_t i = 0; i < n; i++)
    check("broadcast", dt, GPL_OP_SUM, recv, i, val(dt, GPL_OP_SUM, root, i));
  MPI_CHECK_OK(gpl_broadcast(c, send, send, n, dt, root, NULL));
  for (size_t i = 0; i < n; i++)
    check("broadcast in place", dt, GPL_OP_SUM, send, i, val(dt, GPL_OP_SUM, root, i));
  free(send);
  free(recv);

  /* alltoall: block p of rank r's send goes to rank p, lands at block r */
  send = poisoned(S * n * e);
  recv = poisoned(S * n * e);
  for (size_t j = 0; j < S * n; j++) set(dt, send, j, val(dt, GPL_OP_SUM, g_rank, j));
  MPI_CHECK_OK(gpl_alltoall(c, send, recv, n, dt, NULL));
  for (int r = 0; r < g_size; r++)
    for (size_t i = 0; i < n; i++)
      check("alltoall", dt, GPL_OP_SUM, recv, (size_t)r * n + i,
            val(dt, GPL_OP_SUM, r, (size_t)g_rank * n + i));
  free(send);
  free(recv);
}

/* Wrong arguments are refused on every rank alike, and leave the communicator usable. */
static void run_argument_checks(gpl_comm_t *c) {
  mpi_check_case = "argument checks";
  float x[8] = {0};
  MPI_CHECK_INT(gpl_allreduce(c, x, x, 8, (gpl_dtype_t)99, GPL_OP_SUM, NULL), GPL_EINVAL);
  MPI_CHECK_INT(gpl_allreduce(c, x, x, 8, GPL_FLOAT, (gpl_redop_t)99, NULL), GPL_EINVAL);
  MPI_CHECK_INT(gpl_allreduce(c, NULL, x, 8, GPL_FLOAT, GPL_OP_SUM, NULL), GPL_EINVAL);
  MPI_CHECK_INT(gpl_allreduce(c, x, x + 1, 4, GPL_FLOAT, GPL_OP_SUM, NULL), GPL_EINVAL); /* overlap */
  MPI_CHECK_INT(gpl_broadcast(c, x, x, 8, GPL_FLOAT, g_size, NULL), GPL_EINVAL);
  MPI_CHECK_INT(gpl_broadcast(c, x, x, 8, GPL_FLOAT, -1, NULL), GPL_EINVAL);
  MPI_CHECK_INT(gpl_alltoall(c, x, x, 1, GPL_FLOAT, NULL), GPL_EINVAL);
  MPI_CHECK_INT(gpl_allreduce(c, x, x, (size_t)INT_MAX + 1, GPL_FLOAT, GPL_OP_SUM, NULL), GPL_ERANGE);
  MPI_CHECK_INT(gpl_allreduce(NULL, x, x, 8, GPL_FLOAT, GPL_OP_SUM, NULL), GPL_EINVAL);
  /* still usable */
  int one = 1, total = 0;
  MPI_CHECK_OK(gpl_allreduce(c, &one, &total, 1, GPL_INT32, GPL_OP_SUM, NULL));
  MPI_CHECK_INT(total, g_size);
}

int main(int argc, char **argv) {
  /* An MPI program: MPI is up before gpl_init, which must use it (and leave it running). */
  MPI_Init(&argc, &argv);
  gpl_init_opts_t o;
  gpl_init_opts_default(&o);
  o.backend = GPL_BACKEND_CPU;
  gpl_comm_t *c = NULL;
  MPI_CHECK_OK(gpl_init(&c, &o));
  g_size = gpl_comm_size(c);
  g_rank = mpi_check_rank = gpl_comm_rank(c);
  int wr, ws;
  MPI_Comm_rank(MPI_COMM_WORLD, &wr);
  MPI_Comm_size(MPI_COMM_WORLD, &ws);
  MPI_CHECK_INT(g_rank, wr);
  MPI_CHECK_INT(g_size, ws);
  MPI_CHECK_INT(gpl_comm_backend(c), GPL_BACKEND_CPU);
  MPI_CHECK_INT(gpl_comm_nnodes(c), 1);
  MPI_CHECK_INT(gpl_comm_local_size(c), ws);
  MPI_CHECK_INT(gpl_comm_local_rank(c), wr);

  static const size_t counts[] = {0, 1, 13, 1001, 65537};
  for (int dt = 0; dt < GPL_DTYPE_COUNT; dt++)
    for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
      run_dtype(c, (gpl_dtype_t)dt, counts[k]);
  run_argument_checks(c);
  MPI_CHECK_OK(gpl_barrier(c));

  int bad = mpi_check_failures, all_bad = 0;
  MPI_CHECK_OK(gpl_allreduce(c, &bad, &all_bad, 1, GPL_INT32, GPL_OP_SUM, NULL));
  MPI_CHECK_OK(gpl_finalize(c));
  int still = 0;
  MPI_Initialized(&still);
  MPI_CHECK(still); /* gpl_finalize left the program's MPI alone */
  MPI_Finalize();
  if (g_rank == 0) printf("test_comm_coll: %d ranks, %d failures\n", g_size, all_bad);
  return all_bad ? 1 : 0;
}
