/* Topology discovery and path classes against EXPECTED-MAPPINGS.md, every shared XML file, bad files, the live machine. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <cjson/cJSON.h>

#include "common/log.h"
#include "checks.h"
#include "expected.h"
#include "gpulaunch/error.h"
#include "topology/path.h"
#include "topology/plan.h"
#include "topology/report.h"
#include "topology/topo.h"

/* "busid name;busid name" -> sorted "busid name;..." (for set comparison). */
static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }
static void canon_list(const char *in, char *out, size_t len) {
  char buf[1024], *items[32];
  int n = 0;
  snprintf(buf, sizeof buf, "%s", in ? in : "");
  char *save = NULL;
  for (char *w = strtok_r(buf, ";", &save); w && n < 32; w = strtok_r(NULL, ";", &save)) items[n++] = w;
  qsort(items, (size_t)n, sizeof *items, cmp_str);
  out[0] = 0;
  for (int i = 0; i < n; i++) {
    strncat(out, i ? ";" : "", len - strlen(out) - 1);
    strncat(out, items[i], len - strlen(out) - 1);
  }
}

/* The nearest NICs of a kind by the table's rule: best class, then fewest bridges ("hops").
 * rdma = 1: NICs with an OpenFabrics device, named by it; 0: NICs with a netdev, named by the
 * netdev the table names (the one among the NIC's netdevs that is in want, else the first). */
static const char *nearest(const topo_t *t, const topo_gpu_t *g, int rdma, const char *want, char *cls, char *out,
                           size_t len) {
  path_class_t best = PATH_SYS;
  int besthops = 1 << 20, any = 0;
  for (int i = 0; i < t->nnics; i++) {
    const topo_nic_t *n = &t->nics[i];
    if (rdma ? !n->rdma[0] : n->nnetdev == 0) continue;
    path_t p;
    path_gpu_nic(t, g, n, &p);
    if (!any || p.cls < best || (p.cls == best && p.hops < besthops)) best = p.cls, besthops = p.hops;
    any = 1;
  }
  char raw[1024] = "";
  for (int i = 0; any && i < t->nnics; i++) {
    const topo_nic_t *n = &t->nics[i];
    if (rdma ? !n->rdma[0] : n->nnetdev == 0) continue;
    path_t p;
    path_gpu_nic(t, g, n, &p);
    if (p.cls != best || p.hops != besthops) continue;
    const char *name = rdma ? n->rdma : n->netdevs[0];
    for (int k = 0; !rdma && want && k < n->nnetdev; k++)
      if (strstr(want, n->netdevs[k])) name = n->netdevs[k];
    size_t l = strlen(raw);
    snprintf(raw + l, sizeof raw - l, "%s%s %s", l ? ";" : "", n->pci, name);
  }
  strcpy(cls, any ? path_class_name(best) : "(none)");
  canon_list(any ? raw : NULL, out, len);
  return any ? out : NULL;
}

static void test_expected_machines(void **state) {
  (void)state;
  for (int m = 0; m < exp_nmachines; m++) {
    const exp_machine_t *em = &exp_machines[m];
    char path[1024];
    topo_t *t = NULL;
    int rc = topo_load(&t, exp_path(em->file, path, sizeof path));
    if (rc < 0) {
      fail_msg("%s: does not load: %d", em->file, rc);
      continue;
    }
    assert_field_int(em->file, "number of GPUs", em->ngpus, t->ngpus);
    plan_t *p = NULL;
    plan_opts_t o;
    plan_opts_default(&o);
    rc = plan_make(t, &o, &p);
    assert_field_int(em->file, "plan_make", 0, rc);
    for (int i = 0; i < em->ngpus && i < t->ngpus; i++) {
      const exp_gpu_t *e = &em->gpus[i];
      const topo_gpu_t *g = &t->gpus[i];
      char ctx[256], numa[64], cls[16], got[1024], want[1024];
      snprintf(ctx, sizeof ctx, "%s GPU%d", em->file, i);
      assert_field_int(ctx, "index", i, g->index);
      assert_field_str(ctx, "pci", e->pci, g->pci);
      assert_field_str(ctx, "numa", e->numa, topo_numa_str(g->numa, g->nnuma, numa, sizeof numa));
      assert_field_str(ctx, "cpus", e->cpus, g->cpus);
      /* Nearest RDMA NICs and netdevs by the table's own rule. */
      canon_list(e->rdma, want, sizeof want);
      const char *n = nearest(t, g, 1, e->rdma, cls, got, sizeof got);
      assert_field_str(ctx, "nearest RDMA class", e->rdma_class ? e->rdma_class : "(none)", cls);
      assert_field_str(ctx, "nearest RDMA NICs", e->rdma ? want : NULL, n);
      canon_list(e->net, want, sizeof want);
      n = nearest(t, g, 0, e->net, cls, got, sizeof got);
      assert_field_str(ctx, "nearest netdev class", e->net_class ? e->net_class : "(none)", cls);
      assert_field_str(ctx, "nearest netdevs", e->net ? want : NULL, n);
      if (!p || i >= p->nranks) continue;
      /* The plan: local rank i -> GPU i, its NIC among the nearest RDMA NICs (the preferred one
       * when the notes name it), NCCL_IB_HCA exact-match with port. */
      const plan_rank_t *r = &p->ranks[i];
      assert_field_int(ctx, "rank's GPU", i, r->gpu);
      /* All GPUs in bus order: nothing to restrict, the program sees them all. */
      assert_field_str(ctx, "CUDA_VISIBLE_DEVICES", NULL, plan_env_get(r, "CUDA_VISIBLE_DEVICES"));
      assert_field_str(ctx, "CUDA_DEVICE_ORDER", "PCI_BUS_ID", plan_env_get(r, "CUDA_DEVICE_ORDER"));
      if (!e->rdma) {
        assert_field_int(ctx, "rank's NIC (none in the file)", -1, r->nic);
        assert_field_str(ctx, "NCCL_IB_HCA", NULL, plan_env_get(r, "NCCL_IB_HCA"));
        continue;
      }
      const topo_nic_t *nic = r->nic >= 0 ? &t->nics[r->nic] : NULL;
      char item[128];
      snprintf(item, sizeof item, "%s %s", nic ? nic->pci : "-", nic ? nic->rdma : "-");
      if (!strstr(e->rdma, item)) {
        fail_msg("%s: rank's NIC '%s' is not among the nearest '%s'", ctx, item, e->rdma);
      }
      assert_field_str(ctx, "rank's NIC class", e->rdma_class, path_class_name(r->nic_path.cls));
      if (e->prefer) assert_field_str(ctx, "preferred NIC (NUMA distance)", e->prefer, nic ? nic->rdma : NULL);
      /* The rank's NIC is one of those the node's NCCL_IB_HCA allows. */
      char hca[128];
      snprintf(hca, sizeof hca, "%s:1", nic ? nic->rdma : "?");
      const char *h = plan_env_get(r, "NCCL_IB_HCA");
      if (!h || h[0] != '=' || !strstr(h, hca))
        fail_msg("%s: NCCL_IB_HCA %s does not hold the rank's NIC %s", ctx, h ? h : "(unset)", hca);
      /* gpus[].nics best first: the first is one of the nearest RDMA NICs. */
      const path_entry_t *L = plan_gpu_nics(p, i);
      snprintf(item, sizeof item, "%s %s", t->nics[L[0].nic].pci, t->nics[L[0].nic].rdma);
      if (!strstr(e->rdma, item)) {
        fail_msg("%s: best-ranked NIC '%s' is not among the nearest '%s'", ctx, item, e->rdma);
      }
    }
    plan_free(p);
    topo_free(t);
  }
}

/* ---- every shared hwloc file: loads, sane plan, JSON round trip ----------------------------- */

static int list_files(const char *prefix, char names[][256], int max) {
  DIR *d = opendir(exp_dir());
  assert_non_null(d);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)) && n < max) {
    size_t l = strlen(de->d_name);
    if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 && l > 4 && strcmp(de->d_name + l - 4, ".xml") == 0)
      snprintf(names[n++], 256, "%s", de->d_name);
  }
  closedir(d);
  return n;
}

/* hwloc 1.x exports have a bare <topology> root; 2.x ones say version="2.0". */
static int is_hwloc1(const char *path) {
  char head[512] = "";
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  head[n] = 0;
  return strstr(head, "<topology>") != NULL;
}

static void test_every_file_loads_and_plans(void **state) {
  (void)state;
  static char names[64][256];
  int n = list_files("hwloc-", names, 64);
  assert_true(n >= 20); /* the shared folder has 21; a missing folder must not pass quietly */
  int hwloc1 = 0;
  for (int i = 0; i < n; i++) {
    char path[1024];
    topo_t *t = NULL;
    int rc = topo_load(&t, exp_path(names[i], path, sizeof path));
    if (rc < 0) {
      fail_msg("%s: does not load (%d)", names[i], rc);
      continue;
    }
    hwloc1 += is_hwloc1(path);
    if (t->ngpus < 1) fail_msg("%s: no GPU found", names[i]);
    /* As many ranks as GPUs and half as many (the node-wide environment must hold for both),
     * and one GPU per process. */
    int sizes[3] = {0, t->ngpus / 2, 0};
    for (int v = 0; v < 3; v++) {
      if (v == 1 && sizes[1] < 1) continue;
      plan_t *p = NULL;
      plan_opts_t o;
      plan_opts_default(&o);
      o.local_size = sizes[v];
      if (v == 2) o.visible_gpus = PLAN_VISIBLE_RANK;
      char ctx[320];
      snprintf(ctx, sizeof ctx, "%.256s (%d ranks%s)", names[i], sizes[v] ? sizes[v] : t->ngpus, v == 2 ? ", visible_gpus rank" : "");
      if ((rc = plan_make(t, &o, &p)) < 0) {
        fail_msg("%s: no plan (%d)", ctx, rc);
        continue;
      }
      assert_field_int(ctx, "ranks per node", sizes[v] ? sizes[v] : t->ngpus, p->nranks);
      check_plan_sane(ctx, t, p);
      check_json_roundtrip(ctx, t, p);
      plan_free(p);
    }
    topo_free(t);
  }
  print_message("%d files, %d of them in hwloc 1.x format\n", n, hwloc1);
  assert_true(hwloc1 >= 1); /* property 8: hwloc 1.x files (8 in the shared folder) load too */
}

/* ---- files that are not hwloc XML ---------------------------------------------------------- */

static void test_nccl_topo_files_rejected(void **state) {
  (void)state;
  static char names[64][256];
  int n = list_files("nccl-topo-", names, 64);
  assert_true(n >= 10);
  for (int i = 0; i < n; i++) {
    char path[1024];
    topo_t *t = (topo_t *)(uintptr_t)1;
    print_message("%s\n", names[i]);
    assert_int_equal(topo_load(&t, exp_path(names[i], path, sizeof path)), GPL_ETOPO);
    assert_null(t);
  }
}

static char *write_temp(const char *content, size_t len) {
  char *path = strdup("/tmp/gpl-topo-test-XXXXXX");
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, content, len), (ssize_t)len);
  close(fd);
  return path;
}

static void test_bad_files(void **state) {
  (void)state;
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, "/nonexistent/topology.xml"), GPL_ENOENT);
  assert_null(t);
  /* Truncated hwloc XML: the first 4000 bytes of a real export. */
  char path[1024], *text = NULL;
  FILE *f = fopen(exp_path("hwloc-jureca-dc-gpu-jrc0323.xml", path, sizeof path), "r");
  assert_non_null(f);
  text = calloc(1, 4001);
  assert_int_equal(fread(text, 1, 4000, f), 4000);
  fclose(f);
  const struct {
    const char *what;
    const char *text;
    size_t len;
  } cases[] = {
      {"empty file", "", 0},
      {"binary", "\x7f" "ELF\0\0\0\x01", 8},
      {"not XML", "hello, world\n", 13},
      {"hwloc 3.x", "<?xml version=\"1.0\"?>\n<topology version=\"3.0\">\n</topology>\n", 58},
      {"other XML", "<?xml version=\"1.0\"?>\n<!-- x -->\n<graph/>\n", 41},
      {"truncated hwloc XML", text, 4000},
      {"unterminated comment", "<!-- <topology>", 15},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    print_message("%s\n", cases[i].what);
    char *tmp = write_temp(cases[i].text, cases[i].len);
    t = (topo_t *)(uintptr_t)1;
    assert_int_equal(topo_load(&t, tmp), GPL_ETOPO);
    assert_null(t);
    unlink(tmp);
    free(tmp);
  }
  free(text);
}

/* A real file with the first `find` replaced by `repl`, in a temporary file (the caller unlinks
 * and frees it). */
static char *variant(const char *file, const char *find, const char *repl) {
  char path[1024], *text = NULL;
  FILE *f = fopen(exp_path(file, path, sizeof path), "r");
  assert_non_null(f);
  assert_int_equal(fseek(f, 0, SEEK_END), 0);
  long n = ftell(f);
  rewind(f);
  text = calloc(1, (size_t)n + strlen(repl) + 1);
  assert_non_null(text);
  assert_int_equal(fread(text, 1, (size_t)n, f), (size_t)n);
  fclose(f);
  char *at = strstr(text, find);
  assert_non_null(at);
  size_t flen = strlen(find), rlen = strlen(repl);
  memmove(at + rlen, at + flen, strlen(at + flen) + 1);
  memcpy(at, repl, rlen);
  char *tmp = write_temp(text, strlen(text));
  free(text);
  return tmp;
}

/* Issue 29: an os_index hwloc would read as another number ("-7" as 4294967289, a value past 32
 * bits cut) is a topology error, on any object; the bound is INT_MAX for CPU-side objects and
 * UINT_MAX - 1 for PCI ones (hwloc packs the bus id into theirs). */
static void test_bad_os_index(void **state) {
  (void)state;
  static const char pascal[] = "hwloc-llnl-pascal-2xp100-1ib.xml";
  const struct {
    const char *file, *find, *repl;
    int rc;
  } cases[] = {
      {pascal, "type=\"PU\" os_index=\"1\"", "type=\"PU\" os_index=\"-7\"", GPL_ETOPO},
      {pascal, "type=\"NUMANode\" os_index=\"1\"", "type=\"NUMANode\" os_index=\"2147483648\"", GPL_ETOPO},
      {pascal, "type=\"Package\" os_index=\"0\"", "type=\"Package\" os_index=\"99999999999\"", GPL_ETOPO},
      {pascal, "type=\"Core\" os_index=\"0\"", "type=\"Core\" os_index=\"\"", GPL_ETOPO},
      {pascal, "type=\"Core\" os_index=\"0\"", "type=\"Core\" os_index=\"+0\"", GPL_ETOPO},
      {pascal, "type=\"OSDev\"", "type=\"OSDev\" os_index=\"-1\"", GPL_ETOPO},
      {pascal, "type=\"PCIDev\"", "type=\"PCIDev\" os_index=\"4294967295\"", GPL_ETOPO},
      /* what hwloc writes for a PCI device in domain 0x8b1c (Hyper-V), cut to 32 bits */
      {pascal, "type=\"PCIDev\"", "type=\"PCIDev\" os_index=\"2982150144\"", 0},
      {pascal, "type=\"PU\" os_index=\"1\"", "type=\"PU\" os_index=\"0001\"", 0},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    print_message("%s\n", cases[i].repl);
    char *tmp = variant(cases[i].file, cases[i].find, cases[i].repl);
    topo_t *t = (topo_t *)(uintptr_t)1;
    assert_int_equal(topo_load(&t, tmp), cases[i].rc);
    if (cases[i].rc) assert_null(t);
    else topo_free(t);
    unlink(tmp);
    free(tmp);
  }
}

/* ---- the live machine ---------------------------------------------------------------------- */

static void test_live_machine(void **state) {
  (void)state;
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, NULL), 0);
  assert_true(t->live);
  assert_true(t->nnuma >= 1);
  assert_string_equal(t->source, "live");
  plan_t *p = NULL;
  plan_opts_t o;
  plan_opts_default(&o);
  assert_int_equal(plan_make(t, &o, &p), 0);
  assert_int_equal(p->nranks, t->ngpus > 0 ? t->ngpus : 1);
  check_plan_sane("live", t, p);
  check_json_roundtrip("live", t, p);
  if (t->ngpus == 0) assert_null(plan_env_get(&p->ranks[0], "CUDA_VISIBLE_DEVICES"));
  /* Every NIC hwloc shows here has a netdev or RDMA name and a bus id that parses back. */
  for (int i = 0; i < t->nnics; i++) {
    unsigned d, b, v, fn;
    assert_true(t->nics[i].name[0]);
    assert_int_equal(topo_parse_busid(t->nics[i].pci, &d, &b, &v, &fn), 0);
    assert_ptr_equal(topo_nic_by_pci(t, t->nics[i].pci), &t->nics[i]);
    assert_ptr_equal(topo_nic_by_name(t, t->nics[i].name), &t->nics[i]);
  }
  plan_free(p);
  topo_free(t);
}

static void test_busid(void **state) {
  (void)state;
  unsigned d, b, v, f;
  assert_int_equal(topo_parse_busid("0000:03:00.0", &d, &b, &v, &f), 0);
  assert_true(d == 0 && b == 3 && v == 0 && f == 0);
  assert_int_equal(topo_parse_busid("00000035:04:00.1", &d, &b, &v, &f), 0); /* NVML's 8-digit domain */
  assert_true(d == 0x35 && b == 4 && v == 0 && f == 1);
  assert_int_equal(topo_parse_busid("c4:1f.7", &d, &b, &v, &f), 0);
  assert_true(d == 0 && b == 0xc4 && v == 0x1f && f == 7);
  assert_int_equal(topo_parse_busid("c4:20.0", &d, &b, &v, &f), GPL_EINVAL);
  assert_int_equal(topo_parse_busid("0000:03:00.0x", &d, &b, &v, &f), GPL_EINVAL);
  assert_int_equal(topo_parse_busid("mlx5_0", &d, &b, &v, &f), GPL_EINVAL);
  assert_int_equal(topo_parse_busid(NULL, &d, &b, &v, &f), GPL_EINVAL);
}

int main(void) {
  log_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_busid),
      cmocka_unit_test(test_expected_machines),
      cmocka_unit_test(test_every_file_loads_and_plans),
      cmocka_unit_test(test_nccl_topo_files_rejected),
      cmocka_unit_test(test_bad_files),
      cmocka_unit_test(test_bad_os_index),
      cmocka_unit_test(test_live_machine),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
