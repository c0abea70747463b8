/* The supervisor's state, shared by its files (sup/): one sup_t per rank, owned by one libuv loop.
 * sup/supervise.c is the hub: it alone feeds the coordinator (sup/coord.c), carries out its
 * actions and paces the polling; the other parts hand it events (a return value, or s->sent). */
#ifndef GPL_LAUNCHER_SUP_INT_H
#define GPL_LAUNCHER_SUP_INT_H

#include <limits.h>
#include <stdint.h>
#include <sys/types.h>
#include <uv.h>

#include "common/strbuf.h"
#include "launcher/audit/audit_event.h"
#include "launcher/live/liveness.h"
#include "launcher/sup/coord.h"
#include "launcher/sup/ctl.h"
#include "launcher/sup/frontch.h"
#include "launcher/output/outq.h"
#include "launcher/output/output.h"
#include "launcher/output/ranklog.h"
#include "launcher/sup/supervise.h"

/* A signal at one moment on every rank (a stop with the grace, a checkpoint) is sent for this
 * long after now: every rank has the message by then (every rank polls within 10 ms). */
#define SUP_AT_LEAD_S 0.1

/* The signals gpulaunch handles (sup/signals.c). */
enum { SIG_TERM_I, SIG_INT_I, SIG_USR1_I, SIG_USR2_I, NSIGS };

typedef struct sup_s {
  uv_loop_t loop;
  const sup_opts_t *o;
  job_t *job;
  ctl_t ctl;
  output_t out;
  uv_process_t proc;
  uv_pipe_t pipes[2];
  uv_signal_t sigs[NSIGS];
  uv_timer_t poll_timer, kill_timer, drain_timer, tick_timer, rm_timer;
  uv_timer_t at_timer;  /* a stop the coordinator scheduled for one moment on every rank */
  int at_signo;
  double at_grace, at_when; /* its signal, grace and wall-clock moment */
  /* The cloud's interruption notice (node leaders, [preempt] notice; sup/supnotice.c). */
  struct notice_watch_s *notice_w;
  uv_async_t notice_async;
  uv_mutex_t notice_mu;
  int notice_new;       /* a notice arrived on the watcher's thread (notice_mu) */
  int notice_taken;     /* ... and was sent to the coordinator */
  char notice_event[128], notice_text[256];
  double notice_deadline;
  int notice_cloud;
  /* ... and a recommendation to checkpoint ([preempt] rebalance = checkpoint) */
  int ckpt_new, ckpt_taken;   /* arrived on the watcher's thread (notice_mu); sent to rank 0 */
  char ckpt_text[256];
  double ckpt_sent_at;        /* rank 0: when every program was last told (wall clock) */
  uv_timer_t sig_timer;       /* a signal (not a stop) at one moment on every rank */
  int sig_signo;
  double sig_when;
  int open_handles;     /* process + pipes still open in this attempt */
  int attempt;
  int spawned, running, exited, reported, stop_requested, spawn_failed;
  int sig_received;     /* SIGTERM or SIGINT received by gpulaunch */
  int forwarded;        /* a terminating signal was sent to the program (or Slurm sent it) */
  int sig_by_rm;        /* sig_received came from Slurm, to the program as well */
  double rm_sig_at[NSIGS]; /* when Slurm last delivered each signal to the step */
  int stop_signo;       /* a stop waiting for Slurm's own signal (rm_timer) */
  double stop_grace;
  int pending_start;    /* a START arrived while handles were still closing */
  int64_t status;
  int term_signal;
  double t_end;         /* when the program ended (wall clock) */
  double t_line;        /* when its last output line came (wall clock, 0: none yet) */
  pid_t pid;
  coord_t co;           /* rank 0: the coordinator (sup/coord.c) */
  coord_acts_t acts;    /* rank 0: what it asked for, being carried out */
  int done, exit_code;
  ctl_msg_t exit_msg;
  char exec_path[PATH_MAX];
  double t0;
  double hot_until;     /* poll every POLL_HOT_MS until then */
  uv_check_t pace_check; /* after each turn of the loop: s->sent makes the polling fast */
  int sent;             /* a part sent a message or finished a task (an event for the hub: poll
                         * fast for a while, the answers are a few round trips away) */
  int stop_by_mpirun;   /* rank 0: the stop signal came from plain mpirun (the hub tells the
                         * coordinator) */
  strbuf_t fwd[2];      /* output waiting to be forwarded to rank 0 */
  int paused;           /* reading the program's pipes is paused (forwarding backlog) */
  live_t *live;         /* heartbeats with the other supervisors (launcher/live/liveness.c) */
  uv_async_t live_async;
  int live_lost;        /* a rank was lost: ending the job without MPI */
  double live_lost_at;  /* ... since then (util_now) */
  int told_front;       /* this rank told gpulaunch-run which host was lost (frontch_tell_lost) */
  char live_what[1024];
  outq_t *q;            /* our stdout/stderr, written off the loop (NULL: directly) */
  int reap_asked;       /* the reaper was asked to kill the program's whole tree */
  pid_t launcher_ppid;  /* mpirun's or srun's process (0: started alone) */
  ranklog_t log;        /* [job] log_dir/rank-N.log */
  frontch_t front;      /* rank 0: the channel to gpulaunch-run (fd -1: none) */
  uv_poll_t front_poll;
  /* The hang watchdog (launcher/hang/hang.h, progress.h). */
  double hang_timeout;  /* o->hang_timeout, 0 when it cannot work (no liveness) */
  double attempt_t0;    /* when this attempt's program started (progress before is none) */
  double prog_poll_at;  /* next look at the heartbeat file */
  uint64_t *peer_prog;  /* rank 0: util_now_ns() of each rank's last progress (__atomic) */
  uv_work_t hang_work;  /* this rank's stack collection */
  int hang_collecting, hang_pid;
  double hang_budget;   /* seconds for this collection */
  char *hang_text;
  int hang_active;      /* rank 0: a hang was declared, stacks are coming in */
  int silent_active;    /* rank 0: after a failure, the stacks of silent ranks are coming in */
  double hang_t0, hang_rearm;
  int hang_early;       /* rank 0: verdicts put off in a row for a peer still working (hangwatch.c) */
  char **hang_texts;    /* rank 0: each rank's stacks */
  double *hang_silent;  /* rank 0: each rank's silence when the hang was declared */
  int hang_got;
  char hang_report[512];
  struct sampler_s *sampler; /* the straggler by stack sampling (sup/sampler.c), NULL: off */
} sup_t;

/* sup/child.c: the program of an attempt, its pipes, its end. */
void child_spawn(sup_t *s);
/* Signal the program's process group (SIGKILL: its whole tree, through the reaper). */
void child_kill(sup_t *s, int sig);
/* SIGKILL the program after `seconds` unless it ends before. */
void child_kill_later(sup_t *s, double seconds);
/* Start (on) or stop reading the program's stdout (i 0) or stderr (1). */
void child_read(sup_t *s, int i, int on);
/* Send this rank's event (CTL_EV_*) to the coordinator, with the program's end and last lines. */
void child_send_event(sup_t *s, int type, int flags);
/* output_t's on_line: each complete line of the program's output. */
void child_on_line(void *arg, int is_err, const char *line, size_t len);

/* sup/forward.c: other ranks' output written by rank 0 (opts forward_output), and backpressure. */
void forward_flush(sup_t *s, int i);
void forward_sink(void *arg, int is_err, const char *data, size_t len);
/* ctl_poll's on_output (rank 0): a rank's output, or its stacks after a hang. */
void forward_take(void *arg, int src, int is_err, const char *data, size_t len);
void forward_throttle(sup_t *s);

/* sup/signals.c: signals received by gpulaunch, Slurm's, and gpulaunch-run's stop requests. */
void signals_start(sup_t *s);
/* Rank 0: listen to gpulaunch-run's channel, when gpulaunch-run started the job. */
void signals_front(sup_t *s);
/* Deliver a stop signal to the program, once, and SIGKILL it after grace seconds. */
void signals_deliver_stop(sup_t *s, int sig, double grace, int by_rm);
/* A stop for a signal Slurm sent the whole step: wait a moment for it to reach the program. */
void signals_await_rm(sup_t *s, int sig, double grace);
/* signals_deliver_stop at wall-clock time at (now when it has passed or is 0). */
void signals_deliver_at(sup_t *s, int sig, double grace, double at);
/* Sleep the last few milliseconds to wall-clock time when (called from a timer just before it). */
void signals_sleep_to(double when);

/* sup/hangwatch.c: the hang watchdog's glue (launcher/hang/). */
int32_t hangwatch_progress(void *arg, int from, int32_t age_ms);
void hangwatch_collect(sup_t *s, double budget_s); /* every rank, on CTL_HANG (0: the hang's) */
void hangwatch_take(sup_t *s, int src, const char *data, size_t len);
/* What rank 0's watchdog found, for the hub to tell the coordinator. */
typedef enum {
  HANGWATCH_NONE,
  HANGWATCH_COLLECT, /* a hang is declared: every rank collects its stacks (coord_hang_collect) */
  HANGWATCH_HANG,    /* the verdict: rank on host is the cause, text the line (coord_hang) */
  HANGWATCH_SILENT,  /* after a failure, the silent ranks' stacks are in: rank (-1: nobody) on
                      * host, silent for silent_s, in function text (coord_silent_found) */
} hangwatch_ev_type_t;
typedef struct {
  hangwatch_ev_type_t type;
  int rank;
  const char *host;
  double silent_s;
  char text[3072];
} hangwatch_ev_t;
/* Rank 0, each poll: declare a hang, or finish one (or the silent ranks' collection); reads the
 * coordinator's state, never changes it. Returns ev->type. */
int hangwatch_poll(sup_t *s, const coord_t *co, hangwatch_ev_t *ev);
void hangwatch_free(sup_t *s);
/* Rank 0, the coordinator's: seconds since the rank's last progress (-1: unknown). */
double hangwatch_silence(void *arg, int rank);
/* Rank 0, the coordinator's COORD_COLLECT (the stacks of the ranks still running after a
 * failure): 1 when this collection begins (the hub sends the request), 0 when one is under way
 * already (the hang's own wins). */
int hangwatch_silent_begin(sup_t *s);

/* sup/sampler.c: the straggler by stack sampling ([job] straggler = sample). */
int sampler_start(sup_t *s);       /* every rank, before the first program starts */
void sampler_flush(sup_t *s);      /* the program ended: this rank's last counts to rank 0 */
void sampler_take(sup_t *s, int src, const char *data, size_t len); /* rank 0: a rank's counts */
int sampler_verdict(sup_t *s, sample_verdict_t *v); /* rank 0, at the end: 1 and *v, 0: none */
void sampler_free(sup_t *s);

/* sup/lost.c: a rank's supervisor or host was lost (launcher/live/liveness.c). */
void lost_on_live(uv_async_t *a);
void lost_before_stop(sup_t *s);
void lost_wake(void *arg);
/* After the loop, before the exit: a rank under gpulaunch-run that ends after a loss without
 * having told gpulaunch-run waits until LOST_HOLD_S after the loss (a stop signal ends it at once),
 * so the rank of its side that tells is not ended by mpirun mid-word. */
void lost_hold(sup_t *s);

/* sup/supnotice.c: the node leader's watcher of the cloud's interruption notice. */
int supnotice_start(sup_t *s);  /* before the first program starts */
void supnotice_end(sup_t *s);   /* the job is over: Azure's event acknowledged, the watcher gone */
/* Rank 0: a rank's request for a checkpoint (CTL_EV_SIGNAL with CTL_F_CHECKPOINT) becomes one
 * CTL_SIGNAL to every rank at one moment; 1 when m was that, 0 for any other event. */
int supnotice_checkpoint_event(sup_t *s, const ctl_msg_t *m);
/* Every rank: CTL_SIGNAL, the signal delivered to a running program at m->at. */
void supnotice_checkpoint_do(sup_t *s, const ctl_msg_t *m);

#endif
