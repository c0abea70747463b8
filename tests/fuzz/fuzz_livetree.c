/* Fuzz target: the liveness tree's frames (launcher/live/livetree.c) as a byte stream from a
 * peer, the way liveness.c's reader splits it: lt_frame_len, then the first frame through
 * lt_hello_rank, then lt_on_frame, into rank 0 and into a leader in the middle of a small tree
 * (4 nodes of 2 ranks, fanout 2), with ticks between frames. Oracles: a frame's length is a header
 * plus whole entries, never over LT_FRAME_MAX; every rank the core reports lost or sends to is a
 * rank of the job and a neighbour; a frame sent is itself well formed. */
#include <string.h>

#include "fuzz.h"
#include "launcher/live/livetree.h"

#define SIZE 8
static int g_me;
static tree_shape_t g_shape;
static int g_node_of[SIZE] = {0, 0, 1, 1, 2, 2, 3, 3}, g_leader[4] = {0, 2, 4, 6};

static void on_send(void *arg, int to, const void *frame, size_t len) {
  (void)arg;
  FUZZ_ASSERT(to >= 0 && to < SIZE, "sent to rank %d", to);
  FUZZ_ASSERT(to == tree_parent(&g_shape, g_me) || tree_parent(&g_shape, to) == g_me, "rank %d is no neighbour of %d", to, g_me);
  long n = lt_frame_len(frame, len);
  FUZZ_ASSERT(n > 0 && (size_t)n == len && len <= LT_FRAME_MAX, "sent a frame of %zu bytes (%ld)", len, n);
}

static void on_lost(void *arg, const int *ranks, int n, live_why_t why, double silent) {
  (void)arg;
  (void)silent;
  FUZZ_ASSERT(n > 0 && n <= LT_LIST_MAX, "%d lost", n);
  FUZZ_ASSERT(why >= LIVE_CLOSED && why <= LIVE_ABORT, "why %d", (int)why);
  for (int i = 0; i < n; i++) FUZZ_ASSERT(ranks[i] >= 0 && ranks[i] < SIZE, "lost rank %d", ranks[i]);
}

static int32_t on_progress(void *arg, int from, int32_t age) {
  (void)arg;
  (void)age;
  FUZZ_ASSERT(from >= -1 && from < SIZE, "progress of rank %d", from);
  return from < 0 ? 100 : 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  g_shape = (tree_shape_t){.size = SIZE, .nnodes = 4, .fanout = 2, .node_of = g_node_of, .leader_of_node = g_leader};
  return tree_shape_index(&g_shape) == 0 ? 0 : 1;
}

static void feed(int me, int peer, const uint8_t *data, size_t size) {
  g_me = me;
  lt_cfg_t c = {g_shape, me, 7, 1.0, 5.0, 10.0};
  lt_io_t io = {NULL, on_send, on_lost, on_progress};
  lt_t *t;
  if (lt_init(&t, &c, &io, 0) != 0) return;
  int hello = peer != tree_parent(&g_shape, me); /* a child's first frame is its hello */
  if (!hello) lt_up(t, peer, 0);
  double now = 0;
  size_t off = 0;
  while (off < size) {
    long n = lt_frame_len(data + off, size - off);
    if (n <= 0 || (size_t)n > size - off) break;
    FUZZ_ASSERT((size_t)n >= sizeof(lt_hdr_t) && ((size_t)n - sizeof(lt_hdr_t)) % sizeof(lt_ent_t) == 0 &&
                    (size_t)n <= LT_FRAME_MAX, "frame length %ld", n);
    if (hello) {
      int r = lt_hello_rank(t, data + off, (size_t)n);
      FUZZ_ASSERT(r < 0 || lt_kid_index(t, r) >= 0, "hello from %d, not a child", r);
      if (r >= 0) {
        peer = r;
        lt_up(t, r, now);
      }
      hello = 0;
    } else {
      lt_on_frame(t, peer, data + off, (size_t)n, now);
    }
    now += 0.7;
    lt_on_tick(t, now, 0);
    off += (size_t)n;
  }
  lt_on_closed(t, peer, now);
  lt_on_tick(t, now + 20, 0);
  lt_stop(t);
  lt_free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  feed(0, 2, data, size); /* rank 0, a stream from its child leader 2 */
  feed(2, 6, data, size); /* leader 2 (parent 0), from its child leader 6 */
  feed(2, 0, data, size); /* leader 2, from its parent */
  return 0;
}
