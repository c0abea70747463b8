/* `gpulaunch bench`: collective bandwidth with nccl-tests' options, table and JSON, on the job's
 * placed and bound ranks, over comm/ (nccl on GPUs, Open MPI on CPUs). */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "comm/comm_job.h"
#include "common/envvar.h"
#include "common/safefile.h"
#include "common/check.h"
#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/bench/bench.h"
#include "launcher/cli.h"
#include "launcher/launcher.h"
#include "launcher/job/outpath.h"
#include "launcher/job/place.h"

static const char g_bench_usage[] =
    "usage: mpirun -np N gpulaunch bench [CONFIG] [options]\n"
    "Collective bandwidth, nccl-tests style (all_reduce_perf's columns, bus bandwidth and -J JSON).\n"
    "Options (also [bench] keys of CONFIG; options win):\n"
    "  --op LIST             allreduce|allgather|reducescatter|broadcast|alltoall|fused|unfused,\n"
    "                        a comma list runs each in turn (default allreduce)\n"
    "  -b, --minbytes SIZE   smallest size (K/M/G suffixes, powers of 1024; default 32M)\n"
    "  -e, --maxbytes SIZE   largest size (default 32M)\n"
    "  -f, --stepfactor X    size multiplier between rows (default 2)\n"
    "  -d, --datatype TYPE   float half bfloat16 double int8 uint8 int32 uint32 int64 uint64\n"
    "                        (fused: the wire type, float|bfloat16|half; default [comm] wire_dtype)\n"
    "  -o, --redop OP        sum prod max min avg (nccl-tests' -o; default sum)\n"
    "  -n, --iters N         timed iterations (default 20)\n"
    "  -w, --warmup_iters N  warm-up iterations at the largest and the smallest size (default 5)\n"
    "  -c, --check 0|1       check every result (default 1)\n"
    "  -r, --root R          broadcast root (default 0)\n"
    "  --backend B           auto (nccl when every rank has a GPU, else cpu), nccl or cpu\n"
    "  -J, --json FILE       results as JSON (nccl-tests -J fields, plus the placement)\n"
    "  --csv FILE            results as CSV\n"
    "  --label TEXT          a name for this run in the JSON (the plot's legend)\n"
    "  --min-busbw SPEC      exit 72 when the bus bandwidth falls short: X (GB/s at the largest\n"
    "                        size) or SIZE:X[,SIZE:X...] (at those sizes of the sweep), e.g.\n"
    "                        --min-busbw 8 or --min-busbw 1M:2.5,16M:8; out-of-place column\n"
    "  --tensor-bytes SIZE   fused/unfused: the buffer is tensors of this size (default: one)\n"
    "  --bucket-mb X         fused: bucket size in MiB (default [comm] bucket_mb)\n"
    "Time: per iteration the slowest rank's time, then the median over the iterations. Counts are\n"
    "size / type size, rounded down to a multiple of the rank count for allgather, reducescatter\n"
    "and alltoall, as nccl-tests does. Exit status: 0; 64 bad options; 69 nccl asked for without a\n"
    "GPU; 72 wrong results or bus bandwidth below --min-busbw.\n";

/* Everything the options and the [bench] section decide. */
typedef struct bench_opts_s {
  bench_op_t ops[BENCH_OP_COUNT];
  int nops;
  bench_cfg_t cfg; /* op and dtype are set per op */
  int dtype_set;   /* -d given (else fused takes [comm] wire_dtype) */
  gpl_dtype_t dtype;
  gpl_backend_t backend;
  uint64_t *sizes;
  int nsizes;
  double *thr;
  const char *json, *csv, *label, *min_busbw;
  double stepfactor;
} bench_opts_t;

/* Options that are not [bench] keys. */
enum { OPT_BACKEND = 1000, OPT_JSON, OPT_CSV, OPT_MINBW, OPT_OP, OPT_LABEL, OPT_TENSOR, OPT_BUCKET };

static int usage_error(const launch_t *L, const char *fmt, const char *a, const char *b) {
  if (L->job->rank == 0) {
    log_print("gpulaunch bench: ");
    log_print(fmt, a, b);
    log_print("\n(gpulaunch bench --usage for the options)\n");
  }
  return GPL_EXIT_USAGE;
}

/* The options (nccl-tests' names and bench's own): into the config, where conf_set validates them
 * and says what is wrong. */
static const struct option g_bench_opts[] = {
    {"minbytes", required_argument, 0, 'b'},   {"maxbytes", required_argument, 0, 'e'},
    {"stepfactor", required_argument, 0, 'f'}, {"datatype", required_argument, 0, 'd'},
    {"dtype", required_argument, 0, 'd'},      {"redop", required_argument, 0, 'o'},
    {"iters", required_argument, 0, 'n'},      {"warmup_iters", required_argument, 0, 'w'},
    {"warmup", required_argument, 0, 'w'},     {"check", required_argument, 0, 'c'},
    {"root", required_argument, 0, 'r'},       {"nthreads", required_argument, 0, 't'},
    {"ngpus", required_argument, 0, 'g'},      {"json", required_argument, 0, 'J'},
    {"csv", required_argument, 0, OPT_CSV},    {"backend", required_argument, 0, OPT_BACKEND},
    {"op", required_argument, 0, OPT_OP},      {"min-busbw", required_argument, 0, OPT_MINBW},
    {"min_busbw", required_argument, 0, OPT_MINBW}, {"label", required_argument, 0, OPT_LABEL},
    {"tensor-bytes", required_argument, 0, OPT_TENSOR},
    {"bucket-mb", required_argument, 0, OPT_BUCKET}, {"usage", no_argument, 0, 'h'},
    {"help", no_argument, 0, 'h'},
    {0, 0, 0, 0}};
const cli_spec_t mode_bench_cli = {"b:e:f:d:o:n:w:c:r:t:g:J:h", g_bench_opts};

static int parse_options(launch_t *L, int *help) {
  cli_t cl;
  if (cli_begin(&cl, "gpulaunch bench", L->argc, L->argv, &mode_bench_cli) < 0) return GPL_EXIT_INTERNAL;
  int code = GPL_EXIT_OK, c;
  while (code == GPL_EXIT_OK && (c = cli_next(&cl, 1)) != -1) {
    conf_t *cf = L->conf;
    const void *field = NULL;
    const char *origin = NULL;
    char name[64];
    snprintf(name, sizeof name, "%s", cli_opt(&cl));
    switch (c) {
      case 'b': field = &cf->bench.minbytes; origin = "-b"; break;
      case 'e': field = &cf->bench.maxbytes; origin = "-e"; break;
      case 'f': field = &cf->bench.stepfactor; origin = "-f"; break;
      case 'd': field = &cf->bench.dtype; origin = "-d"; break;
      case 'o': field = &cf->bench.redop; origin = "-o"; break;
      case 'n': field = &cf->bench.iters; origin = "-n"; break;
      case 'w': field = &cf->bench.warmup; origin = "-w"; break;
      case 'c': field = &cf->bench.check; origin = "-c"; break;
      case 'r': field = &cf->bench.root; origin = "-r"; break;
      case 'J': field = &cf->bench.json; origin = "--json"; break;
      case OPT_CSV: field = &cf->bench.csv; origin = "--csv"; break;
      case OPT_OP: field = &cf->bench.op; origin = "--op"; break;
      case OPT_MINBW: field = &cf->bench.min_busbw; origin = "--min-busbw"; break;
      case OPT_LABEL: field = &cf->bench.label; origin = "--label"; break;
      case OPT_TENSOR: field = &cf->bench.tensor_bytes; origin = "--tensor-bytes"; break;
      case OPT_BACKEND: field = &cf->comm.backend; origin = "--backend"; break;
      case OPT_BUCKET: field = &cf->comm.bucket_mb; origin = "--bucket-mb"; break;
      case 't':
      case 'g':
        if (strcmp(optarg, "1") != 0)
          code = usage_error(L, "%s %s: gpulaunch runs one GPU per rank; start more ranks "
                                "(mpirun -np N) instead", c == 't' ? "-t" : "-g", optarg);
        continue;
      case 'h': *help = 1; continue;
      case ':': code = usage_error(L, "%s needs a value%s", name, ""); continue;
      default: code = usage_error(L, "unknown option %s%s", name, ""); continue;
    }
    if (conf_set(cf, field, optarg, origin) < 0) code = GPL_EXIT_USAGE;
  }
  int n;
  char **rest = cli_rest(&cl, &n);
  if (code == GPL_EXIT_OK && n > 0) code = usage_error(L, "unexpected argument '%s'%s", rest[0], "");
  cli_end(&cl);
  return code;
}

/* A [bench] value that does not parse: name where it came from. */
static int bad_value(const launch_t *L, const void *field, const char *what) {
  const char *origin = conf_origin(L->conf, field);
  if (!L->job || L->job->rank == 0)
    log_print("gpulaunch bench: %s '%s' (%s): %s\n", conf_key_of(L->conf, field)->key,
              conf_text(L->conf, field), origin, what);
  return origin[0] == '-' ? GPL_EXIT_USAGE : GPL_EXIT_CONFIG;
}

/* The settings of [bench] and its options; with the job, the output files checked before anything
 * is measured. check_only (gpulaunch check, no job yet): validate what can be, open nothing. */
static int read_settings(launch_t *L, bench_opts_t *o, int check_only) {
  const conf_t *cf = L->conf;
  memset(o, 0, sizeof *o);
  /* ops */
  char *ops = strdup(cf->bench.op);
  if (!ops) return GPL_EXIT_INTERNAL;
  char *save = NULL;
  int code = GPL_EXIT_OK;
  for (char *t = strtok_r(ops, ", ", &save); t && code == GPL_EXIT_OK; t = strtok_r(NULL, ", ", &save)) {
    bench_op_t op;
    if (bench_op_parse(t, &op) < 0)
      code = bad_value(L, &cf->bench.op, "expected allreduce, allgather, reducescatter, broadcast, alltoall, "
                                "fused or unfused (a comma list runs each)");
    else if (o->nops < BENCH_OP_COUNT)
      o->ops[o->nops++] = op;
  }
  free(ops);
  if (code != GPL_EXIT_OK) return code;
  if (!o->nops) return bad_value(L, &cf->bench.op, "no collective given");

  bench_cfg_t *c = &o->cfg;
  if (gpl_dtype_parse(cf->bench.dtype, &o->dtype) < 0)
    return bad_value(L, &cf->bench.dtype, "expected int8, uint8, int32, uint32, int64, uint64, half, float, "
                                 "double or bfloat16");
  o->dtype_set = conf_is_set(cf, &cf->bench.dtype);
  if (gpl_redop_parse(cf->bench.redop, &c->redop) < 0)
    return bad_value(L, &cf->bench.redop, "expected sum, prod, max, min or avg");
  c->iters = (int)cf->bench.iters;
  c->warmup = (int)cf->bench.warmup;
  c->check = cf->bench.check;
  c->root = (int)cf->bench.root;
  if (L->job && c->root >= L->job->size) return bad_value(L, &cf->bench.root, "not a rank of this job");
  c->tensor_bytes = (size_t)cf->bench.tensor_bytes;
  c->bucket_mb = cf->comm.bucket_mb;
  c->corrupt_rank = -1;
  const char *corrupt = envvar_get(ENVVAR_TEST_CORRUPT); /* test hook, see bench_run.c */
  if (corrupt && *corrupt) c->corrupt_rank = atoi(corrupt);
  c->progress_fp = !check_only && L->job->rank == 0 ? bench_progress_stream(&c->progress_via_mpirun) : NULL;
  c->progress = c->progress_fp != NULL;
  if (gpl_backend_parse(cf->comm.backend, &o->backend) < 0) return GPL_EXIT_CONFIG;

  uint64_t lo = cf->bench.minbytes, hi = cf->bench.maxbytes;
  o->stepfactor = cf->bench.stepfactor;
  if (lo > hi) return bad_value(L, &cf->bench.minbytes, "larger than maxbytes");
  if (bench_sizes(lo, hi, o->stepfactor, &o->sizes, &o->nsizes) < 0)
    return bad_value(L, &cf->bench.stepfactor, "more than 4096 sizes between minbytes and maxbytes");
  o->thr = calloc((size_t)o->nsizes, sizeof *o->thr);
  if (!o->thr) return GPL_EXIT_INTERNAL;
  char err[1024] = "";
  o->min_busbw = cf->bench.min_busbw;
  if (bench_thresholds(o->min_busbw, o->sizes, o->nsizes, o->thr, err, sizeof err) < 0)
    return bad_value(L, &cf->bench.min_busbw, err);
  o->json = cf->bench.json;
  o->csv = cf->bench.csv;
  o->label = cf->bench.label;
  const outpath_t out[] = {{conf_origin(cf, &cf->bench.json), o->json},
                           {conf_origin(cf, &cf->bench.csv), o->csv}, {"--summary", L->summary_path}};
  return check_only ? GPL_EXIT_OK : outpath_check(L->job, "gpulaunch bench", out, (int)GPL_ARRAY_LEN(out));
}

/* The dtype an op runs with: -d, except that fused defaults to [comm] wire_dtype. */
static int op_dtype(const launch_t *L, const bench_opts_t *o, bench_op_t op, gpl_dtype_t *dt) {
  *dt = o->dtype;
  if (op == BENCH_UNFUSED) {
    *dt = GPL_FLOAT;
    return GPL_EXIT_OK;
  }
  if (op != BENCH_FUSED) return GPL_EXIT_OK;
  if (!o->dtype_set) gpl_dtype_parse(L->conf->comm.wire_dtype, dt);
  if (*dt != GPL_FLOAT && *dt != GPL_BFLOAT16 && *dt != GPL_HALF)
    return bad_value(L, &L->conf->bench.dtype, "the fused allreduce's wire type is float, bfloat16 or half");
  return GPL_EXIT_OK;
}

/* "0-3,8" for this process's CPU affinity. */
static void cpu_list(char *buf, size_t len) {
  cpu_set_t set;
  buf[0] = '\0';
  if (sched_getaffinity(0, sizeof set, &set) != 0) return;
  size_t off = 0;
  for (int c = 0; c < CPU_SETSIZE && off + 16 < len; c++) {
    if (!CPU_ISSET(c, &set)) continue;
    int e = c;
    while (e + 1 < CPU_SETSIZE && CPU_ISSET(e + 1, &set)) e++;
    off += (size_t)snprintf(buf + off, len - off, off ? ",%d" : "%d", c);
    if (e > c) off += (size_t)snprintf(buf + off, len - off, "-%d", e);
    c = e;
  }
}

/* One rank's placement as the table's "Using devices" line and the JSON need it. */
typedef struct rank_info_s {
  int pid, gpu, device, cores, node, local_rank;
  char host[64], nic[64], ifname[64], cpus[128], dev[192];
} rank_info_t;

static int gather_ranks(launch_t *L, const place_t *pl, gpl_comm_t *comm, rank_info_t **all) {
  rank_info_t me;
  memset(&me, 0, sizeof me);
  me.pid = (int)getpid();
  me.gpu = pl->gpu;
  me.device = gpl_comm_device(comm);
  me.cores = pl->cores;
  me.node = L->job->node;
  me.local_rank = L->job->local_rank;
  util_strlcpy(me.host, L->job->host, sizeof me.host);
  util_strlcpy(me.nic, pl->nic, sizeof me.nic);
  util_strlcpy(me.ifname, pl->ifname, sizeof me.ifname);
  cpu_list(me.cpus, sizeof me.cpus);
  bench_dev_describe(me.device, me.dev, sizeof me.dev);
  *all = calloc((size_t)L->job->size, sizeof **all);
  if (!*all) return GPL_ENOMEM;
  return mpix_allgather(&me, (int)sizeof me, *all, L->job->world, L->job->timeout,
                        "bench: placement of every rank");
}

static void now_str(char *buf, size_t len) {
  time_t t = time(NULL);
  struct tm tm;
  localtime_r(&t, &tm);
  strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
}

static const char *dash(const char *s) { return s && *s ? s : "-"; }

static void print_top(const launch_t *L, const bench_opts_t *o, gpl_comm_t *comm,
                      const rank_info_t *ri) {
  job_t *j = L->job;
  printf("# gpulaunch %s bench on %d rank%s (%d node%s), backend %s\n", GPULAUNCH_VERSION, j->size,
         j->size > 1 ? "s" : "", j->nnodes, j->nnodes > 1 ? "s" : "",
         gpl_backend_name(gpl_comm_backend(comm)));
  printf("# nThread 1 nGpus 1 minBytes %llu maxBytes %llu step: %g(factor) warmup iters: %d "
         "iters: %d agg iters: 1 validation: %d graph: 0\n",
         (unsigned long long)o->sizes[0], (unsigned long long)o->sizes[o->nsizes - 1],
         o->stepfactor, o->cfg.warmup, o->cfg.iters, o->cfg.check);
  printf("#\n# Using devices\n");
  for (int r = 0; r < j->size; r++)
    printf("#  Rank %2d Group  0 Pid %6d on %10s device %2d %s cpus %s nic %s if %s\n", r,
           ri[r].pid, ri[r].host, ri[r].device, ri[r].dev[0] ? ri[r].dev : "[cpu]", dash(ri[r].cpus),
           dash(ri[r].nic), dash(ri[r].ifname));
  printf("#\n# time: per iteration the slowest rank's time (max over ranks), then the median over "
         "the %d iterations\n", o->cfg.iters);
  printf("# count: size / type size, rounded down to a multiple of %d ranks for allgather, "
         "reducescatter, alltoall (as nccl-tests)\n", j->size);
}

/* Append s to a JSON array of strings unless it is there already. */
static void add_unique(cJSON *arr, const char *s) {
  cJSON *it;
  cJSON_ArrayForEach(it, arr) if (cJSON_IsString(it) && strcmp(it->valuestring, s) == 0) return;
  cJSON_AddItemToArray(arr, cJSON_CreateString(s));
}

static cJSON *json_doc(const launch_t *L, const bench_opts_t *o, gpl_comm_t *comm,
                       const rank_info_t *ri, const char *start) {
  job_t *j = L->job;
  cJSON *d = cJSON_CreateObject();
  cJSON_AddNumberToObject(d, "version", 2); /* nccl-tests' -J format version we follow */
  cJSON_AddStringToObject(d, "gpulaunch", GPULAUNCH_VERSION);
  cJSON_AddStringToObject(d, "start_time", start);
  cJSON *args = cJSON_AddArrayToObject(d, "args");
  for (int i = 0; i < L->argc; i++) cJSON_AddItemToArray(args, cJSON_CreateString(L->argv[i]));
  if (o->label && *o->label) cJSON_AddStringToObject(d, "label", o->label);
  else cJSON_AddNullToObject(d, "label");
  cJSON *c = cJSON_AddObjectToObject(d, "config");
  cJSON_AddNumberToObject(c, "nthreads", 1);
  cJSON_AddNumberToObject(c, "ngpus", 1);
  cJSON_AddNumberToObject(c, "minimum_bytes", (double)o->sizes[0]);
  cJSON_AddNumberToObject(c, "maximum_bytes", (double)o->sizes[o->nsizes - 1]);
  cJSON_AddNumberToObject(c, "step_factor", o->stepfactor);
  cJSON_AddNumberToObject(c, "warmup_iters", o->cfg.warmup);
  cJSON_AddNumberToObject(c, "iterations", o->cfg.iters);
  cJSON_AddNumberToObject(c, "aggregated_iterations", 1);
  cJSON_AddNumberToObject(c, "validation", o->cfg.check);
  cJSON_AddNumberToObject(c, "graph", 0);
  cJSON_AddBoolToObject(c, "blocking_collectives", 0);
  cJSON_AddStringToObject(c, "backend", gpl_backend_name(gpl_comm_backend(comm)));
  cJSON_AddNumberToObject(c, "ranks", j->size);
  cJSON_AddNumberToObject(c, "nodes", j->nnodes);
  cJSON_AddStringToObject(c, "timing", "per iteration the slowest rank's time (max over ranks), "
                                       "then the median over the iterations");
  cJSON *ops = cJSON_AddArrayToObject(c, "ops");
  for (int i = 0; i < o->nops; i++) cJSON_AddItemToArray(ops, cJSON_CreateString(bench_op_name(o->ops[i])));
  cJSON *devs = cJSON_AddArrayToObject(d, "devices");
  cJSON *pl = cJSON_AddObjectToObject(d, "placement");
  cJSON *hosts = cJSON_AddArrayToObject(pl, "hosts");
  for (int n = 0; n < j->nnodes; n++)
    cJSON_AddItemToArray(hosts, cJSON_CreateString(j->hosts[j->leader_of_node[n]]));
  cJSON *ranks = cJSON_AddArrayToObject(pl, "ranks");
  cJSON *gpus = cJSON_AddArrayToObject(pl, "gpus");
  cJSON *nics = cJSON_AddArrayToObject(pl, "nics");
  cJSON *ifs = cJSON_AddArrayToObject(pl, "interfaces");
  for (int r = 0; r < j->size; r++) {
    const rank_info_t *x = &ri[r];
    cJSON *dv = cJSON_CreateObject();
    cJSON_AddNumberToObject(dv, "rank", r);
    cJSON_AddNumberToObject(dv, "group", 0);
    cJSON_AddNumberToObject(dv, "pid", x->pid);
    cJSON_AddStringToObject(dv, "hostname", x->host);
    cJSON_AddNumberToObject(dv, "device", x->device);
    cJSON_AddStringToObject(dv, "device_hex", x->dev);
    char info[512];
    snprintf(info, sizeof info, "cpus %s nic %s if %s", dash(x->cpus), dash(x->nic), dash(x->ifname));
    cJSON_AddStringToObject(dv, "device_info", info);
    cJSON_AddItemToArray(devs, dv);
    cJSON *pr = cJSON_CreateObject();
    cJSON_AddNumberToObject(pr, "rank", r);
    cJSON_AddStringToObject(pr, "host", x->host);
    cJSON_AddNumberToObject(pr, "node", x->node);
    cJSON_AddNumberToObject(pr, "local_rank", x->local_rank);
    cJSON_AddNumberToObject(pr, "gpu", x->gpu);
    cJSON_AddStringToObject(pr, "nic", x->nic);
    cJSON_AddStringToObject(pr, "interface", x->ifname);
    cJSON_AddNumberToObject(pr, "cores", x->cores);
    cJSON_AddStringToObject(pr, "cpus", x->cpus);
    cJSON_AddItemToArray(ranks, pr);
    char g[128];
    snprintf(g, sizeof g, "%s:%d", x->host, x->gpu);
    if (x->gpu >= 0) add_unique(gpus, g);
    snprintf(g, sizeof g, "%s:%s", x->host, x->nic);
    if (x->nic[0]) add_unique(nics, g);
    snprintf(g, sizeof g, "%s:%s", x->host, x->ifname);
    if (x->ifname[0]) add_unique(ifs, g);
  }
  cJSON_AddArrayToObject(d, "results");
  return d;
}

/* Print one row as soon as it is measured (rank 0). */
typedef struct row_printer_s {
  const bench_cfg_t *cfg;
  int rank;
} row_printer_t;

static void print_row_cb(const bench_row_t *row, int index, void *arg) {
  row_printer_t *p = arg;
  (void)index;
  if (p->rank != 0) return;
  if (p->cfg->progress_via_mpirun) fputs("\r\033[K", stdout); /* over the progress line */
  bench_print_row(stdout, p->cfg, row);
}

/* --min-busbw: each threshold against the out-of-place column (in-place for the fused ops).
 * Returns the number of shortfalls; prints them on rank 0. */
static int check_thresholds(const launch_t *L, const bench_opts_t *o, const bench_cfg_t *cfg,
                            const bench_row_t *rows, cJSON *list) {
  int fails = 0, rank0 = L->job->rank == 0;
  for (int i = 0; i < o->nsizes; i++) {
    if (!(o->thr[i] > 0)) continue;
    const bench_cell_t *c = rows[i].oop.valid ? &rows[i].oop : &rows[i].inplace;
    double got = c->valid ? c->busbw : 0.0, want = o->thr[i];
    int ok = got >= want;
    if (rank0) {
      printf("# %-20s : %g GB/s at %llu B: %g %s", "Min bus bandwidth", want,
             (unsigned long long)rows[i].g.bytes, got, ok ? "OK" : "FAILED");
      if (!ok) printf(" (short by %.3g GB/s, %.1f%%)", want - got, 100.0 * (want - got) / want);
      printf("\n");
      if (!ok)
        log_print("gpulaunch bench: %s bus bandwidth %.3g GB/s at %llu bytes is below the "
                        "threshold %g GB/s (%s) by %.3g GB/s (%.1f%%)\n",
                bench_op_name(cfg->op), got, (unsigned long long)rows[i].g.bytes, want,
                conf_origin(L->conf, &L->conf->bench.min_busbw), want - got, 100.0 * (want - got) / want);
    }
    if (list) {
      cJSON *t = cJSON_CreateObject();
      cJSON_AddStringToObject(t, "op", bench_op_name(cfg->op));
      cJSON_AddNumberToObject(t, "size", (double)rows[i].g.bytes);
      cJSON_AddNumberToObject(t, "requested_size", (double)rows[i].requested);
      cJSON_AddNumberToObject(t, "min_bus_bw", want);
      cJSON_AddNumberToObject(t, "bus_bw", got);
      cJSON_AddBoolToObject(t, "okay", ok);
      cJSON_AddItemToArray(list, t);
    }
    fails += !ok;
  }
  return fails;
}

static int write_text(const char *path, const char *text) {
  char err[4400];
  int rc = safefile_write_text(path, text, err, sizeof err);
  if (rc < 0) log_print("gpulaunch bench: cannot write: %s\n", err);
  return rc;
}

/* Run every op, print and collect; returns the exit code. */
static int run_all(launch_t *L, bench_opts_t *o, gpl_comm_t *comm, const place_t *pl) {
  job_t *j = L->job;
  int rank0 = j->rank == 0, code = GPL_EXIT_OK;
  char start[64];
  now_str(start, sizeof start);
  rank_info_t *ri = NULL;
  int rc = gather_ranks(L, pl, comm, &ri);
  if (rc < 0) {
    free(ri);
    return exitcode_of(rc);
  }
  bench_ctx_t ctx = {.comm = comm, .mpi = j->world, .timeout = j->timeout, .rank = j->rank,
                     .nranks = j->size, .cuda = gpl_comm_backend(comm) == GPL_BACKEND_NCCL,
                     .device = gpl_comm_device(comm)};
  cJSON *doc = rank0 ? json_doc(L, o, comm, ri, start) : NULL;
  cJSON *results = doc ? cJSON_GetObjectItem(doc, "results") : NULL;
  cJSON *thr = doc && o->min_busbw[0] ? cJSON_AddArrayToObject(doc, "min_busbw") : NULL;
  cJSON *perop = doc ? cJSON_AddArrayToObject(doc, "ops") : NULL;
  if (rank0) print_top(L, o, comm, ri);
  free(ri);
  bench_row_t *rows = calloc((size_t)o->nsizes, sizeof *rows);
  FILE *csv = NULL;
  char err[4400];
  if (rank0 && o->csv[0] && !(csv = safefile_fopen_write(o->csv, err, sizeof err))) {
    log_print("gpulaunch bench: cannot write: %s\n", err);
    code = GPL_EXIT_USAGE;
  }
  if (csv) bench_csv_header(csv);
  int bad_cells = 0, short_bw = 0;
  double avg_sum = 0;
  int avg_n = 0;
  for (int k = 0; k < o->nops && rows && code == GPL_EXIT_OK; k++) {
    bench_cfg_t cfg = o->cfg;
    cfg.op = o->ops[k];
    if ((code = op_dtype(L, o, cfg.op, &cfg.dtype)) != GPL_EXIT_OK) break;
    row_printer_t pr = {&cfg, j->rank};
    cfg.on_row = print_row_cb;
    cfg.on_row_arg = &pr;
    if (rank0) {
      printf("#\n# Collective test starting: %s\n#\n", bench_op_name(cfg.op));
      bench_print_header(stdout);
    }
    rc = bench_run(&ctx, &cfg, o->sizes, o->nsizes, rows);
    if (rc < 0) {
      if (rank0) log_print("gpulaunch bench: %s failed: %s\n", bench_op_name(cfg.op), gpl_strerror(rc));
      code = exitcode_of(rc);
      break;
    }
    int64_t wrong = bench_total_wrong(rows, o->nsizes);
    if (rank0) {
      bench_print_footer(stdout, rows, o->nsizes);
      if (wrong)
        log_print("gpulaunch bench: %s: %lld wrong element%s (see the #wrong columns)\n",
                bench_op_name(cfg.op), (long long)wrong, wrong > 1 ? "s" : "");
    }
    int s = check_thresholds(L, o, &cfg, rows, thr);
    if (rank0) printf("#\n# Collective test concluded: %s\n", bench_op_name(cfg.op));
    short_bw += s;
    bad_cells += bench_bad_cells(rows, o->nsizes);
    for (int i = 0; i < o->nsizes; i++) { /* the average over every op of the run */
      if (rows[i].oop.valid) avg_sum += rows[i].oop.busbw, avg_n++;
      if (rows[i].inplace.valid) avg_sum += rows[i].inplace.busbw, avg_n++;
    }
    if (results) bench_json_rows(results, &cfg, rows, o->nsizes);
    if (perop) {
      cJSON *po = cJSON_CreateObject();
      cJSON_AddStringToObject(po, "op", bench_op_name(cfg.op));
      cJSON_AddNumberToObject(po, "average_bus_bandwidth", bench_avg_busbw(rows, o->nsizes));
      cJSON_AddNumberToObject(po, "wrong_elements", (double)wrong);
      cJSON_AddItemToArray(perop, po);
    }
    if (csv) bench_csv_rows(csv, &cfg, rows, o->nsizes);
  }
  if (csv) fclose(csv);
  free(rows);
  if (code == GPL_EXIT_OK && (bad_cells || short_bw)) code = GPL_EXIT_BENCH;
  if (doc) {
    cJSON *oob = cJSON_AddObjectToObject(doc, "out_of_bounds");
    cJSON_AddNumberToObject(oob, "count", bad_cells);
    cJSON_AddBoolToObject(oob, "okay", bad_cells == 0);
    cJSON *avg = cJSON_AddObjectToObject(doc, "average_bus_bandwidth");
    cJSON_AddNumberToObject(avg, "bandwidth", avg_n ? avg_sum / avg_n : 0.0);
    if (thr) cJSON_AddBoolToObject(avg, "okay", short_bw == 0);
    else cJSON_AddStringToObject(avg, "okay", "unchecked");
    char end[64];
    now_str(end, sizeof end);
    cJSON_AddStringToObject(doc, "end_time", end);
    cJSON_AddNumberToObject(doc, "exit_code", code);
    if (o->json[0]) {
      char *text = cJSON_Print(doc);
      if (!text || write_text(o->json, text) < 0) code = code ? code : GPL_EXIT_USAGE;
      else printf("# Wrote JSON results to %s\n", o->json);
      free(text);
    }
    cJSON_AddItemToObject(L->summary, "bench", doc);
  }
  if (rank0) fflush(stdout);
  return code;
}

int bench_check_conf(launch_t *L) {
  bench_opts_t o;
  int code = read_settings(L, &o, 1);
  free(o.sizes);
  free(o.thr);
  return code;
}

int mode_bench(launch_t *L) {
  int help = 0;
  int code = parse_options(L, &help);
  if (code != GPL_EXIT_OK) return code;
  if (help) {
    if (L->job->rank == 0) fputs(g_bench_usage, stdout);
    return GPL_EXIT_OK;
  }
  bench_opts_t o;
  code = read_settings(L, &o, 0);
  if (code != GPL_EXIT_OK) {
    free(o.sizes);
    free(o.thr);
    return code;
  }
  if (L->job->rank == 0) setvbuf(stdout, NULL, _IOLBF, 0); /* rows appear as they are measured */

  place_t pl;
  int rc = place_rank(L, NULL, &pl);
  if (rc < 0) {
    place_free(&pl);
    free(o.sizes);
    free(o.thr);
    return exitcode_of(rc);
  }
  job_t *j = L->job;
  comm_job_t cj;
  job_to_comm(j, &cj);
  gpl_init_opts_t io;
  gpl_init_opts_default(&io);
  io.backend = o.backend;
  io.init_timeout = L->conf->comm.init_timeout;
  io.timeout = j->timeout;
  io.device = -1; /* device LOCAL_RANK of the node-wide CUDA_VISIBLE_DEVICES (device 0 with visible_gpus = rank) */
  gpl_comm_t *comm = NULL;
  rc = comm_init(&comm, &cj, &io);
  if (rc < 0) {
    if (j->rank == 0)
      log_print("gpulaunch bench: no communicator (backend %s): %s\n",
              gpl_backend_name(o.backend), gpl_strerror(rc));
    code = exitcode_of(rc);
  } else {
    code = run_all(L, &o, comm, &pl);
  }
  if (comm) gpl_finalize(comm);
  place_free(&pl);
  free(o.sizes);
  free(o.thr);
  return code;
}
