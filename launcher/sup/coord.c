/* The rank-0 coordinator: the first failure stops every rank, then restart or exit together; a
 * SIGTERM/SIGINT ends the job with a verdict (preempted, cancelled, interrupted). Pure state. */
#include "launcher/sup/coord.h"

#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "launcher/exitcode.h"

/* ---- actions ---- */

static coord_act_t *act_push(coord_acts_t *a, coord_act_type_t type) {
  if (a->n == a->cap) {
    int cap = a->cap ? a->cap * 2 : 8;
    coord_act_t *v = realloc(a->v, (size_t)cap * sizeof *v);
    if (!v) { /* the coordinator cannot go on without its commands */
      LOG_ERROR("out of memory in the coordinator");
      abort();
    }
    a->v = v;
    a->cap = cap;
  }
  coord_act_t *x = &a->v[a->n++];
  memset(x, 0, sizeof *x);
  x->type = type;
  return x;
}

static void say(coord_acts_t *a, coord_act_type_t type, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void say(coord_acts_t *a, coord_act_type_t type, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *text = NULL;
  int n = vasprintf(&text, fmt, ap);
  va_end(ap);
  if (n < 0) { /* unsaid, as log_print would leave it */
    LOG_WARN("out of memory formatting a coordinator message");
    return;
  }
  act_push(a, type)->text = text;
}

void coord_acts_clear(coord_acts_t *a) {
  for (int i = 0; i < a->n; i++) free(a->v[i].text);
  a->n = 0;
}

void coord_acts_free(coord_acts_t *a) {
  coord_acts_clear(a);
  free(a->v);
  a->v = NULL;
  a->cap = 0;
}

/* ---- the root cause ---- */

static int job_code(const ctl_msg_t *m) {
  if (m->flags & CTL_F_HANG) return GPL_EXIT_HANG;
  if (m->signo) return 128 + m->signo;
  if (m->status > 0 && m->status < 256) return m->status;
  return 1;
}

void coord_describe(const ctl_msg_t *m, char *buf, size_t len) {
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
    if (m->peak_mem_mib >= 0 && m->mem_total_mib > 0)
      snprintf(buf + n, len - n, ": CUDA out of memory (peak GPU memory seen %.0f MiB) of the GPU's "
               "%.0f MiB", m->peak_mem_mib, m->mem_total_mib);
    else if (m->peak_mem_mib >= 0)
      snprintf(buf + n, len - n, ": CUDA out of memory (peak GPU memory seen %.0f MiB)", m->peak_mem_mib);
    else
      snprintf(buf + n, len - n, ": CUDA out of memory (peak GPU memory unknown: the GPU monitor "
               "took no memory sample)");
    n = strlen(buf);
    if (n < len)
      snprintf(buf + n, len - n, "; to fit: a smaller batch per GPU, "
               "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less fragmentation), "
               "activation checkpointing");
  }
}

/* The root cause, with the silent rank that was the likely cause when one was found. */
static void describe_cause(const coord_t *co, char *buf, size_t len) {
  coord_describe(&co->cause, buf, len);
  size_t n = strlen(buf);
  if (co->silent_note[0] && n < len) snprintf(buf + n, len - n, "; %s", co->silent_note);
}

static void print_tail(const ctl_msg_t *m, coord_acts_t *a) {
  if (!m->tail[0] || (m->flags & CTL_F_HANG)) return;
  say(a, COORD_PRINT, "gpulaunch: last lines of rank %d's stderr:\n", m->rank);
  const char *p = m->tail;
  while (*p) {
    size_t n = strcspn(p, "\n");
    say(a, COORD_PRINT, "    %.*s\n", (int)n, p);
    p += n;
    if (*p) p++;
  }
}

/* ---- commands ---- */

static void broadcast(coord_t *co, int type, int signo, int flags, int code, coord_acts_t *a) {
  ctl_msg_t *m = &act_push(a, COORD_SEND)->msg;
  m->type = type;
  m->attempt = co->attempt;
  m->signo = signo;
  m->flags = flags;
  m->code = code;
  m->rank = -1;
  if (type == CTL_EXIT) {
    if (co->have_cause) {
      *m = co->cause; /* who failed, how, and its last lines */
      m->type = CTL_EXIT;
      m->code = code;
    }
    if (co->verdict == COORD_PREEMPTED) m->flags |= CTL_F_PREEMPTED;
    if (co->verdict == COORD_INTERRUPTED) m->flags |= CTL_F_INTERRUPTED;
    if (co->verdict == COORD_CANCELLED) m->flags |= CTL_F_CANCELLED;
  }
}

static void stop_all(coord_t *co, int signo, int flags, double now, coord_acts_t *a) {
  co->failing = 1;
  double grace = co->stop_grace > 0 ? co->stop_grace : co->o.grace;
  double t = (flags & CTL_F_USE_GRACE) ? grace : co->o.stop_timeout;
  co->deadline = now + t + COORD_MARGIN_S;
  broadcast(co, CTL_STOP, signo, flags, 0, a);
  if (flags & CTL_F_USE_GRACE) a->v[a->n - 1].msg.grace = grace;
}

/* ---- the verdict after a signal ---- */

/* Why the job stops after a SIGTERM/SIGINT, said once it is known: every rank has been heard
 * from (a rank that never reports may be gone, and then it is not a preemption: mpirun tears a
 * job down with SIGTERM when a rank died), and under Slurm, Slurm's own reason is in (a user's
 * scancel is not a preemption). 1 when decided. */
static int verdict(coord_t *co, double now, coord_acts_t *a) {
  if (co->verdict) return 1;
  if (!co->sig || co->have_cause) return 0;
  for (int r = 0; r < co->o.size; r++)
    if (!co->sig_seen[r] && !co->down[r]) return 0;
  if (!co->end_known && now - co->sig_t0 < COORD_QUERY_S) return 0;
  const char *from = co->sig_by_rm ? " from Slurm" : " received";
  const char *why = co->end_why;
  if (co->sig == SIGINT) {
    co->verdict = COORD_INTERRUPTED;
    say(a, COORD_PRINT, "gpulaunch: job interrupted by SIGINT%s; every program is stopped (exit status %d)\n",
        co->sig_by_rm ? " (from Slurm: srun's Ctrl-C)" : "", 128 + SIGINT);
  } else if (co->end_preemption) {
    co->verdict = COORD_PREEMPTED;
    if (co->notice)
      say(a, COORD_PRINT, "gpulaunch: job preempted: interruption notice for host %s (%s); every program got "
          "%s and is stopped within %.0f s (exit status %d: requeue the job)\n", co->notice_host,
          co->notice_text, util_signal_name(co->o.preempt_signal), co->stop_grace, GPL_EXIT_PREEMPTED);
    else if (co->stop_by_mpirun)
      say(a, COORD_PRINT, "gpulaunch: job preempted: SIGTERM from mpirun; mpirun ends every program itself, "
          "within about a second (its exit status is its own, not %d)\n", GPL_EXIT_PREEMPTED);
    else if (co->sig_by_rm)
      say(a, COORD_PRINT, "gpulaunch: job preempted: SIGTERM%s%s%s; every program got SIGTERM from "
          "Slurm and is stopped within %.0f s (exit status %d: requeue the job)\n", from,
          *why ? ": " : "", why, co->o.grace, GPL_EXIT_PREEMPTED);
    else
      say(a, COORD_PRINT, "gpulaunch: job preempted: SIGTERM%s%s%s; every program got %s and is "
          "stopped within %.0f s (exit status %d: requeue the job)\n", from, *why ? ": " : "",
          why, util_signal_name(co->o.preempt_signal), co->o.grace, GPL_EXIT_PREEMPTED);
  } else {
    co->verdict = COORD_CANCELLED;
    say(a, COORD_PRINT, "gpulaunch: job cancelled, not preempted: SIGTERM%s: %s; every program is "
        "stopped (exit status %d; nothing to requeue)\n", from, why, 128 + SIGTERM);
  }
  return 1;
}

/* ---- the end of an attempt: exit, or restart ---- */

static void finish_attempt(coord_t *co, double now, coord_acts_t *a) {
  int size = co->o.size;
  char what[1400];
  co->collecting = 0; /* every rank is down: nobody is still running */
  if (co->sig && !co->have_cause) {
    if (!verdict(co, now, a)) {
      co->finish_pending = 1; /* Slurm's reason is still on its way (coord_tick tries again) */
      return;
    }
    co->finish_pending = 0;
    co->finished = 1;
    int code = co->verdict == COORD_PREEMPTED   ? GPL_EXIT_PREEMPTED
               : co->verdict == COORD_CANCELLED ? 128 + SIGTERM
                                                : 128 + SIGINT;
    broadcast(co, CTL_EXIT, 0, 0, code, a);
    return;
  }
  if (!co->have_cause) { /* every rank ended cleanly */
    co->finished = 1;
    broadcast(co, CTL_EXIT, 0, 0, 0, a);
    return;
  }
  describe_cause(co, what, sizeof what);
  /* A hang is not retried (it would hang again, after as long), nor by default an out-of-memory
   * error: the same batch at the same step needs the same memory. */
  int oom_kept = (co->cause.flags & CTL_F_OOM) && !co->o.restart_on_oom;
  if (co->attempt < co->o.restarts && oom_kept)
    say(a, COORD_INFO, "no restart after a CUDA out-of-memory error ([job] restart_on_oom = false): "
        "%d restart%s left unused", co->o.restarts - co->attempt,
        co->o.restarts - co->attempt == 1 ? "" : "s");
  if (co->attempt < co->o.restarts && !(co->cause.flags & CTL_F_HANG) && !oom_kept) {
    say(a, COORD_PRINT, "gpulaunch: %s; restarting all %d ranks (restart %d of %d)\n", what, size,
        co->attempt + 1, co->o.restarts);
    print_tail(&co->cause, a);
    co->attempt++;
    memset(co->down, 0, (size_t)size);
    co->ndown = co->nok = co->nfailed = 0;
    co->failing = 0;
    co->have_cause = 0;
    co->silent_note[0] = 0;
    co->silent_rank = -1;
    co->peer_timed_out = 0;
    broadcast(co, CTL_START, 0, 0, 0, a);
    return;
  }
  co->finished = 1;
  int code = job_code(&co->cause);
  say(a, COORD_PRINT, "gpulaunch: %s\n", what);
  print_tail(&co->cause, a);
  if (co->attempt < co->o.restarts && oom_kept)
    say(a, COORD_PRINT, "gpulaunch: not restarted: an out-of-memory error repeats at the same step "
        "([job] restart_on_oom = true retries it anyway; %d restart%s left)\n",
        co->o.restarts - co->attempt, co->o.restarts - co->attempt == 1 ? "" : "s");
  int also = co->nfailed > 1 ? co->nfailed - 1 : 0, stopped = size - 1 - also - co->nok;
  if (size > 1 && also)
    say(a, COORD_PRINT, "gpulaunch: job failed after %d attempt%s (exit status %d); %d other rank%s failed after "
        "it, %d %s stopped\n", co->attempt + 1, co->attempt ? "s" : "", code, also,
        also == 1 ? "" : "s", stopped < 0 ? 0 : stopped, stopped == 1 ? "was" : "were");
  else if (size > 1)
    say(a, COORD_PRINT, "gpulaunch: job failed after %d attempt%s (exit status %d); the other %d rank%s stopped\n",
        co->attempt + 1, co->attempt ? "s" : "", code, size - 1, size == 2 ? " was" : "s were");
  else
    say(a, COORD_PRINT, "gpulaunch: job failed after %d attempt%s (exit status %d)\n", co->attempt + 1,
        co->attempt ? "s" : "", code);
  broadcast(co, CTL_EXIT, 0, 0, code, a);
}

/* ---- events ---- */

static void on_signal(coord_t *co, const ctl_msg_t *m, double now, coord_acts_t *a) {
  if (m->rank >= 0 && m->rank < co->o.size) co->sig_seen[m->rank] = 1;
  if (co->collecting) { /* a failure's stacks are being taken: the signal stops everyone now */
    co->collecting = 0;
    stop_all(co, SIGTERM, 0, now, a);
  }
  /* A job that is already failing stays failed; a second signal changes nothing. */
  if (co->sig || co->have_cause) {
    verdict(co, now, a);
    return;
  }
  co->sig = m->signo == SIGINT ? SIGINT : SIGTERM;
  co->sig_by_rm = (m->flags & CTL_F_BY_RM) != 0;
  co->sig_t0 = now;
  co->stop_grace = co->o.grace;
  if (m->flags & CTL_F_NOTICE) {
    /* A cloud's notice is a preemption, and Slurm has nothing to say about it. Its grace ends
     * before the machine goes. */
    co->notice = 1;
    co->end_known = co->end_preemption = 1;
    util_strlcpy(co->notice_host, m->host, sizeof co->notice_host);
    util_strlcpy(co->notice_text, m->tail, sizeof co->notice_text);
    if (m->grace > 0 && m->grace < co->stop_grace) co->stop_grace = m->grace;
    say(a, COORD_INFO, "rank %d (host %s): %s: stopping every rank, grace %.1f s", m->rank, m->host, m->tail,
        co->stop_grace);
  } else {
    if (co->sig == SIGTERM) act_push(a, COORD_QUERY);
    else co->end_known = 1; /* nothing to ask Slurm */
    say(a, COORD_INFO, "rank %d received %s%s: stopping every rank", m->rank, util_signal_name(m->signo),
        co->sig_by_rm ? " from Slurm" : "");
  }
  stop_all(co, co->sig == SIGINT ? SIGINT : co->o.preempt_signal,
           CTL_F_USE_GRACE | (co->sig_by_rm ? CTL_F_BY_RM : 0), now, a);
  verdict(co, now, a);
}

void coord_event(coord_t *co, const ctl_msg_t *m, double now, coord_acts_t *a) {
  if (co->finished) return;
  if (m->type == CTL_EV_SIGNAL) {
    on_signal(co, m, now, a);
    return;
  }
  if (m->attempt != co->attempt || m->rank < 0 || m->rank >= co->o.size) return;
  if (co->down[m->rank]) return;
  co->down[m->rank] = 1;
  co->down_at[m->rank] = now;
  co->ndown++;
  int clean = m->status == 0 && m->signo == 0 && !(m->flags & CTL_F_SPAWN_FAILED);
  if (m->type == CTL_EV_EXIT && clean) co->nok++;
  /* A program ending of a signal the job got (or one the coordinator sent) is no cause. */
  if (m->type == CTL_EV_EXIT && !clean && !co->sig && !(m->flags & CTL_F_AFTER_SIGNAL)) {
    co->nfailed++;
    if (strcasestr(m->tail, "timed out") || strcasestr(m->tail, "timeout")) co->peer_timed_out = 1;
    if (!co->have_cause && !co->failing) {
      co->cause = *m;
      co->have_cause = 1;
      co->settle_until = now + COORD_SETTLE_S;
    } else if (co->have_cause && !(co->cause.flags & CTL_F_HANG) && m->t_fail < co->cause.t_fail) {
      /* Failures on their own, reported in another order than they happened: a crash makes its
       * peers fail ("connection closed by peer") within milliseconds, and as the crashed program
       * is still tearing down, they often end and report first. The cause is the program that
       * failed first (t_fail: its last line shortly before its end, else its end). */
      say(a, COORD_INFO, "rank %d failed %.3f s before rank %d: it is the first failure", m->rank,
          co->cause.t_fail - m->t_fail, co->cause.rank);
      co->cause = *m;
    }
  }
  if (co->ndown == co->o.size) {
    co->settle_until = 0;
    finish_attempt(co, now, a);
  }
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return (a > b) - (a < b);
}

/* The settle is over: are ranks still running silent, much longer than those that ended (which
 * made progress up to their end at least)? Then their stacks are asked for (COORD_COLLECT) and 1
 * returned; the stop waits for coord_silent_found, COORD_SILENT_WAIT_S at most. */
static int look_for_silent(coord_t *co, double now, coord_acts_t *a) {
  if (!co->o.silence || co->o.size < 2) return 0;
  int size = co->o.size, nd = 0, nc = 0, longest = -1;
  double *ended = malloc((size_t)size * sizeof *ended);
  if (!ended) return 0;
  for (int r = 0; r < size; r++) {
    double q = co->o.silence(co->o.silence_arg, r);
    co->silent[r] = 0;
    if (co->down[r]) {
      double since = now - co->down_at[r]; /* its failure is news of it, whatever its beats said */
      ended[nd++] = q >= 0 && q < since ? q : since;
    } else if (q >= COORD_SILENT_MIN_S) {
      co->silent[r] = q;
    }
  }
  qsort(ended, (size_t)nd, sizeof *ended, cmp_double);
  double ref = nd ? (nd % 2 ? ended[nd / 2] : (ended[nd / 2 - 1] + ended[nd / 2]) / 2) : 0;
  free(ended);
  for (int r = 0; r < size; r++) {
    if (co->silent[r] > 0 && co->silent[r] <= COORD_SILENT_FACTOR * ref) co->silent[r] = 0;
    if (co->silent[r] <= 0) continue;
    nc++;
    if (longest < 0 || co->silent[r] > co->silent[longest]) longest = r;
  }
  if (!nc) return 0;
  char n[300];
  say(a, COORD_INFO, "%d rank%s still running made no progress for %.0f s or more, the longest %s (%.0f s): "
      "taking their stacks before stopping every rank (%.0f s at most)", nc, nc == 1 ? "" : "s",
      COORD_SILENT_MIN_S, co->o.rank_name(longest, n, sizeof n), co->silent[longest], COORD_SILENT_WAIT_S);
  co->collecting = 1;
  co->collect_until = now + COORD_SILENT_WAIT_S;
  coord_act_t *x = act_push(a, COORD_COLLECT);
  x->msg.type = CTL_HANG;
  x->msg.attempt = co->attempt;
  x->msg.rank = -1;
  x->msg.grace = COORD_SILENT_COLLECT_S;
  return 1;
}

void coord_silent_found(coord_t *co, int rank, const char *host, double silent_s, const char *func,
                        double now, coord_acts_t *a) {
  if (!co->collecting || co->finished) return;
  co->collecting = 0;
  if (rank >= 0 && rank < co->o.size) {
    co->silent_rank = rank;
    co->silent_for = silent_s;
    util_strlcpy(co->silent_func, func ? func : "", sizeof co->silent_func);
    if (func && *func)
      snprintf(co->silent_note, sizeof co->silent_note, "rank %d (host %s) was still running, silent for %.0f s, "
               "in %s: the likely cause", rank, host, silent_s, func);
    else
      snprintf(co->silent_note, sizeof co->silent_note, "rank %d (host %s) was still running, silent for %.0f s "
               "(its stack could not be read): the likely cause", rank, host, silent_s);
  }
  stop_all(co, SIGTERM, 0, now, a);
}

/* The first failure was reported COORD_SETTLE_S ago: the ranks not yet down are stopped (after
 * their stacks when some are silent); the cause is the earliest failure heard of by the end. */
static void check_settled(coord_t *co, double now, coord_acts_t *a) {
  if (co->collecting && now >= co->collect_until && !co->finished) {
    say(a, COORD_INFO, "the silent ranks' stacks did not come in %.0f s: stopping every rank", COORD_SILENT_WAIT_S);
    co->collecting = 0;
    stop_all(co, SIGTERM, 0, now, a);
    return;
  }
  if (co->settle_until <= 0 || co->finished) return;
  if (now < co->settle_until) return;
  co->settle_until = 0;
  if (look_for_silent(co, now, a)) return;
  char what[1400];
  coord_describe(&co->cause, what, sizeof what);
  say(a, COORD_INFO, "%s: stopping every rank", what);
  stop_all(co, SIGTERM, 0, now, a);
}

static void check_deadline(coord_t *co, double now, coord_acts_t *a) {
  if (!co->failing || co->finished || now < co->deadline) return;
  char names[2048] = "";
  size_t off = 0;
  for (int r = 0; r < co->o.size && off < sizeof names - 80; r++) {
    if (co->down[r]) continue;
    char n[300];
    off += (size_t)snprintf(names + off, sizeof names - off, "%s%s", off ? ", " : "",
                            co->o.rank_name(r, n, sizeof n));
  }
  /* A rank that never reported is missing (its gpulaunch or its host is gone): whatever signal
   * came, that is not a clean preemption to requeue. */
  int code = co->have_cause ? job_code(&co->cause) : GPL_EXIT_TIMEOUT;
  if (co->have_cause) {
    char what[1400];
    describe_cause(co, what, sizeof what);
    say(a, COORD_PRINT, "gpulaunch: %s\n", what);
    print_tail(&co->cause, a);
  }
  say(a, COORD_PRINT, "gpulaunch: %s did not report that their program stopped; aborting the job\n", names);
  co->finished = 1; /* the abort ends the job */
  act_push(a, COORD_ABORT)->code = code;
}

void coord_tick(coord_t *co, double now, coord_acts_t *a) {
  if (co->sig && !co->verdict) verdict(co, now, a);
  if (co->finish_pending && verdict(co, now, a)) finish_attempt(co, now, a);
  check_settled(co, now, a);
  check_deadline(co, now, a);
}

int coord_wants_slurm_end(const coord_t *co) { return co->sig && !co->end_known; }

void coord_slurm_end(coord_t *co, int preemption, const char *why, double now, coord_acts_t *a) {
  if (co->end_known) return;
  co->end_known = 1;
  co->end_preemption = preemption;
  util_strlcpy(co->end_why, why ? why : "", sizeof co->end_why);
  coord_tick(co, now, a);
}

void coord_stop_by_mpirun(coord_t *co, int yes) { co->stop_by_mpirun = yes; }

/* ---- the hang watchdog's verdict ---- */

int coord_quiet(const coord_t *co) {
  return !co->failing && !co->have_cause && !co->finished && !co->sig;
}

void coord_hang_collect(coord_t *co, coord_acts_t *a) { broadcast(co, CTL_HANG, 0, 0, 0, a); }

void coord_hang(coord_t *co, int rank, const char *host, const char *verdict_line, double now,
                coord_acts_t *a) {
  if (!coord_quiet(co)) return; /* it ends for another reason already */
  memset(&co->cause, 0, sizeof co->cause);
  co->cause.type = CTL_EV_EXIT;
  co->cause.rank = rank;
  co->cause.attempt = co->attempt;
  co->cause.flags = CTL_F_HANG;
  util_strlcpy(co->cause.host, host, sizeof co->cause.host);
  util_strlcpy(co->cause.tail, verdict_line, sizeof co->cause.tail);
  co->have_cause = 1;
  say(a, COORD_PRINT, "gpulaunch: hang: ending the job (exit status %d)\n", GPL_EXIT_HANG);
  stop_all(co, SIGTERM, 0, now, a);
}

/* ---- life cycle ---- */

int coord_init(coord_t *co, const coord_opts_t *o) {
  memset(co, 0, sizeof *co);
  co->o = *o;
  co->end_preemption = 1; /* an unknown reason counts as a preemption */
  co->silent_rank = -1;
  co->down = calloc((size_t)o->size, 1);
  co->sig_seen = calloc((size_t)o->size, 1);
  co->down_at = calloc((size_t)o->size, sizeof *co->down_at);
  co->silent = calloc((size_t)o->size, sizeof *co->silent);
  if (!co->down || !co->sig_seen || !co->down_at || !co->silent) {
    coord_free(co);
    return GPL_ENOMEM;
  }
  return GPL_OK;
}

void coord_free(coord_t *co) {
  free(co->down);
  free(co->sig_seen);
  free(co->down_at);
  free(co->silent);
  co->down = co->sig_seen = NULL;
  co->down_at = co->silent = NULL;
}
