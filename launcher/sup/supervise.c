/* The supervisor: one libuv loop per rank owns the program's pipes, the signals and the timers;
 * rank 0 also coordinates: the first failure stops every rank, then restart or exit together. */
#include "launcher/sup/supervise.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <uv.h>

#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "common/redact.h"
#include "launcher/sup/ctl.h"
#include "launcher/exitcode.h"
#include "launcher/sup/frontch.h"
#include "launcher/hang/hang.h"
#include "launcher/live/liveness.h"
#include "launcher/live/lostpeer.h"
#include "launcher/sup/outq.h"
#include "launcher/sup/output.h"
#include "launcher/hang/progress.h"
#include "launcher/sup/ranklog.h"
#include "launcher/sup/reap.h"
#include "launcher/sup/sigorigin.h"
#include "launcher/job/slurm.h"

#define POLL_MS 10           /* control message polling while nothing happens */
#define POLL_HOT_MS 1        /* ... and for a while after something did (an exit, a message) */
#define HOT_S 0.5
#define SETTLE_S 1.0         /* after a rank fails, wait this long for others failing too (the
                              * first of them is the cause) before stopping the rest */
#define FAIL_WINDOW_S 5.0    /* a last output line this close to a program's end says when it failed */
#define DRAIN_MS 500         /* after exit, wait this long for the pipes' EOF (grandchildren) */
#define STOP_MARGIN_S 5.0    /* coordinator: extra time for ranks to report a stop */
#define FWD_CHUNK (64 << 10) /* forwarded output is sent in messages of up to this size */
#define FWD_MAX_INFLIGHT (8u << 20) /* stop reading the program's pipes above this */
#define RELAY_S 2.0          /* a signal again from elsewhere this soon after Slurm delivered it
                              * to the whole step is its relayed copy (mpirun, a batch script) */
#define RM_WAIT_MS 1000      /* a stop for a signal Slurm sent the step: wait this long for it */
#define QUERY_S 3.0          /* the longest wait for Slurm's reason (scontrol) */
#define HANG_COLLECT_S 10.0  /* a rank's stack collection after a hang (py-spy, gdb, eu-stack) */
#define HANG_WAIT_S 13.0     /* rank 0 waits this long for every rank's stacks (<= 15 s in all) */

enum { SIG_TERM_I, SIG_INT_I, SIG_USR1_I, SIG_USR2_I, NSIGS };
static const int g_signals[NSIGS] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2};

typedef struct co_s {
  int attempt;
  char *down;       /* per rank: program ended in this attempt */
  int ndown, nok;
  int nfailed;      /* ranks whose program failed on its own (the cause among them) */
  int failing;      /* stopping everyone */
  double settle_until; /* > 0: a rank failed; until then others that fail too are heard first */
  int have_cause;
  ctl_msg_t cause;  /* the first failure: of those reported, the program that failed first */
  double deadline;  /* all ranks must have reported the stop by then */
  int finished;
  int sig;          /* first terminating signal reported (SIGTERM, SIGINT), 0: none */
  int sig_by_rm;    /* ... which Slurm delivered to every program of the step itself */
  double sig_t0;
  char *sig_seen;   /* per rank: reported that signal */
  int verdict;      /* 0 undecided, else VERDICT_* (why the job stops) */
  int finish_pending; /* every rank stopped, the verdict still waits for Slurm */
  slurm_end_t end;  /* Slurm's reason, when asked */
} co_t;

enum { VERDICT_PREEMPTED = 1, VERDICT_CANCELLED, VERDICT_INTERRUPTED };

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
  co_t co;
  int done, exit_code;
  ctl_msg_t exit_msg;
  char exec_path[PATH_MAX];
  double t0;
  double hot_until;     /* poll every POLL_HOT_MS until then */
  strbuf_t fwd[2];      /* output waiting to be forwarded to rank 0 */
  int paused;           /* reading the program's pipes is paused (forwarding backlog) */
  live_t *live;         /* heartbeats with the other supervisors (launcher/live/liveness.c) */
  uv_async_t live_async;
  int live_lost;        /* a rank was lost: ending the job without MPI */
  char live_what[1024];
  outq_t *q;            /* our stdout/stderr, written off the loop (NULL: directly) */
  int reap_asked;       /* the reaper was asked to kill the program's whole tree */
  pid_t launcher_ppid;  /* mpirun's or srun's process (0: started alone) */
  ranklog_t log;        /* [job] log_dir/rank-N.log */
  frontch_t front;      /* rank 0: the channel to gpulaunch-run (fd -1: none) */
  int stop_by_mpirun;   /* the stop came from plain mpirun, which kills the ranks itself */
  uv_poll_t front_poll;
  /* The hang watchdog (launcher/hang/hang.h, progress.h). */
  double hang_timeout;  /* o->hang_timeout, 0 when it cannot work (no liveness) */
  double attempt_t0;    /* when this attempt's program started (progress before is none) */
  double prog_poll_at;  /* next look at the heartbeat file */
  uint64_t *peer_prog;  /* rank 0: util_now_ns() of each rank's last progress (__atomic) */
  uv_work_t hang_work;  /* this rank's stack collection */
  int hang_collecting, hang_pid;
  char *hang_text;
  int hang_active;      /* rank 0: a hang was declared, stacks are coming in */
  double hang_t0, hang_rearm;
  char **hang_texts;    /* rank 0: each rank's stacks */
  double *hang_silent;  /* rank 0: each rank's silence when the hang was declared */
  int hang_got;
  char hang_report[512];
} sup_t;

int sup_resolve(const char *prog, const char *path_env, char *out, size_t len) {
  if (strchr(prog, '/')) {
    util_strlcpy(out, prog, len);
    if (access(prog, F_OK) < 0) return GPL_ENOENT;
    return access(prog, X_OK) < 0 ? GPL_ESYS : GPL_OK;
  }
  const char *path = path_env && *path_env ? path_env : "/usr/local/bin:/usr/bin:/bin";
  int found_noexec = 0;
  while (*path) {
    size_t n = strcspn(path, ":");
    char cand[PATH_MAX];
    snprintf(cand, sizeof cand, "%.*s/%s", (int)(n ? n : 1), n ? path : ".", prog);
    struct stat st;
    if (stat(cand, &st) == 0 && S_ISREG(st.st_mode)) {
      if (access(cand, X_OK) == 0) {
        util_strlcpy(out, cand, len);
        return GPL_OK;
      }
      found_noexec = 1;
      util_strlcpy(out, cand, len);
    }
    path += n;
    if (*path == ':') path++;
  }
  return found_noexec ? GPL_ESYS : GPL_ENOENT;
}

int sup_locate(const char *prog, const char *path_env, const char *workdir, char *out, size_t len,
               int *wd_errno) {
  *wd_errno = 0;
  if (workdir && *workdir) {
    struct stat st;
    if (stat(workdir, &st) < 0) *wd_errno = errno;
    else if (!S_ISDIR(st.st_mode)) *wd_errno = ENOTDIR;
    if (*wd_errno) return GPL_ECONFIG;
    if (strchr(prog, '/') && prog[0] != '/') {
      char full[PATH_MAX];
      snprintf(full, sizeof full, "%s/%s", workdir, prog);
      return sup_resolve(full, path_env, out, len);
    }
  }
  return sup_resolve(prog, path_env, out, len);
}

const char *sup_locate_reason(const char *prog, int rc) {
  if (rc == GPL_ENOENT) return strchr(prog, '/') ? "no such file" : "not found in PATH";
  return "not executable";
}

/* ---- the program ---- */

static void on_kill_timeout(uv_timer_t *t);

static void kill_group(sup_t *s, int sig) {
  /* SIGKILL goes through the reaper (gpulaunch-exec), which kills every descendant, also those
   * that left the group; the group's own SIGKILL would kill the reaper first. If the reaper does
   * not end soon, the kill timer kills the group directly. */
  if (sig == SIGKILL && s->running && !s->reap_asked && reap_request(s->pid) == 0) {
    s->reap_asked = 1;
    uv_timer_start(&s->kill_timer, on_kill_timeout, 2000, 0);
    return;
  }
  if (s->pid > 0 && kill(-s->pid, sig) < 0 && errno == ESRCH) {
    /* The group is empty; the leader may still be a zombie waiting for libuv. */
    if (s->running) kill(s->pid, sig);
  }
}

static void poll_pace(sup_t *s, int busy);

/* When this rank's program failed, as far as can be seen from here: the time of its last output
 * line when that came shortly before its end (a program says why it fails, then tears down:
 * Python's finalisation, CUDA's and NCCL's teardown close its connections only afterwards, and
 * its peers fail of that at once, often ending before it), else the time it ended. */
static double fail_time(const sup_t *s) {
  if (s->t_line > 0 && s->t_line <= s->t_end && s->t_end - s->t_line <= FAIL_WINDOW_S) return s->t_line;
  return s->t_end;
}

static void send_event(sup_t *s, int type, int flags) {
  ctl_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = type;
  m.rank = s->job->rank;
  m.attempt = s->attempt;
  m.status = (int)s->status;
  m.signo = s->term_signal;
  m.flags = flags;
  m.t_fail = fail_time(s);
  m.peak_mem_mib = s->o->hooks.peak_mem_mib ? s->o->hooks.peak_mem_mib(s->o->hooks.arg) : -1;
  util_strlcpy(m.host, s->job->host, sizeof m.host);
  output_tail(&s->out, m.tail, sizeof m.tail);
  /* The tail is quoted in the root-cause report: no credential the program printed goes with it
   * (this rank's environment is the program's, so its secret values are known here). */
  char *clean = m.tail[0] ? redact_text(m.tail, strlen(m.tail)) : NULL;
  if (clean) {
    util_strlcpy(m.tail, clean, sizeof m.tail);
    free(clean);
  }
  if (type == CTL_EV_SIGNAL) m.signo = s->sig_received;
  ctl_send(&s->ctl, 0, &m);
  poll_pace(s, 1);
}

static void on_handle_closed(uv_handle_t *h) {
  sup_t *s = h->loop->data;
  s->open_handles--;
}

static void close_if_open(sup_t *s, uv_handle_t *h) {
  if (!uv_is_closing(h)) uv_close(h, on_handle_closed);
  (void)s;
}

/* ---- output forwarded to rank 0 ---- */

static void fwd_flush(sup_t *s, int i) {
  if (!s->fwd[i].len) return;
  ctl_send_output(&s->ctl, i, s->fwd[i].s, s->fwd[i].len);
  strbuf_reset(&s->fwd[i]);
}

static void fwd_sink(void *arg, int is_err, const char *data, size_t len) {
  sup_t *s = arg;
  strbuf_append_n(&s->fwd[is_err], data, len);
  if (s->fwd[is_err].len >= FWD_CHUNK) fwd_flush(s, is_err);
}

static void hang_take(sup_t *s, int src, const char *data, size_t len);

static void on_forwarded(void *arg, int src, int is_err, const char *data, size_t len) {
  sup_t *s = arg;
  if (is_err == CTL_OUT_STACKS) {
    hang_take(s, src, data, len);
    return;
  }
  if (s->q) outq_write(s->q, is_err ? 2 : 1, data, len);
  else output_write_all(is_err ? STDERR_FILENO : STDOUT_FILENO, data, len);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

/* Backpressure: when rank 0 falls behind, or our own stdout does (its reader is slow), stop
 * reading the program's output (it then blocks in write) rather than buffering without bound. */
static void fwd_throttle(sup_t *s) {
  /* Once the program has exited, its pipes are drained whatever the backlog; so they are once it
   * was told to stop: a program blocked in write could not write its checkpoint in the grace. */
  int over = !s->exited && !s->forwarded && (s->ctl.out_inflight > FWD_MAX_INFLIGHT ||
                            (s->q && outq_backlog(s->q) > OUTQ_HIGH));
  if (over == s->paused) return;
  s->paused = over;
  for (int i = 0; i < 2; i++) {
    uv_stream_t *st = (uv_stream_t *)&s->pipes[i];
    if (uv_is_closing((uv_handle_t *)st)) continue;
    if (over) uv_read_stop(st);
    else uv_read_start(st, on_alloc, on_read);
  }
}

/* The program of this attempt is gone and its output passed on: tell the coordinator. */
static void report(sup_t *s) {
  if (s->reported) return;
  s->reported = 1;
  uv_timer_stop(&s->drain_timer);
  uv_timer_stop(&s->kill_timer);
  uv_timer_stop(&s->tick_timer);
  for (int i = 0; i < 2; i++) {
    if (!uv_is_closing((uv_handle_t *)&s->pipes[i])) {
      output_flush(&s->out, i);
      uv_read_stop((uv_stream_t *)&s->pipes[i]);
      close_if_open(s, (uv_handle_t *)&s->pipes[i]);
    }
    fwd_flush(s, i); /* the output goes before the event, and arrives before it */
  }
  /* Leave no orphans: whatever the program started in its group goes with it. */
  if (s->pid > 0) kill(-s->pid, SIGKILL);
  int flags = 0;
  if (s->o->hooks.oom_seen && s->o->hooks.oom_seen(s->o->hooks.arg)) flags |= CTL_F_OOM;
  if (s->forwarded || s->sig_received) flags |= CTL_F_AFTER_SIGNAL;
  if (s->spawn_failed) flags |= CTL_F_SPAWN_FAILED;
  LOG_INFO(SUP, "attempt %d: program ended (status %lld, signal %d)%s", s->attempt,
           (long long)s->status, s->term_signal, s->stop_requested ? " after stop" : "");
  live_set_child(s->live, 0);
  if (s->live_lost) { /* the job is ending without the coordinator (launcher/live/liveness.c) */
    s->done = 1;
    uv_stop(&s->loop);
    return;
  }
  send_event(s, s->stop_requested ? CTL_EV_STOPPED : CTL_EV_EXIT, flags);
}

static int pipes_closed(sup_t *s) {
  return uv_is_closing((uv_handle_t *)&s->pipes[0]) && uv_is_closing((uv_handle_t *)&s->pipes[1]);
}

static void on_drain_timeout(uv_timer_t *t) {
  sup_t *s = t->loop->data;
  uv_timer_stop(t);
  LOG_INFO(SUP, "output still open %d ms after the program ended (a child of it holds it)", DRAIN_MS);
  report(s);
}

static void on_child_exit(uv_process_t *p, int64_t status, int term_signal) {
  sup_t *s = p->loop->data;
  s->running = 0;
  s->exited = 1;
  s->t_end = util_wall_now();
  s->status = status;
  s->term_signal = term_signal;
  uv_timer_stop(&s->kill_timer);
  if (s->paused) fwd_throttle(s); /* resume reading to drain */
  close_if_open(s, (uv_handle_t *)p);
  if (pipes_closed(s)) report(s);
  else uv_timer_start(&s->drain_timer, on_drain_timeout, DRAIN_MS, DRAIN_MS);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  static char mem[2][65536];
  sup_t *s = h->loop->data;
  int i = h == (uv_handle_t *)&s->pipes[1];
  (void)suggested;
  buf->base = mem[i];
  buf->len = sizeof mem[i];
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  sup_t *s = st->loop->data;
  int i = st == (uv_stream_t *)&s->pipes[1];
  if (nread > 0) {
    if (s->q) outq_poll(s->q); /* our own messages first, where they were written */
    output_feed(&s->out, i, buf->base, (size_t)nread);
    if (s->q && !s->paused && outq_backlog(s->q) > OUTQ_HIGH) fwd_throttle(s);
    /* After the exit, the drain deadline counts idle time, not reading time. */
    if (s->exited) uv_timer_again(&s->drain_timer);
    return;
  }
  if (nread == 0) return;
  /* EOF or error: this stream is finished. */
  output_flush(&s->out, i);
  uv_read_stop(st);
  close_if_open(s, (uv_handle_t *)st);
  if (s->exited && pipes_closed(s)) report(s);
}

static void on_kill_timeout(uv_timer_t *t) {
  sup_t *s = t->loop->data;
  if (!s->running) return;
  if (s->reap_asked) { /* the reaper did not end its tree in time: the group, directly */
    LOG_WARN("rank %d: the program's reaper did not end; SIGKILL to its process group", s->job->rank);
    kill(-s->pid, SIGKILL);
    kill(s->pid, SIGKILL);
    return;
  }
  LOG_WARN("rank %d: program did not end after the grace period; sending SIGKILL", s->job->rank);
  kill_group(s, SIGKILL);
}

static void on_tick(uv_timer_t *t) {
  sup_t *s = t->loop->data;
  if (s->running && s->o->hooks.tick) s->o->hooks.tick(s->o->hooks.arg);
}

static void on_line(void *arg, int is_err, const char *line, size_t len) {
  sup_t *s = arg;
  s->t_line = util_wall_now();
  prog_line(s->o->progress, line, len);
  if (s->o->hooks.line) s->o->hooks.line(s->o->hooks.arg, is_err, line, len);
}

static void spawn(sup_t *s) {
  s->spawned = 1;
  s->exited = s->reported = s->running = s->spawn_failed = 0;
  s->stop_requested = 0;
  s->forwarded = 0;
  s->reap_asked = 0;
  s->paused = 0;
  s->status = 0;
  s->term_signal = 0;
  s->t_end = s->t_line = 0;
  s->pid = 0;
  output_clear_tail(&s->out);
  prog_reset(s->o->progress);
  s->attempt_t0 = util_now();

  char **envp = NULL;
  int rc = s->o->make_env(s->o->env_arg, s->attempt, &envp);
  int argc = 0;
  while (s->o->argv[argc]) argc++;
  char **args = calloc((size_t)argc + 3, sizeof *args);
  char ppid[32];
  snprintf(ppid, sizeof ppid, "%ld", (long)getpid());
  if (args) {
    args[0] = s->exec_path;
    args[1] = ppid;
    for (int i = 0; i < argc; i++) args[i + 2] = s->o->argv[i];
  }
  uv_pipe_init(&s->loop, &s->pipes[0], 0);
  uv_pipe_init(&s->loop, &s->pipes[1], 0);
  s->open_handles += 2;
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_IGNORE;
  stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[1].data.stream = (uv_stream_t *)&s->pipes[0];
  stdio[2].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[2].data.stream = (uv_stream_t *)&s->pipes[1];
  uv_process_options_t po;
  memset(&po, 0, sizeof po);
  po.file = s->exec_path;
  po.args = args;
  po.env = envp;
  po.cwd = s->o->workdir && *s->o->workdir ? s->o->workdir : NULL;
  po.flags = UV_PROCESS_DETACHED; /* its own session and process group: signals reach its children */
  po.exit_cb = on_child_exit;
  po.stdio_count = 3;
  po.stdio = stdio;
  if (rc == GPL_OK && args) rc = uv_spawn(&s->loop, &s->proc, &po);
  else rc = UV_ENOMEM;
  if (rc == 0) {
    s->open_handles++;
    s->running = 1;
    s->pid = s->proc.pid;
    live_set_child(s->live, s->pid);
    uv_read_start((uv_stream_t *)&s->pipes[0], on_alloc, on_read);
    uv_read_start((uv_stream_t *)&s->pipes[1], on_alloc, on_read);
    if (s->o->hooks.tick && s->o->hooks.interval > 0) {
      uint64_t ms = (uint64_t)(s->o->hooks.interval * 1000);
      uv_timer_start(&s->tick_timer, on_tick, ms ? ms : 1, ms ? ms : 1);
    }
    LOG_INFO(SUP, "attempt %d: started %s (pid %d)", s->attempt, s->o->argv[0], (int)s->pid);
  } else {
    char msg[512];
    snprintf(msg, sizeof msg, "gpulaunch: cannot start '%s': %s", s->o->argv[0], uv_strerror(rc));
    log_print("%s\n", msg);
    output_feed(&s->out, 1, msg, strlen(msg));
    output_flush(&s->out, 1);
    close_if_open(s, (uv_handle_t *)&s->pipes[0]);
    close_if_open(s, (uv_handle_t *)&s->pipes[1]);
    s->spawn_failed = 1;
    s->exited = 1;
    s->t_end = util_wall_now();
    s->status = 127;
    report(s);
  }
  free(args);
  if (envp) {
    for (char **e = envp; *e; e++) free(*e);
    free(envp);
  }
}

/* ---- signals received by gpulaunch ---- */

static int sig_index(int signum) {
  for (int i = 0; i < NSIGS; i++)
    if (g_signals[i] == signum) return i;
  return 0;
}

/* Deliver a stop signal to the program, once, and SIGKILL it after grace seconds. */
static void deliver_stop(sup_t *s, int sig, double grace, int by_rm) {
  uv_timer_stop(&s->rm_timer);
  if (s->forwarded || !s->running) return;
  if (!by_rm) kill_group(s, sig);
  s->forwarded = 1;
  uv_timer_start(&s->kill_timer, on_kill_timeout, (uint64_t)(grace * 1000), 0);
}

/* A stop the coordinator asked for because Slurm signalled the step: this rank's program gets
 * Slurm's signal itself, any moment now; if it did not come, gpulaunch delivers the stop. */
static void on_rm_wait(uv_timer_t *t) {
  sup_t *s = t->loop->data;
  if (s->forwarded || !s->running) return;
  LOG_INFO(SUP, "Slurm's signal did not reach this rank; sending %s to the program",
           util_signal_name(s->stop_signo));
  deliver_stop(s, s->stop_signo, GPL_MAX(0.0, s->stop_grace - RM_WAIT_MS / 1000.0), 0);
}

static void take_stop(sup_t *s, int signum, int by_rm, const char *via);

static void on_signal(uv_signal_t *h, int signum) {
  sup_t *s = h->loop->data;
  sigorigin_t from;
  sigorigin_get(signum, &from);
  double now = util_now();
  int i = sig_index(signum);
  /* Under srun Slurm signals every process of the step, the program included: delivering the
   * signal again would give the program two. A copy relayed right after (mpirun's daemon, a batch
   * script's trap) is the same signal. */
  int by_rm = slurm_signal_reached_program(&from);
  int relayed = !by_rm && s->rm_sig_at[i] > 0 && now - s->rm_sig_at[i] < RELAY_S;
  if (by_rm) s->rm_sig_at[i] = now;
  LOG_INFO(SUP, "%s from pid %d (%s)%s", util_signal_name(signum), (int)from.pid,
           from.comm[0] ? from.comm : "?", by_rm ? ": Slurm signalled the whole step" :
           relayed ? ": a copy of the one Slurm delivered" : "");
  if (signum == SIGUSR1 || signum == SIGUSR2) {
    if (by_rm || relayed) {
      LOG_INFO(SUP, "%s reached the program from Slurm: not forwarded again", util_signal_name(signum));
      return;
    }
    LOG_INFO(SUP, "forwarding %s to the program", util_signal_name(signum));
    if (s->running) kill_group(s, signum);
    return;
  }
  if (s->sig_received) {
    /* A second SIGINT from a person (Ctrl-C twice): do not wait any longer. Repeated SIGTERMs
     * (Slurm sends two at a time limit; mpirun and Slurm both send one) keep the grace. */
    if (signum == SIGINT && s->sig_received == SIGINT && !by_rm && !relayed && s->running)
      kill_group(s, SIGKILL);
    if (by_rm && s->running && !s->forwarded) deliver_stop(s, signum, s->o->grace, 1);
    return;
  }
  /* Plain mpirun (its own SIGTERM, relayed by it or its daemon) SIGKILLs the ranks a second
   * later whatever they do: say so with the stop, as the one explanation of what follows. */
  int by_mpirun = !by_rm && !relayed && s->launcher_ppid && from.pid == s->launcher_ppid &&
                  !slurm_in_job() && getenv("OMPI_COMM_WORLD_RANK");
  take_stop(s, signum, by_rm || relayed, by_mpirun ? "mpirun" : NULL);
}

/* A SIGTERM/SIGINT for the job, first of its kind here: from a signal, or from gpulaunch-run
 * through the front-end channel (via "gpulaunch-run"); via "mpirun": plain mpirun's own. */
static void take_stop(sup_t *s, int signum, int by_rm, const char *via) {
  s->sig_received = signum;
  s->sig_by_rm = by_rm;
  int fwd = signum == SIGTERM ? s->o->preempt_signal : signum;
  /* Said at once: under mpirun the launcher's own SIGKILL may follow within a second. Why the job
   * stops (preemption, a cancel, a rank that died) is said once the coordinator knows. */
  if (s->job->rank == 0) {
    if (s->sig_by_rm)
      log_print("gpulaunch: %s from Slurm, which sent it to every program of the step: "
              "stopping the job; SIGKILL after %.0f s\n", util_signal_name(signum), s->o->grace);
    else
      log_print("gpulaunch: %s received%s: stopping the job; every program gets %s now, "
              "SIGKILL after %.0f s\n", util_signal_name(signum),
              via && strcmp(via, "gpulaunch-run") == 0 ? " by gpulaunch-run" : "",
              util_signal_name(fwd), s->o->grace);
    s->stop_by_mpirun = via && strcmp(via, "mpirun") == 0;
    if (s->stop_by_mpirun)
      log_print("gpulaunch: the %s came from mpirun, which SIGKILLs every rank "
              "odls_base_sigkill_timeout (1 s) after it: plain mpirun gives the programs no grace; "
              "start the job as `gpulaunch-run [mpirun options] gpulaunch ...` (README, "
              "\"Signals under mpirun\")\n", util_signal_name(signum));
    if (s->sig_by_rm && fwd != signum)
      log_print("gpulaunch: [job] preempt_signal = %s is not sent on top of Slurm's %s; to "
              "have Slurm send it: sbatch --signal=%s@SECONDS, scancel --signal=%s\n",
              util_signal_name(fwd), util_signal_name(signum), util_signal_name(fwd) + 3,
              util_signal_name(fwd) + 3);
  }
  if (s->running) {
    LOG_INFO(SUP, "%s received: %s, SIGKILL in %.1f s", util_signal_name(signum),
             s->sig_by_rm ? "the program got it from Slurm" : "sending the program the stop signal",
             s->o->grace);
    deliver_stop(s, fwd, s->o->grace, s->sig_by_rm);
  }
  send_event(s, CTL_EV_SIGNAL, s->sig_by_rm ? CTL_F_BY_RM : 0);
}

/* gpulaunch-run (rank 0 only) asks for a stop: the user's SIGTERM/SIGINT, as if gpulaunch had
 * received it (a second SIGINT kills at once, as a second Ctrl-C does). */
static void on_front(uv_poll_t *h, int status, int events) {
  sup_t *s = h->loop->data;
  (void)events;
  int sig;
  while ((sig = status < 0 ? -1 : frontch_read(&s->front)) > 0) {
    LOG_INFO(SUP, "gpulaunch-run asks for a stop (%s)", util_signal_name(sig));
    if (!s->sig_received) take_stop(s, sig, 0, "gpulaunch-run");
    else if (sig == SIGINT && s->sig_received == SIGINT && s->running) kill_group(s, SIGKILL);
  }
  if (sig < 0) {
    frontch_close(&s->front);
    uv_poll_stop(h);
  }
}

/* ---- coordinator (rank 0) ---- */

static int job_code(const ctl_msg_t *m) {
  if (m->flags & CTL_F_HANG) return GPL_EXIT_HANG;
  if (m->signo) return 128 + m->signo;
  if (m->status > 0 && m->status < 256) return m->status;
  return 1;
}

static void describe(const ctl_msg_t *m, char *buf, size_t len) {
  if (m->flags & CTL_F_HANG)
    util_strlcpy(buf, m->tail, len);
  else if (m->flags & CTL_F_SPAWN_FAILED)
    snprintf(buf, len, "rank %d (host %s) could not start its program", m->rank, m->host);
  else if (m->signo)
    snprintf(buf, len, "rank %d (host %s) killed by signal %s", m->rank, m->host,
             util_signal_name(m->signo));
  else
    snprintf(buf, len, "rank %d (host %s) exited with status %d", m->rank, m->host, m->status);
  if (m->flags & CTL_F_OOM) {
    size_t n = strlen(buf);
    if (m->peak_mem_mib >= 0)
      snprintf(buf + n, len - n, ": CUDA out of memory (peak GPU memory seen %.0f MiB)", m->peak_mem_mib);
    else
      snprintf(buf + n, len - n, ": CUDA out of memory");
  }
}

static void print_tail(const ctl_msg_t *m) {
  if (!m->tail[0] || (m->flags & CTL_F_HANG)) return;
  log_print("gpulaunch: last lines of rank %d's stderr:\n", m->rank);
  const char *p = m->tail;
  while (*p) {
    size_t n = strcspn(p, "\n");
    log_print("    %.*s\n", (int)n, p);
    p += n;
    if (*p) p++;
  }
}

static void co_broadcast(sup_t *s, int type, int signo, int flags, int code) {
  ctl_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = type;
  m.attempt = s->co.attempt;
  m.signo = signo;
  m.flags = flags;
  m.code = code;
  m.rank = -1;
  if (type == CTL_EXIT) {
    if (s->co.have_cause) {
      m = s->co.cause; /* who failed, how, and its last lines */
      m.type = CTL_EXIT;
      m.code = code;
    }
    if (s->co.verdict == VERDICT_PREEMPTED) m.flags |= CTL_F_PREEMPTED;
    if (s->co.verdict == VERDICT_INTERRUPTED) m.flags |= CTL_F_INTERRUPTED;
    if (s->co.verdict == VERDICT_CANCELLED) m.flags |= CTL_F_CANCELLED;
  }
  ctl_broadcast(&s->ctl, &m);
}

static void co_stop_all(sup_t *s, int signo, int flags) {
  s->co.failing = 1;
  double t = (flags & CTL_F_USE_GRACE) ? s->o->grace : s->o->stop_timeout;
  s->co.deadline = util_now() + t + STOP_MARGIN_S;
  co_broadcast(s, CTL_STOP, signo, flags, 0);
}

/* Why the job stops after a SIGTERM/SIGINT, said once it is known: every rank has been heard
 * from (a rank that never reports may be gone, and then it is not a preemption: mpirun tears a
 * job down with SIGTERM when a rank died), and under Slurm, Slurm's own reason is in (a user's
 * scancel is not a preemption). 1 when decided. */
static int co_verdict(sup_t *s) {
  co_t *co = &s->co;
  if (co->verdict) return 1;
  if (!co->sig || co->have_cause) return 0;
  for (int r = 0; r < s->job->size; r++)
    if (!co->sig_seen[r] && !co->down[r]) return 0;
  if (!slurm_end_query_done(&co->end) && util_now() - co->sig_t0 < QUERY_S) return 0;
  const char *from = co->sig_by_rm ? " from Slurm" : " received";
  const char *why = slurm_end_describe(co->end);
  if (co->sig == SIGINT) {
    co->verdict = VERDICT_INTERRUPTED;
    log_print("gpulaunch: job interrupted by SIGINT%s; every program is stopped (exit status %d)\n",
            co->sig_by_rm ? " (from Slurm: srun's Ctrl-C)" : "", 128 + SIGINT);
  } else if (slurm_end_is_preemption(co->end)) {
    co->verdict = VERDICT_PREEMPTED;
    if (s->stop_by_mpirun)
      log_print("gpulaunch: job preempted: SIGTERM from mpirun; mpirun ends every program itself, "
              "within about a second (its exit status is its own, not %d)\n", GPL_EXIT_PREEMPTED);
    else if (co->sig_by_rm)
      log_print("gpulaunch: job preempted: SIGTERM%s%s%s; every program got SIGTERM from "
              "Slurm and is stopped within %.0f s (exit status %d: requeue the job)\n", from,
              *why ? ": " : "", why, s->o->grace, GPL_EXIT_PREEMPTED);
    else
      log_print("gpulaunch: job preempted: SIGTERM%s%s%s; every program got %s and is "
              "stopped within %.0f s (exit status %d: requeue the job)\n", from, *why ? ": " : "",
              why, util_signal_name(s->o->preempt_signal), s->o->grace, GPL_EXIT_PREEMPTED);
  } else {
    co->verdict = VERDICT_CANCELLED;
    log_print("gpulaunch: job cancelled, not preempted: SIGTERM%s: %s; every program is "
            "stopped (exit status %d; nothing to requeue)\n", from, why, 128 + SIGTERM);
  }
  return 1;
}

static void co_finish_attempt(sup_t *s) {
  co_t *co = &s->co;
  int size = s->job->size;
  char what[1400];
  if (co->sig && !co->have_cause) {
    if (!co_verdict(s)) {
      co->finish_pending = 1; /* Slurm's reason is still on its way (on_poll tries again) */
      return;
    }
    co->finish_pending = 0;
    co->finished = 1;
    int code = co->verdict == VERDICT_PREEMPTED   ? GPL_EXIT_PREEMPTED
               : co->verdict == VERDICT_CANCELLED ? 128 + SIGTERM
                                                  : 128 + SIGINT;
    co_broadcast(s, CTL_EXIT, 0, 0, code);
    return;
  }
  if (!co->have_cause) { /* every rank ended cleanly */
    co->finished = 1;
    co_broadcast(s, CTL_EXIT, 0, 0, 0);
    return;
  }
  describe(&co->cause, what, sizeof what);
  if (co->attempt < s->o->restarts && !(co->cause.flags & CTL_F_HANG)) {
    log_print("gpulaunch: %s; restarting all %d ranks (restart %d of %d)\n", what, size,
            co->attempt + 1, s->o->restarts);
    print_tail(&co->cause);
    co->attempt++;
    memset(co->down, 0, (size_t)size);
    co->ndown = co->nok = co->nfailed = 0;
    co->failing = 0;
    co->have_cause = 0;
    co_broadcast(s, CTL_START, 0, 0, 0);
    return;
  }
  co->finished = 1;
  int code = job_code(&co->cause);
  log_print("gpulaunch: %s\n", what);
  print_tail(&co->cause);
  int also = co->nfailed > 1 ? co->nfailed - 1 : 0, stopped = size - 1 - also - co->nok;
  if (size > 1 && also)
    log_print("gpulaunch: job failed after %d attempt%s (exit status %d); %d other rank%s failed after "
              "it, %d %s stopped\n", co->attempt + 1, co->attempt ? "s" : "", code, also,
              also == 1 ? "" : "s", stopped < 0 ? 0 : stopped, stopped == 1 ? "was" : "were");
  else if (size > 1)
    log_print("gpulaunch: job failed after %d attempt%s (exit status %d); the other %d rank%s stopped\n",
            co->attempt + 1, co->attempt ? "s" : "", code, size - 1, size == 2 ? " was" : "s were");
  else
    log_print("gpulaunch: job failed after %d attempt%s (exit status %d)\n", co->attempt + 1,
            co->attempt ? "s" : "", code);
  co_broadcast(s, CTL_EXIT, 0, 0, code);
}

static void co_event(sup_t *s, const ctl_msg_t *m) {
  co_t *co = &s->co;
  if (co->finished) return;
  if (m->type == CTL_EV_SIGNAL) {
    if (m->rank >= 0 && m->rank < s->job->size) co->sig_seen[m->rank] = 1;
    /* A job that is already failing stays failed; a second signal changes nothing. */
    if (co->sig || co->have_cause) {
      co_verdict(s);
      return;
    }
    co->sig = m->signo == SIGINT ? SIGINT : SIGTERM;
    co->sig_by_rm = (m->flags & CTL_F_BY_RM) != 0;
    co->sig_t0 = util_now();
    if (co->sig == SIGTERM) slurm_end_query_start(&s->loop, QUERY_S);
    LOG_INFO(SUP, "rank %d received %s%s: stopping every rank", m->rank, util_signal_name(m->signo),
             co->sig_by_rm ? " from Slurm" : "");
    co_stop_all(s, co->sig == SIGINT ? SIGINT : s->o->preempt_signal,
                CTL_F_USE_GRACE | (co->sig_by_rm ? CTL_F_BY_RM : 0));
    co_verdict(s);
    return;
  }
  if (m->attempt != co->attempt || m->rank < 0 || m->rank >= s->job->size) return;
  if (co->down[m->rank]) return;
  co->down[m->rank] = 1;
  co->ndown++;
  int clean = m->status == 0 && m->signo == 0 && !(m->flags & CTL_F_SPAWN_FAILED);
  if (m->type == CTL_EV_EXIT && clean) co->nok++;
  /* A program ending of a signal the job got (or one the coordinator sent) is no cause. */
  if (m->type == CTL_EV_EXIT && !clean && !co->sig && !(m->flags & CTL_F_AFTER_SIGNAL)) {
    co->nfailed++;
    if (!co->have_cause && !co->failing) {
      co->cause = *m;
      co->have_cause = 1;
      co->settle_until = util_now() + SETTLE_S;
    } else if (co->have_cause && !(co->cause.flags & CTL_F_HANG) && m->t_fail < co->cause.t_fail) {
      /* Failures on their own, reported in another order than they happened: a crash makes its
       * peers fail ("connection closed by peer") within milliseconds, and as the crashed program
       * is still tearing down, they often end and report first. The cause is the program that
       * failed first (fail_time). */
      LOG_INFO(SUP, "rank %d failed %.3f s before rank %d: it is the first failure", m->rank,
               co->cause.t_fail - m->t_fail, co->cause.rank);
      co->cause = *m;
    }
  }
  if (co->ndown == s->job->size) {
    co->settle_until = 0;
    co_finish_attempt(s);
  }
}

/* The first failure was reported SETTLE_S ago: the ranks not yet down are stopped; the cause is
 * the earliest failure heard of by the end. */
static void co_check_settled(sup_t *s) {
  co_t *co = &s->co;
  if (co->settle_until <= 0 || co->finished) return;
  if (util_now() < co->settle_until) return;
  co->settle_until = 0;
  char what[1400];
  describe(&co->cause, what, sizeof what);
  LOG_INFO(SUP, "%s: stopping every rank", what);
  co_stop_all(s, SIGTERM, 0);
}

static void co_check_deadline(sup_t *s) {
  co_t *co = &s->co;
  if (!co->failing || co->finished || util_now() < co->deadline) return;
  char names[2048] = "";
  size_t off = 0;
  for (int r = 0; r < s->job->size && off < sizeof names - 80; r++) {
    if (co->down[r]) continue;
    char n[300];
    off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", off ? ", " : "",
                            mpix_rank_name(r, n, sizeof n));
  }
  /* A rank that never reported is missing (its gpulaunch or its host is gone): whatever signal
   * came, that is not a clean preemption to requeue. */
  int code = co->have_cause ? job_code(&co->cause) : GPL_EXIT_TIMEOUT;
  if (co->have_cause) {
    char what[1400];
    describe(&co->cause, what, sizeof what);
    log_print("gpulaunch: %s\n", what);
    print_tail(&co->cause);
  }
  log_print("gpulaunch: %s did not report that their program stopped; aborting the job\n", names);
  fflush(stderr);
  outq_stop(s->q, 1.0); /* what is queued goes out before the abort */
  s->q = NULL;
  frontch_exit(&s->front, code);
  job_abort(s->job, code); /* MPI_Abort, or (a job of one, maybe without MPI) exit */
}


/* ---- the hang watchdog ---- */

/* The liveness thread's side (live_opts_t.progress): this rank's age for its frames, and on rank
 * 0 the others' ages as their frames say. */
static int32_t live_progress(void *arg, int from, int32_t age_ms) {
  sup_t *s = arg;
  if (from < 0) {
    double a = prog_age(s->o->progress);
    return a < 0 ? -1 : (int32_t)GPL_MIN(a * 1000, 2e9);
  }
  if (s->peer_prog && from < s->job->size) {
    uint64_t now = util_now_ns(), age = (uint64_t)age_ms * 1000000ull;
    __atomic_store_n(&s->peer_prog[from], now > age ? now - age : 1, __ATOMIC_RELAXED);
  }
  return 0;
}

static void hang_work_cb(uv_work_t *w) {
  sup_t *s = w->data;
  s->hang_text = hang_collect(s->hang_pid, HANG_COLLECT_S);
}

static void hang_after_cb(uv_work_t *w, int status) {
  sup_t *s = w->data;
  (void)status;
  /* The report is shared: no credential in the program's command line or stack goes with it
   * (this rank's environment is the program's, so its secret values are known here). */
  char *clean = s->hang_text ? redact_text(s->hang_text, strlen(s->hang_text)) : NULL;
  const char *t = clean ? clean : s->hang_text ? s->hang_text : "@@none out of memory\n";
  ctl_send_output(&s->ctl, CTL_OUT_STACKS, t, strlen(t));
  free(clean);
  free(s->hang_text);
  s->hang_text = NULL;
  s->hang_collecting = 0;
  poll_pace(s, 1);
}

/* Every rank, on CTL_HANG: collect the program's stacks off the loop, then send them to rank 0. */
static void hang_collect_start(sup_t *s) {
  if (s->hang_collecting) return;
  s->hang_collecting = 1;
  s->hang_pid = s->running && !s->exited ? (int)s->pid : 0;
  s->hang_work.data = s;
  LOG_INFO(SUP, "hang: collecting the stacks of the program (pid %d)", s->hang_pid);
  if (uv_queue_work(&s->loop, &s->hang_work, hang_work_cb, hang_after_cb) < 0) {
    s->hang_text = NULL;
    hang_after_cb(&s->hang_work, 0);
  }
}

/* Rank 0: a rank's stacks arrived. */
static void hang_take(sup_t *s, int src, const char *data, size_t len) {
  if (!s->hang_active || !s->hang_texts || src < 0 || src >= s->job->size || s->hang_texts[src]) return;
  char *t = malloc(len + 1);
  if (!t) return;
  memcpy(t, data, len);
  t[len] = 0;
  s->hang_texts[src] = t;
  s->hang_got++;
}

static void hang_free_texts(sup_t *s) {
  for (int r = 0; s->hang_texts && r < s->job->size; r++) {
    free(s->hang_texts[r]);
    s->hang_texts[r] = NULL;
  }
  s->hang_got = 0;
}

/* Rank 0: a rank without progress for hang_timeout declares the hang; every rank collects. */
static void co_hang_check(sup_t *s) {
  co_t *co = &s->co;
  if (s->hang_timeout <= 0 || s->hang_active || co->failing || co->have_cause || co->finished ||
      co->sig || !s->running || s->exited)
    return;
  int size = s->job->size;
  uint64_t now = util_now_ns();
  double floor_s = GPL_MAX(s->attempt_t0, s->hang_rearm), nows = (double)now / 1e9;
  int nsilent = 0, first = -1;
  double longest = 0;
  for (int r = 0; r < size; r++) {
    double last;
    if (r == 0) last = nows - prog_age(s->o->progress);
    else last = (double)__atomic_load_n(&s->peer_prog[r], __ATOMIC_RELAXED) / 1e9;
    last = GPL_MAX(last, floor_s);
    s->hang_silent[r] = nows - last;
    if (s->hang_silent[r] >= s->hang_timeout) {
      nsilent++;
      if (first < 0 || s->hang_silent[r] > longest) first = r;
      longest = GPL_MAX(longest, s->hang_silent[r]);
    }
  }
  if (!nsilent) return;
  s->hang_active = 1;
  s->hang_t0 = util_now();
  hang_free_texts(s);
  char n[300];
  if (nsilent == size)
    log_print("gpulaunch: hang: no rank made progress for %.0f s ([job] hang_timeout); collecting every "
              "rank's stacks (%.0f s at most)\n", longest, HANG_WAIT_S);
  else
    log_print("gpulaunch: hang: %d of %d ranks made no progress for %.0f s ([job] hang_timeout), "
              "the longest %s; collecting every rank's stacks (%.0f s at most)\n", nsilent, size,
              longest, mpix_rank_name(first, n, sizeof n), HANG_WAIT_S);
  co_broadcast(s, CTL_HANG, 0, 0, 0);
}

/* Rank 0: the stacks are in (or the wait is over): the verdict, the report, then the job ends
 * (or, hang_action = report, goes on). */
static void co_hang_finish(sup_t *s) {
  int size = s->job->size;
  hang_rank_t *hr = calloc((size_t)size, sizeof *hr);
  int *odd = calloc((size_t)size, sizeof *odd);
  hang_verdict_t v;
  memset(&v, 0, sizeof v);
  v.first_odd = -1;
  if (hr && odd) {
    for (int r = 0; r < size; r++)
      hr[r] = (hang_rank_t){r, s->job->hosts[r], s->hang_texts[r], s->hang_silent[r]};
    hang_analyze(hr, size, odd, &v);
    char txt[PATH_MAX], json[PATH_MAX];
    if (hang_write_report(s->o->hang_dir, hr, size, odd, &v, s->hang_timeout, txt, json, sizeof txt) == 0) {
      util_strlcpy(s->hang_report, txt, sizeof s->hang_report);
      log_print("gpulaunch: hang: %s\n", v.summary);
      log_print("gpulaunch: hang report (every rank's stacks): %s, %s\n", txt, json);
    } else {
      log_print("gpulaunch: hang: %s (the report could not be written)\n", v.summary);
    }
  }
  int who = v.first_odd >= 0 ? v.first_odd : 0;
  if (v.first_odd < 0)
    for (int r = 0; r < size; r++)
      if (s->hang_silent[r] > s->hang_silent[who]) who = r;
  char cause[3072];
  snprintf(cause, sizeof cause, "hang: no progress for %.0f s; %s", s->hang_timeout, v.summary);
  free(hr);
  free(odd);
  hang_free_texts(s);
  s->hang_active = 0;
  if (s->o->hang_report_only) {
    s->hang_rearm = util_now(); /* the next report: after another hang_timeout without progress */
    log_print("gpulaunch: hang: [job] hang_action = report: the job goes on\n");
    return;
  }
  co_t *co = &s->co;
  if (co->failing || co->have_cause || co->finished || co->sig)
    return; /* it ends for another reason already */
  memset(&co->cause, 0, sizeof co->cause);
  co->cause.type = CTL_EV_EXIT;
  co->cause.rank = who;
  co->cause.attempt = co->attempt;
  co->cause.flags = CTL_F_HANG;
  util_strlcpy(co->cause.host, s->job->hosts[who], sizeof co->cause.host);
  util_strlcpy(co->cause.tail, cause, sizeof co->cause.tail);
  co->have_cause = 1;
  log_print("gpulaunch: hang: ending the job (exit status %d)\n", GPL_EXIT_HANG);
  co_stop_all(s, SIGTERM, 0);
}

/* ---- commands from the coordinator ---- */

static void on_command(sup_t *s, const ctl_msg_t *m) {
  switch (m->type) {
    case CTL_STOP: {
      /* A program that had already ended on its own when the stop came is reported as it ended
       * (its output may still be draining): its failure may be the job's first. */
      if (!s->exited) s->stop_requested = 1;
      if (s->running && !s->exited) {
        double t = (m->flags & CTL_F_USE_GRACE) ? s->o->grace : s->o->stop_timeout;
        int sig = m->signo ? m->signo : SIGTERM;
        if (!s->forwarded && (m->flags & CTL_F_BY_RM) && slurm_in_job()) {
          /* Slurm signalled the step: this rank's program is about to get that signal itself. */
          s->stop_signo = sig;
          s->stop_grace = t;
          if (!uv_is_active((uv_handle_t *)&s->rm_timer))
            uv_timer_start(&s->rm_timer, on_rm_wait, RM_WAIT_MS, 0);
        } else if (!s->forwarded) {
          deliver_stop(s, sig, t, 0);
        }
      } else if (s->reported || !s->spawned) {
        send_event(s, CTL_EV_STOPPED, 0);
      }
      break;
    }
    case CTL_START:
      s->attempt = m->attempt;
      if (s->open_handles > 0) s->pending_start = 1;
      else spawn(s);
      break;
    case CTL_HANG:
      hang_collect_start(s);
      break;
    case CTL_EXIT:
      s->done = 1;
      s->exit_code = m->code;
      s->exit_msg = *m;
      uv_stop(&s->loop);
      break;
    default:
      break;
  }
}

/* Poll fast while the job is changing state (the end of a job is a few round trips between the
 * ranks and rank 0), slowly while it just runs. */
static void poll_pace(sup_t *s, int busy) {
  double now = util_now();
  if (busy) s->hot_until = now + HOT_S;
  uint64_t want = now < s->hot_until ? POLL_HOT_MS : POLL_MS;
  if (uv_timer_get_repeat(&s->poll_timer) != want) uv_timer_set_repeat(&s->poll_timer, want);
}

static void on_poll(uv_timer_t *t) {
  sup_t *s = t->loop->data;
  ctl_msg_t m;
  live_tick(s->live);
  if (s->launcher_ppid && getppid() != s->launcher_ppid) {
    /* mpirun (or srun's step) is gone: no coordinator will ever answer. Leave now; the reaper
     * sees us go and kills the program's whole tree. */
    log_print("gpulaunch %s: the launcher (pid %d) is gone; ending rank %d and its program\n",
            s->job->host, (int)s->launcher_ppid, s->job->rank);
    if (s->running) reap_request(s->pid);
    _exit(GPL_EXIT_INTERNAL);
  }
  if (s->q) outq_poll(s->q);
  ranklog_flush(&s->log);
  fwd_flush(s, 0);
  fwd_flush(s, 1);
  int busy = s->exited && !s->reported;
  while (!s->done && ctl_poll(&s->ctl, &m, on_forwarded, s)) {
    busy = 1;
    if (m.type >= CTL_STOP) on_command(s, &m);
    else if (s->job->rank == 0) co_event(s, &m);
  }
  poll_pace(s, busy);
  if (s->pending_start && s->open_handles == 0) {
    s->pending_start = 0;
    spawn(s);
  }
  if (s->o->progress && util_now() >= s->prog_poll_at) {
    prog_poll(s->o->progress);
    s->prog_poll_at = util_now() + 0.25;
  }
  if (s->job->rank == 0) {
    if (!s->hang_active) co_hang_check(s);
    else if (s->hang_got >= s->job->size || util_now() - s->hang_t0 > HANG_WAIT_S) co_hang_finish(s);
    if (s->co.sig && !s->co.verdict) co_verdict(s);
    if (s->co.finish_pending && co_verdict(s)) co_finish_attempt(s);
    co_check_settled(s);
    co_check_deadline(s);
  }
  if ((s->o->forward_output || s->q) && s->spawned && !s->reported) fwd_throttle(s);
}

/* ---- a lost rank (launcher/live/liveness.c) ---- */

static void live_describe(const sup_t *s, const live_event_t *ev, char *buf, size_t len) {
  const char *who = ev->who;
  switch (ev->why) {
    case LIVE_CLOSED:
      snprintf(buf, len, "%s: its gpulaunch died (its supervisor's connection closed without a goodbye)", who);
      break;
    case LIVE_SILENT:
      snprintf(buf, len, "%s: no heartbeat from %s supervisor for %.0f s (host down, network cut, or the "
               "supervisor hung)", who, ev->nlost > 1 ? "their" : "its", ev->silent_s);
      break;
    case LIVE_NEVER:
      snprintf(buf, len, "%s: its supervisor never reached its parent's in the liveness tree (rank 0 at "
               "%s) within %.0f s", who, s->o->master_addr ? s->o->master_addr : "?", s->job->timeout);
      break;
    case LIVE_ABORT: {
      char n[300];
      snprintf(buf, len, "the job ended: rank 0 lost %s", mpix_rank_name(ev->lost_rank, n, sizeof n));
      break;
    }
  }
}

/* Does this rank say the loss on stderr? Rank 0 does; when rank 0 is the one lost, its children
 * in the liveness tree learn it at once, and only the lowest that survives should say it: rank 1
 * when rank 0's gpulaunch died (its host lives on), else the lowest rank on another host than
 * rank 0's (both are rank 0's children). Another rank that lost its parent (not rank 0) is an
 * orphan of a loss that the parent's parent names to rank 0: it says nothing. */
static int live_says_loss(const sup_t *s, const live_event_t *ev) {
  const job_t *j = s->job;
  if (j->rank == 0) return 1;
  if (ev->why == LIVE_ABORT) return 0;
  if (ev->lost_rank != 0) return 0;
  if (ev->why == LIVE_CLOSED) return j->rank == 1;
  for (int r = 1; r < j->size; r++)
    if (strcmp(j->hosts[r], j->hosts[0]) != 0) return r == j->rank;
  return j->rank == 1;
}

/* Open MPI's mpirun waits for a lost host's daemon minutes after every rank has left: a node
 * leader leaves a helper that closes its connections to that host once this rank is gone
 * (lostpeer.h), or rank 0 says how to shorten the wait. */
static void leave_lost_helper(sup_t *s, int lost_rank) {
  const job_t *j = s->job;
  if (lost_rank < 0 || lost_rank >= j->size || !s->o->node_addrs) return;
  strbuf_t others = STRBUF_INIT;
  for (int n = 0; n < j->nnodes; n++)
    if (n != j->node && s->o->node_addrs[n] && *s->o->node_addrs[n])
      strbuf_printf(&others, "%s%s", others.len ? " " : "", s->o->node_addrs[n]);
  char why[512];
  int h = lostpeer_spawn("/proc/self/exe", s->o->node_addrs[j->node_of[lost_rank]], strbuf_str(&others), why,
                         sizeof why);
  strbuf_free(&others);
  const char *ka = getenv("OMPI_MCA_oob_tcp_keepalive_time");
  if (h == -1 && j->rank == 0 && (!ka || atoi(ka) > 60))
    log_print("gpulaunch: every rank ends now, but mpirun may wait minutes for the lost host's daemon (%s): "
              "start it with --mca oob_tcp_keepalive_time 10 --mca oob_tcp_keepalive_intvl 2 "
              "--mca oob_tcp_keepalive_probes 5, or with gpulaunch-run (README, \"When a host is lost\")\n", why);
  else if (h != -2)
    LOG_INFO(SUP, "lost host: %s", why);
}

static void on_live(uv_async_t *a) {
  sup_t *s = a->data;
  live_event_t ev;
  if (s->done || s->live_lost || !live_event(s->live, &ev)) return;
  s->live_lost = 1;
  live_describe(s, &ev, s->live_what, sizeof s->live_what);
  /* The root cause is said once per job: rank 0 names the lost ranks; when rank 0 itself is
   * lost, one other rank says so (live_says_loss). A rank that was already told to stop (mpirun's
   * or Slurm's SIGTERM, then their SIGKILL to the ranks) sees the teardown of that stop, not a
   * dead gpulaunch: the stop was said already. */
  if (s->sig_received)
    LOG_INFO(SUP, "%s, after the job was told to stop (%s)", s->live_what, util_signal_name(s->sig_received));
  else if (live_says_loss(s, &ev)) {
    log_print("gpulaunch: %s; ending the job (exit status %d)\n", s->live_what, GPL_EXIT_TIMEOUT);
    /* rank 0's host is the one lost: an elastic gpulaunch-run hears which from here */
    if (s->job->rank != 0 && ev.why != LIVE_ABORT) frontch_tell_lost(ev.who, 1.0);
  } else
    LOG_INFO(SUP, "%s; ending the job (exit status %d)", s->live_what, GPL_EXIT_TIMEOUT);
  /* (a gpulaunch that died leaves its host alive: mpirun sees its end) */
  if (ev.why != LIVE_CLOSED) leave_lost_helper(s, ev.lost_rank);
  if (s->job->rank == 0) {
    live_abort_all(s->live, ev.lost_rank);
    /* gpulaunch-run ends mpirun, which could wait minutes for a lost host's daemon; an elastic
     * one goes on without the lost hosts. */
    frontch_lost(&s->front, ev.who);
    frontch_exit(&s->front, GPL_EXIT_TIMEOUT);
  }
  memset(&s->exit_msg, 0, sizeof s->exit_msg);
  s->exit_msg.rank = ev.lost_rank;
  if (ev.lost_rank >= 0 && ev.lost_rank < s->job->size)
    util_strlcpy(s->exit_msg.host, s->job->hosts[ev.lost_rank], sizeof s->exit_msg.host);
  s->exit_code = GPL_EXIT_TIMEOUT;
  if (s->running && !s->exited) {
    /* The program goes as after another rank's failure: SIGTERM, SIGKILL after stop_timeout. */
    if (!s->forwarded) kill_group(s, SIGTERM);
    s->forwarded = 1;
    uv_timer_start(&s->kill_timer, on_kill_timeout, (uint64_t)(s->o->stop_timeout * 1000), 0);
  } else if (!s->spawned || s->reported) {
    s->done = 1;
    uv_stop(&s->loop);
  }
}

static void live_wake(void *arg) { uv_async_send(arg); }

static void close_walk(uv_handle_t *h, void *arg) {
  (void)arg;
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

int sup_run(const sup_opts_t *o, sup_result_t *res) {
  sup_t *s = calloc(1, sizeof *s);
  ALLOCCHECK(s);
  s->front.fd = -1;
  memset(res, 0, sizeof *res);
  res->failed_rank = -1;
  s->o = o;
  s->job = o->job;
  s->t0 = util_now();
  s->launcher_ppid = o->job->under_launcher ? getppid() : 0;
  int rc = GPL_OK;

  /* gpulaunch-exec sits next to gpulaunch. */
  char self[PATH_MAX - 32];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n < 0) {
    free(s);
    SYSCHECK(-1, "readlink(/proc/self/exe)");
  }
  self[n] = 0;
  char *slash = strrchr(self, '/');
  if (slash) *slash = 0;
  snprintf(s->exec_path, sizeof s->exec_path, "%s/gpulaunch-exec", self);
  if (access(s->exec_path, X_OK) < 0) {
    LOG_ERROR("cannot find %s (it is built and installed next to gpulaunch)", s->exec_path);
    free(s);
    return GPL_ENOENT;
  }

  /* Every rank opens its log file before any program starts: one that cannot stops the job now,
   * named, on every rank at once. */
  CHECKGOTO(ranklog_open(&s->log, o->job, o->log_dir, o->log_dir_origin), rc, fail_out);
  int merged = output_streams_merged((int)s->launcher_ppid);
  if (outq_start(&s->q) < 0) s->q = NULL;
  if (s->q && merged) outq_merge(s->q);
  CHECKGOTO(output_init(&s->out, o->prefix, o->job->host, o->job->rank, o->tail_lines, &s->log, s->q),
            rc, fail_out);
  s->out.on_line = on_line;
  s->out.on_line_arg = s;
  if (o->forward_output && o->job->rank != 0) {
    s->out.sink = fwd_sink;
    s->out.sink_arg = s;
  }
  CHECKGOTO(ctl_init(&s->ctl, o->job->ctl), rc, fail_ctl);
  if (o->job->rank == 0) {
    s->co.down = calloc((size_t)o->job->size, 1);
    s->co.sig_seen = calloc((size_t)o->job->size, 1);
    s->peer_prog = calloc((size_t)o->job->size, sizeof *s->peer_prog);
    s->hang_texts = calloc((size_t)o->job->size, sizeof *s->hang_texts);
    s->hang_silent = calloc((size_t)o->job->size, sizeof *s->hang_silent);
    if (!s->co.down || !s->co.sig_seen || !s->peer_prog || !s->hang_texts || !s->hang_silent) {
      rc = GPL_ENOMEM;
      goto fail_loop;
    }
  }

  uv_loop_init(&s->loop);
  s->loop.data = s;
  signal(SIGPIPE, SIG_IGN);
  for (int i = 0; i < NSIGS; i++) {
    uv_signal_init(&s->loop, &s->sigs[i]);
    uv_signal_start(&s->sigs[i], on_signal, g_signals[i]);
    sigorigin_watch(g_signals[i]); /* who sent it: Slurm may have signalled the program already */
  }
  slurm_end_query_reset();
  uv_timer_init(&s->loop, &s->poll_timer);
  uv_timer_init(&s->loop, &s->kill_timer);
  uv_timer_init(&s->loop, &s->drain_timer);
  uv_timer_init(&s->loop, &s->tick_timer);
  uv_timer_init(&s->loop, &s->rm_timer);
  uv_timer_start(&s->poll_timer, on_poll, POLL_MS, POLL_MS);
  uv_async_init(&s->loop, &s->live_async, on_live);
  s->live_async.data = s;
  if (o->liveness_timeout > 0 && o->job->size > 1 && o->master_addr && *o->master_addr) {
    live_opts_t lo = {
        .addr = o->master_addr, .interval = GPL_MIN(1.0, o->liveness_timeout / 5), .timeout = o->liveness_timeout,
        .connect_s = o->job->timeout,
        /* A loop blocked on purpose (a restarted program's communicator, bounded by the job's
         * timeout) is not a hung supervisor; one blocked longer is. */
        .stall_s = o->job->timeout + o->liveness_timeout, .grace_s = o->stop_timeout + 5.0,
        .notify = live_wake, .arg = &s->live_async,
        .progress = o->hang_timeout > 0 ? live_progress : NULL, .progress_arg = s};
    CHECKGOTO(live_start(&s->live, o->job, &lo), rc, fail_loop);
  }
  /* The watchdog hears the other ranks' progress through the liveness frames. */
  s->hang_timeout = o->hang_timeout;
  if (s->hang_timeout > 0 && o->job->size > 1 && !s->live) {
    if (o->job->rank == 0)
      LOG_WARN("[job] hang_timeout needs the liveness connections ([job] liveness_timeout > 0): no hang watchdog");
    s->hang_timeout = 0;
  }
  if (o->hooks.attach) CHECKGOTO(o->hooks.attach(o->hooks.attach_arg, &s->loop), rc, fail_loop);
  s->front.fd = -1;
  if (o->job->rank == 0 && frontch_open(&s->front, 2.0) > 0) {
    uv_poll_init(&s->loop, &s->front_poll, s->front.fd);
    uv_poll_start(&s->front_poll, UV_READABLE, on_front);
  }

  spawn(s);
  while (!s->done) uv_run(&s->loop, UV_RUN_DEFAULT);

  /* The job is over: stop everything of ours and let libuv close its handles. After a loss the
   * liveness thread stays (its last timer ends the rank should the rest not finish in time). */
  if (s->running) kill_group(s, SIGKILL);
  if (!s->live_lost) live_stop(s->live);
  if (o->hooks.detach) o->hooks.detach(o->hooks.attach_arg);
  uv_walk(&s->loop, close_walk, NULL);
  uv_run(&s->loop, UV_RUN_DEFAULT);
  uv_loop_close(&s->loop);
  /* What is still queued goes out; a reader that takes none for this long loses it (counted). A
   * job stopped by a signal must leave soon: the scheduler's own deadline runs. */
  outq_stop(s->q, s->sig_received ? 1.0 : 10.0);
  s->q = NULL;
  int lost = ranklog_finish(&s->log, o->job, !s->live_lost);
  if (lost > 0 && s->exit_code == 0) s->exit_code = GPL_EXIT_OUTPUT;
  frontch_exit(&s->front, s->exit_code); /* the status the user's command exits with */
  frontch_close(&s->front);

  res->exit_code = s->exit_code;
  res->attempts = s->attempt + 1;
  res->preempted = (s->exit_msg.flags & CTL_F_PREEMPTED) != 0;
  res->interrupted = (s->exit_msg.flags & CTL_F_INTERRUPTED) != 0;
  res->cancelled = (s->exit_msg.flags & CTL_F_CANCELLED) != 0;
  res->hung = (s->exit_msg.flags & CTL_F_HANG) != 0;
  util_strlcpy(res->hang_report, s->hang_report, sizeof res->hang_report);
  res->failed_rank = s->exit_msg.rank;
  res->lost = s->live_lost;
  if (s->live_lost) {
    util_strlcpy(res->failed_host, s->exit_msg.host, sizeof res->failed_host);
    util_strlcpy(res->root_cause, s->live_what, sizeof res->root_cause);
  } else if (res->failed_rank >= 0) {
    res->status = s->exit_msg.status;
    res->signo = s->exit_msg.signo;
    util_strlcpy(res->failed_host, s->exit_msg.host, sizeof res->failed_host);
    describe(&s->exit_msg, res->root_cause, sizeof res->root_cause);
  } else if (res->preempted) {
    snprintf(res->root_cause, sizeof res->root_cause, "preempted (SIGTERM)");
  } else if (res->interrupted) {
    snprintf(res->root_cause, sizeof res->root_cause, "interrupted (SIGINT)");
  } else if (res->cancelled) {
    snprintf(res->root_cause, sizeof res->root_cause, "cancelled by Slurm (SIGTERM), not preempted");
  }
  res->seconds = util_now() - s->t0;
fail_loop:
  ctl_close(&s->ctl, s->live_lost ? 0.1 : 2.0); /* sends to a lost rank never complete */
fail_ctl:
  output_free(&s->out);
  strbuf_free(&s->fwd[0]);
  strbuf_free(&s->fwd[1]);
fail_out:
  outq_stop(s->q, 1.0);
  ranklog_close(&s->log);
  free(s->co.down);
  free(s->co.sig_seen);
  hang_free_texts(s);
  free(s->hang_texts);
  free(s->hang_silent);
  free(s->peer_prog);
  free(s);
  return rc;
}
