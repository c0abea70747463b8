/* The monitor's NVML source over the stand-in libnvidia-ml (tests/fake_nvml): loading by name,
 * device lookup, field mapping, NOT_SUPPORTED fields, XID events, init failure, reference-counted
 * shutdown, GPM SM activity between readings and the warning that judges by it. */
#include <dlfcn.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/log.h"
#include "gpulaunch/error.h"
#include "common/safefile.h"
#include "common/util.h"
#include "launcher/monitor/monitor.h"
#include "topology/nvml.h"

static const char *g_lib;
static int (*fake_count)(const char *);

static void test_sample_fields(void **state) {
  (void)state;
  mon_source_t *src = NULL;
  char why[256];
  assert_int_equal(mon_nvml_open("0000:3b:00.0", -1, &src, why, sizeof why), 0);
  mon_sample_t s[3];
  for (int i = 0; i < 3; i++) {
    memset(&s[i], 0, sizeof s[i]);
    assert_int_equal(src->ops->read(src, &s[i]), 0);
  }
  assert_true(s[0].busy_pct == 91 && s[1].busy_pct == 12 && s[2].busy_pct == 77);
  assert_true(s[0].mem_util_pct == 33);
  assert_true(s[0].have & MON_HAVE_BUSY && s[0].have & MON_HAVE_MEM && s[0].have & MON_HAVE_POWER);
  assert_false(s[1].have & MON_HAVE_SM_ACTIVE); /* no GPM on this "GPU" */
  assert_true(s[0].have & MON_HAVE_TEMP && s[0].have & MON_HAVE_CLOCKS);
  assert_true(s[0].have & MON_HAVE_THROTTLE && s[0].have & MON_HAVE_ECC);
  assert_false(s[0].have & MON_HAVE_PCIE); /* NOT_SUPPORTED: left out */
  assert_int_equal(s[0].mem_total, 80ull << 30);
  assert_int_equal(s[0].mem_used, 12ull << 30);
  assert_true(s[0].power_w > 345.67 && s[0].power_w < 345.68); /* milliwatts -> watts */
  assert_true(s[0].temp_c == 61);
  assert_int_equal(s[0].sm_clock_mhz, 1755);
  assert_int_equal(s[0].mem_clock_mhz, 2619);
  assert_int_equal(s[0].throttle, 0x5);
  assert_int_equal(s[0].ecc_corrected, 3);
  /* the unsupported PCIe counter was asked once, not on every tick */
  assert_int_equal(fake_count("pcie"), 1);
  /* the XID arrived on the second read's poll, and only there; polls never wait */
  assert_int_equal(s[0].nxid, 0);
  assert_int_equal(s[1].nxid, 1);
  assert_int_equal(s[1].xid, 79);
  assert_int_equal(s[2].nxid, 0);
  assert_int_equal(fake_count("wait_nonzero"), 0);
  assert_true(s[1].t >= s[0].t && s[2].t >= s[1].t);
  src->ops->close(src);
}

static void test_unknown_device_and_refcount(void **state) {
  (void)state;
  int inits = fake_count("init"), downs = fake_count("shutdown");
  mon_source_t *a = NULL, *b = NULL;
  char why[256];
  assert_int_equal(mon_nvml_open("0000:99:00.0", -1, &a, why, sizeof why), GPL_ENOGPU);
  assert_null(a);
  assert_non_null(strstr(why, "no GPU at PCI bus id 0000:99:00.0: Not Found"));
  assert_int_equal(fake_count("shutdown"), downs + 1); /* released again */
  assert_int_equal(mon_nvml_open(NULL, 0, &a, why, sizeof why), 0);
  assert_int_equal(mon_nvml_open("0000:3b:00.0", 7, &b, why, sizeof why), 0);
  assert_int_equal(fake_count("init"), inits + 2); /* one for the failed open, one shared */
  a->ops->close(a);
  assert_int_equal(fake_count("shutdown"), downs + 1);
  b->ops->close(b);
  assert_int_equal(fake_count("shutdown"), downs + 2);
}

static void test_init_failure_means_off(void **state) {
  (void)state;
  setenv("FAKE_NVML_INIT_FAIL", "1", 1);
  mon_source_t *src = NULL;
  char why[256];
  assert_int_equal(mon_nvml_open(NULL, 0, &src, why, sizeof why), GPL_ENOTSUP);
  assert_string_equal(why, "nvmlInit failed: Driver Not Loaded");
  mon_opts_t o;
  mon_opts_default(&o);
  o.off_level = LOG_LVL_INFO; /* quiet on the other ranks of a node */
  monitor_t *m = NULL;
  assert_int_equal(mon_create(&m, &o, 0, "h", 0, NULL), 0);
  assert_false(mon_active(m));
  mon_destroy(m);
  unsetenv("FAKE_NVML_INIT_FAIL");
}

static void test_monitor_over_nvml_and_versions(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  o.sm_threshold = 95;
  o.window = 0; /* the first low sample is already a whole window */
  monitor_t *m = NULL;
  assert_int_equal(mon_create(&m, &o, 4, "gpu-node", 0, "0000:3b:00.0"), 0);
  assert_true(mon_active(m));
  for (int i = 0; i < 4; i++) assert_int_equal(mon_tick(m), 0);
  mon_stats_t st;
  mon_stats(m, &st);
  assert_int_equal(st.samples, 4);
  assert_true(st.warned);
  assert_int_equal(st.peak_mem_used, 12ull << 30);
  assert_int_equal(st.throttle_samples, 4); /* 0x4 = software power cap */
  mon_destroy(m);
  char nvml[64], drv[64];
  int cuda = 0;
  assert_int_equal(nvml_versions(nvml, sizeof nvml, drv, sizeof drv, &cuda), 0);
  assert_string_equal(nvml, "12.550.54.15");
  assert_string_equal(drv, "550.54.15");
  assert_int_equal(cuda, 12040);
}

/* An OOM line takes a sample at once (the memory held as the program fails), once per attempt. */
static void test_oom_samples_at_once(void **state) {
  (void)state;
  mon_opts_t o;
  mon_opts_default(&o);
  monitor_t *m = NULL;
  assert_int_equal(mon_create(&m, &o, 0, "gpu-node", 0, "0000:3b:00.0"), 0);
  assert_true(mon_active(m));
  assert_true(mon_peak_mem_mib(m) < 0); /* no tick yet */
  static const char oom[] = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.";
  assert_int_equal(mon_note_line(m, oom, sizeof oom - 1), 1);
  assert_true(mon_peak_mem_mib(m) == 12 * 1024.0); /* the fake's 12 of 80 GiB */
  assert_true(mon_mem_total_mib(m) == 80 * 1024.0);
  mon_note_line(m, oom, sizeof oom - 1);
  mon_stats_t st;
  mon_stats(m, &st);
  assert_int_equal(st.samples, 1); /* the second OOM line of the attempt: no second sample */
  mon_new_attempt(m);
  mon_note_line(m, oom, sizeof oom - 1);
  mon_stats(m, &st);
  assert_int_equal(st.samples, 2);
  mon_destroy(m);
}

/* GPM: the first reading only starts an interval; each later one has the SM activity of the
 * interval that ends with it (the fake answers 35, 20, 45 % by sample number); the buffers are
 * freed with the source. The monitor then judges by SM activity and says so. */
static void test_gpm_sm_activity(void **state) {
  (void)state;
  setenv("FAKE_NVML_GPM", "1", 1);
  static const double sm[] = {35, 20, 45};
  mon_source_t *src = NULL;
  char why[256];
  assert_int_equal(mon_nvml_open("0000:3b:00.0", -1, &src, why, sizeof why), 0);
  assert_int_equal(fake_count("gpm_allocated"), 2);
  int seq0 = fake_count("gpm_samples");
  mon_sample_t s[3];
  for (int i = 0; i < 3; i++) {
    memset(&s[i], 0, sizeof s[i]);
    assert_int_equal(src->ops->read(src, &s[i]), 0);
  }
  assert_false(s[0].have & MON_HAVE_SM_ACTIVE);
  for (int i = 1; i < 3; i++) {
    assert_true(s[i].have & MON_HAVE_SM_ACTIVE);
    assert_true(s[i].have & MON_HAVE_BUSY); /* both measures, side by side */
    assert_true(s[i].sm_active_pct == sm[(seq0 + 1 + i) % 3]);
    assert_true(s[i].sm_occupancy_pct == sm[(seq0 + 1 + i) % 3] - 10);
  }
  assert_int_equal(fake_count("gpm_samples"), seq0 + 3);
  src->ops->close(src);
  assert_int_equal(fake_count("gpm_allocated"), 0);

  /* Issue 11's case: the GPU is 95 % busy (by NVML's count) and at most 45 % of its SMs work. The
   * warning judges by SM activity and names it; judged by busy time it would stay quiet. */
  setenv("FAKE_NVML_BUSY", "95", 1);
  mon_opts_t o;
  mon_opts_default(&o);
  o.sm_threshold = 50;
  o.window = 0;
  monitor_t *m = NULL;
  char cap[] = "/tmp/gpl-ops-nvml-XXXXXX";
  int fd = mkstemp(cap);
  assert_true(fd >= 0);
  fflush(stderr);
  int saved = dup(2);
  dup2(fd, 2);
  close(fd);
  assert_int_equal(mon_create(&m, &o, 3, "gpm-node", 0, "0000:3b:00.0"), 0);
  for (int i = 0; i < 4; i++) assert_int_equal(mon_tick(m), 0);
  mon_stats_t st;
  mon_stats(m, &st);
  mon_destroy(m);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char *log = NULL;
  size_t len = 0;
  assert_int_equal(safefile_read_text(cap, &log, &len), 0);
  unlink(cap);
  fputs(log, stderr);
  assert_non_null(strstr(log, "SM activity stayed under 50% for 0 s on rank 3 (host gpm-node) GPU 0"));
  assert_non_null(strstr(log, "measured as GPM SM activity"));
  assert_null(strstr(log, "GPU busy stayed under"));
  free(log);
  assert_true(st.warned);
  assert_int_equal(st.measure, MON_MEASURE_SM_ACTIVE);
  assert_int_equal(st.samples, 4);
  assert_int_equal(st.sm_samples, 3);
  assert_true(st.mean_sm_active >= 20 && st.mean_sm_active <= 45);
  unsetenv("FAKE_NVML_GPM");
  unsetenv("FAKE_NVML_BUSY");
}

static void test_gpu_lost(void **state) {
  (void)state;
  setenv("FAKE_NVML_LOST", "1", 1);
  mon_source_t *src = NULL;
  char why[256];
  assert_int_equal(mon_nvml_open(NULL, 0, &src, why, sizeof why), 0);
  mon_sample_t s;
  memset(&s, 0, sizeof s);
  assert_int_equal(src->ops->read(src, &s), GPL_ENOGPU);
  src->ops->close(src);
  unsetenv("FAKE_NVML_LOST");
}

/* The GPU's identity for the textfile's labels (dcgm-exporter's gpu, UUID, pci_bus_id, device,
 * modelName), from NVML's list: found by bus id in any spelling, or by index. */
static void test_ident_labels(void **state) {
  (void)state;
  setenv("FAKE_NVML_GPUS", "00000000:3B:00.0|NVIDIA A100-SXM4-40GB|GPU-one;0000:bc:00.0|NVIDIA "
                           "\"odd\" name|GPU-two", 1);
  mon_source_t *src = NULL;
  char why[256];
  mon_ident_t id;
  assert_int_equal(mon_nvml_open("0000:bc:00.0", -1, &src, why, sizeof why), 0);
  assert_int_equal(src->ops->ident(src, &id), 0);
  assert_int_equal(id.index, 1);
  assert_string_equal(id.uuid, "GPU-two");
  assert_string_equal(id.pci, "00000000:BC:00.0");
  assert_string_equal(id.model, "NVIDIA \"odd\" name");
  src->ops->close(src);
  assert_int_equal(mon_nvml_open(NULL, 0, &src, why, sizeof why), 0);
  assert_int_equal(src->ops->ident(src, &id), 0);
  assert_int_equal(id.index, 0);
  assert_string_equal(id.uuid, "GPU-one");
  assert_string_equal(id.pci, "00000000:3B:00.0");
  src->ops->close(src);

  /* through the monitor: the labels in dcgm-exporter's order, the model name escaped, the job */
  char dir[] = "/tmp/gpl-ops-prom-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char prom[128], path[160];
  snprintf(prom, sizeof prom, "%s/g.prom", dir);
  mon_opts_t o;
  mon_opts_default(&o);
  o.prom = prom;
  o.job = "4242";
  monitor_t *m = NULL;
  assert_int_equal(mon_create(&m, &o, 5, "n7", 3, "00000000:BC:00.0"), 0);
  assert_int_equal(mon_tick(m), 0);
  mon_destroy(m);
  snprintf(path, sizeof path, "%s/g-rank5.prom", dir);
  char *txt = NULL;
  size_t n = 0;
  assert_int_equal(safefile_read_text(path, &txt, &n), 0);
  assert_non_null(strstr(txt, "\nDCGM_FI_DEV_FB_USED{gpu=\"1\",UUID=\"GPU-two\",pci_bus_id=\"00000000:BC:00.0\","
                              "device=\"nvidia1\",modelName=\"NVIDIA \\\"odd\\\" name\",Hostname=\"n7\","
                              "rank=\"5\",job=\"4242\"} 12288\n"));
  free(txt);
  unlink(path);
  rmdir(dir);
  unsetenv("FAKE_NVML_GPUS");
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  g_lib = argv[1];
  setenv("GPULAUNCH_NVML_LIB", g_lib, 1);
  /* the same path gives the same handle the monitor gets: read the fake's counters through it */
  void *h = dlopen(g_lib, RTLD_NOW);
  if (!h) {
    fprintf(stderr, "%s\n", dlerror());
    return 1;
  }
  void *p = dlsym(h, "fake_nvml_count");
  memcpy(&fake_count, &p, sizeof p);
  log_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sample_fields),
      cmocka_unit_test(test_unknown_device_and_refcount),
      cmocka_unit_test(test_init_failure_means_off),
      cmocka_unit_test(test_monitor_over_nvml_and_versions),
      cmocka_unit_test(test_oom_samples_at_once),
      cmocka_unit_test(test_gpm_sm_activity),
      cmocka_unit_test(test_gpu_lost),
      cmocka_unit_test(test_ident_labels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
