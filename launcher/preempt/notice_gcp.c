/* GCP: instance/preempted of the compute metadata, TRUE about 30 s before a preemptible or spot VM stops. */
#include <string.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/preempt/notice_int.h"

int notice_gcp_parse(const char *body, size_t len, double now, notice_t *out, char *why, size_t whylen) {
  while (len && (body[len - 1] == '\n' || body[len - 1] == '\r' || body[len - 1] == ' ')) len--;
  if (len == 5 && memcmp(body, "FALSE", 5) == 0) return 0;
  if (len != 4 || memcmp(body, "TRUE", 4) != 0) {
    char q[48];
    notice_quote(q, sizeof q, body, len);
    util_fmt(why, whylen, "instance/preempted is neither TRUE nor FALSE: '%s'", q);
    return GPL_EPROTO;
  }
  out->cloud = NOTICE_GCP;
  out->deadline = now + NOTICE_GRACE_DEFAULT;
  util_strlcpy(out->action, "preempted", sizeof out->action);
  util_strlcpy(out->event_id, "gcp:preempted", sizeof out->event_id);
  util_fmt(out->text, sizeof out->text, "GCP preemption notice: the instance is preempted (%.0f s ahead)",
           NOTICE_GRACE_DEFAULT);
  return 1;
}

static int poll_gcp(notice_cloud_t *c, notice_t *out, char *why, size_t whylen) {
  const char *const hdrs[] = {"Metadata-Flavor: Google", NULL};
  notice_reply_t r;
  int rc = notice_http_do(c->http, "GET", c->base, "/computeMetadata/v1/instance/preempted", hdrs, NULL, &r,
                          why, whylen);
  if (rc < 0) return rc;
  rc = r.status == 200 ? notice_gcp_parse(r.body, r.len, util_wall_now(), out, why, whylen)
                       : notice_bad_status(&r, why, whylen);
  notice_reply_free(&r);
  return rc;
}

const notice_backend_t notice_backend_gcp = {
    .kind = NOTICE_GCP, .base = "http://169.254.169.254", .poll = poll_gcp, .ack = NULL};
