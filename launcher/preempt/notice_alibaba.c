/* Alibaba Cloud ECS: a spot instance's instance/spot/termination-time of the instance metadata
 * (404 until the instance is to be released, then the time it is, about 5 minutes ahead), with
 * the hardened mode's session token where the service gives one. */
#include <string.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/preempt/notice_int.h"

#define TERMINATION_PATH "/latest/meta-data/instance/spot/termination-time"

int notice_alibaba_parse(const char *body, size_t len, notice_t *out, char *why, size_t whylen) {
  char when[40], q[48];
  while (len && (body[len - 1] == '\n' || body[len - 1] == '\r' || body[len - 1] == ' ')) len--;
  notice_quote(q, sizeof q, body, len);
  if (len == 0 || len >= sizeof when || memchr(body, 0, len)) {
    util_fmt(why, whylen, "spot/termination-time is not a time: '%s'", q);
    return GPL_EPROTO;
  }
  memcpy(when, body, len);
  when[len] = 0;
  if (notice_time_parse(when, &out->deadline) < 0) {
    util_fmt(why, whylen, "spot/termination-time is not an ISO 8601 UTC time: '%s'", q);
    return GPL_EPROTO;
  }
  out->cloud = NOTICE_ALIBABA;
  util_strlcpy(out->action, "terminate", sizeof out->action);
  util_fmt(out->event_id, sizeof out->event_id, "alibaba:terminate:%s", when);
  util_fmt(out->text, sizeof out->text, "Alibaba Cloud ECS spot instance released at %s", when);
  return 1;
}

static int poll_alibaba(notice_cloud_t *c, notice_t *out, char *why, size_t whylen) {
  /* the hardened mode wants a token; the normal mode may not give one, and needs none */
  if (!c->no_token) {
    int rc = notice_token_get(c->http, c->base, "/latest/api/token", "X-aliyun-ecs-metadata-token-ttl-seconds",
                              1, &c->token, why, whylen);
    if (rc < 0) return rc;
    c->no_token = rc == 1;
  }
  char hdr[300];
  util_fmt(hdr, sizeof hdr, "X-aliyun-ecs-metadata-token: %s", c->token.value);
  const char *const hdrs[] = {hdr, NULL};
  notice_reply_t r;
  int rc = notice_http_do(c->http, "GET", c->base, TERMINATION_PATH, c->no_token ? NULL : hdrs, NULL, &r, why,
                          whylen);
  if (rc < 0) return rc;
  if (r.status == 404) {
    rc = 0; /* nothing pending */
  } else if (r.status == 200) {
    rc = notice_alibaba_parse(r.body, r.len, out, why, whylen);
  } else {
    if (r.status == 401 || r.status == 403) c->token.value[0] = 0, c->no_token = 0; /* a new token */
    rc = notice_bad_status(&r, why, whylen);
  }
  notice_reply_free(&r);
  return rc;
}

const notice_backend_t notice_backend_alibaba = {
    .kind = NOTICE_ALIBABA, .base = "http://100.100.100.200", .poll = poll_alibaba, .ack = NULL};
