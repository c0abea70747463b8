/* accept's EFA check (accept_efa.c) on made-up machines under a root folder: an EFA device (an
 * InfiniBand device bound to the efa driver) and none (mlx5 only); NCCL's network plugin missing
 * (FAIL, the fix says to install aws-ofi-nccl), installed off the loader's path (FAIL naming the
 * folder to add), on LD_LIBRARY_PATH, in an /etc/ld.so.conf.d folder, and NCCL_NET_PLUGIN's name. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "launcher/accept/accept.h"

static char g_root[64];

static void mkpath(const char *rel) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "mkdir -p '%s/%s'", g_root, rel);
  assert_int_equal(system(cmd), 0);
}

static void touch(const char *rel) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", g_root, rel);
  FILE *f = fopen(p, "w");
  assert_non_null(f);
  fclose(f);
}

/* An InfiniBand device whose device/driver links to drivers/DRIVER, as sysfs has it. */
static void ib_device(const char *name, const char *driver) {
  char rel[256], link[512], target[512];
  snprintf(rel, sizeof rel, "sys/bus/pci/drivers/%s", driver);
  mkpath(rel);
  snprintf(rel, sizeof rel, "sys/class/infiniband/%s/device", name);
  mkpath(rel);
  snprintf(link, sizeof link, "%s/%s/driver", g_root, rel);
  snprintf(target, sizeof target, "../../../../bus/pci/drivers/%s", driver);
  assert_int_equal(symlink(target, link), 0);
}

static accept_check_t one(const char *ld_path, const char *plugin) {
  accept_list_t l = {0};
  assert_int_equal(accept_efa_check(g_root, ld_path, plugin, "h1", 1, &l), 0);
  assert_int_equal(l.n, 1);
  accept_check_t c = l.v[0];
  accept_list_free(&l);
  assert_string_equal(c.name, "efa_plugin");
  assert_string_equal(c.host, "h1");
  return c;
}

static int setup(void **state) {
  (void)state;
  snprintf(g_root, sizeof g_root, "/tmp/accept_efa.XXXXXX");
  assert_non_null(mkdtemp(g_root));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
  return system(cmd);
}

static void test_no_efa(void **state) {
  (void)state;
  accept_check_t c = one(NULL, NULL); /* no sysfs at all */
  assert_int_equal(c.status, ACCEPT_SKIP);
  ib_device("mlx5_0", "mlx5_core");
  c = one(NULL, NULL);
  assert_int_equal(c.status, ACCEPT_SKIP);
  assert_non_null(strstr(c.detail, "no EFA device"));
}

static void test_efa(void **state) {
  (void)state;
  ib_device("rdmap16s27", "efa");
  ib_device("rdmap32s27", "efa");
  char names[64];
  assert_int_equal(accept_efa_devices(g_root, names, sizeof names), 2);
  /* missing */
  accept_check_t c = one("/nowhere", NULL);
  assert_int_equal(c.status, ACCEPT_FAIL);
  assert_non_null(strstr(c.detail, "2 EFA device(s)"));
  assert_non_null(strstr(c.detail, "install aws-ofi-nccl"));
  assert_non_null(strstr(c.detail, "libnccl-net.so or libnccl-net-ofi.so"));
  /* installed where the EFA installer puts it, off the path */
  mkpath("opt/amazon/ofi-nccl/lib");
  touch("opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so");
  c = one("/nowhere", NULL);
  assert_int_equal(c.status, ACCEPT_FAIL);
  assert_non_null(strstr(c.detail, "add /opt/amazon/ofi-nccl/lib to LD_LIBRARY_PATH"));
  /* on LD_LIBRARY_PATH */
  c = one("/nowhere:/opt/amazon/ofi-nccl/lib", NULL);
  assert_int_equal(c.status, ACCEPT_PASS);
  assert_string_equal(c.value_text, "/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so");
  /* in a folder of /etc/ld.so.conf.d */
  mkpath("etc/ld.so.conf.d");
  char p[256];
  snprintf(p, sizeof p, "%s/etc/ld.so.conf.d/efa.conf", g_root);
  FILE *f = fopen(p, "w");
  fprintf(f, "# aws-ofi-nccl\n  /opt/amazon/ofi-nccl/lib  \n");
  fclose(f);
  c = one(NULL, NULL);
  assert_int_equal(c.status, ACCEPT_PASS);
  /* NCCL_NET_PLUGIN names another plugin: that one is looked for */
  c = one(NULL, "aws");
  assert_int_equal(c.status, ACCEPT_FAIL);
  assert_non_null(strstr(c.detail, "libnccl-net-aws.so"));
  c = one(NULL, "ofi");
  assert_int_equal(c.status, ACCEPT_PASS);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_no_efa, setup, teardown),
      cmocka_unit_test_setup_teardown(test_efa, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
