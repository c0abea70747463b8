/* diag verdict tests: driver vs runtime CUDA versions, the no-GPU wording, sysfs PCI counting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "gpulaunch/error.h"
#include "launcher/ops/diag.h"

static void test_cuda_versions(void **state) {
  (void)state;
  diag_verdicts_t v = {0};
  diag_verdict_cuda(&v, 12020, 13000, "535.104.05");
  assert_int_equal(v.n, 1);
  assert_int_equal(v.level[0], DIAG_ERROR);
  assert_non_null(strstr(v.text[0], "driver older than the runtime needs: the NVIDIA driver "
                                    "535.104.05 supports CUDA 12.2, but the CUDA runtime is 13.0"));
  memset(&v, 0, sizeof v);
  diag_verdict_cuda(&v, 12020, 12040, "535.104.05");
  assert_int_equal(v.n, 1);
  assert_int_equal(v.level[0], DIAG_WARN);
  assert_non_null(strstr(v.text[0], "minor version compatibility"));
  memset(&v, 0, sizeof v);
  diag_verdict_cuda(&v, 13000, 12040, "580.65");
  diag_verdict_cuda(&v, 12040, 12040, "550.54");
  diag_verdict_cuda(&v, 0, 13000, NULL); /* no driver: the GPU verdict speaks */
  assert_int_equal(v.n, 0);
  char b[16];
  assert_string_equal(diag_cuda_version_str(12040, b, sizeof b), "12.4");
  assert_string_equal(diag_cuda_version_str(0, b, sizeof b), "none");
}

static void test_gpu_verdicts(void **state) {
  (void)state;
  diag_verdicts_t v = {0};
  diag_verdict_gpu(&v, 0, 0, "no NVIDIA driver (libnvidia-ml.so.1 not found: x)");
  assert_int_equal(v.n, 1);
  assert_string_equal(v.text[0], "no GPU: no NVIDIA PCI device found / no NVIDIA driver "
                                 "(libnvidia-ml.so.1 not found: x)");
  diag_verdict_gpu(&v, 8, 0, "no NVIDIA driver");
  assert_non_null(strstr(v.text[1], "8 NVIDIA GPUs on the PCI bus, but no NVIDIA driver"));
  diag_verdict_gpu(&v, 8, 1, NULL);
  assert_int_equal(v.n, 2);
  assert_int_equal(diag_verdict_worst(&v), DIAG_ERROR);
}

static void put(const char *root, const char *dev, const char *file, const char *txt) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", root, dev);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/%s/%s", root, dev, file);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fputs(txt, f);
  fclose(f);
}

static void test_count_nvidia_pci(void **state) {
  (void)state;
  char root[] = "/tmp/gpl-ops-pci-XXXXXX";
  assert_non_null(mkdtemp(root));
  put(root, "0000:3b:00.0", "vendor", "0x10de\n");
  put(root, "0000:3b:00.0", "class", "0x030200\n"); /* 3D controller: a GPU */
  put(root, "0000:5e:00.0", "vendor", "0x10de\n");
  put(root, "0000:5e:00.0", "class", "0x068000\n"); /* NVSwitch bridge: not a GPU */
  put(root, "0000:17:00.0", "vendor", "0x15b3\n");
  put(root, "0000:17:00.0", "class", "0x020700\n"); /* Mellanox NIC */
  assert_int_equal(diag_count_nvidia_pci(root), 1);
  assert_int_equal(diag_count_nvidia_pci("/nonexistent-sysfs"), -1);
  /* this machine: no NVIDIA GPU */
  assert_int_equal(diag_count_nvidia_pci(NULL), 0);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

static void test_run_timeout_and_missing(void **state) {
  (void)state;
  char *out = NULL;
  int st;
  char *sleeper[] = {"sh", "-c", "echo started; sleep 30", NULL};
  assert_int_equal(diag_run(sleeper, 0.5, &out, &st), GPL_ETIMEDOUT);
  assert_non_null(strstr(out, "started"));
  free(out);
  char *missing[] = {"no-such-tool-gpl", NULL};
  assert_int_equal(diag_run(missing, 1, &out, &st), GPL_ENOENT);
  char *echo[] = {"sh", "-c", "echo out; echo err >&2; exit 3", NULL};
  assert_int_equal(diag_run(echo, 5, &out, &st), 0);
  assert_int_equal(st, 3);
  assert_non_null(strstr(out, "out"));
  assert_non_null(strstr(out, "err"));
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_cuda_versions),
      cmocka_unit_test(test_gpu_verdicts),
      cmocka_unit_test(test_count_nvidia_pci),
      cmocka_unit_test(test_run_timeout_and_missing),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
