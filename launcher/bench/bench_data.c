/* gpulaunch bench: inputs whose collective results are exact in every dtype, their expected
 * results in O(1) per element (so the check costs the same on 4 ranks or 4096), and the count of
 * wrong elements. */
#include <math.h>
#include <string.h>

#include "common/util.h"
#include "kernels/mpmath.h"
#include "launcher/bench/bench.h"

/* Largest integer every partial sum may reach and stay exact (and in range) in dt. uint8 stops at
 * 254 so that the poison byte 0xFF is never an expected value. */
static double sum_limit(gpl_dtype_t dt) {
  switch (dt) {
    case GPL_INT8: return 127;
    case GPL_UINT8: return 254;
    case GPL_HALF: return 2048;      /* 11 significant bits */
    case GPL_BFLOAT16: return 256;   /* 8 significant bits */
    case GPL_FLOAT: return 16777216; /* 2^24 */
    default: return 1048576;         /* wide integers and double: plenty */
  }
}

/* Largest k with 2^k exact and in range (products are powers of two). */
static int prod_kmax(gpl_dtype_t dt) {
  switch (dt) {
    case GPL_INT8: return 6;
    case GPL_UINT8: return 7;
    case GPL_INT32: return 30;
    case GPL_UINT32: return 31;
    case GPL_HALF: return 15;
    default: return 60;
  }
}

/* Mantissa bits, for the avg tolerance. */
static int mant_bits(gpl_dtype_t dt) {
  switch (dt) {
    case GPL_HALF: return 10;
    case GPL_BFLOAT16: return 7;
    case GPL_FLOAT: return 23;
    case GPL_DOUBLE: return 52;
    default: return -1; /* integers: exact */
  }
}

static uint32_t mix(const bench_data_t *d, uint64_t i) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + (uint64_t)d->seed * 0xBF58476D1CE4E5B9ull;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBull;
  return (uint32_t)(x >> 32);
}

/* The reduction family's parameters for this rank count and dtype:
 * sum: ranks below `active` give (a + r) mod m, the others 0, with active*(m-1) <= limit;
 * prod: 2 where (a + r) mod period == 0, else 1, at most kmax twos per element;
 * max/min: (a + r) mod 100; avg: every rank gives a < m with n*(m-1) <= limit. */
typedef struct red_s {
  uint64_t m, active, period;
} red_t;

static red_t red_params(const bench_data_t *d) {
  red_t p = {100, (uint64_t)d->nranks, 1};
  double lim = sum_limit(d->dtype);
  uint64_t n = (uint64_t)(d->nranks > 0 ? d->nranks : 1);
  switch (d->redop) {
    case GPL_OP_SUM:
      if ((double)n > lim) {
        p.active = (uint64_t)lim;
        p.m = 2;
      } else {
        p.m = GPL_MIN((uint64_t)16, (uint64_t)(lim / (double)n) + 1);
        if (p.m < 2) p.m = 2;
      }
      break;
    case GPL_OP_AVG:
      p.m = GPL_MIN((uint64_t)100, (uint64_t)(lim / (double)n) + 1);
      if (p.m < 1) p.m = 1;
      break;
    case GPL_OP_PROD: {
      uint64_t k = (uint64_t)prod_kmax(d->dtype);
      p.period = (n + k - 1) / k; /* at most ceil(n / period) <= k ranks give a 2 */
      if (p.period < 1) p.period = 1;
      break;
    }
    default: break;
  }
  return p;
}

static double red_input(const bench_data_t *d, const red_t *p, int rank, uint64_t j) {
  uint64_t r = (uint64_t)rank;
  switch (d->redop) {
    case GPL_OP_SUM: {
      uint64_t a = mix(d, j) % p->m;
      return r < p->active ? (double)((a + r) % p->m) : 0.0;
    }
    case GPL_OP_PROD: {
      uint64_t a = mix(d, j) % p->period;
      return (a + r) % p->period == 0 ? 2.0 : 1.0;
    }
    case GPL_OP_AVG: return (double)(mix(d, j) % p->m);
    default: return (double)((mix(d, j) % p->m + r) % p->m); /* max, min */
  }
}

/* Sum over r < cnt of (a + r) mod m, in closed form. */
static double sum_mod(uint64_t a, uint64_t cnt, uint64_t m) {
  uint64_t q = cnt / m, rem = cnt % m;
  double s = (double)q * (double)(m * (m - 1) / 2);
  if (a + rem <= m) {
    s += (double)(rem * a + rem * (rem - 1) / 2);
  } else {
    uint64_t k1 = m - a, k2 = rem - k1; /* a..m-1, then 0..k2-1 */
    s += (double)((a + m - 1) * k1 / 2) + (double)(k2 * (k2 - 1) / 2);
  }
  return s;
}

static double red_expected(const bench_data_t *d, const red_t *p, uint64_t j) {
  uint64_t n = (uint64_t)d->nranks;
  switch (d->redop) {
    case GPL_OP_SUM: return sum_mod(mix(d, j) % p->m, p->active, p->m);
    case GPL_OP_PROD: {
      uint64_t a = mix(d, j) % p->period;
      uint64_t first = (p->period - a) % p->period; /* first r with (a + r) % period == 0 */
      uint64_t k = first >= n ? 0 : 1 + (n - 1 - first) / p->period;
      return ldexp(1.0, (int)k);
    }
    case GPL_OP_AVG: return (double)(mix(d, j) % p->m);
    case GPL_OP_MAX: {
      uint64_t a = mix(d, j) % p->m;
      if (n >= p->m || a + n - 1 >= p->m) return (double)(p->m - 1); /* the values wrap past m-1 */
      return (double)(a + n - 1);
    }
    case GPL_OP_MIN: {
      uint64_t a = mix(d, j) % p->m;
      if (n >= p->m || a + n - 1 >= p->m) return 0.0; /* the values wrap past 0 */
      return (double)a;
    }
    default: return NAN;
  }
}

/* Per-rank data of the moving collectives: (hash(i) + 37 r) mod 100. */
static double move_value(const bench_data_t *d, int rank, uint64_t i) {
  return (double)((mix(d, i) % 100 + 37u * (uint64_t)rank) % 100);
}

double bench_expected(const bench_data_t *d, int rank, size_t index, size_t count) {
  switch (d->op) {
    case BENCH_ALLGATHER: return count ? move_value(d, (int)(index / count), index % count) : NAN;
    case BENCH_BROADCAST: return move_value(d, d->root, index);
    case BENCH_ALLTOALL:
      return count ? move_value(d, (int)(index / count), (uint64_t)rank * count + index % count)
                   : NAN;
    case BENCH_REDUCESCATTER: {
      red_t p = red_params(d);
      return red_expected(d, &p, (uint64_t)rank * count + index);
    }
    default: {
      red_t p = red_params(d);
      return red_expected(d, &p, index) * d->scale;
    }
  }
}

void bench_store(void *buf, gpl_dtype_t dt, size_t i, double v) {
  switch (dt) {
    case GPL_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
    case GPL_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
    case GPL_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
    case GPL_UINT32: ((uint32_t *)buf)[i] = (uint32_t)v; break;
    case GPL_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
    case GPL_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
    case GPL_HALF: ((uint16_t *)buf)[i] = mp_f32_to_f16((float)v); break;
    case GPL_BFLOAT16: ((uint16_t *)buf)[i] = mp_f32_to_bf16((float)v); break;
    case GPL_FLOAT: ((float *)buf)[i] = (float)v; break;
    case GPL_DOUBLE: ((double *)buf)[i] = v; break;
    default: break;
  }
}

double bench_load(const void *buf, gpl_dtype_t dt, size_t i) {
  switch (dt) {
    case GPL_INT8: return ((const int8_t *)buf)[i];
    case GPL_UINT8: return ((const uint8_t *)buf)[i];
    case GPL_INT32: return ((const int32_t *)buf)[i];
    case GPL_UINT32: return ((const uint32_t *)buf)[i];
    case GPL_INT64: return (double)((const int64_t *)buf)[i];
    case GPL_UINT64: return (double)((const uint64_t *)buf)[i];
    case GPL_HALF: return mp_f16_to_f32(((const uint16_t *)buf)[i]);
    case GPL_BFLOAT16: return mp_bf16_to_f32(((const uint16_t *)buf)[i]);
    case GPL_FLOAT: return ((const float *)buf)[i];
    case GPL_DOUBLE: return ((const double *)buf)[i];
    default: return NAN;
  }
}

void bench_fill(const bench_data_t *d, int rank, void *buf, size_t first, size_t n) {
  if (d->op == BENCH_ALLGATHER || d->op == BENCH_BROADCAST || d->op == BENCH_ALLTOALL) {
    for (size_t k = 0; k < n; k++) bench_store(buf, d->buf_dtype, k, move_value(d, rank, first + k));
    return;
  }
  red_t p = red_params(d);
  for (size_t k = 0; k < n; k++)
    bench_store(buf, d->buf_dtype, k, red_input(d, &p, rank, first + k));
}

int64_t bench_count_wrong(const bench_data_t *d, int rank, const void *buf, size_t first, size_t n,
                          size_t count) {
  int64_t wrong = 0;
  /* avg on floating types: NCCL computes it as a sum of values pre-multiplied by 1/n, which is
   * exact only when n is a power of two; allow n units in the last place. */
  double rel = 0.0;
  if (d->redop == GPL_OP_AVG && bench_op_reduces(d->op) && mant_bits(d->buf_dtype) > 0)
    rel = ldexp((double)d->nranks, -mant_bits(d->buf_dtype));
  for (size_t k = 0; k < n; k++) {
    double want = bench_expected(d, rank, first + k, count);
    double got = bench_load(buf, d->buf_dtype, k);
    if (got == want) continue;
    if (rel > 0 && fabs(got - want) <= rel * fabs(want)) continue;
    wrong++;
  }
  return wrong;
}
