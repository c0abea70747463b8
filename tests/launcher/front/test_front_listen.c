/* launcher/front/front_listen.c: the address gpulaunch-run's channel binds, by its rule
 * (docs/security.md): --listen, the hosts named (this host's own names -> loopback; a routed one
 * -> the local address towards it), no host named, hosts from a batch allocation (by its script or
 * not), hosts unknown. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "launcher/front/front_listen.h"

static const char *const g_batch[] = {"SLURM_JOB_ID", "PBS_NODEFILE", "LSB_HOSTS", "LSB_MCPU_HOSTS", "PE_HOSTFILE",
                                      "OMPI_MCA_orte_default_hostfile", "OMPI_MCA_prte_default_hostfile",
                                      "PRTE_MCA_prte_default_hostfile", NULL};

static int setup(void **st) {
  (void)st;
  for (int i = 0; g_batch[i]; i++) unsetenv(g_batch[i]);
  return 0;
}

static int is_any(const front_listen_t *l) { return l->n == 1 && l->addr[0].s_addr == htonl(INADDR_ANY); }
static int is_lo(const front_listen_t *l) { return l->n == 1 && l->addr[0].s_addr == htonl(INADDR_LOOPBACK); }

static void test_given(void **st) {
  (void)st;
  char *av[] = {"mpirun", "-np", "2", NULL};
  front_listen_t l;
  assert_int_equal(front_listen_choose(3, av, NULL, NULL, 0, "any", &l), 0);
  assert_true(is_any(&l));
  assert_non_null(strstr(l.why, "--listen any"));
  assert_int_equal(front_listen_choose(3, av, NULL, NULL, 1, "127.0.0.1", &l), 0); /* wins over unknown hosts */
  assert_true(is_lo(&l));
  assert_int_equal(front_listen_choose(3, av, NULL, NULL, 0, "localhost", &l), 0); /* a name of this host */
  assert_true(is_lo(&l));
  assert_int_equal(front_listen_choose(3, av, NULL, NULL, 0, "192.0.2.7", &l), -1); /* not this host's */
  assert_string_equal(l.why, "--listen 192.0.2.7: not an IPv4 address of this host (or any)");
}

static void test_local(void **st) {
  (void)st;
  front_listen_t l;
  char *plain[] = {"mpirun", "-np", "2", NULL};
  assert_int_equal(front_listen_choose(3, plain, NULL, NULL, 0, NULL, &l), 0); /* every rank here */
  assert_true(is_lo(&l));
  assert_non_null(strstr(l.why, "no host named"));
  char *own[] = {"mpirun", "--host", "localhost:2,127.0.0.1", "-np", "3", NULL};
  assert_int_equal(front_listen_choose(5, own, NULL, NULL, 0, NULL, &l), 0);
  assert_true(is_lo(&l));
  assert_non_null(strstr(l.why, "every host named (2) is this host"));
  char path[] = "/tmp/gpl_listen_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "localhost slots=2\n", 18), 18);
  close(fd);
  assert_int_equal(front_listen_choose(3, plain, path, NULL, 0, NULL, &l), 0); /* an elastic job's hostfile */
  assert_true(is_lo(&l));
  unlink(path);
}

static void test_remote(void **st) {
  (void)st;
  front_listen_t l;
  /* A host elsewhere (TEST-NET-1): the local address the kernel routes to it from, or, with no
   * route on this machine, every address with the reason. Never loopback. */
  char *av[] = {"mpirun", "--host", "localhost,192.0.2.1", NULL};
  assert_int_equal(front_listen_choose(3, av, NULL, NULL, 0, NULL, &l), 0);
  assert_false(is_lo(&l));
  if (is_any(&l)) {
    assert_non_null(strstr(l.why, "no route to host 192.0.2.1"));
  } else {
    assert_non_null(strstr(l.why, "the address this host reaches the 1 other host(s) named from"));
    char a[INET_ADDRSTRLEN], out[512], want[80];
    inet_ntop(AF_INET, &l.addr[0], a, sizeof a);
    front_listen_addresses(&l, 45001, out, sizeof out);
    snprintf(want, sizeof want, "%s:45001", a);
    assert_non_null(strstr(out, want)); /* rank 0 is told the routed one, among the bound */
    for (int i = 0; i < l.n; i++) { /* then this host's other networks: never loopback or link-local */
      uint32_t h = ntohl(l.addr[i].s_addr);
      assert_true(h >> 24 != 127 && h >> 16 != 0xa9fe && h != 0);
    }
    assert_null(strstr(out, "127.0.0.1"));
  }
}

static void test_unknown(void **st) {
  (void)st;
  front_listen_t l;
  char *plain[] = {"mpirun", "-np", "2", NULL};
  assert_int_equal(front_listen_choose(3, plain, NULL, NULL, 1, NULL, &l), 0); /* srun, a discovery script */
  assert_true(is_any(&l));
  assert_non_null(strstr(l.why, "not known before the launch"));
  setenv("PBS_NODEFILE", "/var/spool/pbs/aux/1", 1); /* mpirun takes the allocation's hosts */
  assert_int_equal(front_listen_choose(3, plain, NULL, NULL, 0, NULL, &l), 0);
  assert_true(is_any(&l));
  assert_non_null(strstr(l.why, "from PBS_NODEFILE"));
  unsetenv("PBS_NODEFILE");
  char *rf[] = {"mpirun", "--rankfile", "rf", NULL};
  assert_int_equal(front_listen_choose(3, rf, NULL, NULL, 0, NULL, &l), 0);
  assert_true(is_any(&l));
  char out[256];
  front_listen_addresses(&l, 7, out, sizeof out); /* every address: loopback first */
  assert_int_equal(strncmp(out, "127.0.0.1:7", 11), 0);
  front_listen_t lo = {.addr = {{.s_addr = htonl(INADDR_LOOPBACK)}}, .n = 1};
  front_listen_addresses(&lo, 7, out, sizeof out);
  assert_string_equal(out, "127.0.0.1:7");
}

/* No host named, a batch allocation: the hosts its script lists (front_hosts_slurm_script under
 * Slurm), as if named; a script that fails or lists none leaves every address, saying why. */
static void test_allocation(void **st) {
  (void)st;
  front_listen_t l;
  char *plain[] = {"mpirun", "-np", "2", NULL};
  assert_int_equal(front_listen_choose(3, plain, NULL, "echo localhost:2; echo 127.0.0.1:2", 0, NULL, &l), 0);
  assert_true(is_lo(&l));
  assert_non_null(strstr(l.why, "every host in the allocation (2) is this host"));
  assert_int_equal(front_listen_choose(3, plain, NULL, "echo localhost:1; echo 192.0.2.1:1", 0, NULL, &l), 0);
  assert_false(is_lo(&l));
  if (!is_any(&l)) assert_non_null(strstr(l.why, "the 1 other host(s) in the allocation from"));
  assert_int_equal(front_listen_choose(3, plain, NULL, "echo 'no SLURM_JOB_NODELIST' >&2; exit 1", 0, NULL, &l), 0);
  assert_true(is_any(&l));
  assert_non_null(strstr(l.why, "the allocation's hosts could not be listed"));
  assert_int_equal(front_listen_choose(3, plain, NULL, "true", 0, NULL, &l), 0);
  assert_true(is_any(&l));
  char *named[] = {"mpirun", "--host", "localhost", NULL}; /* hosts named win over the allocation */
  assert_int_equal(front_listen_choose(3, named, NULL, "exit 1", 0, NULL, &l), 0);
  assert_true(is_lo(&l));
  assert_int_equal(front_listen_choose(3, plain, NULL, "echo localhost", 1, NULL, &l), 0); /* a discovery script */
  assert_true(is_any(&l));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_allocation),
      cmocka_unit_test(test_given),
      cmocka_unit_test(test_local),
      cmocka_unit_test(test_remote),
      cmocka_unit_test(test_unknown),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
