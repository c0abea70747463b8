/* common/mpix.c and mpix_tree.c under a real mpirun (4 ranks as two pretend nodes of 2, so the
 * exchanges run over the two-level tree): allgather, broadcast (from rank 0 only), strings,
 * a sum, a barrier, a group of some ranks, a polled gather with the root's verdict, the reach
 * check and a bounded communicator duplicate; every rank checks what it got. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <mpi.h>
#include <stdio.h>
#include <string.h>

#include "common/mpix.h"
#include "gpulaunch/error.h"

#define TMO 30.0

static int g_rank, g_size;

static void test_collectives(void **st) {
  (void)st;
  int all[64];
  int mine = 100 + g_rank;
  assert_int_equal(mpix_allgather(&mine, (int)sizeof mine, all, MPI_COMM_WORLD, TMO, "test allgather"), GPL_OK);
  for (int r = 0; r < g_size; r++) assert_int_equal(all[r], 100 + r);
  int msg = g_rank == 0 ? 77 : -1;
  assert_int_equal(mpix_bcast(&msg, (int)sizeof msg, 0, MPI_COMM_WORLD, TMO, "test bcast"), GPL_OK);
  assert_int_equal(msg, 77);
  /* the tree's root is rank 0: another root is refused on every rank, before any message */
  assert_int_equal(mpix_bcast(&msg, (int)sizeof msg, 1, MPI_COMM_WORLD, TMO, "test bcast"), GPL_EINVAL);
  char name[32], **names = NULL;
  snprintf(name, sizeof name, "rank-%d%s", g_rank, g_rank % 2 ? "-odd" : "");
  assert_int_equal(mpix_allgather_str(name, &names, MPI_COMM_WORLD, TMO, "test strings"), GPL_OK);
  for (int r = 0; r < g_size; r++) {
    snprintf(name, sizeof name, "rank-%d%s", r, r % 2 ? "-odd" : "");
    assert_string_equal(names[r], name);
  }
  mpix_free_strs(names, g_size);
  double sum = g_rank + 0.5;
  assert_int_equal(mpix_allreduce_double(&sum, MPI_SUM, MPI_COMM_WORLD, TMO, "test sum"), GPL_OK);
  assert_true(sum == g_size * (g_size - 1) / 2.0 + 0.5 * g_size);
  assert_int_equal(mpix_barrier(MPI_COMM_WORLD, TMO, "test barrier"), GPL_OK);
}

/* The odd ranks only, as a group with a tag of its own. */
static void test_group(void **st) {
  (void)st;
  int odd[32], n = 0;
  for (int r = 1; r < g_size; r += 2) odd[n++] = r;
  mpix_group_t g = {.comm = MPI_COMM_WORLD, .n = n, .me = g_rank % 2 ? g_rank / 2 : -1, .ranks = odd, .tag = 16};
  if (g.me >= 0) {
    int all[32], mine = g_rank * 10;
    assert_int_equal(mpix_gallgather(&g, &mine, (int)sizeof mine, all, TMO, "test group"), GPL_OK);
    for (int i = 0; i < n; i++) assert_int_equal(all[i], odd[i] * 10);
  }
  assert_int_equal(mpix_barrier(MPI_COMM_WORLD, TMO, "test barrier after group"), GPL_OK);
}

/* The root decides the largest value; every rank gets that verdict. */
static int decide_max(void *arg, const void *table, int n) {
  (void)arg;
  const int *v = table;
  int m = v[0];
  for (int i = 1; i < n; i++) m = v[i] > m ? v[i] : m;
  return m;
}

static void test_polled_gather(void **st) {
  (void)st;
  mpix_group_t g;
  assert_int_equal(mpix_group_of(MPI_COMM_WORLD, &g), GPL_OK);
  mpix_tx_t *t = NULL;
  int mine = (g_rank * 7) % 5;
  assert_int_equal(mpix_tx_start(&t, &g, MPIX_TX_GATHER, &mine, (int)sizeof mine, TMO, "test gather"), GPL_OK);
  mpix_tx_set_decide(t, decide_max, NULL);
  assert_int_equal(mpix_tx_wait(t), GPL_OK);
  int table[64], want = 0;
  for (int r = 0; r < g_size; r++) want = (r * 7) % 5 > want ? (r * 7) % 5 : want;
  assert_int_equal(mpix_tx_result(t, g_rank == 0 ? table : NULL), want);
  if (g_rank == 0)
    for (int r = 0; r < g_size; r++) assert_int_equal(table[r], (r * 7) % 5);
  mpix_tx_free(t);
}

static void test_reach_and_dup(void **st) {
  (void)st;
  int probers[64];
  for (int r = 0; r < g_size; r++) probers[r] = r;
  assert_int_equal(mpix_reach_check(MPI_COMM_WORLD, probers, g_size, TMO, "test reach"), GPL_OK);
  MPI_Comm dup = MPI_COMM_NULL;
  assert_int_equal(mpix_comm_dup(MPI_COMM_WORLD, &dup, TMO, "test dup"), GPL_OK);
  int r, s;
  assert_int_equal(mpix_comm_size(dup, &r, &s), GPL_OK);
  assert_int_equal(r, g_rank);
  assert_int_equal(s, g_size);
  MPI_Comm_free(&dup);
  char buf[64];
  assert_string_equal(mpix_rank_name(1, buf, sizeof buf), "rank 1 (host hostB)");
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  if (g_size > 32) return 1;
  /* Two pretend nodes: the first half of the ranks and the second. */
  static int node_of[32], leader_of_node[2];
  static const char *hosts[32];
  int half = (g_size + 1) / 2;
  for (int r = 0; r < g_size; r++) {
    node_of[r] = r < half ? 0 : 1;
    hosts[r] = r % 2 ? "hostB" : "hostA";
  }
  leader_of_node[0] = 0;
  leader_of_node[1] = half;
  mpix_set_hosts(hosts, g_size);
  if (mpix_set_nodes(node_of, leader_of_node, g_size > 1 ? 2 : 1, g_size) != GPL_OK) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collectives),
      cmocka_unit_test(test_group),
      cmocka_unit_test(test_polled_gather),
      cmocka_unit_test(test_reach_and_dup),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  mpix_set_nodes(NULL, NULL, 0, 0);
  mpix_set_hosts(NULL, 0);
  MPI_Finalize();
  return rc;
}
