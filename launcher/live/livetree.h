/* The supervisors' liveness tree without a transport: its shape, its frames, and what one
 * process does on a frame, a closed connection and a tick. liveness.c drives it over libuv/TCP;
 * tests/launcher/live/live_sim.c drives thousands of them in one process on a simulated clock. */
#ifndef GPL_LAUNCHER_LIVETREE_H
#define GPL_LAUNCHER_LIVETREE_H

#include <stddef.h>
#include <stdint.h>

#include "common/tree.h"

/* What a process saw. */
typedef enum live_why_e {
  LIVE_CLOSED = 1, /* the peer's connection closed without a goodbye: its gpulaunch died */
  LIVE_SILENT,     /* no heartbeat for the deadline: host down, network cut, or a hung supervisor */
  LIVE_NEVER,      /* the peer never connected in time */
  LIVE_ABORT       /* rank 0 ended the job because another rank was lost (lost_rank says which) */
} live_why_t;

/* The shape is common/tree.h's (tree_shape_t): node leaders in a k-ary tree, each node's other
 * ranks below its leader. */

/* Frames: a header, then n entries. */
#define LT_MAGIC 0x3254484cu /* "LHT2" */
enum { LT_HELLO = 1, LT_BEAT, LT_BYE, LT_ABORT, LT_LOST, LT_SUSPECT };
#define LT_AGES_MAX 32   /* progress ages an up-beat carries: its subtree's oldest */
#define LT_LIST_MAX 256  /* entries in one frame at most (a LOST frame: one host's ranks) */
#define LT_AGE_UNKNOWN 2000000000 /* a rank whose progress is not known yet: older than any */

typedef struct lt_hdr_s {
  uint32_t magic;
  uint16_t type, n; /* n entries follow */
  int32_t rank;     /* the sender */
  int32_t arg;      /* ABORT: the lost rank; LOST: live_why_t; BEAT upward: the age (ms) of the
                     * subtree's ranks not listed (at most that old), -1: none; SUSPECT (upward,
                     * when it changes): how many of the subtree's processes are silent for more
                     * than two beats but not yet past the deadline */
  uint64_t token;   /* the job's (HELLO; the others carry it too) */
} lt_hdr_t;

typedef struct lt_ent_s {
  int32_t rank, val; /* BEAT: progress age in ms; LOST: silent for ms */
} lt_ent_t;

#define LT_FRAME_MAX (sizeof(lt_hdr_t) + LT_LIST_MAX * sizeof(lt_ent_t))

/* Checks a frame's header: its full length (header and entries) when buf[0..len) holds a header
 * that is well formed, 0 when more bytes are needed, -1 when it is not a frame of ours. */
long lt_frame_len(const void *buf, size_t len);

/* What the core asks of its driver. */
typedef struct lt_io_s {
  void *arg;
  /* Queue a frame to a neighbour (the parent or a child, by rank); lost frames show as a
   * closed or silent connection. */
  void (*send)(void *arg, int to, const void *frame, size_t len);
  /* The job is lost for this process (called once): rank 0 hears ranks[0..n) were lost; any
   * other rank that its parent was (ranks = {parent}), or, why = LIVE_ABORT, that rank 0 ended
   * the job because ranks[0] was lost. silent_s: for LIVE_SILENT. */
  void (*lost)(void *arg, const int *ranks, int n, live_why_t why, double silent_s);
  /* The hang watchdog's ages (as live_opts_t.progress): from -1 asks for this rank's own (ms,
   * -1: unknown); else rank 0 hears from's age. NULL: no ages. */
  int32_t (*progress)(void *arg, int from, int32_t age_ms);
} lt_io_t;

typedef struct lt_cfg_s {
  tree_shape_t shape;
  int rank;
  uint64_t token;
  double interval, timeout, connect_s; /* seconds */
} lt_cfg_t;

/* Counters (a simulation's figures). */
typedef struct lt_stats_s {
  uint64_t sent, recv, sent_bytes, recv_bytes;
  uint64_t refused; /* ranks a LOST frame named outside its sender's subtree (not believed) */
} lt_stats_t;

typedef struct lt_s lt_t;

int lt_init(lt_t **out, const lt_cfg_t *cfg, const lt_io_t *io, double now);
void lt_free(lt_t *t);
int lt_parent_of(const lt_t *t);
int lt_nkids(const lt_t *t);
int lt_kid(const lt_t *t, int i);       /* the i-th child's rank */
int lt_kid_index(const lt_t *t, int rank); /* -1: not a child */
const lt_stats_t *lt_stats(const lt_t *t);

/* A new connection's first frame: the child's rank when it is a HELLO with the job's token from
 * one of this process's children, else -1. */
int lt_hello_rank(const lt_t *t, const void *frame, size_t len);
/* The connection with peer (the parent, or a child after its HELLO) is up; to the parent this
 * sends the HELLO. */
void lt_up(lt_t *t, int peer, double now);
/* A whole frame from peer (lt_frame_len said its length). */
void lt_on_frame(lt_t *t, int peer, const void *frame, size_t len, double now);
/* peer's connection closed or failed (after lt_up). */
void lt_on_closed(lt_t *t, int peer, double now);
/* Every interval: beats down and up (not when stalled: a hung supervisor stops beating), the
 * deadlines. Returns 1 while the parent was never reached (the driver connects again). */
int lt_on_tick(lt_t *t, double now, int stalled);
/* Rank 0: every child is told the job ends because lost_rank was lost (they pass it on).
 * Returns the frames queued. */
int lt_abort(lt_t *t, int lost_rank);
/* The job ends normally: goodbyes to the parent and children; no loss is told from now on. */
void lt_stop(lt_t *t);
/* After lt_stop: every child said goodbye or is gone. */
int lt_all_bye(const lt_t *t);

#endif
