/* NVML through dlopen, with a stand-in libnvidia-ml.so.1: GPUs only NVML knows are added; in a
 * "container" (NVML sees fewer GPUs than the PCI bus) only NVML's are used; a failing NVML is quiet. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/log.h"
#include "gpulaunch/error.h"
#include "topology/nvmlx.h"
#include "topology/plan.h"
#include "topology/topo.h"

static void test_gpus_only_nvml_knows(void **state) {
  (void)state;
  /* This machine has no NVIDIA PCI device: both GPUs come from NVML, in bus order. */
  setenv("FAKE_NVML_GPUS", "00000000:00:1f.0|Fake B200|GPU-2222;00000000:00:1e.0|Fake H200|GPU-1111", 1);
  nvmlx_gpu_t *v = NULL;
  assert_int_equal(nvmlx_list(&v), 2);
  assert_string_equal(v[0].pci, "0000:00:1f.0");
  assert_string_equal(v[1].name, "Fake H200");
  free(v);
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, NULL), 0);
  assert_true(t->nvml);
  assert_int_equal(t->ngpus, 2);
  assert_string_equal(t->gpus[0].pci, "0000:00:1e.0");
  assert_string_equal(t->gpus[0].model, "Fake H200");
  assert_string_equal(t->gpus[0].uuid, "GPU-1111");
  assert_int_equal(t->gpus[0].nvml_index, 1);
  assert_null(t->gpus[0].obj);
  assert_true(t->gpus[0].cpus && t->gpus[0].cpus[0]);
  assert_true(t->gpus[0].nnuma >= 1);
  plan_t *p = NULL;
  assert_int_equal(plan_make(t, NULL, &p), 0);
  assert_int_equal(p->nranks, 2);
  /* Both GPUs, in bus order: the program sees them all (device LOCAL_RANK = its GPU). */
  assert_null(plan_env_get(&p->ranks[1], "CUDA_VISIBLE_DEVICES"));
  assert_string_equal(plan_env_get(&p->ranks[1], "CUDA_DEVICE_ORDER"), "PCI_BUS_ID");
  /* Placed by NUMA alone: NODE or SYS, never a PCI class. */
  for (int i = 0; i < t->nnics; i++) assert_true(plan_gpu_nics(p, 0)[i].path.cls >= PATH_NODE);
  plan_free(p);
  topo_free(t);
}

static void test_container_sees_fewer(void **state) {
  (void)state;
  /* This machine "is" a JURECA-DC node (hwloc reads the XML as this system), and the container
   * was given GPUs 1 and 3: CUDA numbers them 0 and 1, with their own locality. */
  char path[1024];
  const char *dir = getenv("GPULAUNCH_TOPOLOGY_DIR");
  snprintf(path, sizeof path, "%s/hwloc-jureca-dc-gpu-jrc0386.xml", dir ? dir : "tests/data/topologies");
  setenv("HWLOC_XMLFILE", path, 1);
  setenv("HWLOC_THISSYSTEM", "1", 1);
  setenv("FAKE_NVML_GPUS", "00000000:C4:00.0|NVIDIA A100-SXM4-40GB|GPU-c4;00000000:44:00.0|NVIDIA A100-SXM4-40GB|GPU-44", 1);
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, NULL), 0);
  unsetenv("HWLOC_XMLFILE");
  unsetenv("HWLOC_THISSYSTEM");
  assert_true(t->live);
  assert_int_equal(t->ngpus, 2);
  assert_string_equal(t->gpus[0].pci, "0000:44:00.0");
  assert_int_equal(t->gpus[0].numa[0], 1);
  assert_string_equal(t->gpus[1].pci, "0000:c4:00.0");
  assert_string_equal(t->gpus[1].cpus, "80-95,208-223");
  assert_string_equal(t->gpus[1].model, "NVIDIA A100-SXM4-40GB");
  plan_opts_t o;
  plan_opts_default(&o);
  o.local_size = 3;
  plan_t *p = NULL;
  assert_int_equal(plan_make(t, &o, &p), GPL_ETOPO);
  o.local_size = 2;
  assert_int_equal(plan_make(t, &o, &p), 0);
  assert_null(plan_env_get(&p->ranks[1], "CUDA_VISIBLE_DEVICES"));
  /* The NICs nearest to the container's two GPUs (and no other), the same on both ranks. */
  assert_string_equal(plan_env_get(&p->ranks[0], "NCCL_IB_HCA"), "=mlx5_0:1,mlx5_2:1");
  assert_string_equal(plan_env_get(&p->ranks[1], "NCCL_IB_HCA"), "=mlx5_0:1,mlx5_2:1");
  plan_free(p);
  topo_free(t);
}

static void test_nvml_failing_is_quiet(void **state) {
  (void)state;
  setenv("FAKE_NVML_FAIL", "1", 1);
  nvmlx_gpu_t *v = (nvmlx_gpu_t *)1;
  assert_int_equal(nvmlx_list(&v), 0);
  assert_null(v);
  topo_t *t = NULL;
  assert_int_equal(topo_load(&t, NULL), 0);
  assert_false(t->nvml);
  assert_int_equal(t->ngpus, 0);
  topo_free(t);
  unsetenv("FAKE_NVML_FAIL");
}

int main(void) {
  log_init();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gpus_only_nvml_knows),
      cmocka_unit_test(test_container_sees_fewer),
      cmocka_unit_test(test_nvml_failing_is_quiet),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
