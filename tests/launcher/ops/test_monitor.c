/* Monitor tests: recorded sample streams through the replay source and the real threshold, stats,
 * summary and straggler code; NVML absent; metrics round trip; Prometheus file format; OOM lines. */
#include <fcntl.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/safefile.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/monitor/monitor.h"
#include "launcher/monitor/monitor_int.h"
#include "launcher/sup/supervise.h"

static const char *g_data; /* tests/launcher/ops/data */
static char g_tmp[256];    /* a fresh folder per run */

/* ---- stderr capture: the log writes to fd 2 ---- */
static int g_saved = -1;
static char g_cap[300];

static void cap_begin(void) {
  snprintf(g_cap, sizeof g_cap, "%s/stderr.XXXXXX", g_tmp);
  int fd = mkstemp(g_cap);
  assert_true(fd >= 0);
  fflush(stderr);
  g_saved = dup(2);
  dup2(fd, 2);
  close(fd);
}

static char *cap_end(void) {
  fflush(stderr);
  dup2(g_saved, 2);
  close(g_saved);
  char *txt = NULL;
  size_t n;
  assert_int_equal(safefile_read_text(g_cap, &txt, &n), 0);
  unlink(g_cap);
  fputs(txt, stderr); /* keep it visible in the test log */
  return txt;
}

static int count(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
  return n;
}

static char *data(const char *name) {
  static char buf[4][512];
  static int k;
  k = (k + 1) % 4;
  snprintf(buf[k], sizeof buf[k], "%s/%s", g_data, name);
  return buf[k];
}

/* Replay `file` for ranks 0..n-1 with opts, fill stats; return the captured log. */
static char *replay_all(const char *file, int n, const mon_opts_t *base, mon_stats_t *stats) {
  cap_begin();
  for (int r = 0; r < n; r++) {
    mon_opts_t o = *base;
    o.replay = data(file);
    monitor_t *m = NULL;
    assert_int_equal(mon_create(&m, &o, r, "h1", r, NULL), 0);
    assert_true(mon_active(m));
    int ticks = mon_drain(m, 0);
    assert_true(ticks > 0);
    assert_false(mon_active(m)); /* the replay ended and the monitor turned off */
    mon_stats(m, &stats[r]);
    mon_destroy(m);
  }
  return cap_end();
}

static void test_one_low_rank_warns_once_and_is_named(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  mon_stats_t st[4];
  char *log = replay_all("four_ranks_one_low.jsonl", 4, &o, st);
  /* one warning in all, for rank 2, with the guide's hint (31 low samples over 150 s) */
  assert_int_equal(count(log, "GPU busy stayed under"), 1);
  assert_non_null(strstr(log, "GPU busy stayed under 80% for 60 s on rank 2 (host h1) GPU 2"));
  /* an old recording (its field is "sm"): judged by busy time, and the warning says why */
  assert_non_null(strstr(log, "this GPU reports no GPM SM activity"));
  assert_non_null(strstr(log, "check the data pipeline (DataLoader workers, pinned memory), the "
                              "batch size, or the parallelism"));
  free(log);
  for (int r = 0; r < 4; r++) assert_int_equal(st[r].samples, 31);
  assert_true(st[2].warned);
  assert_false(st[0].warned || st[1].warned || st[3].warned);
  assert_true(st[2].mean_busy > 35 && st[2].mean_busy < 60);
  assert_true(st[0].mean_busy >= 93);
  assert_true(st[2].p5_busy >= 35 && st[2].p5_busy <= st[2].mean_busy);
  assert_int_equal(st[2].measure, MON_MEASURE_BUSY);
  assert_int_equal(st[2].sm_samples, 0);
  assert_true(st[2].low_seconds >= 149.0 && st[2].low_seconds <= 150.0);
  assert_int_equal(st[1].peak_mem_used, (uint64_t)(63.0 * 1024 * 1024 * 1024));

  /* the summary names rank 2 as a clear straggler, in the table and in the JSON */
  char *txt = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&txt, &len);
  cJSON *sum = cJSON_CreateObject();
  mon_summary(st, 4, o.sm_threshold, f, sum);
  fclose(f);
  fputs(txt, stdout);
  assert_non_null(strstr(txt, "slowest rank: 2 (host h1, GPU 2): mean GPU busy"));
  assert_non_null(strstr(txt, "a straggler drags everyone"));
  cJSON *sg = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "monitor"), "straggler");
  assert_non_null(sg);
  assert_int_equal(cJSON_GetObjectItem(sg, "rank")->valueint, 2);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(sg, "clear")));
  cJSON *ranks = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "monitor"), "ranks");
  assert_int_equal(cJSON_GetArraySize(ranks), 4);
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 2), "warned")));
  cJSON_Delete(sum);
  free(txt);
}

static void test_all_busy_no_warning(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  mon_stats_t st[4];
  char *log = replay_all("all_busy.jsonl", 4, &o, st);
  assert_int_equal(count(log, "stayed under"), 0);
  free(log);
  mon_straggler_t s;
  mon_find_straggler(st, 4, o.sm_threshold, &s);
  assert_true(s.index >= 0);
  assert_false(s.clear); /* the lowest is named, but not as a straggler */
  assert_non_null(strstr(s.reason, "no clear straggler"));
  /* a higher threshold makes the same stream warn: the data can trigger it */
  o.sm_threshold = 99.5;
  log = replay_all("all_busy.jsonl", 4, &o, st);
  assert_int_equal(count(log, "GPU busy stayed under"), 4);
  free(log);
}

static void test_short_dip_does_not_warn(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o); /* window 60 s; the dip lasts 45 s */
  mon_stats_t st[2];
  char *log = replay_all("short_dip.jsonl", 2, &o, st);
  assert_int_equal(count(log, "stayed under"), 0);
  /* the truncated line was skipped with one warning per replaying rank, and not counted */
  assert_int_equal(count(log, "not a monitor sample"), 2);
  free(log);
  assert_int_equal(st[1].samples, 31);
  assert_true(st[1].low_seconds >= 45.0 && st[1].low_seconds <= 50.0);
  assert_true(st[1].p5_busy <= 30.0);
  /* a window shorter than the dip warns, once */
  o.window = 30;
  log = replay_all("short_dip.jsonl", 2, &o, st);
  assert_int_equal(count(log, "GPU busy stayed under 80% for 30 s on rank 1"), 1);
  assert_int_equal(count(log, "stayed under"), 1);
  free(log);
}

/* Issue 11's case: NCCL kernels keep both GPUs 97-99% busy while a fifth of their SMs work. Judged
 * by GPU busy time nothing would be said; the recording has GPM SM activity (from the second
 * sample on, as NVML records it), so the warning judges by that, names it, and the summary shows
 * both measures. */
static void test_sm_activity_beats_busy_time(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  mon_stats_t st[2];
  char *log = replay_all("nccl_spin.jsonl", 2, &o, st);
  assert_int_equal(count(log, "SM activity stayed under 80% for 60 s on rank "), 2);
  assert_int_equal(count(log, "GPU busy stayed under"), 0);
  assert_non_null(strstr(log, "measured as GPM SM activity"));
  free(log);
  for (int r = 0; r < 2; r++) {
    assert_true(st[r].warned);
    assert_int_equal(st[r].measure, MON_MEASURE_SM_ACTIVE);
    assert_int_equal(st[r].samples, 31);
    assert_int_equal(st[r].sm_samples, 30);
    assert_true(st[r].mean_busy >= 97);
    assert_true(st[r].mean_sm_active >= 18 && st[r].mean_sm_active <= 30);
    assert_true(st[r].p5_sm_active >= 18 && st[r].p5_sm_active <= st[r].mean_sm_active);
    assert_true(st[r].mean_sm_occupancy >= 10 && st[r].mean_sm_occupancy <= 22);
    /* the time under the threshold is the SM activity's: every interval from the second sample */
    assert_true(st[r].low_seconds >= 144.0 && st[r].low_seconds <= 145.0);
  }
  char *txt = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&txt, &len);
  cJSON *sum = cJSON_CreateObject();
  mon_summary(st, 2, o.sm_threshold, f, sum);
  fclose(f);
  fputs(txt, stdout);
  assert_non_null(strstr(txt, "< threshold"));
  cJSON *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "monitor"), "ranks"), 0);
  assert_string_equal(cJSON_GetObjectItem(r0, "judged_by")->valuestring, "SM activity");
  assert_true(cJSON_GetObjectItem(r0, "mean_sm_active")->valuedouble < 31);
  assert_true(cJSON_GetObjectItem(r0, "mean_busy")->valuedouble >= 97);
  cJSON_Delete(sum);
  free(txt);
}

/* A line of today's format and one of the first recordings' ("sm" was GPU busy time) read the
 * same; a line with neither measure nor time is refused. */
static void test_old_and_new_field_names(void **state) {
  (void)state;
  mon_sample_t a, b;
  assert_int_equal(mon_sample_from_json("{\"t\": 5, \"rank\": 1, \"sm\": 41}", &a), 0);
  assert_int_equal(mon_sample_from_json("{\"t\": 5, \"rank\": 1, \"busy\": 41}", &b), 0);
  assert_int_equal(a.have, MON_HAVE_BUSY);
  assert_int_equal(b.have, MON_HAVE_BUSY);
  assert_true(a.busy_pct == 41 && b.busy_pct == 41);
  assert_int_equal(mon_sample_from_json("{\"sm_active\": 12.5, \"sm_occupancy\": 7}", &a), 0);
  assert_int_equal(a.have, MON_HAVE_SM_ACTIVE);
  assert_true(a.sm_active_pct == 12.5 && a.sm_occupancy_pct == 7);
  assert_int_equal(mon_sample_from_json("{\"rank\": 1, \"mem_used\": 5}", &a), GPL_EINVAL);
  /* what the monitor writes: "busy", never "sm" */
  b.have |= MON_HAVE_SM_ACTIVE;
  b.sm_active_pct = 22;
  b.sm_occupancy_pct = 11;
  char *line = mon_sample_to_json(&b, "h", 0);
  assert_non_null(strstr(line, "\"busy\":41"));
  assert_non_null(strstr(line, "\"sm_active\":22"));
  assert_non_null(strstr(line, "\"sm_occupancy\":11"));
  assert_null(strstr(line, "\"sm\":"));
  free(line);
}

static void test_throttled_rank_is_the_straggler(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  mon_stats_t st[4];
  char *log = replay_all("throttled.jsonl", 4, &o, st);
  assert_int_equal(count(log, "stayed under"), 0);
  assert_int_equal(count(log, "XID 13 on rank 3"), 1);
  free(log);
  assert_int_equal(st[3].xid_count, 1);
  assert_int_equal(st[3].last_xid, 13);
  assert_int_equal(st[3].ecc_corrected, 2); /* 5 -> 7 over the run */
  assert_int_equal(st[3].throttle_samples, 16);
  assert_int_equal(st[0].throttle_samples, 0); /* GPU idle bits are not throttling */
  assert_true(st[0].throttle_mask & NVML_THROTTLE_GPU_IDLE);
  mon_straggler_t s;
  mon_find_straggler(st, 4, o.sm_threshold, &s);
  assert_int_equal(s.index, 3);
  assert_true(s.clear);
  assert_non_null(strstr(s.reason, "power cap"));
}

static void test_nvml_absent_monitor_off_one_message(void **state) {
  (void)state;
  setenv("GPULAUNCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  mon_opts_t o;
  mon_opts_default(&o);
  cap_begin();
  monitor_t *m = NULL;
  assert_int_equal(mon_create(&m, &o, 5, "h9", 1, "0000:3b:00.0"), 0);
  assert_non_null(m);
  assert_false(mon_active(m));
  for (int i = 0; i < 10; i++) assert_int_equal(mon_tick(m), 0);
  mon_stats_t st;
  mon_stats(m, &st);
  char why[256];
  mon_oom_cause(m, why, sizeof why);
  mon_destroy(m);
  char *log = cap_end();
  assert_int_equal(count(log, "\n"), 1);
  assert_non_null(strstr(log, "GPU monitor off on rank 5 (host h9) GPU 1: no NVIDIA driver "
                              "(/nonexistent/libnvidia-ml.so.1 not found); GPU utilisation is not "
                              "sampled"));
  free(log);
  assert_int_equal(st.samples, 0);
  assert_int_equal(st.rank, 5);
  assert_false(st.active);
  assert_non_null(strstr(why, "saw no memory samples"));
  /* disabled: not even the message */
  o.enabled = 0;
  cap_begin();
  assert_int_equal(mon_create(&m, &o, 5, "h9", 1, NULL), 0);
  assert_false(mon_active(m));
  mon_destroy(m);
  log = cap_end();
  assert_string_equal(log, "");
  free(log);
  unsetenv("GPULAUNCH_NVML_LIB");
}

static void test_metrics_round_trip(void **state) {
  (void)state;
  char metrics[300];
  snprintf(metrics, sizeof metrics, "%s/metrics-%%r.jsonl", g_tmp);
  mon_stats_t first[4], second[4];
  for (int r = 0; r < 4; r++) {
    mon_opts_t o;
    mon_opts_default(&o);
    o.replay = data("throttled.jsonl");
    o.metrics = metrics;
    monitor_t *m = NULL;
    assert_int_equal(mon_create(&m, &o, r, "h1", r, NULL), 0);
    mon_drain(m, 0);
    mon_stats(m, &first[r]);
    mon_destroy(m);
  }
  /* what the monitor wrote replays to the same samples and the same stats */
  for (int r = 0; r < 4; r++) {
    char path[320], orig[300];
    snprintf(path, sizeof path, "%s/metrics-%d.jsonl", g_tmp, r);
    snprintf(orig, sizeof orig, "%s", data("throttled.jsonl"));
    mon_source_t *a = NULL, *b = NULL;
    assert_int_equal(mon_replay_open(orig, r, &a), 0);
    assert_int_equal(mon_replay_open(path, r, &b), 0);
    mon_sample_t x, y;
    int n = 0;
    while (a->ops->read(a, &x) == 0) {
      assert_int_equal(b->ops->read(b, &y), 0);
      assert_true(x.t == y.t);
      assert_int_equal(x.have, y.have);
      assert_true(x.busy_pct == y.busy_pct && x.power_w == y.power_w && x.temp_c == y.temp_c);
      assert_true(x.mem_used == y.mem_used && x.mem_total == y.mem_total);
      assert_int_equal(x.sm_clock_mhz, y.sm_clock_mhz);
      assert_true(x.throttle == y.throttle && x.ecc_corrected == y.ecc_corrected);
      assert_int_equal(x.nxid, y.nxid);
      assert_int_equal(x.xid, y.xid);
      n++;
    }
    assert_int_equal(b->ops->read(b, &y), 1);
    assert_int_equal(n, 31);
    a->ops->close(a);
    b->ops->close(b);

    mon_opts_t o;
    mon_opts_default(&o);
    o.replay = path;
    monitor_t *m = NULL;
    assert_int_equal(mon_create(&m, &o, r, "h1", r, NULL), 0);
    mon_drain(m, 0);
    mon_stats(m, &second[r]);
    mon_destroy(m);
    assert_int_equal(first[r].samples, second[r].samples);
    assert_true(first[r].mean_busy == second[r].mean_busy && first[r].p5_busy == second[r].p5_busy);
    assert_true(first[r].peak_mem_used == second[r].peak_mem_used);
    assert_true(first[r].throttle_samples == second[r].throttle_samples);
    assert_true(first[r].xid_count == second[r].xid_count);
  }
}

/* The text exposition format: HELP/TYPE once per family and before its samples, metric and
 * label names from the allowed sets, label values escaped, a float value, '\n' line ends. */
static void check_prom(const char *txt, const char *want_host) {
  regex_t help, type, sample;
  assert_int_equal(regcomp(&help, "^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) [^\n]+$", REG_EXTENDED), 0);
  assert_int_equal(regcomp(&type, "^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (gauge|counter)$", REG_EXTENDED), 0);
  assert_int_equal(regcomp(&sample,
                           "^([a-zA-Z_:][a-zA-Z0-9_:]*)\\{([a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\[\\\\\"n])*\""
                           "(,[a-zA-Z_][a-zA-Z0-9_]*=\"([^\"\\\\\n]|\\\\[\\\\\"n])*\")*)\\} "
                           "([-+]?[0-9.]+([eE][-+]?[0-9]+)?|[-+]Inf|NaN)$",
                           REG_EXTENDED),
                   0);
  assert_true(strlen(txt) > 0 && txt[strlen(txt) - 1] == '\n');
  char typed[64][96];
  int ntyped = 0, nsamples = 0;
  char *copy = strdup(txt);
  for (char *save = NULL, *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
    regmatch_t mt[8];
    if (strncmp(l, "# HELP ", 7) == 0) {
      assert_int_equal(regexec(&help, l, 2, mt, 0), 0);
    } else if (strncmp(l, "# TYPE ", 7) == 0) {
      assert_int_equal(regexec(&type, l, 3, mt, 0), 0);
      char name[96];
      snprintf(name, sizeof name, "%.*s", (int)(mt[1].rm_eo - mt[1].rm_so), l + mt[1].rm_so);
      for (int i = 0; i < ntyped; i++) assert_string_not_equal(typed[i], name); /* once */
      assert_true(ntyped < 64);
      strcpy(typed[ntyped++], name);
    } else {
      if (regexec(&sample, l, 8, mt, 0) != 0) fail_msg("not a sample line: %s", l);
      char name[96];
      snprintf(name, sizeof name, "%.*s", (int)(mt[1].rm_eo - mt[1].rm_so), l + mt[1].rm_so);
      /* TYPE came before, for this family */
      int seen = 0;
      for (int i = 0; i < ntyped; i++) seen |= strcmp(typed[i], name) == 0;
      if (!seen) fail_msg("sample before its TYPE: %s", l);
      assert_non_null(strstr(l, "rank=\"2\""));
      assert_non_null(strstr(l, want_host));
      assert_non_null(strstr(l, "gpu=\"2\""));
      nsamples++;
    }
  }
  free(copy);
  assert_true(ntyped >= 15);
  assert_true(nsamples >= ntyped);
  regfree(&help);
  regfree(&type);
  regfree(&sample);
}

static void test_prometheus_file_well_formed(void **state) {
  (void)state;
  char prom[300];
  snprintf(prom, sizeof prom, "%s/node.prom", g_tmp);
  mon_opts_t o;
  mon_opts_default(&o);
  o.replay = data("throttled.jsonl");
  o.prom = prom;
  monitor_t *m = NULL;
  /* a host name with characters that must be escaped in a label value */
  assert_int_equal(mon_create(&m, &o, 2, "we\"ird\\h", 2, NULL), 0);
  assert_int_equal(mon_drain(m, 5), 5);
  mon_destroy(m);
  char path[320];
  snprintf(path, sizeof path, "%s/node-rank2.prom", g_tmp); /* no %r: the rank is inserted */
  char *txt = NULL;
  size_t n;
  assert_int_equal(safefile_read_text(path, &txt, &n), 0);
  check_prom(txt, "Hostname=\"we\\\"ird\\\\h\"");
  /* dcgm-exporter's names and label order; a recording names no GPU: identity left empty */
  assert_non_null(strstr(txt, "\nDCGM_FI_DEV_GPU_UTIL{gpu=\"2\",UUID=\"\",pci_bus_id=\"\","
                              "device=\"nvidia2\",modelName=\"\",Hostname=\"we"));
  assert_non_null(strstr(txt, "# TYPE DCGM_FI_DEV_FB_USED gauge\n"));
  assert_non_null(strstr(txt, "# TYPE DCGM_FI_DEV_FB_FREE gauge\n"));
  assert_null(strstr(txt, "gpulaunch_gpu_busy_percent")); /* the old names are gone */
  assert_null(strstr(txt, "gpulaunch_gpu_memory_total_bytes"));
  free(txt);
  /* written atomically: no temporary file left beside it */
  char tmp[340];
  snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
  assert_int_not_equal(access(tmp, F_OK), 0);
}

static void test_expand_path(void **state) {
  (void)state;
  char *p = mon__expand_path("/x/%h/m-%r.jsonl", 3, "n1", 0);
  assert_string_equal(p, "/x/n1/m-3.jsonl");
  free(p);
  p = mon__expand_path("/x/gpu.prom", 3, "n1", 1);
  assert_string_equal(p, "/x/gpu-rank3.prom");
  free(p);
  p = mon__expand_path("/x/gpu-%r.prom", 3, "n1", 1);
  assert_string_equal(p, "/x/gpu-3.prom");
  free(p);
  p = mon__expand_path("/x/100%%", 3, "n1", 0);
  assert_string_equal(p, "/x/100%");
  free(p);
}

static void test_oom_lines(void **state) {
  (void)state;
  static const char *const yes[] = {
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 79.15 GiB "
      "total capacity; 75.01 GiB already allocated)",
      "RuntimeError: CUDA error: out of memory",
      "CUDA error: cudaErrorMemoryAllocation at train.cu:42",
      "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`",
      "h1:3 NCCL WARN Cuda failure 'out of memory'",
      "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
      "allocate 17179869184 bytes.",
      "OOM when allocating tensor with shape[8192,8192] on /job:localhost/replica:0/task:0/device:GPU:0",
      "torch.cuda.OutOfMemoryError: something",
  };
  static const char *const no[] = {
      "Out of memory: Killed process 1234 (python) total-vm:...",
      "MemoryError: out of memory (host)",
      "OSError: [Errno 12] Cannot allocate memory",
      "epoch 3 loss 0.25 (memory 71.2 GiB)",
      "fatal: out of memory, malloc failed",
      "",
  };
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    if (!mon_is_cuda_oom(yes[i], strlen(yes[i]))) fail_msg("missed: %s", yes[i]);
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    if (mon_is_cuda_oom(no[i], strlen(no[i]))) fail_msg("false OOM: %s", no[i]);
}

static void test_oom_cause_has_peak_memory(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  o.replay = data("four_ranks_one_low.jsonl");
  monitor_t *m = NULL;
  assert_int_equal(mon_create(&m, &o, 1, "h1", 1, NULL), 0);
  mon_drain(m, 0);
  char buf[256];
  mon_oom_cause(m, buf, sizeof buf);
  mon_destroy(m);
  /* rank 1 peaks at 61 + 2 = 63 GiB of 80 */
  assert_string_equal(buf, "CUDA out of memory on rank 1 (host h1) GPU 1: peak device memory "
                           "seen by the monitor 63.0 GiB of 80.0 GiB");
}

static void test_supervisor_hooks(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  o.interval = 2.5;
  o.replay = data("four_ranks_one_low.jsonl");
  monitor_t *m = NULL;
  assert_int_equal(mon_create(&m, &o, 0, "h1", 0, NULL), 0);
  sup_hooks_t h;
  memset(&h, 0, sizeof h);
  mon_hooks_fill(&h, m);
  assert_true(h.arg == m && h.interval == 2.5);
  assert_true(h.peak_mem_mib(h.arg) < 0); /* nothing sampled yet */
  for (int i = 0; i < 5; i++) h.tick(h.arg);
  mon_stats_t st;
  mon_stats(m, &st);
  assert_int_equal(st.samples, 5);
  assert_true(h.peak_mem_mib(h.arg) == 62.0 * 1024); /* 60 + 0 + 4 * 0.5 GiB at the 5th sample */
  assert_false(h.oom_seen(h.arg));
  static const char ok[] = "step 10 loss 2.31";
  h.line(h.arg, 0, ok, sizeof ok - 1);
  assert_false(h.oom_seen(h.arg));
  static const char oom[] = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB";
  h.line(h.arg, 1, oom, sizeof oom - 1);
  assert_true(h.oom_seen(h.arg));
  mon_destroy(m);
  /* a monitor that is off: no timer, but OOM lines are still seen */
  setenv("GPULAUNCH_NVML_LIB", "/nonexistent/libnvidia-ml.so.1", 1);
  mon_opts_default(&o);
  o.off_level = LOG_LVL_INFO;
  assert_int_equal(mon_create(&m, &o, 0, "h1", 0, NULL), 0);
  unsetenv("GPULAUNCH_NVML_LIB");
  mon_hooks_fill(&h, m);
  assert_true(h.interval == 0);
  h.line(h.arg, 1, oom, sizeof oom - 1);
  assert_true(mon_oom_seen(m));
  assert_true(mon_peak_mem_mib(m) < 0);
  assert_int_equal(mon_note_line(NULL, oom, sizeof oom - 1), 1);
  mon_destroy(m);
}

/* Free device memory under [monitor] mem_headroom (5%) for the window: one warning, for the rank
 * that stayed there, with the remedies; a shorter dip on the other rank says nothing. */
static void test_memory_headroom_warns_once(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  assert_true(o.mem_headroom == 5.0 && o.prom_mode == 0644);
  mon_stats_t st[2];
  char *log = replay_all("mem_filling.jsonl", 2, &o, st);
  assert_int_equal(count(log, "device memory nearly full"), 1);
  assert_non_null(strstr(log, "device memory nearly full on rank 1 (host h1) GPU 1: free memory "
                              "stayed under 5% for 60 s (now "));
  assert_non_null(strstr(log, "of 80.0 GiB, at least 1.5 GiB): a CUDA out-of-memory error is near"));
  assert_non_null(strstr(log, "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"));
  assert_non_null(strstr(log, "activation checkpointing"));
  free(log);
  assert_true(st[1].mem_warned);
  assert_false(st[0].mem_warned); /* 40 s under 5% < the 60 s window */
  assert_int_equal(st[0].peak_mem_used, (uint64_t)(76.5 * 1024 * 1024 * 1024));
  cJSON *sum = cJSON_CreateObject();
  FILE *devnull = fopen("/dev/null", "w");
  mon_summary(st, 2, o.sm_threshold, devnull, sum);
  fclose(devnull);
  cJSON *ranks = cJSON_GetObjectItem(cJSON_GetObjectItem(sum, "monitor"), "ranks");
  assert_true(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 1), "mem_headroom_warned")));
  assert_true(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(ranks, 0), "mem_headroom_warned")));
  cJSON_Delete(sum);
  /* a longer window: nobody; mem_headroom = 0: off */
  o.window = 120;
  log = replay_all("mem_filling.jsonl", 2, &o, st);
  assert_int_equal(count(log, "device memory nearly full"), 0);
  free(log);
  o.window = 30;
  o.mem_headroom = 0;
  log = replay_all("mem_filling.jsonl", 2, &o, st);
  assert_int_equal(count(log, "device memory nearly full"), 0);
  free(log);
  /* with a 30 s window both ranks are warned, once each */
  o.mem_headroom = 5;
  log = replay_all("mem_filling.jsonl", 2, &o, st);
  assert_int_equal(count(log, "device memory nearly full"), 2);
  assert_true(st[0].mem_warned && st[1].mem_warned);
  free(log);
}

/* An OOM counts only among the program's last lines of the attempt: one caught long before
 * (a batch-size finder) and a new attempt forget it. */
static void test_oom_only_in_last_lines(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  o.enabled = 0;
  monitor_t *m = NULL;
  assert_int_equal(mon_create(&m, &o, 0, "h1", 0, NULL), 0);
  static const char oom[] = "RuntimeError: CUDA error: out of memory";
  static const char ok[] = "step 10 loss 2.31";
  assert_int_equal(mon_note_line(m, oom, sizeof oom - 1), 1);
  for (int i = 0; i < MON_OOM_LAST_LINES - 1; i++) mon_note_line(m, ok, sizeof ok - 1);
  assert_true(mon_oom_seen(m));
  mon_note_line(m, ok, sizeof ok - 1);
  assert_false(mon_oom_seen(m)); /* 64 lines later: the program went on */
  mon_note_line(m, oom, sizeof oom - 1);
  assert_true(mon_oom_seen(m));
  mon_new_attempt(m);
  assert_false(mon_oom_seen(m));
  mon_new_attempt(NULL);
  mon_destroy(m);
}

/* The textfile is 0644 by default (node_exporter reads it as its own user), prom_mode otherwise,
 * whatever the umask; written in a folder group-writable for a group of ours. */
static void test_prom_mode(void **state) {
  (void)state;
  char dir[300], prom[340], path[360];
  snprintf(dir, sizeof dir, "%s/textfile", g_tmp);
  assert_int_equal(mkdir(dir, 0775), 0);
  assert_int_equal(chmod(dir, 0775), 0);
  snprintf(prom, sizeof prom, "%s/gpu.prom", dir);
  snprintf(path, sizeof path, "%s/gpu-rank0.prom", dir);
  mode_t old = umask(077);
  for (int k = 0; k < 2; k++) {
    mon_opts_t o;
    mon_opts_default(&o);
    o.replay = data("mem_filling.jsonl");
    o.prom = prom;
    if (k == 1) o.prom_mode = 0640;
    monitor_t *m = NULL;
    assert_int_equal(mon_create(&m, &o, 0, "h1", 0, NULL), 0);
    assert_int_equal(mon_drain(m, 3), 3);
    mon_destroy(m);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, k == 1 ? 0640 : 0644);
  }
  umask(old);
  char *txt = NULL;
  size_t n;
  assert_int_equal(safefile_read_text(path, &txt, &n), 0);
  assert_non_null(strstr(txt, "\ngpulaunch_gpu_memory_headroom_alarm{"));
  free(txt);
}

static void test_bad_options_and_missing_replay(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  monitor_t *m = NULL;
  cap_begin();
  o.interval = 0;
  assert_int_equal(mon_create(&m, &o, 0, "h", 0, NULL), GPL_EINVAL);
  char *log = cap_end();
  assert_int_equal(count(log, "\n"), 1); /* the bad setting alone, no NVML message */
  assert_non_null(strstr(log, "interval 0 s must be > 0"));
  free(log);
  cap_begin();
  mon_opts_default(&o);
  o.replay = "/nonexistent/samples.jsonl";
  assert_int_equal(mon_create(&m, &o, 0, "h", 0, NULL), GPL_ENOENT);
  assert_null(m);
  free(cap_end());
}

/* Issue 14: numbers from a replay file are checked before they are converted; a rank that is
 * not one (it went through (int) and applied to every rank) makes the line no sample. */
static void test_numbers_range_checked(void **state) {
  (void)state;
  mon_sample_t s;
  assert_int_equal(mon_sample_from_json("{\"t\": 1, \"rank\": 99999999999, \"sm\": 5}", &s), GPL_EINVAL);
  assert_int_equal(mon_sample_from_json("{\"t\": 1, \"rank\": -3, \"sm\": 5}", &s), GPL_EINVAL);
  assert_int_equal(mon_sample_from_json("{\"t\": 1, \"rank\": 1.5, \"sm\": 5}", &s), GPL_EINVAL);
  assert_int_equal(mon_sample_from_json("{\"t\": 1, \"rank\": \"2\", \"sm\": 5}", &s), GPL_EINVAL);
  assert_int_equal(mon_sample_from_json("{\"t\": 1e300, \"sm\": 5}", &s), GPL_EINVAL);
  assert_int_equal(mon_sample_from_json("{\"t\": 2, \"rank\": 7, \"sm\": 40, \"mem_used\": 1e30, "
                                        "\"xid\": 1e20, \"sm_clock_mhz\": 1e12}", &s), 0);
  assert_int_equal(s.rank, 7);
  assert_true(s.mem_used == UINT64_MAX);
  assert_int_equal(s.nxid, 0); /* an xid that is not one is left out */
  assert_true(s.sm_clock_mhz == UINT32_MAX);
}

int main(int argc, char **argv) {
  g_data = argc > 1 ? argv[1] : "tests/launcher/ops/data";
  snprintf(g_tmp, sizeof g_tmp, "/tmp/gpl-ops-mon-XXXXXX");
  if (!mkdtemp(g_tmp)) return 1;
  log_init();
  log_set_identity("test", 0);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_low_rank_warns_once_and_is_named),
      cmocka_unit_test(test_all_busy_no_warning),
      cmocka_unit_test(test_short_dip_does_not_warn),
      cmocka_unit_test(test_sm_activity_beats_busy_time),
      cmocka_unit_test(test_old_and_new_field_names),
      cmocka_unit_test(test_throttled_rank_is_the_straggler),
      cmocka_unit_test(test_nvml_absent_monitor_off_one_message),
      cmocka_unit_test(test_metrics_round_trip),
      cmocka_unit_test(test_prometheus_file_well_formed),
      cmocka_unit_test(test_expand_path),
      cmocka_unit_test(test_oom_lines),
      cmocka_unit_test(test_oom_cause_has_peak_memory),
      cmocka_unit_test(test_supervisor_hooks),
      cmocka_unit_test(test_memory_headroom_warns_once),
      cmocka_unit_test(test_oom_only_in_last_lines),
      cmocka_unit_test(test_prom_mode),
      cmocka_unit_test(test_bad_options_and_missing_replay),
      cmocka_unit_test(test_numbers_range_checked),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_tmp);
  if (rc == 0 && system(cmd) != 0) return 1;
  return rc;
}
