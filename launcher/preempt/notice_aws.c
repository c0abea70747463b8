/* AWS: the spot instance-action of the instance metadata (IMDSv2 token flow), about 2 minutes ahead. */
#include <string.h>

#include <cjson/cJSON.h>

#include "common/log.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/preempt/notice_int.h"

/* What IMDSv2 grants at most; the token is fetched again a minute before it ends. */
#define TOKEN_TTL 21600

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

/* A session token for the next requests (PUT /latest/api/token), kept until a minute before its end. */
static int token(notice_watch_t *w, char *why, size_t whylen) {
  if (w->aws_token[0] && util_now() - w->aws_token_at < TOKEN_TTL - 60) return 0;
  const char *const hdr[] = {"X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL};
  notice_reply_t r;
  int rc = notice_http_do(&w->http, "PUT", w->base, "/latest/api/token", hdr, NULL, &r, why, whylen);
  if (rc < 0) return rc;
  size_t n = strspn(r.body, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=+/.");
  if (r.status != 200) {
    rc = notice_bad_status(&r, why, whylen);
  } else if (n == 0 || n != r.len || n >= sizeof w->aws_token) {
    util_fmt(why, whylen, "the token from %s is not a token", r.url);
    rc = GPL_EPROTO;
  } else {
    memcpy(w->aws_token, r.body, n + 1);
    w->aws_token_at = util_now();
  }
  notice_reply_free(&r);
  return rc;
}

int notice_aws_poll(notice_watch_t *w, notice_t *out, char *why, size_t whylen) {
  int rc = token(w, why, whylen);
  if (rc < 0) return rc;
  char hdr[300];
  util_fmt(hdr, sizeof hdr, "X-aws-ec2-metadata-token: %s", w->aws_token);
  const char *const hdrs[] = {hdr, NULL};
  notice_reply_t r;
  rc = notice_http_do(&w->http, "GET", w->base, "/latest/meta-data/spot/instance-action", hdrs, NULL, &r, why,
                      whylen);
  if (rc < 0) return rc;
  if (r.status == 404) {
    rc = 0; /* nothing pending */
  } else if (r.status == 200) {
    rc = notice_aws_parse(r.body, r.len, out, why, whylen);
  } else {
    if (r.status == 401) w->aws_token[0] = 0; /* expired or revoked: a new one next time */
    rc = notice_bad_status(&r, why, whylen);
  }
  notice_reply_free(&r);
  return rc;
}
