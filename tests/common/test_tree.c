/* common/tree.c on small shapes worked out by hand: a flat k-ary tree of ranks, and two levels
 * (node leaders in a tree, each node's other ranks below their leader) where rank 0's node is not
 * the first; children, subtrees and depth-first order agree. (tree_sim.c checks the same shapes
 * at 512 to 16384 ranks.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>

#include "common/tree.h"
#include "gpulaunch/error.h"

/* 7 ranks, fanout 2: 0 -> {1, 2}, 1 -> {3, 4}, 2 -> {5, 6}. */
static void test_flat(void **st) {
  (void)st;
  tree_shape_t s;
  assert_int_equal(tree_shape_flat(&s, 7, 2), GPL_OK);
  assert_int_equal(tree_parent(&s, 0), -1);
  assert_int_equal(tree_parent(&s, 4), 1);
  assert_int_equal(tree_parent(&s, 5), 2);
  int kids[8];
  assert_int_equal(tree_children(&s, 1, kids, 8), 2);
  assert_int_equal(kids[0], 3);
  assert_int_equal(kids[1], 4);
  assert_int_equal(tree_children(&s, 6, kids, 8), 0);
  int sub[7];
  assert_int_equal(tree_subtree(&s, 2, sub), 3); /* 2, 5, 6 */
  assert_int_equal(sub[0], 2);
  assert_int_equal(tree_subtree(&s, 0, sub), 7);
  int order[7], pos[7], size[7], height[7];
  assert_int_equal(tree_preorder(&s, order, pos, size, height), GPL_OK);
  static const int want[7] = {0, 1, 3, 4, 2, 5, 6};
  for (int i = 0; i < 7; i++) {
    assert_int_equal(order[i], want[i]);
    assert_int_equal(pos[order[i]], i);
  }
  assert_int_equal(size[1], 3);
  assert_int_equal(height[0], 2);
  assert_int_equal(height[6], 0);
  tree_shape_free(&s);
}

/* 3 nodes of 2 ranks, rank 0 on node 1 (ranks 0, 1), node 0 = ranks 2, 3, node 2 = ranks 4, 5;
 * fanout 2: rank 0 leads the root node, the other leaders (2, 4) hang below it. */
static void test_two_levels(void **st) {
  (void)st;
  static const int node_of[6] = {1, 1, 0, 0, 2, 2};
  static const int leader_of_node[3] = {2, 0, 4};
  tree_shape_t s = {.size = 6, .nnodes = 3, .fanout = 2, .node_of = node_of, .leader_of_node = leader_of_node};
  assert_int_equal(tree_shape_index(&s), GPL_OK);
  assert_int_equal(tree_leader(&s, 1), 0);
  assert_int_equal(tree_parent(&s, 1), 0); /* a node's rank below its leader */
  assert_int_equal(tree_parent(&s, 3), 2);
  assert_int_equal(tree_parent(&s, 2), 0); /* a leader below the root's */
  assert_int_equal(tree_parent(&s, 4), 0);
  int kids[8];
  assert_int_equal(tree_children(&s, 0, kids, 8), 3); /* its node's rank, then the leaders */
  assert_int_equal(kids[0], 1);
  assert_int_equal(kids[1], 2);
  assert_int_equal(kids[2], 4);
  assert_int_equal(tree_children(&s, 0, kids, 1), 3); /* counts what did not fit */
  assert_int_equal(tree_children(&s, 5, kids, 8), 0);
  int sub[6];
  assert_int_equal(tree_subtree(&s, 2, sub), 2);
  assert_int_equal(tree_subtree(&s, 3, sub), 1);
  int pos[6], size[6];
  assert_int_equal(tree_preorder(&s, NULL, pos, size, NULL), GPL_OK);
  assert_int_equal(pos[0], 0);
  assert_int_equal(size[0], 6);
  assert_int_equal(size[4], 2);
  assert_int_equal(pos[5], pos[4] + 1); /* a subtree is one run */
  tree_shape_free(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_flat),
      cmocka_unit_test(test_two_levels),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
