/* The node leader's watcher of the cloud's interruption notice (launcher/preempt/notice.h): the
 * watcher's thread wakes the loop, which asks the coordinator to stop the job with a grace that
 * ends before the machine goes; Azure's event is acknowledged once this node's programs are done.
 * A recommendation to checkpoint (AWS rebalance) asks rank 0 instead for [job] checkpoint_signal
 * to every program at one moment, and the job goes on. */
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "common/log.h"
#include "common/util.h"
#include "launcher/preempt/notice.h"
#include "launcher/sup/sup_int.h"

#define GRACE_MIN_S 1.0 /* a notice too late for any grace still gives the programs this long */
#define CKPT_GAP_S 60.0 /* rank 0 asks every program for a checkpoint at most this often (several
                         * nodes may be told to rebalance within a few seconds) */

/* The watcher's thread: keep the notice, wake the loop. */
static void on_notice(const notice_t *n, void *arg) {
  sup_t *s = arg;
  uv_mutex_lock(&s->notice_mu);
  if (n->advisory) {
    if (!s->ckpt_new) util_strlcpy(s->ckpt_text, n->text, sizeof s->ckpt_text);
    s->ckpt_new = 1;
  } else if (!s->notice_new) {
    s->notice_new = 1;
    s->notice_cloud = n->cloud;
    s->notice_deadline = n->deadline;
    util_strlcpy(s->notice_event, n->event_id, sizeof s->notice_event);
    util_strlcpy(s->notice_text, n->text, sizeof s->notice_text);
  }
  uv_mutex_unlock(&s->notice_mu);
  uv_async_send(&s->notice_async);
}

/* One CTL_EV_SIGNAL with CTL_F_CHECKPOINT to the coordinator, for a recommendation. */
static void ask_checkpoint(sup_t *s) {
  LOG_WARN("%s: %s: asking rank 0 for %s to every program (a checkpoint; the job goes on)", s->job->host,
           s->ckpt_text, util_signal_name(s->o->checkpoint_signal));
  ctl_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = CTL_EV_SIGNAL;
  m.rank = s->job->rank;
  m.attempt = s->attempt;
  m.signo = s->o->checkpoint_signal;
  m.flags = CTL_F_CHECKPOINT;
  util_strlcpy(m.host, s->job->host, sizeof m.host);
  util_strlcpy(m.tail, s->ckpt_text, sizeof m.tail);
  ctl_send(&s->ctl, 0, &m);
  s->sent = 1; /* the hub polls fast for the answer */
}

/* The loop: one CTL_EV_SIGNAL with CTL_F_NOTICE to the coordinator, whose stop reaches every
 * program of the job (this node's too) at one moment; or, for a recommendation, the request for a
 * checkpoint (the job goes on). */
static void on_async(uv_async_t *a) {
  sup_t *s = a->data;
  uv_mutex_lock(&s->notice_mu);
  int fresh = s->notice_new && !s->notice_taken;
  s->notice_taken |= fresh;
  /* an interruption already on its way makes the recommendation moot */
  int ckpt = s->ckpt_new && !s->ckpt_taken && !s->notice_taken;
  s->ckpt_taken |= ckpt;
  uv_mutex_unlock(&s->notice_mu);
  if (ckpt && !s->done && s->o->checkpoint_signal > 0) ask_checkpoint(s);
  if (!fresh || s->done) return;
  double left = s->notice_deadline - util_wall_now();
  double grace = GPL_MAX(GRACE_MIN_S, left - s->o->notice_margin);
  LOG_WARN("%s: %s (%.0f s left): asking rank 0 to stop the job, grace %.1f s", s->job->host, s->notice_text,
           left, GPL_MIN(grace, s->o->grace));
  audit_note_notice(s->job->host, s->notice_text, left);
  ctl_msg_t m;
  memset(&m, 0, sizeof m);
  m.type = CTL_EV_SIGNAL;
  m.rank = s->job->rank;
  m.attempt = s->attempt;
  m.signo = SIGTERM;
  m.flags = CTL_F_NOTICE;
  m.grace = grace;
  m.t_fail = s->notice_deadline;
  util_strlcpy(m.host, s->job->host, sizeof m.host);
  util_strlcpy(m.tail, s->notice_text, sizeof m.tail);
  ctl_send(&s->ctl, 0, &m);
  s->sent = 1; /* the hub polls fast for the answer */
}

int supnotice_checkpoint_event(sup_t *s, const ctl_msg_t *m) {
  if (m->type != CTL_EV_SIGNAL || !(m->flags & CTL_F_CHECKPOINT)) return 0;
  double now = util_wall_now();
  if (s->ckpt_sent_at > 0 && now - s->ckpt_sent_at < CKPT_GAP_S) {
    LOG_INFO(SUP, "%s (host %s): every program was told to checkpoint %.0f s ago; not again", m->tail, m->host,
             now - s->ckpt_sent_at);
    return 1;
  }
  s->ckpt_sent_at = now;
  log_print("gpulaunch: %s (host %s): every program gets %s now to write a checkpoint; the job goes on\n",
            m->tail, m->host, util_signal_name(m->signo));
  ctl_msg_t c;
  memset(&c, 0, sizeof c);
  c.type = CTL_SIGNAL;
  c.rank = 0;
  c.attempt = s->attempt;
  c.signo = m->signo;
  c.at = now + SUP_AT_LEAD_S;
  util_strlcpy(c.host, m->host, sizeof c.host);
  ctl_broadcast(&s->ctl, &c);
  return 1;
}

static void on_sig_at(uv_timer_t *t) {
  sup_t *s = t->loop->data;
  signals_sleep_to(s->sig_when);
  /* a program that is being stopped or has ended gets nothing more */
  if (s->running && !s->exited && !s->forwarded && !s->stop_requested) child_kill(s, s->sig_signo);
}

void supnotice_checkpoint_do(sup_t *s, const ctl_msg_t *m) {
  if (m->attempt != s->attempt || !s->running || s->exited || s->forwarded || s->stop_requested || m->signo <= 0)
    return;
  LOG_INFO(SUP, "sending %s to the program for a checkpoint (host %s's recommendation)", util_signal_name(m->signo),
           m->host);
  double wait = m->at - util_wall_now();
  s->sig_signo = m->signo;
  s->sig_when = m->at;
  if (wait <= 0.0005 || wait > 1.0) { /* passed, or a clock far off: now */
    s->sig_when = 0;
    on_sig_at(&s->sig_timer);
    return;
  }
  uv_update_time(&s->loop);
  uv_timer_start(&s->sig_timer, on_sig_at, (uint64_t)(GPL_MAX(0.0, wait - 0.004) * 1000), 0);
}

int supnotice_start(sup_t *s) {
  uv_timer_init(&s->loop, &s->sig_timer);
  uv_async_init(&s->loop, &s->notice_async, on_async);
  s->notice_async.data = s;
  uv_mutex_init(&s->notice_mu);
  if (!s->o->notice || s->job->local_rank != 0) return GPL_OK;
  int rc = notice_watch_start(&s->notice_w, s->o->notice, on_notice, s);
  if (rc < 0) { /* no notices; the job runs on (said once, where) */
    LOG_WARN("%s: cannot watch the cloud's interruption notice (%s): the job runs without it", s->job->host,
             gpl_strerror(rc));
    s->notice_w = NULL;
  } else if (s->notice_w) {
    LOG_INFO(SUP, "watching the %s interruption notice", notice_kind_name(notice_watch_kind(s->notice_w)));
  }
  return GPL_OK;
}

void supnotice_end(sup_t *s) {
  uv_mutex_lock(&s->notice_mu);
  int taken = s->notice_taken, azure = s->notice_cloud == NOTICE_AZURE;
  uv_mutex_unlock(&s->notice_mu);
  /* Azure may end the machine sooner once told this node is done with it. */
  if (s->notice_w && taken && azure && notice_ack(s->notice_w, s->notice_event) < 0)
    LOG_WARN("%s: Azure's scheduled event %s could not be acknowledged", s->job->host, s->notice_event);
  notice_watch_stop(s->notice_w);
  s->notice_w = NULL;
  uv_mutex_destroy(&s->notice_mu);
}
