/* The supervisor: one libuv loop per rank owns the program's pipes, the signals and the timers;
 * rank 0 also coordinates: the first failure stops every rank, then restart or exit together.
 * Here: sup_run and its loop, the commands each rank takes, the coordinator's glue. The rest is
 * in sup/: locate.c the program's path, child.c the program, forward.c its output, signals.c
 * signals and gpulaunch-run, coord.c the coordinator, hangwatch.c the hang watchdog, lost.c a
 * lost rank; sup_int.h the state they share. This file is the hub: only here is the coordinator
 * fed and its actions carried out (co_do), and only here is the polling paced (pace); the parts
 * hand their events back (hangwatch_poll's hangwatch_ev_t, s->sent, s->stop_by_mpirun). */
#include "launcher/sup/supervise.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <uv.h>

#include "common/check.h"
#include "common/log.h"
#include "common/mpix.h"
#include "common/util.h"
#include "launcher/exitcode.h"
#include "launcher/hang/progress.h"
#include "launcher/job/slurm.h"
#include "launcher/exec/reap.h"
#include "launcher/sup/sup_int.h"

#define POLL_MS 10           /* control message polling while nothing happens */
#define POLL_HOT_MS 1        /* ... and for a while after something did (an exit, a message) */
#define HOT_S 0.5
#define STOP_LEAD_S SUP_AT_LEAD_S /* a stop with the grace is delivered this long after it is sent,
                                  * at the same moment on every rank */

/* ---- the coordinator's glue (rank 0; the coordinator itself is sup/coord.c) ---- */

/* What the parts noted for the coordinator since its last call: a stop that came from mpirun. */
static void co_sync(sup_t *s) { coord_stop_by_mpirun(&s->co, s->stop_by_mpirun); }

/* Slurm's reason for a SIGTERM, once its query is done (launcher/job/slurm.c). */
static void co_slurm(sup_t *s) {
  slurm_end_t end;
  if (coord_wants_slurm_end(&s->co) && slurm_end_query_done(&end))
    coord_slurm_end(&s->co, slurm_end_is_preemption(end), slurm_end_describe(end), util_now(), &s->acts);
}

/* Carry out what the coordinator asked for (s->acts), the answers it gives on the way included. */
static void co_do(sup_t *s) {
  for (int i = 0; i < s->acts.n; i++) {
    const coord_act_t *a = &s->acts.v[i];
    switch (a->type) {
      case COORD_PRINT: log_print("%s", a->text); break;
      case COORD_INFO: LOG_INFO(SUP, "%s", a->text); break;
      case COORD_SEND: {
        ctl_msg_t m = a->msg;
        /* A stop with the grace reaches every program at one moment: a little later than now, when
         * every rank has the message (hosts' clocks are synced to milliseconds). */
        if (m.type == CTL_STOP && (m.flags & CTL_F_USE_GRACE) && !(m.flags & CTL_F_BY_RM))
          m.at = util_wall_now() + STOP_LEAD_S;
        ctl_broadcast(&s->ctl, &m);
        break;
      }
      case COORD_QUERY:
        slurm_end_query_start(&s->loop, COORD_QUERY_S);
        co_slurm(s); /* outside Slurm, or an answer at once: appended, carried out below */
        break;
      case COORD_COLLECT:
        /* every rank takes its program's stacks; a hang's collection under way wins, and then
         * nobody is found (appended, carried out below) */
        if (hangwatch_silent_begin(s)) ctl_broadcast(&s->ctl, &a->msg);
        else coord_silent_found(&s->co, -1, "", 0, "", util_now(), &s->acts);
        break;
      case COORD_ABORT:
        fflush(stderr);
        outq_stop(s->q, 1.0); /* what is queued goes out before the abort */
        s->q = NULL;
        frontch_exit(&s->front, a->code);
        job_abort(s->job, a->code); /* MPI_Abort, or (a job of one, maybe without MPI) exit */
        break;
    }
  }
  coord_acts_clear(&s->acts);
}

static void co_event(sup_t *s, const ctl_msg_t *m) {
  if (supnotice_checkpoint_event(s, m)) return; /* a checkpoint, not a stop: no coordinator */
  co_sync(s);
  co_slurm(s);
  /* an elastic gpulaunch-run goes on without a host the cloud takes back */
  if (m->type == CTL_EV_SIGNAL && (m->flags & CTL_F_NOTICE)) frontch_notice(&s->front, m->host);
  coord_event(&s->co, m, util_now(), &s->acts);
  co_do(s);
}

/* The hang watchdog's finding (sup/hangwatch.c), told to the coordinator. */
static void co_hang(sup_t *s) {
  hangwatch_ev_t ev;
  switch (hangwatch_poll(s, &s->co, &ev)) {
    case HANGWATCH_COLLECT: coord_hang_collect(&s->co, &s->acts); break;
    case HANGWATCH_HANG: coord_hang(&s->co, ev.rank, ev.host, ev.text, util_now(), &s->acts); break;
    case HANGWATCH_SILENT:
      coord_silent_found(&s->co, ev.rank, ev.host, ev.silent_s, ev.text, util_now(), &s->acts);
      break;
    default: return;
  }
  co_do(s);
}

/* ---- commands from the coordinator ---- */

static void on_command(sup_t *s, const ctl_msg_t *m) {
  switch (m->type) {
    case CTL_STOP: {
      /* A program that had already ended on its own when the stop came is reported as it ended
       * (its output may still be draining): its failure may be the job's first. */
      if (!s->exited) s->stop_requested = 1;
      if (s->running && !s->exited) {
        double t = (m->flags & CTL_F_USE_GRACE) ? (m->grace > 0 ? m->grace : s->o->grace) : s->o->stop_timeout;
        int sig = m->signo ? m->signo : SIGTERM;
        if (!s->forwarded && (m->flags & CTL_F_BY_RM) && slurm_in_job()) {
          /* Slurm signalled the step: this rank's program is about to get that signal itself. */
          signals_await_rm(s, sig, t);
        } else if (!s->forwarded) {
          signals_deliver_at(s, sig, t, m->at);
        }
      } else if (s->reported || !s->spawned) {
        child_send_event(s, CTL_EV_STOPPED, 0);
      }
      break;
    }
    case CTL_START:
      s->attempt = m->attempt;
      if (s->open_handles > 0) s->pending_start = 1;
      else child_spawn(s);
      break;
    case CTL_HANG:
      hangwatch_collect(s, m->grace);
      break;
    case CTL_SIGNAL:
      supnotice_checkpoint_do(s, m);
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
static void pace(sup_t *s, int busy) {
  double now = util_now();
  if (busy) s->hot_until = now + HOT_S;
  uint64_t want = now < s->hot_until ? POLL_HOT_MS : POLL_MS;
  if (uv_timer_get_repeat(&s->poll_timer) != want) uv_timer_set_repeat(&s->poll_timer, want);
}

/* After each turn of the loop: a part that sent something (s->sent, from a callback of its own:
 * the program's end, a notice, stacks collected) makes the polling fast at once, as the
 * messages it waits for take a few round trips. */
static void on_pace_check(uv_check_t *c) {
  sup_t *s = c->loop->data;
  if (!s->sent) return;
  s->sent = 0;
  pace(s, 1);
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
  forward_flush(s, 0);
  forward_flush(s, 1);
  int busy = (s->exited && !s->reported) || s->sent;
  s->sent = 0;
  while (!s->done && ctl_poll(&s->ctl, &m, forward_take, s)) {
    busy = 1;
    if (m.type >= CTL_STOP) on_command(s, &m);
    else if (s->job->rank == 0) co_event(s, &m);
  }
  pace(s, busy);
  if (s->pending_start && s->open_handles == 0) {
    s->pending_start = 0;
    child_spawn(s);
  }
  if (s->o->progress && util_now() >= s->prog_poll_at) {
    prog_poll(s->o->progress);
    s->prog_poll_at = util_now() + 0.25;
  }
  if (s->job->rank == 0) {
    co_sync(s);
    co_hang(s);
    co_slurm(s);
    coord_tick(&s->co, util_now(), &s->acts);
    co_do(s);
  }
  if ((s->o->forward_output || s->q) && s->spawned && !s->reported) forward_throttle(s);
}

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
  res->silent_rank = -1;
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
  s->out.on_line = child_on_line;
  s->out.on_line_arg = s;
  if (o->forward_output && o->job->rank != 0) {
    s->out.sink = forward_sink;
    s->out.sink_arg = s;
  }
  CHECKGOTO(ctl_init(&s->ctl, o->job->ctl), rc, fail_ctl);
  if (o->job->rank == 0) {
    coord_opts_t co = {.size = o->job->size, .restarts = o->restarts,
                       .restart_on_oom = o->restart_on_oom, .grace = o->grace,
                       .stop_timeout = o->stop_timeout, .preempt_signal = o->preempt_signal,
                       .rank_name = mpix_rank_name, .silence = hangwatch_silence, .silence_arg = s};
    if (coord_init(&s->co, &co) < 0) {
      rc = GPL_ENOMEM;
      goto fail_loop;
    }
    s->peer_prog = calloc((size_t)o->job->size, sizeof *s->peer_prog);
    s->hang_texts = calloc((size_t)o->job->size, sizeof *s->hang_texts);
    s->hang_silent = calloc((size_t)o->job->size, sizeof *s->hang_silent);
    if (!s->peer_prog || !s->hang_texts || !s->hang_silent) {
      rc = GPL_ENOMEM;
      goto fail_loop;
    }
  }

  uv_loop_init(&s->loop);
  s->loop.data = s;
  signals_start(s);
  slurm_end_query_reset();
  uv_timer_init(&s->loop, &s->poll_timer);
  uv_timer_init(&s->loop, &s->kill_timer);
  uv_timer_init(&s->loop, &s->drain_timer);
  uv_timer_init(&s->loop, &s->tick_timer);
  uv_timer_init(&s->loop, &s->rm_timer);
  uv_timer_init(&s->loop, &s->at_timer);
  uv_timer_start(&s->poll_timer, on_poll, POLL_MS, POLL_MS);
  uv_check_init(&s->loop, &s->pace_check);
  uv_check_start(&s->pace_check, on_pace_check);
  uv_async_init(&s->loop, &s->live_async, lost_on_live);
  s->live_async.data = s;
  if (o->liveness_timeout > 0 && o->job->size > 1 && o->master_addr && *o->master_addr) {
    live_opts_t lo = {
        .addr = o->master_addr, .interval = GPL_MIN(1.0, o->liveness_timeout / 5), .timeout = o->liveness_timeout,
        .connect_s = o->job->timeout,
        /* A loop blocked on purpose (a restarted program's communicator, bounded by the job's
         * timeout) is not a hung supervisor; one blocked longer is. */
        .stall_s = o->job->timeout + o->liveness_timeout, .grace_s = o->stop_timeout + 5.0,
        .notify = lost_wake, .arg = &s->live_async,
        /* progress ages always: the hang watchdog's, and the silent ranks at a failure */
        .progress = o->progress ? hangwatch_progress : NULL, .progress_arg = s, .sec = o->sec};
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
  if (o->sec) frontch_set_key(o->sec); /* rank 0's channel, and any rank's that tells a loss */
  signals_front(s);
  supnotice_start(s);
  CHECKGOTO(sampler_start(s), rc, fail_loop);

  child_spawn(s);
  while (!s->done) uv_run(&s->loop, UV_RUN_DEFAULT);

  /* The job is over: stop everything of ours and let libuv close its handles. After a loss the
   * liveness thread stays (its last timer ends the rank should the rest not finish in time). */
  if (s->running) child_kill(s, SIGKILL);
  supnotice_end(s);
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
  lost_hold(s); /* after a loss: the rank that tells gpulaunch-run which host leaves first */

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
    res->oom = (s->exit_msg.flags & CTL_F_OOM) != 0;
    res->peak_mem_mib = s->exit_msg.peak_mem_mib;
    res->mem_total_mib = s->exit_msg.mem_total_mib > 0 ? s->exit_msg.mem_total_mib : -1;
    util_strlcpy(res->failed_host, s->exit_msg.host, sizeof res->failed_host);
    coord_describe(&s->exit_msg, res->root_cause, sizeof res->root_cause);
    size_t rn = strlen(res->root_cause); /* rank 0: the silent rank that was the likely cause */
    if (s->co.silent_note[0] && rn < sizeof res->root_cause)
      snprintf(res->root_cause + rn, sizeof res->root_cause - rn, "; %s", s->co.silent_note);
    if (s->co.silent_note[0]) {
      res->silent_rank = s->co.silent_rank;
      res->silent_s = s->co.silent_for;
      util_strlcpy(res->silent_func, s->co.silent_func, sizeof res->silent_func);
    }
  } else if (res->preempted) {
    snprintf(res->root_cause, sizeof res->root_cause, "preempted (SIGTERM)");
  } else if (res->interrupted) {
    snprintf(res->root_cause, sizeof res->root_cause, "interrupted (SIGINT)");
  } else if (res->cancelled) {
    snprintf(res->root_cause, sizeof res->root_cause, "cancelled by Slurm (SIGTERM), not preempted");
  }
  res->seconds = util_now() - s->t0;
  res->sampled = sampler_verdict(s, &res->straggler);
fail_loop:
  ctl_close(&s->ctl, s->live_lost ? 0.1 : 2.0); /* sends to a lost rank never complete */
fail_ctl:
  output_free(&s->out);
  strbuf_free(&s->fwd[0]);
  strbuf_free(&s->fwd[1]);
fail_out:
  outq_stop(s->q, 1.0);
  ranklog_close(&s->log);
  coord_free(&s->co);
  coord_acts_free(&s->acts);
  hangwatch_free(s);
  sampler_free(s);
  free(s->hang_texts);
  free(s->hang_silent);
  free(s->peer_prog);
  free(s);
  return rc;
}

