/* launcher/live/livetree.c, the holes closed whatever the key (issue 35): a LOST frame may name
 * only ranks in its sender's subtree; frames with another job's token are not believed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "launcher/live/livetree.h"

/* 3 nodes of 2 ranks: rank 0 leads node 0 (child 1), leaders 2 and 4 are its children. */
static const int g_node_of[6] = {0, 0, 1, 1, 2, 2};
static const int g_leader[3] = {0, 2, 4};
static int g_lost[16], g_nlost, g_calls;

static void io_send(void *arg, int to, const void *frame, size_t len) { (void)arg, (void)to, (void)frame, (void)len; }
static void io_lost(void *arg, const int *ranks, int n, live_why_t why, double silent) {
  (void)arg, (void)why, (void)silent;
  g_calls++;
  for (int i = 0; i < n && g_nlost < 16; i++) g_lost[g_nlost++] = ranks[i];
}

static size_t lost_frame(unsigned char *buf, int from, uint64_t token, const int *ranks, int n) {
  lt_hdr_t h = {LT_MAGIC, LT_LOST, (uint16_t)n, from, LIVE_SILENT, token};
  memcpy(buf, &h, sizeof h);
  for (int i = 0; i < n; i++) {
    lt_ent_t e = {ranks[i], 5000};
    memcpy(buf + sizeof h + (size_t)i * sizeof e, &e, sizeof e);
  }
  return sizeof h + (size_t)n * sizeof(lt_ent_t);
}

static lt_t *rank0(tree_shape_t *shape) {
  *shape = (tree_shape_t){.size = 6, .nnodes = 3, .fanout = 2, .node_of = g_node_of, .leader_of_node = g_leader};
  assert_int_equal(tree_shape_index(shape), 0);
  lt_cfg_t cfg = {*shape, 0, 0x1234, 1.0, 10.0, 10.0};
  lt_io_t io = {NULL, io_send, io_lost, NULL};
  lt_t *t;
  assert_int_equal(lt_init(&t, &cfg, &io, 0), 0);
  assert_int_equal(lt_nkids(t), 3);
  for (int i = 0; i < 3; i++) lt_up(t, lt_kid(t, i), 0);
  g_nlost = g_calls = 0;
  return t;
}

static void settle(lt_t *t) {
  for (double now = 0.5; now < 4.0; now += 0.5) lt_on_tick(t, now, 0);
}

static void test_lost_outside_subtree_refused(void **st) {
  (void)st;
  tree_shape_t shape;
  lt_t *t = rank0(&shape);
  unsigned char f[LT_FRAME_MAX];
  int other[2] = {4, 5}; /* node 2's ranks, named by node 1's leader */
  size_t n = lost_frame(f, 2, 0x1234, other, 2);
  lt_on_frame(t, 2, f, n, 0.1);
  settle(t);
  assert_int_equal(g_calls, 0);
  assert_int_equal(lt_stats(t)->refused, 2);
  lt_free(t);
  tree_shape_free(&shape);
}

static void test_lost_in_subtree_believed(void **st) {
  (void)st;
  tree_shape_t shape;
  lt_t *t = rank0(&shape);
  unsigned char f[LT_FRAME_MAX];
  int mixed[2] = {3, 5}; /* 3 is below 2, 5 is not */
  size_t n = lost_frame(f, 2, 0x1234, mixed, 2);
  lt_on_frame(t, 2, f, n, 0.1);
  settle(t);
  assert_int_equal(g_calls, 1);
  assert_int_equal(g_nlost, 1);
  assert_int_equal(g_lost[0], 3);
  assert_int_equal(lt_stats(t)->refused, 1);
  lt_free(t);
  tree_shape_free(&shape);
}

static void test_wrong_token_ignored(void **st) {
  (void)st;
  tree_shape_t shape;
  lt_t *t = rank0(&shape);
  unsigned char f[LT_FRAME_MAX];
  int r[1] = {3};
  size_t n = lost_frame(f, 2, 0x9999, r, 1); /* an earlier job's token */
  lt_on_frame(t, 2, f, n, 0.1);
  settle(t);
  assert_int_equal(g_calls, 0);
  /* and a HELLO with it names nobody */
  lt_hdr_t h = {LT_MAGIC, LT_HELLO, 0, 2, 0, 0x9999};
  assert_int_equal(lt_hello_rank(t, &h, sizeof h), -1);
  h.token = 0x1234;
  assert_int_equal(lt_hello_rank(t, &h, sizeof h), 2);
  lt_free(t);
  tree_shape_free(&shape);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_lost_outside_subtree_refused),
      cmocka_unit_test(test_lost_in_subtree_believed),
      cmocka_unit_test(test_wrong_token_ignored),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
