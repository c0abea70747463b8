/* Start-up exchanges at scale: the real tree shape (common/tree.c) that mpix's allgather,
 * broadcast and reach check run over, for N ranks, against the star they replaced: the busiest
 * process's fan-in, messages and bytes per exchange, depth, and when a missing rank is named.
 * Checks the shape itself (every rank once, subtrees contiguous in depth-first order, parent and
 * children agree). --check asserts fan-in <= fanout + ranks per node (+1 parent) and the naming
 * deadline within timeout + 0.5 s per level. Exit 0, or 1 with the reason. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/tree.h"

static int fail(const char *why, int a, int b) {
  fprintf(stderr, "tree_sim: FAIL: %s (%d, %d)\n", why, a, b);
  return 1;
}

int main(int argc, char **argv) {
  int size = 4096, per_node = 8, fanout = TREE_FANOUT_DEFAULT, check = 0, bytes = 64;
  double timeout = 60;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--ranks") && i + 1 < argc) size = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--per-node") && i + 1 < argc) per_node = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--fanout") && i + 1 < argc) fanout = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--bytes") && i + 1 < argc) bytes = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--check")) check = 1;
    else {
      fprintf(stderr, "usage: tree_sim [--ranks N] [--per-node K] [--fanout F] [--bytes B] [--check]\n");
      return 64;
    }
  }
  if (size < 2 || per_node < 1 || fanout < 2) return fail("bad arguments", size, fanout);
  int nnodes = (size + per_node - 1) / per_node;
  int *node_of = malloc((size_t)size * sizeof *node_of), *leader = malloc((size_t)nnodes * sizeof *leader);
  int *order = malloc((size_t)size * sizeof *order), *pos = malloc((size_t)size * sizeof *pos);
  int *sub = malloc((size_t)size * sizeof *sub), *height = malloc((size_t)size * sizeof *height);
  int *kids = malloc((size_t)size * sizeof *kids), *seen = calloc((size_t)size, sizeof *seen);
  if (!node_of || !leader || !order || !pos || !sub || !height || !kids || !seen) return fail("out of memory", 0, 0);
  for (int r = 0; r < size; r++) node_of[r] = r / per_node;
  for (int n = 0; n < nnodes; n++) leader[n] = n * per_node;
  tree_shape_t s = {.size = size, .nnodes = nnodes, .fanout = fanout, .node_of = node_of, .leader_of_node = leader};
  if (tree_shape_index(&s) < 0 || tree_preorder(&s, order, pos, sub, height) < 0) return fail("out of memory", 0, 0);

  /* The shape: a tree over every rank, subtrees contiguous in depth-first order. */
  if (order[0] != 0 || sub[0] != size) return fail("rank 0 is not the root of all", order[0], sub[0]);
  for (int i = 0; i < size; i++) {
    if (order[i] < 0 || order[i] >= size || seen[order[i]]++) return fail("a rank twice or out of range", i, order[i]);
    if (pos[order[i]] != i) return fail("pos and order disagree", i, order[i]);
  }
  int max_kids = 0, busiest = 0, depth = 0;
  long long max_in_b = 0, max_out_b = 0;
  for (int r = 0; r < size; r++) {
    int nk = tree_children(&s, r, kids, size), sum = 1;
    for (int i = 0; i < nk; i++) {
      if (tree_parent(&s, kids[i]) != r) return fail("a child whose parent is another", r, kids[i]);
      if (pos[kids[i]] != pos[r] + sum) return fail("a subtree not contiguous", r, kids[i]);
      sum += sub[kids[i]];
    }
    if (sum != sub[r]) return fail("subtree sizes do not add up", r, sum);
    int d = 0;
    for (int q = r; (q = tree_parent(&s, q)) >= 0;) d++;
    if (d > depth) depth = d;
    /* One allgather of `bytes` per rank: in, the children's subtrees and the whole table from
     * the parent; out, the subtree up and the whole table to each child. */
    long long in_b = (long long)(sub[r] - 1) * bytes + (r ? (long long)size * bytes : 0);
    long long out_b = (r ? (long long)sub[r] * bytes : 0) + (long long)nk * size * bytes;
    if (nk > max_kids) max_kids = nk, busiest = r;
    if (in_b > max_in_b) max_in_b = in_b;
    if (out_b > max_out_b) max_out_b = out_b;
  }
  /* A missing rank is named by its parent after timeout + 0.5 s per level below the parent
   * (mpix_tree.c LEVEL_S); the worst case is the root's own deadline. */
  double named_worst = timeout + 0.5 * (height[0] - 1);
  int bound = fanout + per_node - 1;
  printf("tree_sim: %d ranks, %d per node, %d nodes, fanout %d\n", size, per_node, nnodes, fanout);
  printf("  tree: depth %d, busiest process rank %d waits on %d children (+1 parent), bound fanout + per node - 1 = %d\n",
         depth, busiest, max_kids, bound);
  printf("  allgather of %d B per rank: messages at the busiest process %d in + %d out; bytes in <= %lld, out <= %lld\n",
         bytes, max_kids + 1, max_kids + 1, max_in_b, max_out_b);
  printf("  star it replaced: rank 0 waits on %d ranks, %d messages in + %d out, %lld B in, %lld B out\n",
         size - 1, size - 1, size - 1, (long long)(size - 1) * bytes, (long long)(size - 1) * size * bytes);
  printf("  reach check: each node's first rank probes 2 others (ring), records go up the same tree\n");
  printf("  a missing rank named after at most %.1f s with timeout %.0f s (star: %.1f s)\n", named_worst, timeout, timeout);
  if (check) {
    if (max_kids > bound) return fail("fan-in above fanout + ranks per node - 1", max_kids, bound);
    if (named_worst > timeout + 0.5 * depth) return fail("naming deadline grows past 0.5 s per level", (int)named_worst, depth);
    printf("tree_sim: OK\n");
  }
  tree_shape_free(&s);
  free(node_of), free(leader), free(order), free(pos), free(sub), free(height), free(kids), free(seen);
  return 0;
}
