/* Open MPI's TCP interfaces (topology/mpinet.c): the choice from made-up hosts shaped like a Docker GPU cloud, the local rule, and the user's setting found in the environment and MCA files. */
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

#include "common/util.h"
#include "gpulaunch/error.h"
#include "topology/mpinet.h"
#include "topology/net.h"

static iface_t mk(const char *name, iface_kind_t kind, const char *master, const char *addrs) {
  iface_t f;
  memset(&f, 0, sizeof f);
  util_strlcpy(f.name, name, sizeof f.name);
  f.kind = kind;
  f.up = f.running = 1;
  f.loopback = kind == IFACE_LOOPBACK;
  f.is_virtual = kind != IFACE_PHYSICAL;
  f.speed_mbps = 10000;
  util_strlcpy(f.master, master ? master : "", sizeof f.master);
  char buf[256], *save = NULL;
  util_strlcpy(buf, addrs ? addrs : "", sizeof buf);
  for (char *w = strtok_r(buf, ",", &save); w; w = strtok_r(NULL, ",", &save))
    assert_int_equal(iface_addr_parse(w, &f.addrs[f.naddrs++]), 0);
  return f;
}

#define NH 4
static net_inv_t g_inv[NH];
static iface_t g_if[NH][10];

/* The hosts: docker0 172.17.0.1/16 with a veth port, usb0 169.254.10.x/16, eno1 on a
 * management subnet pairs of hosts share, the fabric ens5/eth1 10.77.0.x/24. */
static void docker_hosts(int n) {
  memset(g_inv, 0, sizeof g_inv);
  for (int i = 0; i < n; i++) {
    char a[64];
    net_inv_t *inv = &g_inv[i];
    inv->node = i;
    inv->v = g_if[i];
    snprintf(inv->host, sizeof inv->host, "h%d", i);
    inv->v[inv->n++] = mk("lo", IFACE_LOOPBACK, NULL, "127.0.0.1/8");
    inv->v[inv->n++] = mk("docker0", IFACE_BRIDGE, NULL, "172.17.0.1/16");
    inv->v[inv->n++] = mk("vethdk0", IFACE_VETH, "docker0", "fe80::1/64");
    snprintf(a, sizeof a, "169.254.10.%d/16", i + 1);
    inv->v[inv->n++] = mk("usb0", IFACE_PHYSICAL, NULL, a);
    snprintf(a, sizeof a, "10.78.%d.%d/24", i / 2, i + 1);
    inv->v[inv->n++] = mk("eno1", IFACE_PHYSICAL, NULL, a);
    snprintf(a, sizeof a, "10.77.0.%d/24", i + 1);
    inv->v[inv->n++] = mk(i % 2 ? "eth1" : "ens5", IFACE_PHYSICAL, NULL, a);
  }
}

static void test_job_docker_hosts(void **state) {
  (void)state;
  docker_hosts(NH);
  for (int i = 0; i < NH; i++) {
    mpinet_choice_t c;
    assert_int_equal(mpinet_from_job(g_inv, NH, i, &c), 0);
    print_message("h%d: %s (%s: %s)\n", i, c.value, c.ifnames, c.why);
    assert_int_equal(c.how, MPINET_JOB);
    assert_string_equal(c.value, "10.77.0.0/24");
    assert_string_equal(c.ifnames, i % 2 ? "eth1" : "ens5");
    assert_non_null(strstr(c.why, "docker0 172.17.0.1 (bridge"));
    assert_non_null(strstr(c.why, "the same address on other hosts"));
    assert_non_null(strstr(c.why, "usb0 169.254.10."));
    assert_non_null(strstr(c.why, i < 2 ? "(10.78.0.0/24 not on h2,h3)" : "(10.78.1.0/24 not on h0,h1)"));
  }
  /* Two hosts share the management subnet too: it reaches every host, but an onboard eno* port
   * goes only where nothing else is as good (NCCL's rule). */
  mpinet_choice_t c;
  assert_int_equal(mpinet_from_job(g_inv, 2, 0, &c), 0);
  assert_string_equal(c.value, "10.77.0.0/24");
  assert_non_null(strstr(c.why, "eno1 10.78.0.1 (an onboard port: the management network)"));
  /* Hosts whose best interfaces differ (h1 reads its fabric slower): every host still takes
   * every subnet some host's rule picked, so the transports share a network. */
  docker_hosts(NH);
  for (int i = 0; i < NH; i++) {
    char a[64];
    snprintf(a, sizeof a, "10.60.0.%d/24", i + 1);
    g_if[i][g_inv[i].n] = mk("ib0", IFACE_PHYSICAL, NULL, a);
    g_inv[i].n++;
  }
  for (int i = 0; i < NH; i++) g_if[i][6].speed_mbps = i == 1 ? 100000 : 1000; /* h1 alone: ib0 the fastest */
  for (int i = 0; i < NH; i++) {
    assert_int_equal(mpinet_from_job(g_inv, NH, i, &c), 0);
    assert_string_equal(c.value, "10.77.0.0/24,10.60.0.0/24");
  }
  /* One host: nothing to choose (shared memory). */
  assert_int_equal(mpinet_from_job(g_inv, 1, 0, &c), 0);
  assert_int_equal(c.how, MPINET_NONE);
  assert_string_equal(c.value, "");
  /* No subnet on every host (each fabric in a subnet of its own): GPL_ENET, said. */
  for (int i = 0; i < NH; i++) {
    char a[64];
    snprintf(a, sizeof a, "10.90.%d.1/24", i);
    g_if[i][5] = mk("ens5", IFACE_PHYSICAL, NULL, a);
    g_inv[i].n = 6; /* no ib0 */
  }
  assert_int_equal(mpinet_from_job(g_inv, NH, 0, &c), GPL_ENET);
  assert_int_equal(c.how, MPINET_NONE);
  assert_non_null(strstr(c.why, "no interface shares a subnet with all 3 other hosts"));
}

static void test_local_rule(void **state) {
  (void)state;
  docker_hosts(NH);
  iface_list_t l = {.n = g_inv[2].n, .v = g_inv[2].v};
  mpinet_choice_t c;
  assert_int_equal(mpinet_from_local(&l, &c), 0);
  print_message("local: %s (%s: %s)\n", c.value, c.ifnames, c.why);
  assert_int_equal(c.how, MPINET_LOCAL);
  /* This host alone cannot know eno1's subnet is not on every host: only the plumbing goes. */
  assert_string_equal(c.value, "10.78.1.0/24,10.77.0.0/24");
  assert_string_equal(c.ifnames, "eno1,ens5");
  assert_non_null(strstr(c.why, "docker0 172.17.0.1 (bridge"));
  assert_non_null(strstr(c.why, "usb0 169.254.10.3 (only link-local"));
  assert_true(mpinet_selects(c.value, &g_inv[2].v[5]));
  assert_false(mpinet_selects(c.value, &g_inv[2].v[1]));
  assert_true(mpinet_selects("lo,docker0", &g_inv[2].v[1]));
  /* NCCL's interface against MPI's: the same where the subnet selects it; else why. */
  char why[512];
  assert_int_equal(mpinet_compare(&c, &g_inv[2].v[5], 0, why, sizeof why), 1);
  assert_non_null(strstr(why, "use the same interface, ens5"));
  mpinet_choice_t job;
  assert_int_equal(mpinet_from_job(g_inv, NH, 2, &job), 0);
  assert_int_equal(mpinet_compare(&job, &g_inv[2].v[4], 1, why, sizeof why), 0);
  assert_string_equal(why, "MPI's TCP transport (btl_tcp_if_include=10.77.0.0/24) and NCCL (eno1) differ: NCCL_SOCKET_IFNAME is yours");
  /* Nothing usable: none. */
  iface_list_t only = {.n = 4, .v = g_inv[2].v};
  assert_int_equal(mpinet_from_local(&only, &c), GPL_ENET);
  assert_int_equal(c.how, MPINET_NONE);
}

static void test_user_setting(void **state) {
  (void)state;
  char src[256], dir[] = "/tmp/mpinet_test.XXXXXX", f[512], f2[512];
  assert_non_null(mkdtemp(dir));
  setenv("HOME", dir, 1);
  snprintf(f, sizeof f, "%s/sys.conf", dir);
  unsetenv("OMPI_MCA_btl_tcp_if_include");
  unsetenv("OMPI_MCA_btl_tcp_if_exclude");
  unsetenv("OMPI_MCA_mca_base_param_files");
  unsetenv("OMPI_MCA_mca_base_param_file_prefix");
  assert_int_equal(mpinet_user(f, src, sizeof src), 0);
  /* The environment (mpirun --mca passes it so). */
  setenv("OMPI_MCA_btl_tcp_if_exclude", "docker0,lo", 1);
  assert_int_equal(mpinet_user(f, src, sizeof src), 1);
  assert_string_equal(src, "OMPI_MCA_btl_tcp_if_exclude=docker0,lo");
  unsetenv("OMPI_MCA_btl_tcp_if_exclude");
  /* The system file, a comment does not count. */
  FILE *fp = fopen(f, "w");
  fputs("# btl_tcp_if_include = eth0\nbtl_base_warn_component_unused=0\n", fp);
  fclose(fp);
  assert_int_equal(mpinet_user(f, src, sizeof src), 0);
  fp = fopen(f, "a");
  fputs("  btl_tcp_if_include = 10.1.0.0/16\n", fp);
  fclose(fp);
  assert_int_equal(mpinet_user(f, src, sizeof src), 1);
  assert_non_null(strstr(src, "sys.conf: btl_tcp_if_include = 10.1.0.0/16"));
  /* ~/.openmpi/mca-params.conf */
  unlink(f);
  snprintf(f2, sizeof f2, "%s/.openmpi", dir);
  assert_int_equal(mkdir(f2, 0700), 0);
  snprintf(f2, sizeof f2, "%s/.openmpi/mca-params.conf", dir);
  fp = fopen(f2, "w");
  fputs("btl_tcp_if_exclude=docker0\n", fp);
  fclose(fp);
  assert_int_equal(mpinet_user(f, src, sizeof src), 1);
  assert_non_null(strstr(src, "mca-params.conf: btl_tcp_if_exclude=docker0"));
  /* OMPI_MCA_mca_base_param_files replaces the default files. */
  setenv("OMPI_MCA_mca_base_param_files", f, 1);
  assert_int_equal(mpinet_user(f, src, sizeof src), 0);
  /* An AMCA set (mpirun -am NAME) found by its path. */
  setenv("OMPI_MCA_mca_base_param_file_prefix", f2, 1);
  assert_int_equal(mpinet_user(f, src, sizeof src), 1);
  unsetenv("OMPI_MCA_mca_base_param_file_prefix");
  unsetenv("OMPI_MCA_mca_base_param_files");
  /* mpirun's OOB: its own words. */
  char *av[] = {"mpirun", "-np", "2", "--mca", "oob_tcp_if_include", "10.0.0.0/8", "gpulaunch", NULL};
  assert_int_equal(mpinet_user_oob(7, av, src, sizeof src), 1);
  assert_string_equal(src, "--mca oob_tcp_if_include 10.0.0.0/8");
  char *av2[] = {"mpirun", "-np", "2", "--mca", "btl_tcp_if_include", "10.0.0.0/8", "gpulaunch", NULL};
  assert_int_equal(mpinet_user_oob(7, av2, src, sizeof src), 0);
  setenv("PRTE_MCA_oob_tcp_if_include", "eth0", 1);
  assert_int_equal(mpinet_user_oob(7, av2, src, sizeof src), 1);
  unsetenv("PRTE_MCA_oob_tcp_if_include");
  unlink(f2);
  snprintf(f2, sizeof f2, "%s/.openmpi", dir);
  rmdir(f2);
  rmdir(dir);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_job_docker_hosts),
      cmocka_unit_test(test_local_rule),
      cmocka_unit_test(test_user_setting),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
