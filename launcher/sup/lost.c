/* A rank's supervisor or its host was lost (launcher/live/liveness.c): say it once, close the
 * lost host's connections, and end this rank without the coordinator (exit 68). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/mpix.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "launcher/exitcode.h"
#include "launcher/live/lostpeer.h"
#include "launcher/sup/sup_int.h"

/* The distinct hosts of who ("rank 4 (host h2), rank 5 (host h2)"), other than skip: their count,
 * and their names ", "-separated in out. */
static int who_hosts(const char *who, const char *skip, char *out, size_t len) {
  int n = 0;
  out[0] = 0;
  for (const char *p = strstr(who, "(host "); p; p = strstr(p, "(host ")) {
    p += 6;
    size_t w = strcspn(p, ")");
    char name[80];
    if (w == 0 || w >= 64) continue;
    snprintf(name, sizeof name, "%.*s", (int)w, p);
    if (strcmp(name, skip) == 0) continue;
    int seen = 0;
    for (const char *q = out; (q = strstr(q, name)) && !seen; q += w)
      seen = (q == out || q[-1] == ' ') && (q[w] == ',' || q[w] == 0);
    if (seen) continue;
    n++;
    size_t off = strlen(out);
    if (off + w + 8 < len) snprintf(out + off, len - off, "%s%s", off ? ", " : "", name);
  }
  return n;
}

static void live_describe(const sup_t *s, const live_event_t *ev, char *buf, size_t len) {
  const char *who = ev->who;
  const job_t *j = s->job;
  char hosts[512];
  /* Rank 0 that hears no other host at once (3 hosts or more): its own host is the likely one cut
   * off (a fabric partition) rather than every other host lost; the other side names it. */
  if (ev->why == LIVE_SILENT && j->rank == 0 && j->nnodes >= 3 &&
      who_hosts(who, j->hosts[0], hosts, sizeof hosts) == j->nnodes - 1) {
    snprintf(buf, len, "every other host (%s): no heartbeat from their supervisors for %.0f s: rank 0's host "
             "%s is cut off from them (a network partition), more likely than all of them lost", hosts,
             ev->silent_s, j->hosts[0]);
    return;
  }
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

void lost_on_live(uv_async_t *a) {
  sup_t *s = a->data;
  live_event_t ev;
  if (s->done || s->live_lost || !live_event(s->live, &ev)) return;
  s->live_lost = 1;
  s->live_lost_at = util_now();
  live_describe(s, &ev, s->live_what, sizeof s->live_what);
  /* The root cause is said once per job: rank 0 names the lost ranks; when rank 0 itself is
   * lost, one other rank says so (live_says_loss). A rank that was already told to stop (mpirun's
   * or Slurm's SIGTERM, then their SIGKILL to the ranks) sees the teardown of that stop, not a
   * dead gpulaunch: the stop was said already. */
  if (s->sig_received)
    LOG_INFO(SUP, "%s, after the job was told to stop (%s)", s->live_what, util_signal_name(s->sig_received));
  else if (live_says_loss(s, &ev)) {
    audit_note_lost(ev.who, s->live_what);
    log_print("gpulaunch: %s; ending the job (exit status %d)\n", s->live_what, GPL_EXIT_TIMEOUT);
    /* rank 0's host is the one lost: an elastic gpulaunch-run hears which from here */
    if (s->job->rank != 0 && ev.why != LIVE_ABORT) {
      frontch_tell_lost(s->job->hosts[s->job->rank], ev.who, 1.0);
      s->told_front = 1;
    }
  } else
    LOG_INFO(SUP, "%s; ending the job (exit status %d)", s->live_what, GPL_EXIT_TIMEOUT);
  /* (a gpulaunch that died leaves its host alive: mpirun sees its end) */
  if (ev.why != LIVE_CLOSED) leave_lost_helper(s, ev.lost_rank);
  if (s->job->rank == 0) {
    live_abort_all(s->live, ev.lost_rank);
    /* gpulaunch-run ends mpirun, which could wait minutes for a lost host's daemon. */
    frontch_lost(&s->front, s->job->hosts[0], ev.who); /* an elastic gpulaunch-run goes on without them */
    frontch_exit(&s->front, GPL_EXIT_TIMEOUT);
  }
  memset(&s->exit_msg, 0, sizeof s->exit_msg);
  s->exit_msg.rank = ev.lost_rank;
  if (ev.lost_rank >= 0 && ev.lost_rank < s->job->size)
    util_strlcpy(s->exit_msg.host, s->job->hosts[ev.lost_rank], sizeof s->exit_msg.host);
  s->exit_code = GPL_EXIT_TIMEOUT;
  if (s->running && !s->exited) {
    /* The program goes as after another rank's failure: SIGTERM, SIGKILL after stop_timeout. */
    if (!s->forwarded) child_kill(s, SIGTERM);
    s->forwarded = 1;
    child_kill_later(s, s->o->stop_timeout);
  } else if (!s->spawned || s->reported) {
    s->done = 1;
    uv_stop(&s->loop);
  }
}

/* A stop signal (SIGTERM, SIGINT) from the launcher: where this rank's liveness parent, rank 0,
 * was already dead when it came, it is the launcher's end of the job after that death (plain
 * mpirun's, which SIGKILLs every rank a second later): nobody else can say that death, rank 0
 * being the one that says a stop, so the rank that says rank 0's loss (live_says_loss) says it
 * now, before the stop; the liveness event that follows is then after the stop (lost_on_live). */
void lost_before_stop(sup_t *s) {
  if (s->job->rank == 0 || s->sig_received || s->live_lost || live_parent_gone(s->live, 0.5) != 0) return;
  live_event_t ev = {.lost_rank = 0, .why = LIVE_CLOSED, .nlost = 1};
  mpix_rank_name(0, ev.who, sizeof ev.who);
  char what[sizeof s->live_what];
  live_describe(s, &ev, what, sizeof what);
  if (!live_says_loss(s, &ev)) return;
  log_print("gpulaunch: %s; the job ends\n", what);
  frontch_tell_lost(s->job->hosts[s->job->rank], ev.who, 1.0); /* an elastic gpulaunch-run hears which host from here */
  s->told_front = 1;
}

/* The teller's word takes a connection, a handshake and a line, 1 s per address at most: a rank
 * of its side that left at once could make mpirun end the teller first (issue 34's partition,
 * where the probe then had to find which side was cut off). */
#define LOST_HOLD_S 2.0

void lost_hold(sup_t *s) {
  if (!s->live_lost || s->job->rank == 0 || s->told_front || s->sig_received || !frontch_present()) return;
  double left = s->live_lost_at + LOST_HOLD_S - util_now();
  if (left <= 0) return;
  /* mpirun's or gpulaunch-run's stop during the wait ends this rank at once: the job is over. */
  signal(SIGTERM, SIG_DFL);
  signal(SIGINT, SIG_DFL);
  sigset_t st;
  sigemptyset(&st);
  sigaddset(&st, SIGTERM);
  sigaddset(&st, SIGINT);
  pthread_sigmask(SIG_UNBLOCK, &st, NULL);
  LOG_INFO(SUP, "lost host: leaving in %.1f s, after the rank that tells gpulaunch-run", left);
  util_sleep(left);
}

void lost_wake(void *arg) { uv_async_send(arg); }
