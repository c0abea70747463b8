/* gpulaunch bench: names of the collectives, nccl-tests' buffer geometry and bus-bandwidth
 * formulas, the size sweep, the --min-busbw thresholds and the median. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "comm/busbw.h"
#include "common/check.h"
#include "common/util.h"
#include "launcher/bench/bench.h"

static const char *const g_names[BENCH_OP_COUNT] = {
#define BENCH_OP_NAME_(e, name) name,
    BENCH_OP_MAP(BENCH_OP_NAME_)
#undef BENCH_OP_NAME_
};

const char *bench_op_name(bench_op_t op) {
  return (unsigned)op < BENCH_OP_COUNT ? g_names[op] : "unknown";
}

int bench_op_parse(const char *s, bench_op_t *out) {
  /* nccl-tests' program names and NCCL's function names map to ours. */
  static const struct {
    const char *alias;
    bench_op_t op;
  } aliases[] = {
      {"all_reduce", BENCH_ALLREDUCE},         {"all_reduce_perf", BENCH_ALLREDUCE},
      {"all_gather", BENCH_ALLGATHER},         {"all_gather_perf", BENCH_ALLGATHER},
      {"reduce_scatter", BENCH_REDUCESCATTER}, {"reduce_scatter_perf", BENCH_REDUCESCATTER},
      {"bcast", BENCH_BROADCAST},              {"broadcast_perf", BENCH_BROADCAST},
      {"all_to_all", BENCH_ALLTOALL},          {"alltoall_perf", BENCH_ALLTOALL},
  };
  if (!s || !out) return GPL_EINVAL;
  for (int i = 0; i < BENCH_OP_COUNT; i++)
    if (strcasecmp(s, g_names[i]) == 0) {
      *out = (bench_op_t)i;
      return GPL_OK;
    }
  for (size_t i = 0; i < GPL_ARRAY_LEN(aliases); i++)
    if (strcasecmp(s, aliases[i].alias) == 0) {
      *out = aliases[i].op;
      return GPL_OK;
    }
  return GPL_EINVAL;
}

int bench_op_reduces(bench_op_t op) {
  return op == BENCH_ALLREDUCE || op == BENCH_REDUCESCATTER || op == BENCH_FUSED ||
         op == BENCH_UNFUSED;
}

int bench_op_has_oop(bench_op_t op) { return op != BENCH_FUSED && op != BENCH_UNFUSED; }

int bench_op_has_inplace(bench_op_t op) { return op != BENCH_ALLTOALL; }

void bench_geom(bench_op_t op, uint64_t bytes, size_t esize, int nranks, bench_geom_t *g) {
  memset(g, 0, sizeof *g);
  size_t n = (size_t)(nranks > 0 ? nranks : 1);
  size_t count = esize ? (size_t)(bytes / esize) : 0;
  size_t per = count / n; /* nccl-tests rounds down to a multiple of the rank count */
  switch (op) {
    case BENCH_ALLGATHER:
      g->count = per;
      g->send_count = per;
      g->recv_count = per * n;
      g->send_ip_off = per;
      break;
    case BENCH_REDUCESCATTER:
      g->count = per;
      g->send_count = per * n;
      g->recv_count = per;
      g->recv_ip_off = per;
      break;
    case BENCH_ALLTOALL:
      g->count = per;
      g->send_count = per * n;
      g->recv_count = per * n;
      break;
    case BENCH_ALLREDUCE:
    case BENCH_BROADCAST:
    case BENCH_FUSED:
    case BENCH_UNFUSED:
    default:
      g->count = g->send_count = g->recv_count = count;
      break;
  }
  g->bytes = GPL_MAX(g->send_count, g->recv_count) * esize;
}

double bench_busbw_factor(bench_op_t op, int nranks) {
  double n = nranks > 0 ? nranks : 1;
  switch (op) {
    case BENCH_ALLREDUCE:
    case BENCH_FUSED:
    case BENCH_UNFUSED: return busbw_allreduce_factor(nranks);
    case BENCH_ALLGATHER:
    case BENCH_REDUCESCATTER:
    case BENCH_ALLTOALL: return (n - 1) / n;
    case BENCH_BROADCAST:
    default: return 1.0;
  }
}

void bench_bandwidth(bench_op_t op, const bench_geom_t *g, int nranks, double seconds,
                     double *algbw, double *busbw) {
  /* nccl-tests' getBw: the base is count*typesize (allreduce, broadcast) or count*typesize*n
   * (allgather, reducescatter, alltoall), which is the size column in both cases. */
  double a = seconds > 0 ? (double)g->bytes / 1.0e9 / seconds : 0.0;
  *algbw = a;
  *busbw = a * bench_busbw_factor(op, nranks);
}

int bench_sizes(uint64_t min, uint64_t max, double factor, uint64_t **sizes, int *n) {
  enum { MAX_SIZES = 4096 };
  *sizes = NULL;
  *n = 0;
  if (min > max || !(factor > 1.0)) return GPL_EINVAL;
  uint64_t *s = malloc(MAX_SIZES * sizeof *s);
  ALLOCCHECK(s);
  int k = 0;
  for (uint64_t v = min; v <= max;) {
    if (k == MAX_SIZES) {
      free(s);
      return GPL_EINVAL;
    }
    s[k++] = v;
    double next = floor((double)v * factor);
    if (next > 1.8e19) break;
    uint64_t nv = (uint64_t)next;
    if (nv <= v) nv = v + 1; /* -b 0 or a factor too small to move a small size */
    v = nv;
  }
  *sizes = s;
  *n = k;
  return GPL_OK;
}

int bench_thresholds(const char *text, const uint64_t *sizes, int n, double *thr, char *err,
                     size_t errlen) {
  for (int i = 0; i < n; i++) thr[i] = 0.0;
  if (!text || !*text) return GPL_OK;
  char *copy = strdup(text);
  ALLOCCHECK(copy);
  int rc = GPL_OK;
  char *save = NULL;
  for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    tok = util_trim(tok);
    char *colon = strchr(tok, ':');
    const char *num = colon ? colon + 1 : tok;
    double gbps;
    if (util_parse_double(util_trim((char *)num), &gbps) < 0 || !(gbps >= 0) || isinf(gbps)) {
      snprintf(err, errlen, "'%s': expected GB/s (a number), or SIZE:GB/s such as 16M:8", tok);
      rc = GPL_EINVAL;
      break;
    }
    if (!colon) {
      if (n > 0) thr[n - 1] = gbps;
      continue;
    }
    *colon = '\0';
    uint64_t size;
    if (util_parse_size(util_trim(tok), &size) < 0) {
      snprintf(err, errlen, "'%s' is not a size (bytes, or with K/M/G, e.g. 16M)", tok);
      rc = GPL_EINVAL;
      break;
    }
    int found = -1;
    for (int i = 0; i < n; i++)
      if (sizes[i] == size) found = i;
    if (found < 0) {
      int off = snprintf(err, errlen, "%s (%llu bytes) is not one of the sizes of this sweep:", tok,
                         (unsigned long long)size);
      for (int i = 0; i < n && off > 0 && (size_t)off < errlen; i++)
        off += snprintf(err + off, errlen - (size_t)off, " %llu", (unsigned long long)sizes[i]);
      rc = GPL_EINVAL;
      break;
    }
    thr[found] = gbps;
  }
  free(copy);
  return rc;
}

double bench_median(double *t, int n) {
  if (n <= 0) return 0.0;
  util_sort_doubles(t, (size_t)n);
  return t[n / 2];
}
