/* AWS: the spot instance-action of the instance metadata (IMDSv2 token flow), about 2 minutes
 * ahead, and the rebalance recommendation, which often comes minutes before it. */
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/preempt/notice_int.h"

#define ACTION_PATH "/latest/meta-data/spot/instance-action"
#define REBALANCE_PATH "/latest/meta-data/events/recommendations/rebalance"

int notice_aws_parse(const char *body, size_t len, notice_t *out, char *why, size_t whylen) {
  cJSON *doc = cJSON_ParseWithLength(body, len);
  int rc = GPL_EPROTO;
  const char *action = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "action"));
  const char *when = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "time"));
  char q[48];
  notice_quote(q, sizeof q, body, len);
  if (!doc || !cJSON_IsObject(doc)) {
    util_fmt(why, whylen, "instance-action is not a JSON object: '%s'", q);
  } else if (!action || !when) {
    util_fmt(why, whylen, "instance-action without \"action\" or \"time\": '%s'", q);
  } else if (strcmp(action, "terminate") != 0 && strcmp(action, "stop") != 0 &&
             strcmp(action, "hibernate") != 0) {
    util_fmt(why, whylen, "instance-action names an unknown action: '%s'", q);
  } else if (notice_time_parse(when, &out->deadline) < 0) {
    util_fmt(why, whylen, "instance-action has a time that is not ISO 8601 UTC: '%s'", q);
  } else {
    out->cloud = NOTICE_AWS;
    util_strlcpy(out->action, action, sizeof out->action);
    util_fmt(out->event_id, sizeof out->event_id, "aws:%s:%s", action, when);
    util_fmt(out->text, sizeof out->text, "AWS spot interruption notice: %s at %s", action, when);
    rc = 1;
  }
  cJSON_Delete(doc);
  return rc;
}

int notice_aws_rebalance_parse(const char *body, size_t len, notice_t *out, char *why, size_t whylen) {
  cJSON *doc = cJSON_ParseWithLength(body, len);
  const char *when = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(doc, "noticeTime"));
  int rc = GPL_EPROTO;
  char q[48];
  notice_quote(q, sizeof q, body, len);
  if (!doc || !cJSON_IsObject(doc) || !when) {
    util_fmt(why, whylen, "the rebalance recommendation is not {\"noticeTime\": ...}: '%s'", q);
  } else if (notice_time_parse(when, &out->deadline) < 0) {
    util_fmt(why, whylen, "the rebalance recommendation has a noticeTime that is not ISO 8601 UTC: '%s'", q);
  } else {
    out->cloud = NOTICE_AWS;
    out->advisory = 1;
    util_strlcpy(out->action, "rebalance", sizeof out->action);
    util_fmt(out->event_id, sizeof out->event_id, "aws:rebalance:%s", when);
    util_fmt(out->text, sizeof out->text, "AWS rebalance recommendation posted at %s", when);
    rc = 1;
  }
  cJSON_Delete(doc);
  return rc;
}

/* GET path with the token: 1 (notice), 0 (404: nothing pending) or a negative code. */
static int get(notice_cloud_t *c, const char *path, notice_t *out, char *why, size_t whylen) {
  char hdr[300];
  util_fmt(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", c->token.value);
  const char *const hdrs[] = {hdr, NULL};
  notice_reply_t r;
  int rc = notice_http_do(c->http, "GET", c->base, path, hdrs, NULL, &r, why, whylen);
  if (rc < 0) return rc;
  if (r.status == 404) {
    rc = 0; /* nothing pending */
  } else if (r.status == 200) {
    rc = strcmp(path, ACTION_PATH) == 0 ? notice_aws_parse(r.body, r.len, out, why, whylen)
                                        : notice_aws_rebalance_parse(r.body, r.len, out, why, whylen);
  } else {
    if (r.status == 401) c->token.value[0] = 0; /* expired or revoked: a new one next time */
    rc = notice_bad_status(&r, why, whylen);
  }
  notice_reply_free(&r);
  return rc;
}

/* The interruption first: once it is there, a recommendation says nothing more. */
static int poll_aws(notice_cloud_t *c, notice_t *out, char *why, size_t whylen) {
  int rc = notice_token_get(c->http, c->base, "/latest/api/token", "X-aws-ec2-metadata-token-ttl-seconds", 0,
                            &c->token, why, whylen);
  if (rc < 0) return rc;
  rc = get(c, ACTION_PATH, out, why, whylen);
  if (rc != 0 || !c->opts->rebalance) return rc;
  return get(c, REBALANCE_PATH, out, why, whylen);
}

const notice_backend_t notice_backend_aws = {
    .kind = NOTICE_AWS, .base = "http://169.254.169.254", .poll = poll_aws, .ack = NULL};
