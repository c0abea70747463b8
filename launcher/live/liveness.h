/* Liveness of the supervisors outside MPI: a tree of TCP connections (each rank to its node's
 * leader, leaders k-ary up to rank 0; livetree.h), heartbeats both ways on a thread of its own, a
 * deadline; a lost rank ends the whole job. */
#ifndef GPL_LAUNCHER_LIVENESS_H
#define GPL_LAUNCHER_LIVENESS_H

#include <stdint.h>

#include "launcher/job/job.h"
#include "launcher/live/livetree.h" /* live_why_t */

typedef struct live_s live_t;

typedef struct live_event_s {
  int lost_rank;     /* the (first) rank that was lost (for LIVE_ABORT: the one rank 0 lost) */
  live_why_t why;
  double silent_s;   /* for LIVE_SILENT: how long it had been silent */
  int nlost;         /* ranks lost at once (a whole host goes silent together) */
  char who[768];     /* "rank 4 (host h2), rank 5 (host h2)", then "and N more, (host h3)" */
} live_event_t;

struct seckey_s;

typedef struct live_opts_s {
  const struct seckey_s *sec; /* the job key: the tree's token and TLS keys (launcher/job/seckey.h) */
  const char *addr;     /* rank 0's address that every rank can reach (MASTER_ADDR); each other
                         * leader listens on its own address on the route to it */
  int fanout;           /* leaders per leader (GPULAUNCH_LIVE_FANOUT); <= 0: TREE_FANOUT_DEFAULT */
  double interval;      /* seconds between heartbeats */
  double timeout;       /* silence that means lost */
  double connect_s;     /* every rank must have connected within this (start-up deadline) */
  double stall_s;       /* the supervisor's loop may not tick for this long before this rank
                         * stops beating (a hung supervisor); <= 0: never */
  double grace_s;       /* after a loss, the supervisor has this long to end the program and
                         * leave; then the liveness thread kills the program and ends the rank */
  /* Called on the liveness thread (once): wake the supervisor's loop (uv_async_send). */
  void (*notify)(void *arg);
  void *arg;
  /* The hang watchdog's progress ages, carried by every frame (optional; on the liveness
   * thread): from_rank -1 asks for this rank's own (ms since its program's last progress, -1:
   * unknown), else delivers from_rank's age_ms as its frame said. */
  int32_t (*progress)(void *progress_arg, int from_rank, int32_t age_ms);
  void *progress_arg;
} live_opts_t;

/* Start liveness for the job (collective over job->world: every rank with children opens its
 * listener; one allgather of each rank's address and port, bounded by
 * job->timeout). A job of one has none: *out = NULL. */
int live_start(live_t **out, job_t *job, const live_opts_t *o);
/* The supervisor's loop is alive (call it from every loop iteration or timer). */
void live_tick(live_t *l);
/* The program's process group, killed by the liveness thread if the supervisor cannot. */
void live_set_child(live_t *l, int pid);
/* The event that woke the supervisor: 1 and *ev when there is one. */
int live_event(live_t *l, live_event_t *ev);
/* From the supervisor's thread: the parent's rank when its gpulaunch died (its end of the
 * connection closed without a goodbye), whether or not the liveness thread had told it yet; -1
 * otherwise. Where the end is closed and the liveness thread has not read it yet, this waits up
 * to wait_s for it. A stop that comes with the parent already dead follows that death. */
int live_parent_gone(live_t *l, double wait_s);
/* Rank 0: tell every other rank (down the tree) the job is ending because lost_rank was lost;
 * returns once rank 0's frames are written (1 s at most). */
void live_abort_all(live_t *l, int lost_rank);
/* The job is ending normally: goodbyes sent, closed connections no longer mean a loss. Then
 * stop the thread and free. NULL is fine. */
void live_stop(live_t *l);

#endif
