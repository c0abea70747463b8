/* Node and rank checks of `gpulaunch accept` on real machines' hwloc XML files
 * (GPULAUNCH_TOPOLOGY_DIR): GPU count and model, NIC presence and state, the GPU->NIC distance
 * warning (g4dn.metal: GPUs 0-3 have no NIC on their NUMA node), PCIe link degradation (a copy
 * of a file with one GPU's link cut), NUMA binding against a given CPU set, the NVML checks
 * skipped without NVML and run through the project's NVML loader with the stand-in library of
 * tests/fake_nvml (argv[1]; the test fails without it): ECC, clocks, temperature, retired pages
 * and remapped rows, NVLink. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "common/safefile.h"
#include "common/util.h"
#include "launcher/accept/accept.h"

static const char *g_dir;
static const char *g_fake_nvml; /* argv[1]: tests/fake_nvml's stand-in libnvidia-ml */

static topo_t *load(const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", g_dir, file);
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, path), 0);
  return t;
}

static void run_checks(const topo_t *t, const accept_opts_t *o, accept_list_t *out) {
  accept_node_ctx_t ctx = {t, o, "node-a", 0, 1};
  memset(out, 0, sizeof *out);
  assert_int_equal(accept_node_checks(&ctx, out), 0);
}

/* The check with this name and subject ("" = any). */
static const accept_check_t *get(const accept_list_t *l, const char *name, const char *subject) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->v[i].name, name) == 0 && (!subject || strcmp(l->v[i].subject, subject) == 0)) return &l->v[i];
  return NULL;
}

static void test_g4dn_gpu_without_local_nic_warns(void **state) {
  (void)state;
  topo_t *t = load("hwloc-aws-g4dn.metal-8xt4.xml");
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l;
  run_checks(t, &o, &l);
  for (int g = 0; g < 8; g++) {
    char subj[8];
    snprintf(subj, sizeof subj, "GPU%d", g);
    const accept_check_t *c = get(&l, "gpu_nic_path", subj);
    assert_non_null(c);
    assert_int_equal(c->status, ACCEPT_WARN);
    /* GPUs 0-3 sit on NUMA 0, the EFA and ENA on NUMA 1: SYS; GPUs 4-7 share NUMA 1: NODE. */
    assert_non_null(strstr(c->value_text, g < 4 ? "SYS" : "NODE"));
    assert_non_null(strstr(c->value_text, "rdmap197s0"));
    if (g < 4) assert_non_null(strstr(c->detail, "no NIC on this GPU's NUMA node"));
  }
  accept_list_free(&l);
  /* A machine built that way: NODE accepted, SYS still warns. */
  o.nic_max_path = PATH_NODE;
  run_checks(t, &o, &l);
  assert_int_equal(get(&l, "gpu_nic_path", "GPU2")->status, ACCEPT_WARN);
  assert_int_equal(get(&l, "gpu_nic_path", "GPU6")->status, ACCEPT_PASS);
  accept_list_free(&l);
  topo_free(t);
}

static void test_pix_nics_pass(void **state) {
  (void)state;
  topo_t *t = load("hwloc-jureca-dc-gpu-jrc0386.xml");
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l;
  run_checks(t, &o, &l);
  for (int g = 0; g < 4; g++) {
    char subj[8];
    snprintf(subj, sizeof subj, "GPU%d", g);
    const accept_check_t *c = get(&l, "gpu_nic_path", subj);
    assert_int_equal(c->status, ACCEPT_PASS);
    assert_non_null(strstr(c->value_text, "PIX"));
  }
  /* DGX-2H's file has no NICs at all. */
  accept_list_free(&l);
  topo_free(t);
  t = load("hwloc-nvidia-dgx2h.xml");
  run_checks(t, &o, &l);
  const accept_check_t *c = get(&l, "gpu_nic_path", "");
  assert_non_null(c);
  assert_int_equal(c->status, ACCEPT_WARN);
  assert_non_null(strstr(c->detail, "no network card"));
  accept_list_free(&l);
  topo_free(t);
}

static void test_gpu_count_and_model(void **state) {
  (void)state;
  topo_t *t = load("hwloc-aws-g4dn.metal-8xt4.xml");
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l;
  run_checks(t, &o, &l);
  /* No count expected: at least one GPU passes (the count is compared between nodes). */
  assert_int_equal(get(&l, "gpu_count", "")->status, ACCEPT_PASS);
  assert_int_equal(get(&l, "gpu_model", "")->status, ACCEPT_SKIP);
  accept_list_free(&l);
  o.gpus = 8;
  snprintf(o.gpu_model, sizeof o.gpu_model, "t4"); /* case-insensitive substring of "Tesla T4" */
  run_checks(t, &o, &l);
  assert_int_equal(get(&l, "gpu_count", "")->status, ACCEPT_PASS);
  assert_int_equal(get(&l, "gpu_model", "")->status, ACCEPT_PASS);
  accept_list_free(&l);
  o.gpus = 16;
  snprintf(o.gpu_model, sizeof o.gpu_model, "H100");
  run_checks(t, &o, &l);
  const accept_check_t *c = get(&l, "gpu_count", "");
  assert_int_equal(c->status, ACCEPT_FAIL);
  assert_int_equal((int)c->value, 8);
  assert_string_equal(c->threshold, "== 16");
  c = get(&l, "gpu_model", "");
  assert_int_equal(c->status, ACCEPT_FAIL);
  assert_non_null(strstr(c->detail, "GPU0 is Tesla T4"));
  accept_list_free(&l);
  topo_free(t);
  /* No GPU expected on a GPU node is a count failure too. */
  t = load("hwloc-juwels-booster-jwb0001.xml");
  o.gpus = 0;
  o.gpu_model[0] = 0;
  run_checks(t, &o, &l);
  assert_int_equal(get(&l, "gpu_count", "")->status, ACCEPT_FAIL);
  accept_list_free(&l);
  topo_free(t);
}

static void test_nics_present_up_down_absent(void **state) {
  (void)state;
  /* jrc0386: mlx5_0 and mlx5_1 had their ports down when the file was taken. */
  topo_t *t = load("hwloc-jureca-dc-gpu-jrc0386.xml");
  accept_opts_t o;
  accept_opts_default(&o);
  snprintf(o.nics, sizeof o.nics, "mlx5_0, mlx5_2,ib3,mlx5_9");
  o.nic_min_speed = 100;
  accept_list_t l;
  run_checks(t, &o, &l);
  const accept_check_t *c = get(&l, "nic", "mlx5_0");
  assert_int_equal(c->status, ACCEPT_FAIL);
  assert_non_null(strstr(c->detail, "link is down"));
  assert_int_equal(get(&l, "nic", "mlx5_2")->status, ACCEPT_PASS);
  assert_int_equal(get(&l, "nic", "ib3")->status, ACCEPT_PASS); /* a netdev name finds the NIC too */
  c = get(&l, "nic", "mlx5_9");
  assert_int_equal(c->status, ACCEPT_FAIL);
  assert_non_null(strstr(c->detail, "not found"));
  assert_non_null(strstr(c->detail, "mlx5_3")); /* says which NICs there are */
  /* Files carry no link speed: skipped with the reason. */
  c = get(&l, "nic_speed", "mlx5_2");
  assert_int_equal(c->status, ACCEPT_SKIP);
  assert_non_null(strstr(c->detail, "no link speed"));
  accept_list_free(&l);
  topo_free(t);
}

/* A copy of g4dn.metal whose GPU1 trained at half the lanes. */
static void test_pcie_degraded_link_fails(void **state) {
  (void)state;
  char path[1024], *text = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/hwloc-aws-g4dn.metal-8xt4.xml", g_dir);
  assert_int_equal(safefile_read_text(path, &text, &len), 0);
  char *gpu1 = strstr(text, "pci_busid=\"0000:19:00.0\"");
  assert_non_null(gpu1);
  char *speed = strstr(gpu1, "pci_link_speed=\"15.753846\"");
  assert_non_null(speed);
  memcpy(speed + strlen("pci_link_speed=\""), "07.876923", 9);
  char tmp[] = "/tmp/accept-pcie-XXXXXX";
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, len), (ssize_t)len);
  close(fd);
  free(text);
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, tmp), 0);
  unlink(tmp);
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l;
  run_checks(t, &o, &l);
  const accept_check_t *c = get(&l, "pcie_link", "GPU1");
  assert_int_equal(c->status, ACCEPT_FAIL);
  assert_true(c->value < 8 && c->value > 7.8);
  assert_int_equal(get(&l, "pcie_link", "GPU0")->status, ACCEPT_PASS);
  assert_non_null(strstr(get(&l, "pcie_link", "GPU0")->value_text, "Gen3 x16"));
  accept_list_free(&l);
  topo_free(t);
}

static void test_pcie_decode(void **state) {
  (void)state;
  char b[64];
  assert_string_equal(accept_pcie_decode(31.507692, b, sizeof b), "Gen4 x16 or Gen5 x8");
  assert_string_equal(accept_pcie_decode(63.015385, b, sizeof b), "Gen5 x16 or Gen6 x8");
  assert_string_equal(accept_pcie_decode(4.0, b, sizeof b), "Gen1 x16 or Gen2 x8");
  assert_string_equal(accept_pcie_decode(0, b, sizeof b), "");
  assert_string_equal(accept_pcie_decode(5.5, b, sizeof b), "");
}

static void test_numa_binding(void **state) {
  (void)state;
  topo_t *t = load("hwloc-aws-g4dn.metal-8xt4.xml"); /* GPU0: NUMA 0, CPUs 0-23,48-71 */
  accept_list_t l = {0};
  hwloc_bitmap_t b = hwloc_bitmap_alloc();
  hwloc_bitmap_list_sscanf(b, "0-3");
  assert_int_equal(accept_rank_binding(t, "node-a", 0, 5, 0, b, &l), 0);
  assert_int_equal(l.v[0].status, ACCEPT_PASS);
  hwloc_bitmap_list_sscanf(b, "24-27");
  accept_rank_binding(t, "node-a", 0, 5, 0, b, &l);
  assert_int_equal(l.v[1].status, ACCEPT_FAIL);
  assert_non_null(strstr(l.v[1].detail, "another NUMA node"));
  hwloc_bitmap_list_sscanf(b, "20-27");
  accept_rank_binding(t, "node-a", 0, 5, 0, b, &l);
  assert_int_equal(l.v[2].status, ACCEPT_FAIL);
  hwloc_bitmap_copy(b, hwloc_topology_get_topology_cpuset(t->hw));
  accept_rank_binding(t, "node-a", 0, 5, 0, b, &l);
  assert_int_equal(l.v[3].status, ACCEPT_WARN);
  assert_non_null(strstr(l.v[3].detail, "not bound"));
  hwloc_bitmap_list_sscanf(b, "30-31");
  accept_rank_binding(t, "node-a", 0, 5, 6, b, &l); /* GPU6 is on NUMA 1 */
  assert_int_equal(l.v[4].status, ACCEPT_PASS);
  accept_rank_binding(t, "node-a", 0, 5, -1, b, &l);
  assert_int_equal(l.v[5].status, ACCEPT_SKIP);
  /* No binding given and a file: this process's binding is another machine's. */
  accept_rank_binding(t, "node-a", 0, 5, 0, NULL, &l);
  assert_int_equal(l.v[6].status, ACCEPT_SKIP);
  assert_int_equal(l.v[6].rank, 5);
  hwloc_bitmap_free(b);
  accept_list_free(&l);
  topo_free(t);
}

static void test_nvml_skipped_without_nvml(void **state) {
  (void)state;
  unsetenv("GPULAUNCH_NVML_LIB");
  topo_t *t = load("hwloc-aws-g4dn.metal-8xt4.xml");
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l;
  run_checks(t, &o, &l);
  static const char *const names[] = {"ecc", "retired_pages", "clocks", "temperature", "nvlink"};
  for (size_t i = 0; i < 5; i++) {
    const accept_check_t *c = get(&l, names[i], NULL);
    assert_non_null(c);
    assert_int_equal(c->status, ACCEPT_SKIP);
    if (access("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", F_OK) != 0)
      assert_non_null(strstr(c->detail, "NVML not available"));
  }
  const accept_check_t *x = get(&l, "xid", NULL);
  assert_int_equal(x->status, ACCEPT_SKIP);
  assert_non_null(strstr(x->detail, "topology from a file"));
  accept_list_free(&l);
  topo_free(t);
}

static void test_xid_scan(void **state) {
  (void)state;
  char last[200];
  const char *log = "usb 1-1: new device\n"
                    "NVRM: Xid (PCI:0000:3b:00): 13, pid=123, Graphics Exception\n"
                    "eth0: link up\n"
                    "NVRM: Xid (PCI:0000:86:00): 79, pid=0, GPU has fallen off the bus.\n";
  assert_int_equal(accept_xid_scan(log, last, sizeof last), 2);
  assert_non_null(strstr(last, "79, pid=0"));
  assert_int_equal(accept_xid_scan("nothing here\n", last, sizeof last), 0);
}

/* The NVML checks through the project's loader with the stand-in library, which knows one GPU at
 * 0000:3b:00.0 (DGX-2H's GPU0): 61 C, 3 corrected and 0 uncorrected ECC errors, the software
 * power cap active, no row remapper and no NVLink unless told. The topology is marked live for
 * this: the GPUs must be "here" for NVML. */
static void test_nvml_through_the_loader(void **state) {
  (void)state;
  setenv("GPULAUNCH_NVML_LIB", g_fake_nvml, 1);
  topo_t *t = load("hwloc-nvidia-dgx2h.xml");
  t->live = 1;
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l = {0};
  accept_node_ctx_t ctx = {t, &o, "node-a", 0, 1};
  assert_int_equal(accept_nvml_checks(&ctx, &l), 0);
  int g = -1;
  for (int i = 0; i < t->ngpus; i++)
    if (strcmp(t->gpus[i].pci, "0000:3b:00.0") == 0) g = i;
  assert_true(g >= 0);
  char subj[8];
  snprintf(subj, sizeof subj, "GPU%d", g);
  const accept_check_t *c = get(&l, "temperature", subj);
  assert_non_null(c);
  assert_int_equal(c->status, ACCEPT_PASS);
  assert_int_equal((int)c->value, 61);
  c = get(&l, "ecc", subj);
  assert_int_equal(c->status, ACCEPT_PASS);
  assert_non_null(strstr(c->value_text, "3 corrected"));
  c = get(&l, "clocks", subj);
  assert_int_equal(c->status, ACCEPT_WARN);
  assert_non_null(strstr(c->detail, "power cap"));
  assert_int_equal(get(&l, "retired_pages", subj)->status, ACCEPT_SKIP);
  assert_int_equal(get(&l, "nvlink", subj)->status, ACCEPT_SKIP);
  /* A GPU the driver does not know is an error of that GPU's checks, not a crash. */
  c = get(&l, "temperature", g == 0 ? "GPU1" : "GPU0");
  assert_int_equal(c->status, ACCEPT_ERROR);
  /* Lower the limit: the same GPU fails. */
  accept_list_free(&l);
  o.max_gpu_temp = 60;
  assert_int_equal(accept_nvml_checks(&ctx, &l), 0);
  assert_int_equal(get(&l, "temperature", subj)->status, ACCEPT_FAIL);
  accept_list_free(&l);
  topo_free(t);
  unsetenv("GPULAUNCH_NVML_LIB");
}

/* DGX-2H's GPU0 through the stand-in, with its memory and NVLink health set by the environment;
 * the check's row for that GPU. */
static accept_check_t health_row(const char *name, const char *var, const char *value) {
  setenv("GPULAUNCH_NVML_LIB", g_fake_nvml, 1);
  if (value) setenv(var, value, 1);
  topo_t *t = load("hwloc-nvidia-dgx2h.xml");
  t->live = 1;
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l = {0};
  accept_node_ctx_t ctx = {t, &o, "node-a", 0, 1};
  assert_int_equal(accept_nvml_checks(&ctx, &l), 0);
  int g = -1;
  for (int i = 0; i < t->ngpus; i++)
    if (strcmp(t->gpus[i].pci, "0000:3b:00.0") == 0) g = i;
  char subj[8];
  snprintf(subj, sizeof subj, "GPU%d", g);
  const accept_check_t *c = get(&l, name, subj);
  assert_non_null(c);
  accept_check_t out = *c;
  accept_list_free(&l);
  topo_free(t);
  unsetenv(var);
  unsetenv("GPULAUNCH_NVML_LIB");
  return out;
}

/* Ampere and later: the row remapper. Remapped rows alone pass (the driver handled them), a
 * pending remap warns (reset the GPU), a failed one fails (no spare row left). */
static void test_nvml_remapped_rows(void **state) {
  (void)state;
  accept_check_t c = health_row("retired_pages", "FAKE_NVML_REMAP", "2,1,0,0");
  assert_int_equal(c.status, ACCEPT_PASS);
  assert_int_equal((int)c.value, 3);
  assert_non_null(strstr(c.value_text, "3 rows remapped (2 correctable, 1 uncorrectable)"));
  c = health_row("retired_pages", "FAKE_NVML_REMAP", "0,1,1,0");
  assert_int_equal(c.status, ACCEPT_WARN);
  assert_non_null(strstr(c.detail, "pending"));
  c = health_row("retired_pages", "FAKE_NVML_REMAP", "0,9,0,1");
  assert_int_equal(c.status, ACCEPT_FAIL);
  assert_non_null(strstr(c.detail, "remapping failed"));
}

/* Before Ampere: retired pages, counted by cause (more than fit the loader's buffer is counted
 * too), and a retirement pending until the next reboot. */
static void test_nvml_retired_pages(void **state) {
  (void)state;
  accept_check_t c = health_row("retired_pages", "FAKE_NVML_RETIRED", "4,300,0");
  assert_int_equal(c.status, ACCEPT_PASS);
  assert_non_null(strstr(c.value_text, "304 pages retired (4 single-bit, 300 double-bit)"));
  c = health_row("retired_pages", "FAKE_NVML_RETIRED", "0,1,1");
  assert_int_equal(c.status, ACCEPT_WARN);
  assert_non_null(strstr(c.detail, "pending retirement"));
}

/* NVLink: every link active passes with the generation; some down fails naming them; none active
 * warns (a bridge-less PCIe board looks the same as a fabric that is down). */
static void test_nvml_nvlink(void **state) {
  (void)state;
  accept_check_t c = health_row("nvlink", "FAKE_NVML_NVLINK", "1,1,1,1,1,1");
  assert_int_equal(c.status, ACCEPT_PASS);
  assert_non_null(strstr(c.value_text, "6 of 6 links active, NVLink 4.0"));
  c = health_row("nvlink", "FAKE_NVML_NVLINK", "1,1,0,1,0,1");
  assert_int_equal(c.status, ACCEPT_FAIL);
  assert_int_equal((int)c.value, 4);
  assert_non_null(strstr(c.detail, "NVLink(s) 2,4 down"));
  c = health_row("nvlink", "FAKE_NVML_NVLINK", "0,0");
  assert_int_equal(c.status, ACCEPT_WARN);
  assert_non_null(strstr(c.detail, "none of its 2 NVLinks is active"));
  c = health_row("nvlink", "FAKE_NVML_NVLINK", NULL); /* the driver answers no link at all */
  assert_int_equal(c.status, ACCEPT_SKIP);
  assert_non_null(strstr(c.detail, "no NVLink"));
}

int main(int argc, char **argv) {
  g_dir = getenv("GPULAUNCH_TOPOLOGY_DIR");
  if (!g_dir || access(g_dir, R_OK) != 0) {
    fprintf(stderr, "GPULAUNCH_TOPOLOGY_DIR is not set or unreadable\n");
    return 1;
  }
  g_fake_nvml = argc > 1 ? argv[1] : NULL;
  if (!g_fake_nvml || access(g_fake_nvml, R_OK) != 0) {
    fprintf(stderr, "test_accept_node: the stand-in NVML library (argv[1], tests/fake_nvml) is "
                    "missing: %s\n", g_fake_nvml ? g_fake_nvml : "not given");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_g4dn_gpu_without_local_nic_warns),
      cmocka_unit_test(test_pix_nics_pass),
      cmocka_unit_test(test_gpu_count_and_model),
      cmocka_unit_test(test_nics_present_up_down_absent),
      cmocka_unit_test(test_pcie_degraded_link_fails),
      cmocka_unit_test(test_pcie_decode),
      cmocka_unit_test(test_numa_binding),
      cmocka_unit_test(test_nvml_skipped_without_nvml),
      cmocka_unit_test(test_xid_scan),
      cmocka_unit_test(test_nvml_through_the_loader),
      cmocka_unit_test(test_nvml_remapped_rows),
      cmocka_unit_test(test_nvml_retired_pages),
      cmocka_unit_test(test_nvml_nvlink),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
