/* The coordinator (launcher/sup/coord.c) driven by scripted events and times: a clean end, the
 * first failure and its settle window, the cascade, restarts, preemption and its verdicts, and a
 * rank that never reports; the commands and every printed line are checked. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "launcher/sup/coord.h"

#define HOST "n1"
#define REMEDIES "a smaller batch per GPU, PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (less fragmentation), " \
                 "activation checkpointing"

static const char *rank_name(int r, char *buf, size_t len) {
  snprintf(buf, len, "rank %d (host %s)", r, HOST);
  return buf;
}

typedef struct fx_s {
  coord_t co;
  coord_acts_t a;
  double silence[8]; /* each rank's seconds without progress, as the glue would say */
} fx_t;

static double silence(void *arg, int rank) { return ((fx_t *)arg)->silence[rank]; }

/* The test's coordinator, freed by fx_free after the test (its teardown, also on failure). */
static fx_t *fx_new(void **state, int size, int restarts) {
  fx_t *f = calloc(1, sizeof *f);
  assert_non_null(f);
  *state = f;
  coord_opts_t o = {.size = size, .restarts = restarts, .grace = 10, .stop_timeout = 5,
                    .preempt_signal = SIGUSR1, .rank_name = rank_name};
  assert_int_equal(coord_init(&f->co, &o), 0);
  return f;
}

static int fx_free(void **state) {
  fx_t *f = *state;
  if (f) {
    coord_acts_free(&f->a);
    coord_free(&f->co);
    free(f);
  }
  return 0;
}

/* A rank's event; t_fail is when its program failed. */
static ctl_msg_t ev(int type, int rank, int attempt, int status, int signo, int flags, double t_fail,
                    const char *tail) {
  ctl_msg_t m = {.type = type, .rank = rank, .attempt = attempt, .status = status, .signo = signo,
                 .flags = flags, .t_fail = t_fail, .peak_mem_mib = -1};
  snprintf(m.host, sizeof m.host, "%s", HOST);
  snprintf(m.tail, sizeof m.tail, "%s", tail ? tail : "");
  return m;
}

static void send_ev(fx_t *f, ctl_msg_t m, double now) { coord_event(&f->co, &m, now, &f->a); }
static void exit_ev(fx_t *f, int rank, int status, double t) {
  send_ev(f, ev(CTL_EV_EXIT, rank, f->co.attempt, status, 0, 0, t, NULL), t);
}
static void stopped_ev(fx_t *f, int rank, double t) {
  send_ev(f, ev(CTL_EV_STOPPED, rank, f->co.attempt, 0, SIGTERM, CTL_F_AFTER_SIGNAL, t, NULL), t);
}
static void signal_ev(fx_t *f, int rank, int sig, int flags, double t) {
  send_ev(f, ev(CTL_EV_SIGNAL, rank, f->co.attempt, 0, sig, flags, t, NULL), t);
}

/* Every text of this type, in order, in one string. */
static char *texts(const coord_acts_t *a, coord_act_type_t type) {
  static char buf[16384];
  buf[0] = 0;
  for (int i = 0; i < a->n; i++)
    if (a->v[i].type == type) strncat(buf, a->v[i].text, sizeof buf - strlen(buf) - 1);
  return buf;
}
static int count(const coord_acts_t *a, coord_act_type_t type) {
  int n = 0;
  for (int i = 0; i < a->n; i++) n += a->v[i].type == type;
  return n;
}
/* The one command of this type sent (fails if none or several). */
static const ctl_msg_t *sent(const coord_acts_t *a, int ctl_type) {
  const ctl_msg_t *m = NULL;
  for (int i = 0; i < a->n; i++)
    if (a->v[i].type == COORD_SEND && a->v[i].msg.type == ctl_type) {
      if (m) fail_msg("command %d sent twice", ctl_type);
      m = &a->v[i].msg;
    }
  if (!m) fail_msg("command %d not sent", ctl_type);
  return m;
}
static void nothing(fx_t *f) {
  if (f->a.n) fail_msg("%d unexpected actions, the first of type %d: %s", f->a.n, f->a.v[0].type,
                       f->a.v[0].text ? f->a.v[0].text : "");
}
static void clear(fx_t *f) { coord_acts_clear(&f->a); }
/* The job ends: these lines printed, then CTL_EXIT with this code (returned). */
static const ctl_msg_t *ends(fx_t *f, const char *lines, int code) {
  assert_string_equal(texts(&f->a, COORD_PRINT), lines);
  const ctl_msg_t *m = sent(&f->a, CTL_EXIT);
  assert_int_equal(m->code, code);
  return m;
}

/* ---- a clean end ---- */

static void test_clean_end(void **state) {
  fx_t *f = fx_new(state, 4, 0);
  for (int r = 0; r < 3; r++) exit_ev(f, r, 0, 10 + r);
  coord_tick(&f->co, 20, &f->a);
  nothing(f);
  exit_ev(f, 3, 0, 21);
  assert_int_equal(f->a.n, 1);
  const ctl_msg_t *m = sent(&f->a, CTL_EXIT);
  assert_int_equal(m->code, 0);
  assert_int_equal(m->rank, -1);
  assert_true(f->co.finished);
  clear(f);
  exit_ev(f, 3, 0, 22); /* after the end, nothing more */
  nothing(f);
}

/* ---- the first failure and its settle window ---- */

static void test_first_failure_settles(void **state) {
  fx_t *f = fx_new(state, 4, 0);
  send_ev(f, ev(CTL_EV_EXIT, 2, 0, 7, 0, 0, 100.0, "first complaint of rank 2\nfatal: giving up with 7"),
          100.0);
  nothing(f); /* others that fail too are heard first */
  coord_tick(&f->co, 100.9, &f->a);
  nothing(f);
  exit_ev(f, 1, 1, 100.95); /* fails within the window, after rank 2: heard, not the cause */
  nothing(f);
  coord_tick(&f->co, 101.0, &f->a); /* the window is over: every rank still running is stopped */
  const ctl_msg_t *stop = sent(&f->a, CTL_STOP);
  assert_int_equal(stop->signo, SIGTERM);
  assert_int_equal(stop->flags, 0);
  assert_string_equal(texts(&f->a, COORD_INFO), "rank 2 (host n1) exited with status 7: stopping every rank");
  assert_int_equal(count(&f->a, COORD_PRINT), 0);
  clear(f);
  coord_tick(&f->co, 101.5, &f->a);
  nothing(f); /* stopped once */
  /* A program killed by the stop is no cause. */
  send_ev(f, ev(CTL_EV_EXIT, 0, 0, 0, SIGTERM, CTL_F_AFTER_SIGNAL, 101.2, NULL), 101.2);
  nothing(f);
  stopped_ev(f, 3, 101.3);
  const ctl_msg_t *m = ends(f,
      "gpulaunch: rank 2 (host n1) exited with status 7\n"
      "gpulaunch: last lines of rank 2's stderr:\n"
      "    first complaint of rank 2\n"
      "    fatal: giving up with 7\n"
      "gpulaunch: job failed after 1 attempt (exit status 7); 1 other rank failed after it, "
      "2 were stopped\n", 7);
  assert_int_equal(m->rank, 2);
  assert_int_equal(m->status, 7);
  assert_string_equal(m->host, HOST);
}

static void test_failure_alone(void **state) {
  fx_t *f = fx_new(state, 4, 0);
  send_ev(f, ev(CTL_EV_EXIT, 1, 0, 0, SIGKILL, 0, 5.0, "about to die by signal 9"), 5.0);
  coord_tick(&f->co, 6.0, &f->a);
  clear(f);
  for (int r = 0; r < 4; r++)
    if (r != 1) stopped_ev(f, r, 6.5);
  ends(f,
      "gpulaunch: rank 1 (host n1) killed by signal SIGKILL\n"
      "gpulaunch: last lines of rank 1's stderr:\n"
      "    about to die by signal 9\n"
      "gpulaunch: job failed after 1 attempt (exit status 137); the other 3 ranks were stopped\n", 137);
}

/* ---- the cascade: the first failure is the cause, whatever the order of the reports ---- */

static void test_cascade(void **state) {
  fx_t *f = fx_new(state, 4, 0);
  /* Rank 1 crashes at 100.0 and tears down for 0.5 s; its peers fail of it and report first. */
  send_ev(f, ev(CTL_EV_EXIT, 0, 0, 1, 0, 0, 100.05, "connection closed by peer"), 100.1);
  send_ev(f, ev(CTL_EV_EXIT, 2, 0, 1, 0, 0, 100.02, "connection closed by peer"), 100.1);
  assert_string_equal(texts(&f->a, COORD_INFO), "rank 2 failed 0.030 s before rank 0: it is the first failure");
  clear(f);
  send_ev(f, ev(CTL_EV_EXIT, 3, 0, 1, 0, 0, 100.04, NULL), 100.2);
  nothing(f); /* later than the cause so far */
  send_ev(f, ev(CTL_EV_EXIT, 1, 0, 7, 0, 0, 100.0, "crashing on purpose with 7"), 100.5);
  assert_string_equal(texts(&f->a, COORD_INFO),
                      "rank 1 failed 0.020 s before rank 2: it is the first failure");
  assert_int_equal(count(&f->a, COORD_SEND), 1); /* every rank was down: no stop, the exit */
  const ctl_msg_t *m = ends(f,
      "gpulaunch: rank 1 (host n1) exited with status 7\n"
      "gpulaunch: last lines of rank 1's stderr:\n"
      "    crashing on purpose with 7\n"
      "gpulaunch: job failed after 1 attempt (exit status 7); 3 other ranks failed after it, "
      "0 were stopped\n", 7);
  assert_int_equal(m->rank, 1);
}

/* ---- restarts ---- */

static void test_restart(void **state) {
  fx_t *f = fx_new(state, 2, 1);
  send_ev(f, ev(CTL_EV_EXIT, 0, 0, 5, 0, 0, 1.0, "bad batch"), 1.0);
  coord_tick(&f->co, 2.0, &f->a);
  assert_int_equal(sent(&f->a, CTL_STOP)->attempt, 0);
  clear(f);
  stopped_ev(f, 1, 2.2);
  assert_string_equal(texts(&f->a, COORD_PRINT),
                      "gpulaunch: rank 0 (host n1) exited with status 5; restarting all 2 ranks (restart 1 of 1)\n"
                      "gpulaunch: last lines of rank 0's stderr:\n"
                      "    bad batch\n");
  assert_int_equal(sent(&f->a, CTL_START)->attempt, 1);
  assert_int_equal(count(&f->a, COORD_SEND), 1);
  assert_false(f->co.finished);
  /* Counters start again; a late report of the last attempt counts for nothing. */
  assert_int_equal(f->co.ndown, 0);
  assert_int_equal(f->co.nfailed, 0);
  assert_false(f->co.have_cause);
  assert_false(f->co.failing);
  clear(f);
  send_ev(f, ev(CTL_EV_EXIT, 1, 0, 3, 0, 0, 2.3, NULL), 2.3);
  nothing(f);
  coord_tick(&f->co, 10.0, &f->a);
  nothing(f);
  /* Attempt 1 fails as well: the restarts are used up. */
  send_ev(f, ev(CTL_EV_EXIT, 0, 1, 5, 0, 0, 11.0, NULL), 11.0);
  coord_tick(&f->co, 12.0, &f->a);
  clear(f);
  stopped_ev(f, 1, 12.1);
  ends(f,
      "gpulaunch: rank 0 (host n1) exited with status 5\n"
      "gpulaunch: job failed after 2 attempts (exit status 5); the other 1 rank was stopped\n", 5);
}

/* An out-of-memory failure on rank 1 of 2 (attempt `attempt`), its peer stopped. */
static void oom_attempt(fx_t *f, double t) {
  ctl_msg_t m = ev(CTL_EV_EXIT, 1, f->co.attempt, 1, 0, CTL_F_OOM, t,
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB");
  m.peak_mem_mib = 78000;
  m.mem_total_mib = 81559;
  send_ev(f, m, t);
  coord_tick(&f->co, t + 1.1, &f->a);
  assert_int_equal(sent(&f->a, CTL_STOP)->signo, SIGTERM);
  clear(f);
  stopped_ev(f, 0, t + 1.2);
}

static void test_oom_not_restarted(void **state) {
  fx_t *f = fx_new(state, 2, 2);
  oom_attempt(f, 1.0);
  ends(f,
       "gpulaunch: rank 1 (host n1) exited with status 1: CUDA out of memory (peak GPU memory seen 78000 MiB) of "
       "the GPU's 81559 MiB; to fit: " REMEDIES "\n"
       "gpulaunch: last lines of rank 1's stderr:\n"
       "    torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
       "gpulaunch: not restarted: an out-of-memory error repeats at the same step ([job] restart_on_oom = true "
       "retries it anyway; 2 restarts left)\n"
       "gpulaunch: job failed after 1 attempt (exit status 1); the other 1 rank was stopped\n", 1);
  assert_int_equal(count(&f->a, COORD_SEND), 1); /* no CTL_START */
  assert_true(strstr(texts(&f->a, COORD_INFO), "no restart after a CUDA out-of-memory error") != NULL);
}

static void test_oom_restarted_when_asked(void **state) {
  fx_t *f = fx_new(state, 2, 2);
  f->co.o.restart_on_oom = 1;
  oom_attempt(f, 1.0);
  assert_int_equal(sent(&f->a, CTL_START)->attempt, 1);
  assert_true(strstr(texts(&f->a, COORD_PRINT), "; restarting all 2 ranks (restart 1 of 2)\n") != NULL);
  clear(f);
  oom_attempt(f, 5.0);
  assert_int_equal(sent(&f->a, CTL_START)->attempt, 2);
  clear(f);
  oom_attempt(f, 9.0);
  assert_true(strstr(texts(&f->a, COORD_PRINT), "job failed after 3 attempts (exit status 1)") != NULL);
  assert_null(strstr(texts(&f->a, COORD_PRINT), "not restarted"));
  sent(&f->a, CTL_EXIT);
}

/* A failure that is not an out-of-memory error is still restarted with restart_on_oom false. */
static void test_other_failure_restarted(void **state) {
  fx_t *f = fx_new(state, 2, 1);
  send_ev(f, ev(CTL_EV_EXIT, 1, 0, 3, 0, 0, 1.0, NULL), 1.0);
  coord_tick(&f->co, 2.1, &f->a);
  clear(f);
  stopped_ev(f, 0, 2.2);
  assert_int_equal(sent(&f->a, CTL_START)->attempt, 1);
}

static void test_hang_not_restarted(void **state) {
  fx_t *f = fx_new(state, 4, 3);
  assert_true(coord_quiet(&f->co));
  coord_hang_collect(&f->co, &f->a);
  assert_int_equal(sent(&f->a, CTL_HANG)->attempt, 0);
  clear(f);
  coord_hang(&f->co, 2, HOST, "hang: no progress for 30 s; rank 2 waits in allreduce", 40.0, &f->a);
  assert_false(coord_quiet(&f->co));
  assert_string_equal(texts(&f->a, COORD_PRINT), "gpulaunch: hang: ending the job (exit status 77)\n");
  assert_int_equal(sent(&f->a, CTL_STOP)->signo, SIGTERM);
  clear(f);
  coord_hang(&f->co, 1, HOST, "again", 41.0, &f->a); /* it ends already */
  nothing(f);
  for (int r = 0; r < 4; r++) stopped_ev(f, r, 41.0);
  assert_int_equal(count(&f->a, COORD_SEND), 1); /* no START: a hang is never restarted */
  const ctl_msg_t *m = ends(f,
      "gpulaunch: hang: no progress for 30 s; rank 2 waits in allreduce\n"
      "gpulaunch: job failed after 1 attempt (exit status 77); the other 3 ranks were stopped\n", 77);
  assert_int_equal(m->rank, 2);
  assert_true(m->flags & CTL_F_HANG);
}

/* ---- preemption: SIGTERM, Slurm's reason, the verdict ---- */

static void test_preempted(void **state) {
  fx_t *f = fx_new(state, 3, 2);
  signal_ev(f, 0, SIGTERM, 0, 50.0);
  assert_int_equal(f->a.n, 3);
  assert_int_equal(f->a.v[0].type, COORD_QUERY); /* Slurm is asked first */
  assert_string_equal(texts(&f->a, COORD_INFO), "rank 0 received SIGTERM: stopping every rank");
  const ctl_msg_t *stop = sent(&f->a, CTL_STOP);
  assert_int_equal(stop->signo, SIGUSR1); /* [job] preempt_signal */
  assert_int_equal(stop->flags, CTL_F_USE_GRACE);
  assert_true(coord_wants_slurm_end(&f->co));
  clear(f);
  signal_ev(f, 1, SIGTERM, 0, 50.1);
  signal_ev(f, 2, SIGTERM, 0, 50.1);
  nothing(f); /* every rank heard from, Slurm's reason not yet in */
  coord_slurm_end(&f->co, 1, "Slurm is preempting the job", 50.5, &f->a);
  assert_string_equal(texts(&f->a, COORD_PRINT),
                      "gpulaunch: job preempted: SIGTERM received: Slurm is preempting the job; every program "
                      "got SIGUSR1 and is stopped within 10 s (exit status 75: requeue the job)\n");
  assert_int_equal(count(&f->a, COORD_SEND), 0);
  clear(f);
  /* Programs ending of the signal: no cause, no restart. */
  send_ev(f, ev(CTL_EV_EXIT, 0, 0, 143, 0, CTL_F_AFTER_SIGNAL, 51, NULL), 51);
  stopped_ev(f, 1, 51);
  nothing(f);
  send_ev(f, ev(CTL_EV_EXIT, 2, 0, 1, 0, 0, 51, NULL), 51); /* even a status of its own */
  assert_int_equal(count(&f->a, COORD_PRINT), 0);
  const ctl_msg_t *m = sent(&f->a, CTL_EXIT);
  assert_int_equal(m->code, 75);
  assert_int_equal(m->flags, CTL_F_PREEMPTED);
  assert_int_equal(m->rank, -1);
}

/* A cloud's interruption notice from rank 2's node leader: no Slurm question, the grace the notice
 * leaves (less than [job] grace), the verdict names the host and the notice at once. */
static void test_notice(void **state) {
  fx_t *f = fx_new(state, 3, 2);
  ctl_msg_t m = ev(CTL_EV_SIGNAL, 2, 0, 0, SIGTERM, CTL_F_NOTICE, 0, "AWS spot interruption: terminate");
  m.grace = 4.5;
  send_ev(f, m, 50.0);
  assert_int_equal(count(&f->a, COORD_QUERY), 0);
  assert_false(coord_wants_slurm_end(&f->co));
  const ctl_msg_t *stop = sent(&f->a, CTL_STOP);
  assert_int_equal(stop->signo, SIGUSR1);
  assert_int_equal(stop->flags, CTL_F_USE_GRACE);
  assert_true(stop->grace == 4.5);
  clear(f);
  /* the reports are due by the notice's grace, not [job] grace */
  coord_tick(&f->co, 50.0 + 4.5 + COORD_MARGIN_S - 0.01, &f->a);
  nothing(f);
  for (int r = 0; r < 3; r++) stopped_ev(f, r, 52.0);
  ends(f,
       "gpulaunch: job preempted: interruption notice for host n1 (AWS spot interruption: terminate); "
       "every program got SIGUSR1 and is stopped within 4 s (exit status 75: requeue the job)\n", 75);
  assert_int_equal(sent(&f->a, CTL_EXIT)->flags, CTL_F_PREEMPTED);
}

/* A notice later than [job] grace allows keeps [job] grace. */
static void test_notice_far(void **state) {
  fx_t *f = fx_new(state, 2, 0);
  ctl_msg_t m = ev(CTL_EV_SIGNAL, 0, 0, 0, SIGTERM, CTL_F_NOTICE, 0, "GCP preemption");
  m.grace = 115;
  send_ev(f, m, 10.0);
  assert_true(sent(&f->a, CTL_STOP)->grace == 10);
}

static void test_preempted_by_slurm_no_answer(void **state) {
  fx_t *f = fx_new(state, 2, 0);
  signal_ev(f, 1, SIGTERM, CTL_F_BY_RM, 50.0);
  assert_int_equal(sent(&f->a, CTL_STOP)->flags, CTL_F_USE_GRACE | CTL_F_BY_RM);
  assert_string_equal(texts(&f->a, COORD_INFO), "rank 1 received SIGTERM from Slurm: stopping every rank");
  clear(f);
  signal_ev(f, 0, SIGTERM, CTL_F_BY_RM, 50.0);
  stopped_ev(f, 0, 51.0);
  stopped_ev(f, 1, 51.0);
  nothing(f); /* every rank stopped: the verdict waits for Slurm, COORD_QUERY_S at most */
  coord_tick(&f->co, 50.0 + COORD_QUERY_S - 0.01, &f->a);
  nothing(f);
  coord_tick(&f->co, 50.0 + COORD_QUERY_S, &f->a);
  ends(f,
      "gpulaunch: job preempted: SIGTERM from Slurm; every program got SIGTERM from Slurm and is "
      "stopped within 10 s (exit status 75: requeue the job)\n", 75);
}

static void test_preempted_by_mpirun(void **state) {
  fx_t *f = fx_new(state, 1, 0);
  coord_stop_by_mpirun(&f->co, 1);
  signal_ev(f, 0, SIGTERM, 0, 1.0);
  clear(f);
  coord_slurm_end(&f->co, 1, "", 1.0, &f->a);
  assert_string_equal(texts(&f->a, COORD_PRINT),
                      "gpulaunch: job preempted: SIGTERM from mpirun; mpirun ends every program itself, within "
                      "about a second (its exit status is its own, not 75)\n");
}

static void test_cancelled(void **state) {
  fx_t *f = fx_new(state, 2, 0);
  signal_ev(f, 0, SIGTERM, CTL_F_BY_RM, 5.0);
  signal_ev(f, 1, SIGTERM, CTL_F_BY_RM, 5.0);
  stopped_ev(f, 0, 5.5);
  stopped_ev(f, 1, 5.5);
  clear(f);
  coord_slurm_end(&f->co, 0, "Slurm is cancelling the job (scancel, or its batch script ended)", 5.6, &f->a);
  const ctl_msg_t *m = ends(f,
      "gpulaunch: job cancelled, not preempted: SIGTERM from Slurm: Slurm is cancelling the job "
      "(scancel, or its batch script ended); every program is stopped (exit status 143; nothing "
      "to requeue)\n", 143);
  assert_int_equal(m->flags, CTL_F_CANCELLED);
}

static void test_interrupted(void **state) {
  fx_t *f = fx_new(state, 2, 0);
  signal_ev(f, 0, SIGINT, 0, 5.0);
  assert_int_equal(count(&f->a, COORD_QUERY), 0); /* nothing to ask Slurm */
  assert_int_equal(sent(&f->a, CTL_STOP)->signo, SIGINT);
  clear(f);
  signal_ev(f, 1, SIGINT, 0, 5.0);
  assert_string_equal(texts(&f->a, COORD_PRINT),
                      "gpulaunch: job interrupted by SIGINT; every program is stopped (exit status 130)\n");
  clear(f);
  stopped_ev(f, 0, 5.5);
  stopped_ev(f, 1, 5.5);
  const ctl_msg_t *m = sent(&f->a, CTL_EXIT);
  assert_int_equal(m->code, 130);
  assert_int_equal(m->flags, CTL_F_INTERRUPTED);
}

/* A failure first: a signal afterwards changes nothing (the job failed). */
static void test_signal_after_failure(void **state) {
  fx_t *f = fx_new(state, 2, 0);
  exit_ev(f, 0, 3, 1.0);
  signal_ev(f, 1, SIGTERM, 0, 1.2);
  nothing(f);
  coord_tick(&f->co, 2.0, &f->a);
  clear(f);
  stopped_ev(f, 1, 2.1);
  assert_int_equal(sent(&f->a, CTL_EXIT)->code, 3);
}

/* ---- a rank that never reports: the supervisor is dead ---- */

static void test_preempted_dead_supervisor(void **state) {
  fx_t *f = fx_new(state, 3, 0);
  signal_ev(f, 0, SIGTERM, 0, 100.0);
  coord_slurm_end(&f->co, 1, "", 100.0, &f->a);
  signal_ev(f, 1, SIGTERM, 0, 100.0);
  stopped_ev(f, 0, 101.0);
  stopped_ev(f, 1, 101.0);
  clear(f);
  coord_tick(&f->co, 104.0, &f->a);
  nothing(f); /* no verdict: rank 2 was never heard from, and that is not a preemption */
  coord_tick(&f->co, 114.99, &f->a); /* the deadline: the grace and a margin */
  nothing(f);
  coord_tick(&f->co, 100.0 + 10 + COORD_MARGIN_S, &f->a);
  assert_string_equal(texts(&f->a, COORD_PRINT),
                      "gpulaunch: rank 2 (host n1) did not report that their program stopped; aborting the job\n");
  assert_int_equal(count(&f->a, COORD_ABORT), 1);
  assert_int_equal(f->a.v[f->a.n - 1].type, COORD_ABORT); /* said first, then the abort */
  assert_int_equal(f->a.v[f->a.n - 1].code, 68);
  assert_int_equal(count(&f->a, COORD_SEND), 0);
  clear(f);
  coord_tick(&f->co, 120.0, &f->a);
  nothing(f);
}

static void test_failure_dead_supervisor(void **state) {
  fx_t *f = fx_new(state, 4, 0);
  send_ev(f, ev(CTL_EV_EXIT, 3, 0, 9, 0, 0, 1.0, "oops"), 1.0);
  coord_tick(&f->co, 2.0, &f->a); /* stopped with the stop timeout (5 s) */
  stopped_ev(f, 0, 2.5);
  clear(f);
  coord_tick(&f->co, 2.0 + 5 + COORD_MARGIN_S, &f->a);
  assert_string_equal(texts(&f->a, COORD_PRINT),
                      "gpulaunch: rank 3 (host n1) exited with status 9\n"
                      "gpulaunch: last lines of rank 3's stderr:\n"
                      "    oops\n"
                      "gpulaunch: rank 1 (host n1), rank 2 (host n1) did not report that their program stopped; "
                      "aborting the job\n");
  assert_int_equal(f->a.v[f->a.n - 1].type, COORD_ABORT);
  assert_int_equal(f->a.v[f->a.n - 1].code, 9);
}

/* ---- silent ranks at a failure (issue 29) ---- */

/* The coordinator of a job whose ranks' silences the test sets (all 0.5 s at first). */
static fx_t *fx_silent(void **state, int size) {
  fx_t *f = fx_new(state, size, 0);
  coord_free(&f->co);
  coord_opts_t o = {.size = size, .grace = 10, .stop_timeout = 5, .preempt_signal = SIGUSR1,
                    .rank_name = rank_name, .silence = silence, .silence_arg = f};
  assert_int_equal(coord_init(&f->co, &o), 0);
  for (int r = 0; r < size; r++) f->silence[r] = 0.5;
  return f;
}

static void stop_others(fx_t *f, int failed, double t) {
  for (int r = 0; r < f->co.o.size; r++)
    if (r != failed) stopped_ev(f, r, t);
}

/* The others report the stop: the job ends with the failure's lines of before, nobody named. */
static void ends_plain(fx_t *f, int failed, int status, double t) {
  char want[512];
  int n = f->co.o.size - 1;
  snprintf(want, sizeof want, "gpulaunch: rank %d (host n1) exited with status %d\n"
           "gpulaunch: job failed after 1 attempt (exit status %d); the other %d rank%s stopped\n",
           failed, status, status, n, n == 1 ? " was" : "s were");
  stop_others(f, failed, t);
  ends(f, want, status);
}

/* Rank 0 times out waiting for rank 2, which sleeps silent in its data loader: its stacks are
 * taken before the stop, and it is named beside the failure. */
static void test_silent_named(void **state) {
  fx_t *f = fx_silent(state, 4);
  f->silence[1] = f->silence[3] = 16; /* waiting in the collective, as silent as rank 2 */
  f->silence[2] = 16.2;
  f->silence[0] = 16; /* its beats are late: its failure is its news */
  exit_ev(f, 0, 1, 100.0);
  coord_tick(&f->co, 101.0, &f->a); /* the settle: stacks asked for, nobody stopped yet */
  assert_int_equal(count(&f->a, COORD_COLLECT), 1);
  assert_int_equal(f->a.v[f->a.n - 1].msg.type, CTL_HANG);
  assert_true(f->a.v[f->a.n - 1].msg.grace > 0 && f->a.v[f->a.n - 1].msg.grace < COORD_SILENT_WAIT_S);
  assert_int_equal(count(&f->a, COORD_SEND), 0);
  assert_string_equal(texts(&f->a, COORD_INFO), "3 ranks still running made no progress for 5 s or more, the "
                      "longest rank 2 (host n1) (16 s): taking their stacks before stopping every rank (6 s at most)");
  for (int r = 1; r < 4; r++) assert_true(f->co.silent[r] > 0);
  assert_true(f->co.silent[0] == 0);
  clear(f);
  coord_tick(&f->co, 102.0, &f->a);
  nothing(f);
  coord_silent_found(&f->co, 2, HOST, 16.2, "stuck_in_data_loader", 102.5, &f->a);
  sent(&f->a, CTL_STOP);
  clear(f);
  coord_tick(&f->co, 110.0, &f->a); /* the collection's bound is no stop again */
  nothing(f);
  stop_others(f, 0, 103);
  ends(f,
       "gpulaunch: rank 0 (host n1) exited with status 1; rank 2 (host n1) was still running, silent for 16 s, "
       "in stuck_in_data_loader: the likely cause\n"
       "gpulaunch: job failed after 1 attempt (exit status 1); the other 3 ranks were stopped\n", 1);
}

/* The first to fail was rank 0, whose connection a timed-out peer closed; ranks 1 and 3 timed out in
 * the collective: the peers waited for someone (hang_silent_pick's evidence), whoever the cause is.
 * A crash on its own says no such thing, and a new attempt starts without it. */
static void test_silent_peer_timed_out(void **state) {
  fx_t *f = fx_silent(state, 4);
  f->silence[1] = f->silence[3] = f->silence[0] = 16;
  f->silence[2] = 16.2;
  send_ev(f, ev(CTL_EV_EXIT, 1, 0, 1, 0, 0, 100.2, "RuntimeError: [gloo] Timed out waiting 15000ms for recv"), 100.4);
  assert_int_equal(f->co.peer_timed_out, 1);
  send_ev(f, ev(CTL_EV_EXIT, 0, 0, 1, 0, 0, 100.1, "RuntimeError: Connection closed by peer"), 100.5);
  assert_int_equal(f->co.cause.rank, 0); /* it failed first */
  assert_int_equal(f->co.peer_timed_out, 1);
  fx_free(state);

  f = fx_silent(state, 3);
  send_ev(f, ev(CTL_EV_EXIT, 0, 0, 1, 0, 0, 100.1, "Segmentation fault"), 100.2);
  send_ev(f, ev(CTL_EV_EXIT, 1, 0, 1, 0, 0, 100.3, "RuntimeError: Connection closed by peer"), 100.4);
  assert_int_equal(f->co.peer_timed_out, 0);
  fx_free(state);

  f = fx_silent(state, 2); /* one restart: the next attempt forgets the timeout */
  f->co.o.restarts = 1;
  send_ev(f, ev(CTL_EV_EXIT, 0, 0, 1, 0, 0, 100.1, "NCCL watchdog: collective operation timeout"), 100.2);
  assert_int_equal(f->co.peer_timed_out, 1);
  coord_tick(&f->co, 101.5, &f->a);
  stopped_ev(f, 1, 102);
  assert_int_equal(f->co.attempt, 1);
  assert_int_equal(f->co.peer_timed_out, 0);
}

/* Nobody silent (every rank busy, or as silent as the one that failed): the stop at the settle
 * as before, no stacks, the same lines. */
static void test_silent_nobody(void **state) {
  fx_t *f = fx_silent(state, 4);
  exit_ev(f, 1, 3, 50.0);
  coord_tick(&f->co, 51.0, &f->a);
  sent(&f->a, CTL_STOP);
  assert_int_equal(count(&f->a, COORD_COLLECT), 0);
  clear(f);
  ends_plain(f, 1, 3, 51.5);
  /* A silent crash (no line for 30 s, as long as the others waiting for it): nobody stands out. */
  fx_free(state);
  f = fx_silent(state, 3);
  f->silence[0] = f->silence[1] = f->silence[2] = 30;
  send_ev(f, ev(CTL_EV_EXIT, 1, 0, 0, SIGSEGV, 0, 5.0, NULL), 20.0);
  f->co.down_at[1] = -10; /* as far back as its last line: its end said nothing new */
  coord_tick(&f->co, 21.0, &f->a);
  sent(&f->a, CTL_STOP);
  assert_int_equal(count(&f->a, COORD_COLLECT), 0);
}

/* The stacks never come: every rank is stopped at the bound, the failure's line unchanged. */
static void test_silent_timeout(void **state) {
  fx_t *f = fx_silent(state, 3);
  f->silence[2] = 40;
  exit_ev(f, 1, 1, 10.0);
  coord_tick(&f->co, 11.0, &f->a);
  assert_int_equal(count(&f->a, COORD_COLLECT), 1);
  clear(f);
  coord_tick(&f->co, 11.0 + COORD_SILENT_WAIT_S - 0.01, &f->a);
  nothing(f);
  coord_tick(&f->co, 11.0 + COORD_SILENT_WAIT_S, &f->a);
  sent(&f->a, CTL_STOP);
  clear(f);
  coord_silent_found(&f->co, 2, HOST, 40, "late", 17.5, &f->a); /* too late: nothing */
  nothing(f);
  ends_plain(f, 1, 1, 18);
  /* ... nor when the stacks name nobody (every silent rank waits for a peer). */
  fx_free(state);
  f = fx_silent(state, 3);
  f->silence[0] = f->silence[2] = 9;
  exit_ev(f, 1, 1, 10.0);
  coord_tick(&f->co, 11.0, &f->a);
  clear(f);
  coord_silent_found(&f->co, -1, "", 0, "", 12.0, &f->a);
  sent(&f->a, CTL_STOP);
  clear(f);
  ends_plain(f, 1, 1, 12.5);
}

/* A signal while the stacks are taken stops everyone at once; a rank that ends meanwhile and the
 * restart that follows carry on as before. */
static void test_silent_signal_and_restart(void **state) {
  fx_t *f = fx_silent(state, 2);
  f->silence[1] = 20;
  exit_ev(f, 0, 1, 10.0);
  coord_tick(&f->co, 11.0, &f->a);
  clear(f);
  signal_ev(f, 1, SIGTERM, 0, 11.5);
  sent(&f->a, CTL_STOP);
  clear(f);
  /* restarts: the note goes with the restart's line, then is forgotten */
  fx_free(state);
  f = fx_silent(state, 2);
  f->co.o.restarts = 1;
  f->silence[1] = 20;
  exit_ev(f, 0, 1, 10.0);
  coord_tick(&f->co, 11.0, &f->a);
  clear(f);
  coord_silent_found(&f->co, 1, HOST, 20, "f", 12.0, &f->a);
  clear(f);
  stopped_ev(f, 1, 12.5);
  assert_string_equal(texts(&f->a, COORD_PRINT), "gpulaunch: rank 0 (host n1) exited with status 1; rank 1 (host "
                      "n1) was still running, silent for 20 s, in f: the likely cause; restarting all 2 ranks "
                      "(restart 1 of 1)\n");
  sent(&f->a, CTL_START);
  clear(f);
  f->silence[1] = 0.5;
  exit_ev(f, 1, 2, 30.0);
  coord_tick(&f->co, 31.0, &f->a);
  clear(f);
  stopped_ev(f, 0, 31.5);
  assert_string_equal(texts(&f->a, COORD_PRINT), "gpulaunch: rank 1 (host n1) exited with status 2\n"
                      "gpulaunch: job failed after 2 attempts (exit status 2); the other 1 rank was stopped\n");
}

/* ---- the root cause's words ---- */

static void test_describe(void **state) {
  (void)state;
  char buf[512];
  ctl_msg_t m = ev(CTL_EV_EXIT, 1, 0, 127, 0, CTL_F_SPAWN_FAILED, 0, NULL);
  coord_describe(&m, buf, sizeof buf);
  assert_string_equal(buf, "rank 1 (host n1) could not start its program");
  m = ev(CTL_EV_EXIT, 0, 0, 1, 0, CTL_F_OOM, 0, NULL);
  m.peak_mem_mib = 80123.4;
  coord_describe(&m, buf, sizeof buf);
  assert_string_equal(buf, "rank 0 (host n1) exited with status 1: CUDA out of memory (peak GPU memory seen 80123 MiB); "
                      "to fit: " REMEDIES);
  m.mem_total_mib = 81559;
  coord_describe(&m, buf, sizeof buf);
  assert_string_equal(buf, "rank 0 (host n1) exited with status 1: CUDA out of memory (peak GPU memory seen 80123 MiB) "
                      "of the GPU's 81559 MiB; to fit: " REMEDIES);
  m.peak_mem_mib = -1;
  coord_describe(&m, buf, sizeof buf);
  assert_string_equal(buf, "rank 0 (host n1) exited with status 1: CUDA out of memory (peak GPU memory unknown: the GPU "
                      "monitor took no memory sample); to fit: " REMEDIES);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_teardown(test_clean_end, fx_free),
      cmocka_unit_test_teardown(test_first_failure_settles, fx_free),
      cmocka_unit_test_teardown(test_failure_alone, fx_free),
      cmocka_unit_test_teardown(test_cascade, fx_free),
      cmocka_unit_test_teardown(test_restart, fx_free),
      cmocka_unit_test_teardown(test_hang_not_restarted, fx_free),
      cmocka_unit_test_teardown(test_oom_not_restarted, fx_free),
      cmocka_unit_test_teardown(test_oom_restarted_when_asked, fx_free),
      cmocka_unit_test_teardown(test_other_failure_restarted, fx_free),
      cmocka_unit_test_teardown(test_preempted, fx_free),
      cmocka_unit_test_teardown(test_notice, fx_free),
      cmocka_unit_test_teardown(test_notice_far, fx_free),
      cmocka_unit_test_teardown(test_preempted_by_slurm_no_answer, fx_free),
      cmocka_unit_test_teardown(test_preempted_by_mpirun, fx_free),
      cmocka_unit_test_teardown(test_cancelled, fx_free),
      cmocka_unit_test_teardown(test_interrupted, fx_free),
      cmocka_unit_test_teardown(test_signal_after_failure, fx_free),
      cmocka_unit_test_teardown(test_preempted_dead_supervisor, fx_free),
      cmocka_unit_test_teardown(test_failure_dead_supervisor, fx_free),
      cmocka_unit_test_teardown(test_silent_named, fx_free),
      cmocka_unit_test_teardown(test_silent_peer_timed_out, fx_free),
      cmocka_unit_test_teardown(test_silent_nobody, fx_free),
      cmocka_unit_test_teardown(test_silent_timeout, fx_free),
      cmocka_unit_test_teardown(test_silent_signal_and_restart, fx_free),
      cmocka_unit_test(test_describe),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
