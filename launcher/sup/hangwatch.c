/* The hang watchdog's glue (launcher/hang/): progress heard through the liveness frames, rank 0
 * declaring a hang, every rank's stacks collected off the loop, the report and the verdict; and
 * at a failure, the stacks of the ranks still running and silent, and the likely cause. What it
 * finds goes back to sup/supervise.c as an event (hangwatch_ev_t): the hub tells the coordinator. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/mpix.h"
#include "common/redact.h"
#include "common/util.h"
#include "launcher/hang/hang.h"
#include "launcher/hang/progress.h"
#include "launcher/sup/sup_int.h"

/* A bound, not a cost: unloaded, every rank's stacks are in within 1-3 s; on a loaded machine gdb
 * alone has taken 10 s (six ranks' gdb on 2 busy cores), and a stack that is not read in time is
 * a rank the report cannot place. */
#define HANG_COLLECT_S 20.0  /* a rank's stack collection after a hang (py-spy, gdb, eu-stack) */
#define HANG_WAIT_S 24.0     /* rank 0 waits this long for every rank's stacks (<= 26 s in all) */

/* The liveness thread's side (live_opts_t.progress): this rank's age for its frames, and on rank
 * 0 the others' ages as their frames say. */
int32_t hangwatch_progress(void *arg, int from, int32_t age_ms) {
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
  s->hang_text = hang_collect(s->hang_pid, s->hang_budget);
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
  s->sent = 1;
}

/* Every rank, on CTL_HANG: collect the program's stacks off the loop, then send them to rank 0. */
void hangwatch_collect(sup_t *s, double budget_s) {
  if (s->hang_collecting) return;
  s->hang_collecting = 1;
  s->hang_budget = budget_s > 0 && budget_s < HANG_COLLECT_S ? budget_s : HANG_COLLECT_S;
  s->hang_pid = s->running && !s->exited ? (int)s->pid : 0;
  s->hang_work.data = s;
  LOG_INFO(SUP, "hang: collecting the stacks of the program (pid %d)", s->hang_pid);
  if (uv_queue_work(&s->loop, &s->hang_work, hang_work_cb, hang_after_cb) < 0) {
    s->hang_text = NULL;
    hang_after_cb(&s->hang_work, 0);
  }
}

/* Rank 0: a rank's stacks arrived. */
void hangwatch_take(sup_t *s, int src, const char *data, size_t len) {
  if ((!s->hang_active && !s->silent_active) || !s->hang_texts || src < 0 || src >= s->job->size || s->hang_texts[src]) return;
  char *t = malloc(len + 1);
  if (!t) return;
  memcpy(t, data, len);
  t[len] = 0;
  s->hang_texts[src] = t;
  s->hang_got++;
}

void hangwatch_free(sup_t *s) {
  for (int r = 0; s->hang_texts && r < s->job->size; r++) {
    free(s->hang_texts[r]);
    s->hang_texts[r] = NULL;
  }
  s->hang_got = 0;
}

/* Rank 0: seconds since the rank's program last made progress, as its liveness frames say. */
static double silence_of(sup_t *s, int r, double nows, double floor_s) {
  double last;
  if (r == 0) last = nows - prog_age(s->o->progress);
  else last = (double)__atomic_load_n(&s->peer_prog[r], __ATOMIC_RELAXED) / 1e9;
  return nows - GPL_MAX(last, floor_s); /* no progress before the program started is none */
}

double hangwatch_silence(void *arg, int rank) {
  sup_t *s = arg;
  if (!s->live || !s->peer_prog || !s->o->progress || rank < 0 || rank >= s->job->size) return -1;
  return silence_of(s, rank, (double)util_now_ns() / 1e9, s->attempt_t0);
}

int hangwatch_silent_begin(sup_t *s) {
  if (s->hang_active || s->silent_active) return 0;
  hangwatch_free(s);
  s->silent_active = 1;
  return 1;
}

/* Rank 0: the silent ranks' stacks are in (or the coordinator's wait is over): the likely cause. */
static void silent_finish(sup_t *s, const coord_t *co, hangwatch_ev_t *ev) {
  int size = s->job->size, who = -1;
  char func[256] = "";
  hang_rank_t *hr = calloc((size_t)size, sizeof *hr);
  int *cand = calloc((size_t)size, sizeof *cand);
  if (hr && cand) {
    for (int r = 0; r < size; r++) {
      hr[r] = (hang_rank_t){r, s->job->hosts[r], s->hang_texts[r], co->silent[r]};
      cand[r] = co->silent[r] > 0;
    }
    /* a peer's collective that timed out (gloo: "Timed out waiting", NCCL's watchdog: "timeout") */
    who = hang_silent_pick(hr, size, cand, co->peer_timed_out, func, sizeof func);
  }
  LOG_INFO(SUP, "the silent ranks' stacks: %d of %d in; likely cause: %s%d", s->hang_got, size,
           who < 0 ? "none " : "rank ", who);
  free(hr);
  free(cand);
  hangwatch_free(s);
  s->silent_active = 0;
  ev->type = HANGWATCH_SILENT;
  ev->rank = who;
  ev->host = who >= 0 ? s->job->hosts[who] : "";
  ev->silent_s = who >= 0 ? co->silent[who] : 0;
  util_strlcpy(ev->text, func, sizeof ev->text);
}

/* Rank 0: a rank without progress for hang_timeout declares the hang; every rank collects. */
static void hang_check(sup_t *s, const coord_t *co, hangwatch_ev_t *ev) {
  if (s->hang_timeout <= 0 || s->hang_active || !coord_quiet(co) || !s->running || s->exited)
    return;
  int size = s->job->size;
  uint64_t now = util_now_ns();
  double floor_s = GPL_MAX(s->attempt_t0, s->hang_rearm), nows = (double)now / 1e9;
  int nsilent = 0, first = -1;
  double longest = 0;
  for (int r = 0; r < size; r++) {
    s->hang_silent[r] = silence_of(s, r, nows, floor_s);
    if (s->hang_silent[r] >= s->hang_timeout) {
      nsilent++;
      if (first < 0 || s->hang_silent[r] > longest) first = r;
      longest = GPL_MAX(longest, s->hang_silent[r]);
    }
  }
  if (!nsilent) return;
  s->hang_active = 1;
  s->hang_t0 = util_now();
  hangwatch_free(s);
  LOG_INFO(SUP, "hang: %d of %d ranks made no progress for %.0f s ([job] hang_timeout): collecting every "
           "rank's stacks (%.0f s at most)", nsilent, size, longest, HANG_WAIT_S);
  ev->type = HANGWATCH_COLLECT;
}

/* Rank 0: too early for a verdict (hang_too_early): the silent ranks wait in a collective for a
 * peer still on its way. One starting up (a loaded machine's imports and the process group's
 * rendezvous can outlast hang_timeout): not a hang while the attempt is within its start-up bound
 * ([job] timeout). One elsewhere that made progress within hang_timeout (working, or only just
 * stopped: its stack is not yet where it hangs): at most HANG_EARLY_MAX times in a row. Either
 * way nothing is said (an `info` line) and the watchdog looks again hang_timeout after this
 * declaration. */
#define HANG_EARLY_MAX 2
static int too_early(sup_t *s) {
  int size = s->job->size, starting = 0, who = -1;
  hang_rank_t *hr = calloc((size_t)size, sizeof *hr);
  if (!hr) return 0;
  for (int r = 0; r < size; r++) hr[r] = (hang_rank_t){r, s->job->hosts[r], s->hang_texts[r], s->hang_silent[r]};
  who = hang_too_early(hr, size, s->hang_timeout, &starting);
  free(hr);
  if (who < 0) return 0;
  char n[300];
  if (starting) {
    if (util_now() - s->attempt_t0 > s->job->timeout) return 0;
    LOG_INFO(SUP, "hang: %s is still starting up (importing modules or in the process group's rendezvous) "
             "%.0f s after the start while the silent ranks wait in a collective: not a hang; watching again",
             mpix_rank_name(who, n, sizeof n), util_now() - s->attempt_t0);
    return 1;
  }
  if (s->hang_early >= HANG_EARLY_MAX) return 0;
  s->hang_early++;
  LOG_INFO(SUP, "hang: the silent ranks wait in a collective for %s, which made progress %.1f s ago: too early "
           "to tell where it is (%d of %d); watching again", mpix_rank_name(who, n, sizeof n), s->hang_silent[who],
           s->hang_early, HANG_EARLY_MAX);
  return 1;
}

/* The silence found, said once the stacks show it is a hang (a start-up is not said at all). The
 * longest is by each rank's whole silence in this attempt: after a declaration found too early,
 * the silences counted from it tie, and the lowest rank would be named instead of the first to stop. */
static void say_silence(sup_t *s) {
  int size = s->job->size, nsilent = 0, first = -1;
  double longest = 0, best = 0, nows = (double)util_now_ns() / 1e9;
  for (int r = 0; r < size; r++) {
    if (s->hang_silent[r] < s->hang_timeout) continue;
    nsilent++;
    double whole = silence_of(s, r, nows, s->attempt_t0);
    if (first < 0 || whole > best) first = r;
    best = GPL_MAX(best, whole);
    longest = GPL_MAX(longest, s->hang_silent[r]);
  }
  char n[300];
  if (nsilent == size)
    log_print("gpulaunch: hang: no rank made progress for %.0f s ([job] hang_timeout); every rank's "
              "stacks read in %.0f s\n", longest, util_now() - s->hang_t0);
  else if (first >= 0)
    log_print("gpulaunch: hang: %d of %d ranks made no progress for %.0f s ([job] hang_timeout), the "
              "longest %s; every rank's stacks read in %.0f s\n", nsilent, size, longest,
              mpix_rank_name(first, n, sizeof n), util_now() - s->hang_t0);
}

/* Rank 0: the stacks are in (or the wait is over): the verdict, the report, then the job ends
 * (or, hang_action = report, goes on). */
static void hang_finish(sup_t *s, hangwatch_ev_t *ev) {
  int size = s->job->size;
  /* Each rank's silence as of now, when its stack is in: the declaration came the moment the first
   * rank passed hang_timeout, and the others, stopped a barrier's skew later, were a fraction of a
   * second short of it then; the rank that hangs is not always the first (a loaded machine released
   * it from the last barrier late). A rank that made progress meanwhile is still short of it. */
  double floor_s = GPL_MAX(s->attempt_t0, s->hang_rearm), nows = (double)util_now_ns() / 1e9;
  for (int r = 0; r < size; r++) s->hang_silent[r] = silence_of(s, r, nows, floor_s);
  if (too_early(s)) {
    hangwatch_free(s);
    s->hang_active = 0;
    s->hang_rearm = s->hang_t0; /* silence since the declaration counts: a hang that began while
                                 * the stacks were read is not found a collection late */
    return;
  }
  s->hang_early = 0;
  say_silence(s);
  hang_rank_t *hr = calloc((size_t)size, sizeof *hr);
  int *odd = calloc((size_t)size, sizeof *odd);
  hang_verdict_t v;
  memset(&v, 0, sizeof v);
  v.first_odd = -1;
  if (hr && odd) {
    for (int r = 0; r < size; r++)
      hr[r] = (hang_rank_t){r, s->job->hosts[r], s->hang_texts[r], s->hang_silent[r]};
    hang_analyze_at(hr, size, s->hang_timeout, odd, &v);
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
  free(hr);
  free(odd);
  hangwatch_free(s);
  s->hang_active = 0;
  if (s->o->hang_report_only) {
    s->hang_rearm = util_now(); /* the next report: after another hang_timeout without progress */
    log_print("gpulaunch: hang: [job] hang_action = report: the job goes on\n");
    return;
  }
  ev->type = HANGWATCH_HANG;
  ev->rank = who;
  ev->host = s->job->hosts[who];
  snprintf(ev->text, sizeof ev->text, "hang: no progress for %.0f s; %s", s->hang_timeout, v.summary);
}

int hangwatch_poll(sup_t *s, const coord_t *co, hangwatch_ev_t *ev) {
  memset(ev, 0, sizeof *ev);
  ev->type = HANGWATCH_NONE;
  if (s->silent_active) {
    /* before the coordinator's own bound (coord_tick runs after this) */
    if (s->hang_got >= s->job->size || !co->collecting || util_now() >= co->collect_until) silent_finish(s, co, ev);
  } else if (!s->hang_active) {
    hang_check(s, co, ev);
  } else if (s->hang_got >= s->job->size || util_now() - s->hang_t0 > HANG_WAIT_S) {
    hang_finish(s, ev);
  }
  return ev->type;
}
