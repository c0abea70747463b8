/* The job's tree shape: node leaders in a k-ary tree, each node's other ranks below its leader. */
#include "common/envvar.h"
#include "common/tree.h"

#include <stdlib.h>

#include "gpulaunch/error.h"
#include "common/util.h"

static int fanout_of(const tree_shape_t *s) { return s->fanout > 1 ? s->fanout : TREE_FANOUT_DEFAULT; }
static int root_node(const tree_shape_t *s) { return s->node_of[0]; }
static int pos_of(const tree_shape_t *s, int node) {
  int r = root_node(s);
  return node == r ? 0 : node < r ? node + 1 : node;
}
static int node_at(const tree_shape_t *s, int pos) {
  int r = root_node(s);
  return pos == 0 ? r : pos <= r ? pos - 1 : pos;
}
int tree_leader(const tree_shape_t *s, int node) {
  return node == root_node(s) ? 0 : s->leader_of_node[node];
}

int tree_parent(const tree_shape_t *s, int rank) {
  int n = s->node_of[rank], l = tree_leader(s, n);
  if (rank != l) return l;
  int p = pos_of(s, n);
  if (p == 0) return -1;
  return tree_leader(s, node_at(s, (p - 1) / fanout_of(s)));
}

int tree_shape_index(tree_shape_t *s) {
  s->node_first = calloc((size_t)s->nnodes + 1, sizeof *s->node_first);
  s->node_ranks = calloc((size_t)s->size, sizeof *s->node_ranks);
  int *fill = calloc((size_t)s->nnodes, sizeof *fill);
  if (!s->node_first || !s->node_ranks || !fill) {
    free(fill);
    tree_shape_free(s);
    return GPL_ENOMEM;
  }
  for (int r = 0; r < s->size; r++) s->node_first[s->node_of[r] + 1]++;
  for (int n = 0; n < s->nnodes; n++) s->node_first[n + 1] += s->node_first[n];
  for (int r = 0; r < s->size; r++) {
    int n = s->node_of[r];
    s->node_ranks[s->node_first[n] + fill[n]++] = r;
  }
  free(fill);
  return GPL_OK;
}

int tree_shape_flat(tree_shape_t *s, int size, int fanout) {
  *s = (tree_shape_t){.size = size, .nnodes = size, .fanout = fanout};
  s->own = malloc((size_t)(size > 0 ? size : 1) * sizeof *s->own);
  if (!s->own) return GPL_ENOMEM;
  for (int r = 0; r < size; r++) s->own[r] = r;
  s->node_of = s->leader_of_node = s->own;
  return tree_shape_index(s);
}

void tree_shape_free(tree_shape_t *s) {
  free(s->node_first);
  free(s->node_ranks);
  free(s->own);
  s->node_first = s->node_ranks = s->own = NULL;
}

int tree_children(const tree_shape_t *s, int rank, int *out, int max) {
  int n = s->node_of[rank], c = 0;
  if (rank != tree_leader(s, n)) return 0;
  for (int i = s->node_first[n]; i < s->node_first[n + 1]; i++)
    if (s->node_ranks[i] != rank) {
      if (c < max) out[c] = s->node_ranks[i];
      c++;
    }
  int k = fanout_of(s);
  long p = pos_of(s, n);
  for (long q = p * k + 1; q <= p * k + k && q < s->nnodes; q++) {
    if (c < max) out[c] = tree_leader(s, node_at(s, (int)q));
    c++;
  }
  return c;
}

int tree_subtree(const tree_shape_t *s, int rank, int *out) {
  int n = s->node_of[rank];
  if (rank != tree_leader(s, n)) {
    out[0] = rank;
    return 1;
  }
  int c = 0;
  /* breadth first over node positions: p's children are p*k+1 .. p*k+k */
  int k = fanout_of(s);
  long lo = pos_of(s, n), hi = lo;
  while (lo < s->nnodes) {
    for (long q = lo; q <= hi && q < s->nnodes; q++) {
      int m = node_at(s, (int)q);
      for (int i = s->node_first[m]; i < s->node_first[m + 1]; i++) out[c++] = s->node_ranks[i];
    }
    lo = lo * k + 1;
    hi = hi * k + k;
  }
  return c;
}

int tree_preorder(const tree_shape_t *s, int *order, int *pos, int *sub, int *height) {
  int n = s->size, k = fanout_of(s);
  int *ord = order ? order : malloc((size_t)n * sizeof *ord);
  int *stack = malloc((size_t)n * sizeof *stack);
  int *kids = malloc(((size_t)k + (size_t)n) * sizeof *kids);
  int *p = pos ? pos : malloc((size_t)n * sizeof *p);
  if (!ord || !stack || !kids || !p) {
    if (!order) free(ord);
    if (!pos) free(p);
    free(stack);
    free(kids);
    return GPL_ENOMEM;
  }
  /* Depth first with an explicit stack: children pushed in reverse so they come out in order. */
  int top = 0, at = 0;
  stack[top++] = 0;
  while (top > 0) {
    int r = stack[--top];
    p[r] = at;
    ord[at++] = r;
    int nk = tree_children(s, r, kids, k + n);
    for (int i = nk - 1; i >= 0; i--) stack[top++] = kids[i];
  }
  /* Sizes and heights bottom-up: in reverse depth-first order every child comes before its parent. */
  if (sub || height) {
    for (int r = 0; r < n; r++) {
      if (sub) sub[r] = 1;
      if (height) height[r] = 0;
    }
    for (int i = n - 1; i > 0; i--) {
      int r = ord[i], up = tree_parent(s, r);
      if (sub) sub[up] += sub[r];
      if (height && height[r] + 1 > height[up]) height[up] = height[r] + 1;
    }
  }
  if (!order) free(ord);
  if (!pos) free(p);
  free(stack);
  free(kids);
  return GPL_OK;
}

int tree_fanout_env(void) {
  const char *v = envvar_get(ENVVAR_TREE_FANOUT);
  long k;
  if (v && util_parse_long(v, 2, 64, &k) == GPL_OK) return (int)k;
  return TREE_FANOUT_DEFAULT;
}
