/* Signals gpulaunch receives (SIGTERM, SIGINT, SIGUSR1/2), whether Slurm already sent them to
 * the program, and the stop requests of gpulaunch-run through the front channel. */
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "launcher/job/slurm.h"
#include "launcher/sup/sigorigin.h"
#include "launcher/sup/sup_int.h"

#define RELAY_S 2.0          /* a signal again from elsewhere this soon after Slurm delivered it
                              * to the whole step is its relayed copy (mpirun, a batch script) */
#define RM_WAIT_MS 1000      /* a stop for a signal Slurm sent the step: wait this long for it */

static const int g_signals[NSIGS] = {SIGTERM, SIGINT, SIGUSR1, SIGUSR2};

static int sig_index(int signum) {
  for (int i = 0; i < NSIGS; i++)
    if (g_signals[i] == signum) return i;
  return 0;
}

void signals_deliver_stop(sup_t *s, int sig, double grace, int by_rm) {
  uv_timer_stop(&s->rm_timer);
  if (s->forwarded || !s->running) return;
  if (!by_rm) child_kill(s, sig);
  s->forwarded = 1;
  child_kill_later(s, grace);
}

/* A stop the coordinator asked for because Slurm signalled the step: this rank's program gets
 * Slurm's signal itself, any moment now; if it did not come, gpulaunch delivers the stop. */
static void on_rm_wait(uv_timer_t *t) {
  sup_t *s = t->loop->data;
  if (s->forwarded || !s->running) return;
  LOG_INFO(SUP, "Slurm's signal did not reach this rank; sending %s to the program",
           util_signal_name(s->stop_signo));
  signals_deliver_stop(s, s->stop_signo, GPL_MAX(0.0, s->stop_grace - RM_WAIT_MS / 1000.0), 0);
}

#define AT_EARLY_S 0.004 /* the loop's timer wakes this much before the moment ... */

/* ... and the rest is slept to the clock's own precision (libuv's timers have millisecond steps,
 * and a process that is already awake is not late to the moment however busy the machine): every
 * rank's program gets the signal within a millisecond or so of the others. */
void signals_sleep_to(double when) {
  struct timespec ts = {.tv_sec = (time_t)when};
  ts.tv_nsec = (long)((when - (double)ts.tv_sec) * 1e9);
  if (when - util_wall_now() < AT_EARLY_S * 2)
    while (clock_nanosleep(CLOCK_REALTIME, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

static void on_at(uv_timer_t *t) {
  sup_t *s = t->loop->data;
  signals_sleep_to(s->at_when);
  signals_deliver_stop(s, s->at_signo, s->at_grace, 0);
}

void signals_deliver_at(sup_t *s, int sig, double grace, double at) {
  double wait = at > 0 ? at - util_wall_now() : 0;
  if (wait <= 0.0005 || wait > 1.0) { /* passed, or a clock far off: now */
    signals_deliver_stop(s, sig, grace, 0);
    return;
  }
  s->at_signo = sig;
  s->at_grace = grace;
  s->at_when = at;
  uv_update_time(&s->loop); /* the loop's cached time may be a poll behind */
  uv_timer_start(&s->at_timer, on_at, (uint64_t)(GPL_MAX(0.0, wait - AT_EARLY_S) * 1000), 0);
}

void signals_await_rm(sup_t *s, int sig, double grace) {
  s->stop_signo = sig;
  s->stop_grace = grace;
  if (!uv_is_active((uv_handle_t *)&s->rm_timer))
    uv_timer_start(&s->rm_timer, on_rm_wait, RM_WAIT_MS, 0);
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
    if (s->running) child_kill(s, signum);
    return;
  }
  if (s->sig_received) {
    /* A second SIGINT from a person (Ctrl-C twice): do not wait any longer. Repeated SIGTERMs
     * (Slurm sends two at a time limit; mpirun and Slurm both send one) keep the grace. */
    if (signum == SIGINT && s->sig_received == SIGINT && !by_rm && !relayed && s->running)
      child_kill(s, SIGKILL);
    if (by_rm && s->running && !s->forwarded) signals_deliver_stop(s, signum, s->o->grace, 1);
    return;
  }
  /* Plain mpirun (its own SIGTERM, relayed by it or its daemon) SIGKILLs the ranks a second
   * later whatever they do: say so with the stop, as the one explanation of what follows. */
  int by_mpirun = !by_rm && !relayed && s->launcher_ppid && from.pid == s->launcher_ppid &&
                  !slurm_in_job() && getenv("OMPI_COMM_WORLD_RANK");
  /* the audit log: the job's stop (rank 0), or a signal aimed at this rank alone */
  if (s->job->rank == 0 || from.pid != s->launcher_ppid)
    audit_note_stop(signum, by_rm || relayed ? "slurm" : by_mpirun ? "mpirun" : "signal",
                    from.comm[0] ? from.comm : NULL, (int)from.pid);
  lost_before_stop(s); /* a stop after rank 0's gpulaunch died: that death first */
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
    s->stop_by_mpirun = via && strcmp(via, "mpirun") == 0; /* the hub tells the coordinator */
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
  /* From gpulaunch-run, rank 0's own program waits for the coordinator's stop like every other,
   * which reaches them all at one moment. */
  if (s->running && !(via && strcmp(via, "gpulaunch-run") == 0)) {
    LOG_INFO(SUP, "%s received: %s, SIGKILL in %.1f s", util_signal_name(signum),
             s->sig_by_rm ? "the program got it from Slurm" : "sending the program the stop signal",
             s->o->grace);
    signals_deliver_stop(s, fwd, s->o->grace, s->sig_by_rm);
  }
  child_send_event(s, CTL_EV_SIGNAL, s->sig_by_rm ? CTL_F_BY_RM : 0);
}

/* gpulaunch-run (rank 0 only) asks for a stop: the user's SIGTERM/SIGINT, as if gpulaunch had
 * received it (a second SIGINT kills at once, as a second Ctrl-C does). */
static void on_front(uv_poll_t *h, int status, int events) {
  sup_t *s = h->loop->data;
  (void)events;
  int sig;
  while ((sig = status < 0 ? -1 : frontch_read(&s->front)) > 0) {
    LOG_INFO(SUP, "gpulaunch-run asks for a stop (%s)", util_signal_name(sig));
    if (!s->sig_received) audit_note_stop_fd(sig, "gpulaunch-run", s->front.fd);
    if (!s->sig_received) take_stop(s, sig, 0, "gpulaunch-run");
    else if (sig == SIGINT && s->sig_received == SIGINT && s->running) child_kill(s, SIGKILL);
  }
  if (sig < 0) {
    frontch_close(&s->front);
    uv_poll_stop(h);
  }
}

void signals_start(sup_t *s) {
  signal(SIGPIPE, SIG_IGN);
  for (int i = 0; i < NSIGS; i++) {
    uv_signal_init(&s->loop, &s->sigs[i]);
    uv_signal_start(&s->sigs[i], on_signal, g_signals[i]);
    sigorigin_watch(g_signals[i]); /* who sent it: Slurm may have signalled the program already */
  }
}

void signals_front(sup_t *s) {
  s->front.fd = -1;
  if (s->job->rank == 0 && frontch_open(&s->front, 2.0) > 0) {
    uv_poll_init(&s->loop, &s->front_poll, s->front.fd);
    uv_poll_start(&s->front_poll, UV_READABLE, on_front);
  }
}
