/* Placement plans: errors, GPU-less spreading, core splits, NIC spreading, renamed NICs, the numbered properties of EXPECTED-MAPPINGS.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "checks.h"
#include "common/log.h"
#include "common/safefile.h"
#include "common/util.h"
#include "expected.h"
#include "gpulaunch/error.h"
#include "topology/path.h"
#include "topology/plan.h"
#include "topology/topo.h"

static topo_t *load(const char *file) {
  char path[1024];
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, exp_path(file, path, sizeof path)), 0);
  return t;
}

static plan_t *plan(const topo_t *t, int ranks, plan_bind_t bind, int no_gpus, int nics) {
  plan_opts_t o;
  plan_opts_default(&o);
  o.local_size = ranks;
  o.bind = bind;
  o.no_gpus = no_gpus;
  o.nics_per_rank = nics;
  plan_t *p = NULL;
  assert_int_equal(plan_make(t, &o, &p), 0);
  check_plan_sane("plan", t, p);
  return p;
}

static const char *rank_nic(const topo_t *t, const plan_rank_t *r) { return r->nic >= 0 ? t->nics[r->nic].name : "-"; }

/* ---- errors -------------------------------------------------------------------------------- */

static void test_more_ranks_than_gpus(void **state) {
  (void)state;
  topo_t *t = load("hwloc-jureca-dc-gpu-jrc0386.xml");
  plan_opts_t o;
  plan_opts_default(&o);
  char err[512] = "";
  o.err = err;
  o.errlen = sizeof err;
  o.local_size = 5;
  plan_t *p = (plan_t *)1;
  assert_int_equal(plan_make(t, &o, &p), GPL_ETOPO);
  assert_null(p);
  print_message("%s\n", err);
  assert_non_null(strstr(err, "5 ranks per node"));
  assert_non_null(strstr(err, "4 usable GPUs"));
  /* The same with GPUs disabled is a CPU-only plan. */
  o.no_gpus = 1;
  assert_int_equal(plan_make(t, &o, &p), 0);
  assert_int_equal(p->nranks, 5);
  plan_free(p);
  topo_free(t);
}

static void test_bind_parse(void **state) {
  (void)state;
  plan_bind_t b;
  assert_int_equal(plan_bind_parse("cores", &b), 0);
  assert_int_equal(b, PLAN_BIND_CORES);
  assert_int_equal(plan_bind_parse("NUMA", &b), 0);
  assert_int_equal(b, PLAN_BIND_NUMA);
  assert_int_equal(plan_bind_parse("none", &b), 0);
  assert_int_equal(b, PLAN_BIND_NONE);
  assert_int_equal(plan_bind_parse("socket", &b), GPL_EINVAL);
  assert_string_equal(plan_bind_name(PLAN_BIND_NUMA), "numa");
}

/* ---- CPUs ---------------------------------------------------------------------------------- */

/* p5en: GPU0-3 share NUMA 0 (0-47,96-143): 4 ranks get 12 whole cores each, contiguous. */
static void test_cores_split(void **state) {
  (void)state;
  topo_t *t = load("hwloc-aws-p5en.48xlarge.xml");
  plan_t *p = plan(t, 8, PLAN_BIND_CORES, 0, 1);
  const char *want[8] = {"0-11,96-107",     "12-23,108-119",   "24-35,120-131",   "36-47,132-143",
                         "48-59,144-155",   "60-71,156-167",   "72-83,168-179",   "84-95,180-191"};
  for (int i = 0; i < 8; i++) {
    assert_string_equal(p->ranks[i].cpus, want[i]);
    assert_int_equal(hwloc_get_nbobjs_inside_cpuset_by_type(t->hw, p->ranks[i].cpuset, HWLOC_OBJ_CORE), 12);
    assert_int_equal(plan_rank_ncores(t, &p->ranks[i]), 12);
  }
  plan_free(p);
  /* Two ranks: GPU0 and GPU1, both NUMA 0: 24 cores each. */
  p = plan(t, 2, PLAN_BIND_CORES, 0, 1);
  assert_string_equal(p->ranks[0].cpus, "0-23,96-119");
  assert_string_equal(p->ranks[1].cpus, "24-47,120-143");
  plan_free(p);
  /* bind numa: the whole local set; bind none: not bound (all CPUs). */
  p = plan(t, 8, PLAN_BIND_NUMA, 0, 1);
  for (int i = 0; i < 8; i++) assert_string_equal(p->ranks[i].cpus, t->gpus[i].cpus);
  plan_free(p);
  p = plan(t, 8, PLAN_BIND_NONE, 0, 1);
  for (int i = 0; i < 8; i++) assert_string_equal(p->ranks[i].cpus, t->cpus);
  plan_free(p);
  topo_free(t);
}

/* Inria: GPU1 and GPU2 share NUMA 1's 6 cores x 2 threads (odd CPU numbers): 3 cores each,
 * both hardware threads of each core. */
static void test_cores_with_smt_numbering(void **state) {
  (void)state;
  topo_t *t = load("hwloc-inria-24em64t-2n6c2t-3gpu-1ib.xml");
  plan_t *p = plan(t, 3, PLAN_BIND_CORES, 0, 1);
  assert_string_equal(p->ranks[0].cpus, "0,2,4,6,8,10,12,14,16,18,20,22");
  for (int i = 1; i < 3; i++) {
    hwloc_obj_t core = NULL;
    int n = 0;
    while ((core = hwloc_get_next_obj_inside_cpuset_by_type(t->hw, p->ranks[i].cpuset, HWLOC_OBJ_CORE, core))) {
      assert_true(hwloc_bitmap_isincluded(core->cpuset, p->ranks[i].cpuset)); /* whole cores */
      n++;
    }
    assert_int_equal(n, 3);
    assert_int_equal(hwloc_bitmap_weight(p->ranks[i].cpuset), 6);
  }
  plan_free(p);
  topo_free(t);
}

/* No GPUs (disabled): ranks spread over the NUMA nodes, no CUDA_VISIBLE_DEVICES. */
static void test_no_gpus_spread(void **state) {
  (void)state;
  topo_t *t = load("hwloc-jureca-dc-gpu-jrc0386.xml"); /* 8 NUMA nodes, 2 packages */
  plan_t *p = plan(t, 2, PLAN_BIND_CORES, 1, 1);
  assert_int_equal(p->ranks[0].numa, 0);
  assert_int_equal(p->ranks[1].numa, 4); /* the other package */
  plan_free(p);
  p = plan(t, 16, PLAN_BIND_CORES, 1, 1);
  for (int i = 0; i < 16; i++) {
    assert_int_equal(p->ranks[i].gpu, -1);
    assert_int_equal(p->ranks[i].numa, i / 2);
    assert_null(plan_env_get(&p->ranks[i], "CUDA_VISIBLE_DEVICES"));
    hwloc_obj_t numa = hwloc_get_numanode_obj_by_os_index(t->hw, (unsigned)p->ranks[i].numa);
    assert_true(hwloc_bitmap_isincluded(p->ranks[i].cpuset, numa->cpuset));
    assert_int_equal(hwloc_get_nbobjs_inside_cpuset_by_type(t->hw, p->ranks[i].cpuset, HWLOC_OBJ_CORE), 8);
  }
  /* NUMA 3's ranks (6, 7) are nearest to mlx5_1 (PIX to GPU0 on NUMA 3): NODE. */
  assert_string_equal(rank_nic(t, &p->ranks[6]), "mlx5_1");
  assert_int_equal(p->ranks[6].nic_path.cls, PATH_NODE);
  plan_free(p);
  topo_free(t);
}

/* An inherited CUDA_VISIBLE_DEVICES limits the GPUs; indexes stay the physical ones, and both
 * ranks see both GPUs (device LOCAL_RANK is the rank's). UUIDs are answered with UUIDs. */
static void test_visible_devices(void **state) {
  (void)state;
  topo_t *t = load("hwloc-aws-p5en.48xlarge.xml");
  plan_opts_t o;
  plan_opts_default(&o);
  o.visible = "4,5";
  plan_t *p = NULL;
  assert_int_equal(plan_make(t, &o, &p), 0);
  assert_int_equal(p->nranks, 2);
  assert_string_equal(plan_env_get(&p->ranks[0], "CUDA_VISIBLE_DEVICES"), "4,5");
  assert_string_equal(plan_env_get(&p->ranks[1], "CUDA_VISIBLE_DEVICES"), "4,5");
  assert_string_equal(p->ranks[0].cpus, "48-71,144-167");
  /* Only the NICs nearest to GPUs 4 and 5. */
  assert_string_equal(plan_env_get(&p->ranks[0], "NCCL_IB_HCA"), "=rdmap135s0:1,rdmap136s0:1,rdmap137s0:1,rdmap138s0:1");
  plan_free(p);
  /* Given in another order: local rank i gets the i-th inherited GPU, and the list follows the
   * local ranks, so device LOCAL_RANK is still the rank's GPU. */
  o.visible = "5,4";
  assert_int_equal(plan_make(t, &o, &p), 0);
  assert_int_equal(p->ranks[0].gpu, 5);
  assert_string_equal(plan_env_get(&p->ranks[1], "CUDA_VISIBLE_DEVICES"), "5,4");
  plan_free(p);
  /* One GPU per process, when asked. */
  o.visible = "4,5";
  o.visible_gpus = PLAN_VISIBLE_RANK;
  assert_int_equal(plan_make(t, &o, &p), 0);
  assert_string_equal(plan_env_get(&p->ranks[0], "CUDA_VISIBLE_DEVICES"), "4");
  assert_string_equal(plan_env_get(&p->ranks[1], "CUDA_VISIBLE_DEVICES"), "5");
  plan_free(p);
  o.visible_gpus = PLAN_VISIBLE_NODE;
  o.local_size = 3;
  assert_int_equal(plan_make(t, &o, &p), GPL_ETOPO);
  topo_free(t);
}

/* ---- NICs ---------------------------------------------------------------------------------- */

/* p5en: GPU0 and GPU1 share 4 PIX EFAs: they get different ones; with 2 NICs per rank the pair
 * uses all 4; NCCL_IB_HCA, the same on every rank, lists all 16 EFAs (4 per GPU pair) with ports
 * and no ENA. */
static void test_p5en_spread(void **state) {
  (void)state;
  topo_t *t = load("hwloc-aws-p5en.48xlarge.xml");
  plan_t *p = plan(t, 8, PLAN_BIND_CORES, 0, 1);
  for (int i = 0; i < 8; i += 2) {
    const plan_rank_t *a = &p->ranks[i], *b = &p->ranks[i + 1];
    print_message("GPU%d %s, GPU%d %s\n", i, rank_nic(t, a), i + 1, rank_nic(t, b));
    assert_int_not_equal(a->nic, b->nic);
    assert_int_equal(a->nic_path.cls, PATH_PIX);
    assert_int_equal(b->nic_path.cls, PATH_PIX);
  }
  assert_string_equal(rank_nic(t, &p->ranks[0]), "rdmap85s0");
  assert_string_equal(rank_nic(t, &p->ranks[1]), "rdmap86s0");
  plan_free(p);
  p = plan(t, 8, PLAN_BIND_CORES, 0, 2);
  assert_int_equal(p->ranks[0].nnics, 2);
  const char *all16 = "=rdmap85s0:1,rdmap86s0:1,rdmap87s0:1,rdmap88s0:1,rdmap110s0:1,rdmap111s0:1,rdmap112s0:1,"
                      "rdmap113s0:1,rdmap135s0:1,rdmap136s0:1,rdmap137s0:1,rdmap138s0:1,rdmap160s0:1,rdmap161s0:1,"
                      "rdmap162s0:1,rdmap163s0:1";
  for (int i = 0; i < 8; i++) assert_string_equal(plan_env_get(&p->ranks[i], "NCCL_IB_HCA"), all16);
  plan_free(p);
  topo_free(t);
}

/* Write a copy of an XML file with every name in from[] replaced by to[] (whole quoted values). */
static char *renamed_copy(const char *file, const char *const *from, const char *const *to, int n) {
  char path[1024], *text = NULL;
  size_t len = 0;
  assert_int_equal(safefile_read_text(exp_path(file, path, sizeof path), &text, &len), 0);
  char *out = malloc(len * 2 + 1024);
  size_t o = 0;
  for (size_t i = 0; i < len;) {
    int hit = -1;
    for (int k = 0; k < n && hit < 0; k++) {
      char q[96];
      snprintf(q, sizeof q, "\"%s\"", from[k]);
      if (strncmp(text + i, q, strlen(q)) == 0) hit = k;
    }
    if (hit >= 0) {
      o += (size_t)sprintf(out + o, "\"%s\"", to[hit]);
      i += strlen(from[hit]) + 2;
    } else {
      out[o++] = text[i++];
    }
  }
  char *tmp = strdup("/tmp/gpl-topo-renamed-XXXXXX");
  int fd = mkstemp(tmp);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, out, o), (ssize_t)o);
  close(fd);
  free(out);
  free(text);
  return tmp;
}

/* Property 2: the HCA numbering says nothing; a node that numbers them differently gets the NIC
 * at the same PCI place. The JURECA-DC file with mlx5_N / ibN permuted. */
static void test_renamed_nics(void **state) {
  (void)state;
  const char *from[] = {"mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "ib0", "ib1", "ib2", "ib3"};
  const char *to[] = {"mlx5_13", "mlx5_2", "mlx5_11", "mlx5_0", "ib7", "ib4", "ib5", "ib6"};
  char *tmp = renamed_copy("hwloc-jureca-dc-gpu-jrc0386.xml", from, to, 8);
  topo_t *orig = load("hwloc-jureca-dc-gpu-jrc0386.xml"), *t = NULL;
  assert_int_equal(topo_load(&t, tmp), 0);
  plan_t *po = plan(orig, 4, PLAN_BIND_CORES, 0, 1), *p = plan(t, 4, PLAN_BIND_CORES, 0, 1);
  for (int i = 0; i < 4; i++) {
    const topo_nic_t *a = &orig->nics[po->ranks[i].nic], *b = &t->nics[p->ranks[i].nic];
    print_message("GPU%d: %s %s -> %s %s\n", i, a->pci, a->rdma, b->pci, b->rdma);
    assert_string_equal(a->pci, b->pci);
    int k = 0;
    while (strcmp(from[k], a->rdma) != 0) k++;
    assert_string_equal(b->rdma, to[k]);
    char hca[64];
    snprintf(hca, sizeof hca, "%s:1", to[k]);
    assert_non_null(strstr(plan_env_get(&p->ranks[i], "NCCL_IB_HCA"), hca));
    /* The renamed netdev follows too. */
    assert_string_equal(topo_nic_netdev(b), to[k + 4]);
  }
  plan_free(po);
  plan_free(p);
  topo_free(orig);
  topo_free(t);
  unlink(tmp);
  free(tmp);
}

/* Property 2 on real files: jrc0323 and jrc0386 (same model) number their HCAs differently;
 * every GPU gets the NIC at the same bus id. Same for JUWELS Booster jwb0001 / jwb0004. */
static void test_same_model_different_numbering(void **state) {
  (void)state;
  const char *pairs[][2] = {{"hwloc-jureca-dc-gpu-jrc0323.xml", "hwloc-jureca-dc-gpu-jrc0386.xml"},
                            {"hwloc-juwels-booster-jwb0004.xml", "hwloc-juwels-booster-jwb0001.xml"}};
  for (int k = 0; k < 2; k++) {
    topo_t *a = load(pairs[k][0]), *b = load(pairs[k][1]);
    plan_t *pa = plan(a, 4, PLAN_BIND_CORES, 0, 1), *pb = plan(b, 4, PLAN_BIND_CORES, 0, 1);
    int differ = 0;
    for (int i = 0; i < 4; i++) {
      const topo_nic_t *na = &a->nics[pa->ranks[i].nic], *nb = &b->nics[pb->ranks[i].nic];
      print_message("%s GPU%d: %s %s / %s %s\n", pairs[k][0], i, na->pci, na->rdma, nb->pci, nb->rdma);
      assert_string_equal(na->pci, nb->pci);
      differ += strcmp(na->rdma, nb->rdma) != 0;
    }
    assert_true(differ > 0); /* the point of the pair */
    plan_free(pa);
    plan_free(pb);
    topo_free(a);
    topo_free(b);
  }
}

/* Property 4: no PCIe-local NIC: the NUMA distance matrix decides (XE8640 GPU2 on NUMA 7 ->
 * mlx5_3 on NUMA 5, same socket; MeluXina GPU0 on NUMA 3 -> mlx5_0 on NUMA 1). */
static void test_numa_distance_tiebreak(void **state) {
  (void)state;
  topo_t *t = load("hwloc-dell-xe8640-4xh100-llnl-ipa20.xml");
  assert_non_null(t->dist);
  assert_int_equal(topo_numa_distance(t, 7, 5), 12);
  assert_int_equal(topo_numa_distance(t, 7, 3), 21);
  plan_t *p = plan(t, 4, PLAN_BIND_CORES, 0, 1);
  assert_string_equal(rank_nic(t, &p->ranks[2]), "mlx5_3");
  assert_int_equal(p->ranks[2].nic_path.cls, PATH_SYS);
  assert_int_equal(p->ranks[2].nic_path.numa_dist, 12);
  assert_non_null(strstr(p->ranks[2].why_nic, "NUMA distance 12"));
  plan_free(p);
  topo_free(t);
  t = load("hwloc-meluxina-gpu-mel2001.xml");
  p = plan(t, 4, PLAN_BIND_CORES, 0, 1);
  assert_string_equal(rank_nic(t, &p->ranks[0]), "mlx5_0");
  assert_int_equal(p->ranks[0].nic_path.cls, PATH_SYS);
  assert_string_equal(rank_nic(t, &p->ranks[3]), "mlx5_1");
  plan_free(p);
  topo_free(t);
}

/* Property 5: a NIC below the same host bridge (PHB) is nearer than one that only shares the
 * NUMA node (NODE): p4d GPU0 -> rdmap16s27 (PHB) before rdmap32s27 (NODE); Inria GPU0 PHB. */
static void test_phb_before_node(void **state) {
  (void)state;
  topo_t *t = load("hwloc-aws-p4d.24xlarge.xml");
  plan_t *p = plan(t, 8, PLAN_BIND_CORES, 0, 1);
  const path_entry_t *L = plan_gpu_nics(p, 0);
  assert_string_equal(t->nics[L[0].nic].name, "rdmap16s27");
  assert_int_equal(L[0].path.cls, PATH_PHB);
  int phb = -1, node = -1;
  for (int k = 0; k < t->nnics; k++) {
    if (strcmp(t->nics[L[k].nic].name, "ens32") == 0) phb = k;
    if (strcmp(t->nics[L[k].nic].name, "rdmap32s27") == 0) node = k;
  }
  assert_int_equal(L[phb].path.cls, PATH_PHB);
  assert_int_equal(L[node].path.cls, PATH_NODE);
  assert_true(phb < node);
  /* Property 6: EFA is RDMA-only (no netdev) and still first; ENA is netdev-only. */
  assert_int_equal(t->nics[L[0].nic].nnetdev, 0);
  assert_string_equal(t->nics[L[phb].nic].rdma, "");
  /* dranet: gpu-0 (pci0000:10) is aligned with rdmap16s27, not rdmap160s27. */
  assert_string_equal(rank_nic(t, &p->ranks[0]), "rdmap16s27");
  /* The node's NCCL_IB_HCA: the 4 EFAs, one per PCIe host bridge pair of GPUs, and no ENA. */
  assert_string_equal(plan_env_get(&p->ranks[0], "NCCL_IB_HCA"), "=rdmap16s27:1,rdmap32s27:1,rdmap144s27:1,rdmap160s27:1");
  plan_free(p);
  topo_free(t);
}

/* p6-b200: GPUs 4 and 5 have two EFAs and two ConnectX-7 functions on the same PCIe switch; the
 * ConnectX-7s sit on a x1 link (3.9 GB/s against the EFAs' 63) and carry no fabric traffic: they
 * stay out of NCCL_IB_HCA, which holds the 8 EFAs, the same for all ranks and for half of them. */
static void test_slow_functions_out(void **state) {
  (void)state;
  topo_t *t = load("hwloc-aws-p6-b200.xml");
  for (int n = 8; n >= 4; n -= 4) {
    plan_t *p = plan(t, n, PLAN_BIND_CORES, 0, 1);
    const char *hca = plan_env_get(&p->ranks[0], "NCCL_IB_HCA");
    print_message("%d ranks: %s\n", n, hca);
    assert_null(strstr(hca, "ibp115s0f0"));
    assert_null(strstr(hca, "ibp116s0f0"));
    assert_string_equal(hca, "=rdmap79s0:1,rdmap80s0:1,rdmap96s0:1,rdmap97s0:1,rdmap113s0:1,rdmap114s0:1,"
                             "rdmap132s0:1,rdmap133s0:1");
    for (int i = 0; i < n; i++) assert_string_equal(plan_env_get(&p->ranks[i], "NCCL_IB_HCA"), hca);
    plan_free(p);
  }
  topo_free(t);
}

/* Property 7: a dual-port NIC is two PCI functions with two RDMA devices, both PIX to GPU0. */
static void test_dual_port(void **state) {
  (void)state;
  topo_t *t = load("hwloc-dell-xe8640-4xh100-llnl-ipa20.xml");
  const topo_nic_t *a = topo_nic_by_name(t, "mlx5_0"), *b = topo_nic_by_name(t, "mlx5_1");
  assert_non_null(a);
  assert_non_null(b);
  assert_string_equal(a->pci, "0000:4d:00.0");
  assert_string_equal(b->pci, "0000:4d:00.1");
  assert_ptr_equal(topo_nic_by_name(t, "ibs2f1"), b);
  path_t pa, pb;
  path_gpu_nic(t, &t->gpus[0], a, &pa);
  path_gpu_nic(t, &t->gpus[0], b, &pb);
  assert_int_equal(pa.cls, PATH_PIX);
  assert_int_equal(pb.cls, PATH_PIX);
  /* The file's mlx5_1 port is down, mlx5_0's up: up first. */
  assert_int_equal(a->state, TOPO_LINK_UP);
  assert_int_equal(b->state, TOPO_LINK_DOWN);
  plan_t *p = plan(t, 4, PLAN_BIND_CORES, 0, 1);
  assert_string_equal(rank_nic(t, &p->ranks[0]), "mlx5_0");
  plan_free(p);
  topo_free(t);
}

/* Properties 1 and 3: GPUs found from PCI alone (no OS device), GPU0 not on NUMA 0. */
static void test_pci_only_gpus(void **state) {
  (void)state;
  topo_t *t = load("hwloc-jureca-dc-gpu-jrc0386.xml");
  assert_int_equal(t->ngpus, 4);
  for (int i = 0; i < 4; i++) assert_string_equal(t->gpus[i].osdevs, "");
  assert_int_equal(t->gpus[0].numa[0], 3);
  topo_free(t);
  /* ...while the NVSwitches of the DGX-2H (class 0680) are not GPUs: 16 GPUs, not 28. */
  t = load("hwloc-nvidia-dgx2h.xml");
  assert_int_equal(t->ngpus, 16);
  assert_int_equal(t->nnics, 0);
  topo_free(t);
}

/* Fewer CPUs than ranks (DGX-2H file: 2 CPUs per 8 GPUs): the ranks share them whole. */
static void test_fewer_cpus_than_ranks(void **state) {
  (void)state;
  topo_t *t = load("hwloc-nvidia-dgx2h.xml");
  plan_t *p = plan(t, 16, PLAN_BIND_CORES, 0, 1);
  for (int i = 0; i < 16; i++) assert_string_equal(p->ranks[i].cpus, i < 8 ? "0-1" : "24-25");
  assert_int_equal(p->ranks[0].nic, -1);
  plan_free(p);
  topo_free(t);
}

static void test_env_set(void **state) {
  (void)state;
  plan_rank_t r;
  memset(&r, 0, sizeof r);
  assert_int_equal(plan_env_set(&r, "NCCL_SOCKET_IFNAME", "=eth0", "agreed by all nodes"), 0);
  assert_int_equal(plan_env_set(&r, "NCCL_SOCKET_IFNAME", "=ens5", "again"), 0);
  assert_int_equal(r.nenv, 1);
  assert_string_equal(plan_env_get(&r, "NCCL_SOCKET_IFNAME"), "=ens5");
  for (int i = 1; i < PLAN_ENV_MAX; i++) {
    char name[16];
    snprintf(name, sizeof name, "X%d", i);
    assert_int_equal(plan_env_set(&r, name, "1", NULL), 0);
  }
  assert_int_equal(plan_env_set(&r, "ONE_TOO_MANY", "1", NULL), GPL_ERANGE);
  assert_int_equal(plan_env_set(&r, "", "1", NULL), GPL_EINVAL);
}

int main(void) {
  log_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bind_parse),
      cmocka_unit_test(test_more_ranks_than_gpus),
      cmocka_unit_test(test_cores_split),
      cmocka_unit_test(test_cores_with_smt_numbering),
      cmocka_unit_test(test_no_gpus_spread),
      cmocka_unit_test(test_visible_devices),
      cmocka_unit_test(test_p5en_spread),
      cmocka_unit_test(test_renamed_nics),
      cmocka_unit_test(test_same_model_different_numbering),
      cmocka_unit_test(test_numa_distance_tiebreak),
      cmocka_unit_test(test_phb_before_node),
      cmocka_unit_test(test_slow_functions_out),
      cmocka_unit_test(test_dual_port),
      cmocka_unit_test(test_pci_only_gpus),
      cmocka_unit_test(test_fewer_cpus_than_ranks),
      cmocka_unit_test(test_env_set),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
