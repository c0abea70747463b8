/* Nodes of `gpulaunch accept` against each other (accept_compare.c) on real machines' hwloc XML
 * files (GPULAUNCH_TOPOLOGY_DIR): profiles of p5en (H200) and p4d (A100) and of p5en with one GPU
 * gone; the odd node out of three named with its value and the majority's; two nodes that
 * differ (no majority) both failed and named; a 2-2 split; explicit expectations replacing the
 * comparison; unknown values skipped; one node; compare = off; NVLink from the NVML rows; and a
 * node without a GPU failing unless [accept] gpus = 0 (tests/launcher/accept/cpu-only.xml). */
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

static const char *g_dir, *g_src;

static topo_t *load_path(const char *path) {
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, path), 0);
  return t;
}

static topo_t *load(const char *file) {
  char path[1024];
  snprintf(path, sizeof path, "%s/%s", g_dir, file);
  return load_path(path);
}

/* The profile of a node as mode_accept makes it: from its topology and its own node checks. */
static void profile_of(topo_t *t, accept_profile_t *p) {
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l = {0};
  accept_node_ctx_t ctx = {t, &o, "n", 0, 1};
  assert_int_equal(accept_node_checks(&ctx, &l), 0);
  assert_int_equal(accept_profile_make(t, &l, p), 0);
  accept_list_free(&l);
}

static void profile_file(const char *file, accept_profile_t *p) {
  topo_t *t = load(file);
  profile_of(t, p);
  topo_free(t);
}

/* p5en's file with GPU 0000:59:00.0 no longer an NVIDIA device: the same machine, one GPU gone. */
static void profile_p5en_minus_gpu(accept_profile_t *p) {
  char path[1024], *text = NULL;
  size_t len = 0;
  snprintf(path, sizeof path, "%s/hwloc-aws-p5en.48xlarge.xml", g_dir);
  assert_int_equal(safefile_read_text(path, &text, &len), 0);
  char *gpu = strstr(text, "pci_busid=\"0000:59:00.0\" pci_type=\"0302 [10de:");
  assert_non_null(gpu);
  memcpy(strstr(gpu, "[10de:") + 1, "1234", 4);
  char tmp[] = "/tmp/accept-cmp-XXXXXX";
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, text, len), (ssize_t)len);
  close(fd);
  free(text);
  topo_t *t = load_path(tmp);
  unlink(tmp);
  assert_int_equal(t->ngpus, 7);
  profile_of(t, p);
  topo_free(t);
}

/* The "majority" row of node `node` about property p; NULL when there is none. */
static const accept_check_t *row(const accept_list_t *l, int node, accept_prop_t p) {
  for (int i = 0; i < l->n; i++)
    if (strcmp(l->v[i].name, "majority") == 0 && l->v[i].node == node &&
        strcmp(l->v[i].subject, accept_prop_name(p)) == 0)
      return &l->v[i];
  return NULL;
}

static void compare(const accept_profile_t *p, int n, const char *const *hosts, const accept_opts_t *o,
                    accept_list_t *l) {
  memset(l, 0, sizeof *l);
  assert_int_equal(accept_compare_nodes(p, n, hosts, o, l), 0);
}

static void test_profiles_of_real_machines(void **state) {
  (void)state;
  accept_profile_t a, b, c;
  profile_file("hwloc-aws-p5en.48xlarge.xml", &a);
  profile_file("hwloc-aws-p4d.24xlarge.xml", &b);
  profile_p5en_minus_gpu(&c);
  assert_true(a.known);
  assert_string_equal(a.v[ACCEPT_PROP_GPU_COUNT], "8");
  assert_string_equal(a.v[ACCEPT_PROP_GPU_MODEL], "NVIDIA H200");
  assert_non_null(strstr(a.v[ACCEPT_PROP_PCIE], "63.0 GB/s"));
  /* Its 32 NIC functions: 16 ENA, 16 EFA (no link speed in a file). */
  assert_string_equal(a.v[ACCEPT_PROP_NIC], "16 x Elastic Network Adapter (ENA), 16 x Elastic Fabric Adapter (EFA)");
  assert_string_equal(a.v[ACCEPT_PROP_NVLINK], "");    /* a file: NVML cannot tell */
  assert_string_equal(b.v[ACCEPT_PROP_GPU_MODEL], "GA100 [A100 SXM4 40GB]");
  assert_non_null(strstr(b.v[ACCEPT_PROP_PCIE], "31.5 GB/s"));
  assert_string_not_equal(a.v[ACCEPT_PROP_NIC], b.v[ACCEPT_PROP_NIC]);
  /* One GPU gone: the count differs, the model and the links of the others do not. */
  assert_string_equal(c.v[ACCEPT_PROP_GPU_COUNT], "7");
  assert_string_equal(c.v[ACCEPT_PROP_GPU_MODEL], a.v[ACCEPT_PROP_GPU_MODEL]);
  assert_string_equal(c.v[ACCEPT_PROP_PCIE], a.v[ACCEPT_PROP_PCIE]);
  assert_string_equal(c.v[ACCEPT_PROP_NIC], a.v[ACCEPT_PROP_NIC]);
  /* Not loaded: not known. */
  assert_int_equal(accept_profile_make(NULL, NULL, &c), 0);
  assert_false(c.known);
}

static void test_odd_node_named(void **state) {
  (void)state;
  accept_profile_t p[3];
  profile_file("hwloc-aws-p5en.48xlarge.xml", &p[0]);
  profile_file("hwloc-aws-p5en.48xlarge.xml", &p[1]);
  profile_file("hwloc-aws-p4d.24xlarge.xml", &p[2]);
  const char *hosts[] = {"h0", "h1", "h2"};
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l;
  compare(p, 3, hosts, &o, &l);
  assert_int_equal(l.n, 3 * ACCEPT_NPROPS);
  /* Same GPU count everywhere: passes on every node. */
  for (int n = 0; n < 3; n++) assert_int_equal(row(&l, n, ACCEPT_PROP_GPU_COUNT)->status, ACCEPT_PASS);
  accept_prop_t differ[] = {ACCEPT_PROP_GPU_MODEL, ACCEPT_PROP_NIC, ACCEPT_PROP_PCIE};
  for (size_t k = 0; k < 3; k++) {
    assert_int_equal(row(&l, 0, differ[k])->status, ACCEPT_PASS);
    assert_int_equal(row(&l, 1, differ[k])->status, ACCEPT_PASS);
    const accept_check_t *c = row(&l, 2, differ[k]);
    assert_int_equal(c->status, ACCEPT_FAIL);
    assert_string_equal(c->host, "h2");
    assert_string_equal(c->value_text, p[2].v[differ[k]]);
    assert_string_equal(c->threshold, "as the majority (2 of 3 nodes)");
    assert_non_null(strstr(c->detail, "h2 differs from the majority"));
    assert_non_null(strstr(c->detail, "the majority (2 of 3 nodes: h0, h1) has"));
  }
  const accept_check_t *c = row(&l, 2, ACCEPT_PROP_GPU_MODEL);
  assert_non_null(strstr(c->detail, "h2 has GA100 [A100 SXM4 40GB]; the majority (2 of 3 nodes: h0, h1) has "
                                    "NVIDIA H200"));
  /* NVLink is not known from files: skipped with the reason, on every node. */
  for (int n = 0; n < 3; n++) {
    assert_int_equal(row(&l, n, ACCEPT_PROP_NVLINK)->status, ACCEPT_SKIP);
    assert_non_null(strstr(row(&l, n, ACCEPT_PROP_NVLINK)->detail, "NVML"));
  }
  accept_list_free(&l);

  /* A GPU fallen off one of four nodes: only its count fails. */
  accept_profile_t q[4];
  for (int i = 0; i < 3; i++) q[i] = p[0];
  profile_p5en_minus_gpu(&q[3]);
  const char *h4[] = {"a", "b", "c", "d"};
  compare(q, 4, h4, &o, &l);
  for (int n = 0; n < 4; n++)
    for (int pr = 0; pr < ACCEPT_NPROPS; pr++) {
      int bad = n == 3 && pr == ACCEPT_PROP_GPU_COUNT;
      if (pr == ACCEPT_PROP_NVLINK) continue;
      assert_int_equal(row(&l, n, (accept_prop_t)pr)->status, bad ? ACCEPT_FAIL : ACCEPT_PASS);
    }
  assert_non_null(strstr(row(&l, 3, ACCEPT_PROP_GPU_COUNT)->detail, "d has 7; the majority (3 of 4 nodes: a, b, c) has 8"));
  accept_list_free(&l);
}

static void test_no_majority_fails_all(void **state) {
  (void)state;
  accept_profile_t p[4];
  profile_file("hwloc-aws-p5en.48xlarge.xml", &p[0]);
  profile_file("hwloc-aws-p4d.24xlarge.xml", &p[1]);
  const char *hosts[] = {"h0", "h1", "h2", "h3"};
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l;
  /* Two nodes that differ: neither can be blamed alone; both fail, each row naming both. */
  compare(p, 2, hosts, &o, &l);
  assert_int_equal(row(&l, 0, ACCEPT_PROP_GPU_COUNT)->status, ACCEPT_PASS);
  for (int n = 0; n < 2; n++) {
    const accept_check_t *c = row(&l, n, ACCEPT_PROP_GPU_MODEL);
    assert_int_equal(c->status, ACCEPT_FAIL);
    assert_non_null(strstr(c->detail, "no majority in gpu model among the 2 nodes"));
    assert_non_null(strstr(c->detail, "h0 has NVIDIA H200; h1 has GA100 [A100 SXM4 40GB]"));
    assert_string_equal(c->threshold, "no majority (2 values, 2 nodes)");
  }
  accept_list_free(&l);
  /* 2 against 2: no majority either; the groups are listed. */
  p[2] = p[0];
  p[3] = p[1];
  compare(p, 4, hosts, &o, &l);
  for (int n = 0; n < 4; n++) assert_int_equal(row(&l, n, ACCEPT_PROP_PCIE)->status, ACCEPT_FAIL);
  assert_non_null(strstr(row(&l, 3, ACCEPT_PROP_GPU_MODEL)->detail, "h0, h2 have NVIDIA H200; h1, h3 have GA100"));
  accept_list_free(&l);
}

static void test_expectations_unknown_one_node_off(void **state) {
  (void)state;
  accept_profile_t p[3];
  profile_file("hwloc-aws-p5en.48xlarge.xml", &p[0]);
  profile_file("hwloc-aws-p4d.24xlarge.xml", &p[1]);
  profile_file("hwloc-aws-p5en.48xlarge.xml", &p[2]);
  const char *hosts[] = {"h0", "h1", "h2"};
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l;
  /* Explicit expectations: their own checks hold the node to them; no majority row for them. */
  o.gpus = 8;
  snprintf(o.gpu_model, sizeof o.gpu_model, "H200");
  snprintf(o.nics, sizeof o.nics, "rdmap85s0");
  compare(p, 3, hosts, &o, &l);
  assert_null(row(&l, 1, ACCEPT_PROP_GPU_COUNT));
  assert_null(row(&l, 1, ACCEPT_PROP_GPU_MODEL));
  assert_null(row(&l, 1, ACCEPT_PROP_NIC));
  assert_int_equal(row(&l, 1, ACCEPT_PROP_PCIE)->status, ACCEPT_FAIL); /* no expectation for links */
  assert_int_equal(l.n, 3 * 2);
  accept_list_free(&l);
  /* A node whose topology did not load is skipped, the others are still compared. */
  accept_opts_default(&o);
  assert_int_equal(accept_profile_make(NULL, NULL, &p[1]), 0);
  compare(p, 3, hosts, &o, &l);
  assert_int_equal(row(&l, 1, ACCEPT_PROP_GPU_MODEL)->status, ACCEPT_SKIP);
  assert_non_null(strstr(row(&l, 1, ACCEPT_PROP_GPU_MODEL)->detail, "could not be loaded"));
  assert_int_equal(row(&l, 0, ACCEPT_PROP_GPU_MODEL)->status, ACCEPT_PASS);
  assert_non_null(strstr(row(&l, 0, ACCEPT_PROP_GPU_MODEL)->detail, "the same on all 2 nodes"));
  accept_list_free(&l);
  /* One node: one skipped row with the reason. */
  compare(p, 1, hosts, &o, &l);
  assert_int_equal(l.n, 1);
  assert_int_equal(l.v[0].status, ACCEPT_SKIP);
  assert_non_null(strstr(l.v[0].detail, "one node"));
  accept_list_free(&l);
  /* compare = off: nothing. */
  o.compare = 0;
  compare(p, 3, hosts, &o, &l);
  assert_int_equal(l.n, 0);
  accept_list_free(&l);
}

/* NVLink from the node's NVML rows: "N of M links active" per GPU, summed up; a GPU without
 * NVLink counts as such; a node whose NVML read failed is not known. */
static void test_nvlink_profile(void **state) {
  (void)state;
  topo_t *t = load("hwloc-aws-p5en.48xlarge.xml");
  accept_list_t l = {0};
  for (int g = 0; g < 8; g++) {
    accept_check_t c;
    char subj[8];
    snprintf(subj, sizeof subj, "GPU%d", g);
    accept_check_init(&c, "nvlink", "n", 0, -1, subj);
    accept_check_value(&c, g == 5 ? 16 : 18, "", "%d of 18 links active, NVLink 4.0", g == 5 ? 16 : 18);
    accept_check_set(&c, g == 5 ? ACCEPT_FAIL : ACCEPT_PASS, "x");
    assert_int_equal(accept_list_add(&l, &c), 0);
  }
  accept_profile_t p;
  assert_int_equal(accept_profile_make(t, &l, &p), 0);
  assert_string_equal(p.v[ACCEPT_PROP_NVLINK], "7 x 18 of 18 links active, 1 x 16 of 18 links active");
  l.v[2].status = ACCEPT_ERROR;
  assert_int_equal(accept_profile_make(t, &l, &p), 0);
  assert_string_equal(p.v[ACCEPT_PROP_NVLINK], "");
  accept_list_free(&l);
  topo_free(t);
}

/* A node without a GPU: a GPU run fails it, naming the key that allows it; gpus = 0 passes. */
static void test_no_gpu_fails_unless_allowed(void **state) {
  (void)state;
  char path[1024];
  snprintf(path, sizeof path, "%s/tests/launcher/accept/cpu-only.xml", g_src);
  topo_t *t = load_path(path);
  assert_int_equal(t->ngpus, 0);
  accept_opts_t o;
  accept_opts_default(&o);
  accept_list_t l = {0};
  accept_node_ctx_t ctx = {t, &o, "cpu0", 0, 1};
  assert_int_equal(accept_node_checks(&ctx, &l), 0);
  const accept_check_t *c = NULL;
  for (int i = 0; i < l.n; i++)
    if (strcmp(l.v[i].name, "gpu_count") == 0) c = &l.v[i];
  assert_non_null(c);
  assert_int_equal(c->status, ACCEPT_FAIL);
  assert_non_null(strstr(c->detail, "no GPU on this node"));
  assert_non_null(strstr(c->detail, "[accept] gpus = 0"));
  accept_list_free(&l);
  o.gpus = 0;
  assert_int_equal(accept_node_checks(&ctx, &l), 0);
  for (int i = 0; i < l.n; i++) {
    if (strcmp(l.v[i].name, "gpu_count") == 0) assert_int_equal(l.v[i].status, ACCEPT_PASS);
    assert_int_not_equal(l.v[i].status, ACCEPT_FAIL);
  }
  accept_list_free(&l);
  /* And a GPU node without expectations passes its count (at least one GPU). */
  topo_free(t);
  t = load("hwloc-aws-p4d.24xlarge.xml");
  ctx.t = t;
  o.gpus = -1;
  assert_int_equal(accept_node_checks(&ctx, &l), 0);
  assert_int_equal(l.v[0].status, ACCEPT_PASS);
  assert_string_equal(l.v[0].name, "gpu_count");
  accept_list_free(&l);
  topo_free(t);
}

int main(void) {
  g_dir = getenv("GPULAUNCH_TOPOLOGY_DIR");
  g_src = getenv("GPULAUNCH_SOURCE_DIR");
  if (!g_dir || access(g_dir, R_OK) != 0 || !g_src) {
    fprintf(stderr, "GPULAUNCH_TOPOLOGY_DIR or GPULAUNCH_SOURCE_DIR is not set or unreadable\n");
    return 1;
  }
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_profiles_of_real_machines),
      cmocka_unit_test(test_odd_node_named),
      cmocka_unit_test(test_no_majority_fails_all),
      cmocka_unit_test(test_expectations_unknown_one_node_off),
      cmocka_unit_test(test_nvlink_profile),
      cmocka_unit_test(test_no_gpu_fails_unless_allowed),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
