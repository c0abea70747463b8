/* The node leader's watcher of the cloud's interruption notice (launcher/preempt/notice.h): the
 * watcher's thread wakes the loop, which asks the coordinator to stop the job with a grace that
 * ends before the machine goes; Azure's event is acknowledged once this node's programs are done. */
#include <stdio.h>
#include <string.h>
#include <uv.h>

#include "common/log.h"
#include "common/util.h"
#include "launcher/preempt/notice.h"
#include "launcher/sup/sup_int.h"

#define GRACE_MIN_S 1.0 /* a notice too late for any grace still gives the programs this long */

/* The watcher's thread: keep the notice, wake the loop. */
static void on_notice(const notice_t *n, void *arg) {
  sup_t *s = arg;
  uv_mutex_lock(&s->notice_mu);
  if (!s->notice_new) {
    s->notice_new = 1;
    s->notice_cloud = n->cloud;
    s->notice_deadline = n->deadline;
    util_strlcpy(s->notice_event, n->event_id, sizeof s->notice_event);
    util_strlcpy(s->notice_text, n->text, sizeof s->notice_text);
  }
  uv_mutex_unlock(&s->notice_mu);
  uv_async_send(&s->notice_async);
}

/* The loop: one CTL_EV_SIGNAL with CTL_F_NOTICE to the coordinator, whose stop reaches every
 * program of the job (this node's too) at one moment. */
static void on_async(uv_async_t *a) {
  sup_t *s = a->data;
  uv_mutex_lock(&s->notice_mu);
  int fresh = s->notice_new && !s->notice_taken;
  s->notice_taken |= fresh;
  uv_mutex_unlock(&s->notice_mu);
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
  sup_poll_pace(s, 1);
}

int supnotice_start(sup_t *s) {
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
