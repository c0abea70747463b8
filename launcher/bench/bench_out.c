/* gpulaunch bench outputs: nccl-tests' all_reduce_perf table and footer (same columns, widths and
 * number format, so the two can be compared by eye), its -J JSON result entries, and CSV. */
#include <stdio.h>
#include <string.h>

#include "launcher/bench/bench.h"

void bench_fmt_num(double v, int w, char *out, size_t len) {
  /* nccl-tests' getFloatStr: two decimals while they fit in the width, then one, then none,
   * then an exponent. */
  int power = 0;
  for (double p = 1; v >= p && power < 40; p *= 10) power++;
  if (power < w - 2) snprintf(out, len, "%*.2f", w, v);
  else if (power < w - 1) snprintf(out, len, "%*.1f", w, v);
  else if (power < w + 1) snprintf(out, len, "%*.0f", w, v);
  else snprintf(out, len, "%*.1e", w, v);
}

void bench_print_header(FILE *f) {
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s           out-of-place                       in-place          \n",
          "", "", "", "", "");
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "size", "count",
          "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw",
          "#wrong");
  fprintf(f, "# %10s  %12s  %8s  %6s  %6s  %7s  %6s  %6s  %6s  %7s  %6s  %6s  %6s\n", "(B)",
          "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", "");
}

static const char *redop_col(const bench_cfg_t *c) {
  if (c->op == BENCH_FUSED || c->op == BENCH_UNFUSED) return "sum";
  return bench_op_reduces(c->op) ? gpl_redop_name(c->redop) : "none";
}

static int root_col(const bench_cfg_t *c) { return c->op == BENCH_BROADCAST ? c->root : -1; }

static const char *type_col(const bench_cfg_t *c) {
  return c->op == BENCH_UNFUSED ? "float" : gpl_dtype_name(c->dtype);
}

static void print_cell(FILE *f, const bench_cell_t *c) {
  if (!c->valid) {
    fprintf(f, "  %7s  %6s  %6s  %6s", "N/A", "N/A", "N/A", "N/A");
    return;
  }
  char t[32], a[32], b[32];
  bench_fmt_num(c->time_us, 7, t, sizeof t);
  bench_fmt_num(c->algbw, 6, a, sizeof a);
  bench_fmt_num(c->busbw, 6, b, sizeof b);
  if (c->nwrong >= 0) fprintf(f, "  %7s  %6s  %6s  %6g", t, a, b, (double)c->nwrong);
  else fprintf(f, "  %7s  %6s  %6s    N/A", t, a, b);
}

void bench_print_row(FILE *f, const bench_cfg_t *cfg, const bench_row_t *r) {
  fprintf(f, "%12llu  %12llu  %8s  %6s  %6d", (unsigned long long)r->g.bytes,
          (unsigned long long)r->g.count, type_col(cfg), redop_col(cfg), root_col(cfg));
  print_cell(f, &r->oop);
  print_cell(f, &r->inplace);
  fprintf(f, "\n");
}

double bench_avg_busbw(const bench_row_t *rows, int n) {
  double sum = 0;
  int k = 0;
  for (int i = 0; i < n; i++) {
    const bench_cell_t *c[2] = {&rows[i].oop, &rows[i].inplace};
    for (int j = 0; j < 2; j++)
      if (c[j]->valid) {
        sum += c[j]->busbw;
        k++;
      }
  }
  return k ? sum / k : 0.0;
}

int64_t bench_total_wrong(const bench_row_t *rows, int n) {
  int64_t w = 0;
  for (int i = 0; i < n; i++) {
    if (rows[i].oop.valid && rows[i].oop.nwrong > 0) w += rows[i].oop.nwrong;
    if (rows[i].inplace.valid && rows[i].inplace.nwrong > 0) w += rows[i].inplace.nwrong;
  }
  return w;
}

int bench_bad_cells(const bench_row_t *rows, int n) {
  int bad = 0;
  for (int i = 0; i < n; i++)
    bad += (rows[i].oop.valid && rows[i].oop.nwrong > 0) +
           (rows[i].inplace.valid && rows[i].inplace.nwrong > 0);
  return bad;
}

void bench_print_footer(FILE *f, const bench_row_t *rows, int n) {
  int bad = bench_bad_cells(rows, n);
  fprintf(f, "# %-20s : %d %s\n", "Out of bounds values", bad, bad ? "FAILED" : "OK");
  fprintf(f, "# %-20s : %g %s\n", "Avg bus bandwidth", bench_avg_busbw(rows, n), "");
}

static cJSON *json_cell(const bench_cell_t *c) {
  if (!c->valid) return cJSON_CreateNull();
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "time", c->time_us);
  cJSON_AddNumberToObject(o, "alg_bw", c->algbw);
  cJSON_AddNumberToObject(o, "bus_bw", c->busbw);
  if (c->nwrong >= 0) cJSON_AddNumberToObject(o, "nwrong", (double)c->nwrong);
  else cJSON_AddNullToObject(o, "nwrong");
  return o;
}

void bench_json_rows(cJSON *results, const bench_cfg_t *cfg, const bench_row_t *rows, int n) {
  for (int i = 0; i < n; i++) {
    const bench_row_t *r = &rows[i];
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "size", (double)r->g.bytes);
    cJSON_AddNumberToObject(o, "count", (double)r->g.count);
    cJSON_AddStringToObject(o, "type", type_col(cfg));
    cJSON_AddStringToObject(o, "redop", redop_col(cfg));
    cJSON_AddNumberToObject(o, "root", root_col(cfg));
    cJSON_AddItemToObject(o, "out_of_place", json_cell(&r->oop));
    cJSON_AddItemToObject(o, "in_place", json_cell(&r->inplace));
    cJSON_AddNumberToObject(o, "actual_iterations", cfg->iters);
    cJSON_AddStringToObject(o, "experiment_name", bench_op_name(cfg->op));
    /* gpulaunch's own additions */
    cJSON_AddStringToObject(o, "op", bench_op_name(cfg->op));
    cJSON_AddNumberToObject(o, "requested_size", (double)r->requested);
    cJSON_AddItemToArray(results, o);
  }
}

void bench_csv_header(FILE *f) {
  fprintf(f, "op,size,count,type,redop,root,oop_time_us,oop_algbw_gbps,oop_busbw_gbps,oop_nwrong,"
             "ip_time_us,ip_algbw_gbps,ip_busbw_gbps,ip_nwrong\n");
}

static void csv_cell(FILE *f, const bench_cell_t *c) {
  if (!c->valid) {
    fprintf(f, ",,,,");
    return;
  }
  fprintf(f, ",%.3f,%.6f,%.6f,", c->time_us, c->algbw, c->busbw);
  if (c->nwrong >= 0) fprintf(f, "%lld", (long long)c->nwrong);
}

void bench_csv_rows(FILE *f, const bench_cfg_t *cfg, const bench_row_t *rows, int n) {
  for (int i = 0; i < n; i++) {
    const bench_row_t *r = &rows[i];
    fprintf(f, "%s,%llu,%llu,%s,%s,%d", bench_op_name(cfg->op), (unsigned long long)r->g.bytes,
            (unsigned long long)r->g.count, type_col(cfg), redop_col(cfg), root_col(cfg));
    csv_cell(f, &r->oop);
    csv_cell(f, &r->inplace);
    fprintf(f, "\n");
  }
}
