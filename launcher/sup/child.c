/* The program of an attempt: started through gpulaunch-exec with its pipes, read, stopped,
 * killed with its whole tree, and its end reported to the coordinator. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "common/redact.h"
#include "common/util.h"
#include "launcher/hang/progress.h"
#include "launcher/exec/reap.h"
#include "launcher/sup/sup_int.h"

#define FAIL_WINDOW_S 5.0    /* a last output line this close to a program's end says when it failed */
#define DRAIN_MS 500         /* after exit, wait this long for the pipes' EOF (grandchildren) */

static void on_kill_timeout(uv_timer_t *t);

void child_kill(sup_t *s, int sig) {
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

/* When this rank's program failed, as far as can be seen from here: the time of its last output
 * line when that came shortly before its end (a program says why it fails, then tears down:
 * Python's finalisation, CUDA's and NCCL's teardown close its connections only afterwards, and
 * its peers fail of that at once, often ending before it), else the time it ended. */
static double fail_time(const sup_t *s) {
  if (s->t_line > 0 && s->t_line <= s->t_end && s->t_end - s->t_line <= FAIL_WINDOW_S) return s->t_line;
  return s->t_end;
}

void child_send_event(sup_t *s, int type, int flags) {
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
  m.mem_total_mib = s->o->hooks.mem_total_mib ? s->o->hooks.mem_total_mib(s->o->hooks.arg) : -1;
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
  s->sent = 1; /* the hub polls fast for the answer */
}

static void on_handle_closed(uv_handle_t *h) {
  sup_t *s = h->loop->data;
  s->open_handles--;
}

static void close_if_open(sup_t *s, uv_handle_t *h) {
  if (!uv_is_closing(h)) uv_close(h, on_handle_closed);
  (void)s;
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf);
static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf);

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
    forward_flush(s, i); /* the output goes before the event, and arrives before it */
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
  sampler_flush(s); /* before the event: rank 0 judges the whole run at the end */
  child_send_event(s, s->stop_requested ? CTL_EV_STOPPED : CTL_EV_EXIT, flags);
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
  if (s->paused) forward_throttle(s); /* resume reading to drain */
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
    if (s->q && !s->paused && outq_backlog(s->q) > OUTQ_HIGH) forward_throttle(s);
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
  child_kill(s, SIGKILL);
}

void child_kill_later(sup_t *s, double seconds) {
  uv_timer_start(&s->kill_timer, on_kill_timeout, (uint64_t)(seconds * 1000), 0);
}

void child_read(sup_t *s, int i, int on) {
  uv_stream_t *st = (uv_stream_t *)&s->pipes[i];
  if (on) uv_read_start(st, on_alloc, on_read);
  else uv_read_stop(st);
}

static void on_tick(uv_timer_t *t) {
  sup_t *s = t->loop->data;
  if (s->running && s->o->hooks.tick) s->o->hooks.tick(s->o->hooks.arg);
}

void child_on_line(void *arg, int is_err, const char *line, size_t len) {
  sup_t *s = arg;
  s->t_line = util_wall_now();
  prog_line(s->o->progress, line, len);
  if (s->o->hooks.line) s->o->hooks.line(s->o->hooks.arg, is_err, line, len);
}

void child_spawn(sup_t *s) {
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
  if (s->o->hooks.new_attempt) s->o->hooks.new_attempt(s->o->hooks.arg);
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
