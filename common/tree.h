/* The one tree shape of the job's processes (liveness, start-up exchanges): bounded fan-in. */
#ifndef GPL_COMMON_TREE_H
#define GPL_COMMON_TREE_H

/* Node leaders (rank 0 for its own node, the node's first rank elsewhere) form a k-ary tree over
 * the nodes (rank 0's node first, then the others in node order): the node at position p > 0 has
 * the one at (p - 1) / fanout as parent. Every other rank's parent is its node's leader. So a
 * process has at most fanout + (ranks on its node - 1) children and one parent, whatever the
 * job's size. Without nodes (every rank a node of its own) it is a k-ary tree over the ranks. */
#define TREE_FANOUT_DEFAULT 32

typedef struct tree_shape_s {
  int size, nnodes, fanout;
  const int *node_of;        /* node of each rank (size entries) */
  const int *leader_of_node; /* first rank of each node (nnodes entries) */
  int *node_first, *node_ranks; /* tree_shape_index: node n's ranks are node_ranks[node_first[n]
                                 * .. node_first[n + 1]) */
  int *own;                  /* tree_shape_flat: the identity maps node_of/leader_of_node point to */
} tree_shape_t;

/* Index the ranks by node (once per job: users borrow the shape, which must outlive them).
 * 0 or GPL_ENOMEM. tree_shape_free frees what the index and tree_shape_flat allocated. */
int tree_shape_index(tree_shape_t *s);
void tree_shape_free(tree_shape_t *s);

/* A shape without nodes over size ranks (a k-ary tree of ranks), indexed. 0 or GPL_ENOMEM. */
int tree_shape_flat(tree_shape_t *s, int size, int fanout);

/* The leader of node: rank 0 for its own node, else the node's first rank. */
int tree_leader(const tree_shape_t *s, int node);

/* rank's parent (-1 for rank 0) and its children (out holds up to max; returns how many). */
int tree_parent(const tree_shape_t *s, int rank);
int tree_children(const tree_shape_t *s, int rank, int *out, int max);

/* The ranks of rank's subtree (itself included) into out (size entries at most); how many. */
int tree_subtree(const tree_shape_t *s, int rank, int *out);

/* Depth-first order of the whole tree: order[i] is the i-th rank, pos[r] its place, and every
 * subtree a contiguous run (pos[r] .. pos[r] + sub[r]); height[r]: levels below r (0: a leaf).
 * Arrays of size entries (any may be NULL). 0 or GPL_ENOMEM. */
int tree_preorder(const tree_shape_t *s, int *order, int *pos, int *sub, int *height);

/* GPULAUNCH_TREE_FANOUT (2..64), else TREE_FANOUT_DEFAULT: the start-up exchanges' fan-out. */
int tree_fanout_env(void);

#endif
