/* Azure: Scheduled Events of the instance metadata (Preempt, Terminate for this VM), and their acknowledgement. */
#include <strings.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/preempt/notice_int.h"

#define EVENTS_PATH "/metadata/scheduledevents?api-version=2020-07-01"
#define NAME_PATH "/metadata/instance/compute/name?api-version=2021-02-01&format=text"

static int names_vm(const cJSON *resources, const char *vm_name) {
  const cJSON *r;
  cJSON_ArrayForEach(r, resources) {
    const char *s = cJSON_GetStringValue(r);
    if (s && strcasecmp(s, vm_name) == 0) return 1; /* Azure's names ignore case */
  }
  return 0;
}

static const char *str(const cJSON *o, const char *key) {
  return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

int notice_azure_parse(const char *body, size_t len, const char *vm_name, double now, notice_t *out,
                       char *why, size_t whylen) {
  if (!vm_name || !*vm_name) return util_fmt(why, whylen, "no VM name to match events with"), GPL_EINVAL;
  cJSON *doc = cJSON_ParseWithLength(body, len);
  const cJSON *events = cJSON_GetObjectItemCaseSensitive(doc, "Events"), *e;
  int rc = 0;
  if (!cJSON_IsArray(events)) {
    char q[48];
    notice_quote(q, sizeof q, body, len);
    util_fmt(why, whylen, "scheduledevents is not an object with an Events list: '%s'", q);
    rc = GPL_EPROTO;
    events = NULL;
  }
  cJSON_ArrayForEach(e, events) {
    const char *type = str(e, "EventType"), *id = str(e, "EventId"), *status = str(e, "EventStatus");
    const char *nb = str(e, "NotBefore");
    if (!type || (strcmp(type, "Preempt") != 0 && strcmp(type, "Terminate") != 0)) continue;
    if (!names_vm(cJSON_GetObjectItemCaseSensitive(e, "Resources"), vm_name)) continue;
    if (status && strcmp(status, "Scheduled") != 0 && strcmp(status, "Started") != 0) continue;
    if (!id || !*id) {
      util_fmt(why, whylen, "a %s event for %s without an EventId", type, vm_name);
      rc = GPL_EPROTO;
      break;
    }
    /* NotBefore is empty once the event has started: it is happening now */
    out->deadline = now + NOTICE_GRACE_DEFAULT;
    if (nb && *nb && notice_time_parse(nb, &out->deadline) < 0) {
      util_fmt(why, whylen, "the %s event %s has a NotBefore that is not a date: '%.40s'", type, id, nb);
      rc = GPL_EPROTO;
      break;
    }
    out->cloud = NOTICE_AZURE;
    util_strlcpy(out->action, strcmp(type, "Preempt") == 0 ? "preempt" : "terminate", sizeof out->action);
    util_strlcpy(out->event_id, id, sizeof out->event_id);
    util_fmt(out->text, sizeof out->text, "Azure scheduled event %s (%s) for %s, not before %s", type, id,
             vm_name, nb && *nb ? nb : "now");
    rc = 1;
    break;
  }
  cJSON_Delete(doc);
  return rc;
}

/* This VM's name, which the events name in Resources (asked once, until answered). */
static int fetch_name(notice_cloud_t *c, char *why, size_t whylen) {
  if (c->vm_name[0]) return 0;
  const char *const hdrs[] = {"Metadata: true", NULL};
  notice_reply_t r;
  int rc = notice_http_do(c->http, "GET", c->base, NAME_PATH, hdrs, NULL, &r, why, whylen);
  if (rc < 0) return rc;
  char *name = util_trim(r.body);
  if (r.status != 200) {
    rc = notice_bad_status(&r, why, whylen);
  } else if (!*name || strlen(name) >= sizeof c->vm_name || strpbrk(name, " \t\r\n\"")) {
    util_fmt(why, whylen, "the VM name from %s is not a name", r.url);
    rc = GPL_EPROTO;
  } else {
    util_strlcpy(c->vm_name, name, sizeof c->vm_name);
  }
  notice_reply_free(&r);
  return rc;
}

static int poll_azure(notice_cloud_t *c, notice_t *out, char *why, size_t whylen) {
  int rc = fetch_name(c, why, whylen);
  if (rc < 0) return rc;
  const char *const hdrs[] = {"Metadata: true", NULL};
  notice_reply_t r;
  if ((rc = notice_http_do(c->http, "GET", c->base, EVENTS_PATH, hdrs, NULL, &r, why, whylen)) < 0) return rc;
  rc = r.status == 200 ? notice_azure_parse(r.body, r.len, c->vm_name, util_wall_now(), out, why, whylen)
                       : notice_bad_status(&r, why, whylen);
  notice_reply_free(&r);
  return rc;
}

static int ack_azure(const notice_cloud_t *c, notice_http_t *h, const char *event_id, char *why, size_t whylen) {
  cJSON *doc = cJSON_CreateObject(), *reqs = cJSON_AddArrayToObject(doc, "StartRequests");
  cJSON *one = cJSON_CreateObject();
  char *body = NULL;
  if (reqs && one && cJSON_AddStringToObject(one, "EventId", event_id) && cJSON_AddItemToArray(reqs, one)) {
    one = NULL;
    body = cJSON_PrintUnformatted(doc);
  }
  cJSON_Delete(one);
  cJSON_Delete(doc);
  if (!body) return util_fmt(why, whylen, "out of memory"), GPL_ENOMEM;
  const char *const hdrs[] = {"Metadata: true", "Content-Type: application/json", NULL};
  notice_reply_t r;
  int rc = notice_http_do(h, "POST", c->base, EVENTS_PATH, hdrs, body, &r, why, whylen);
  cJSON_free(body);
  if (rc < 0) return rc;
  if (r.status != 200) rc = notice_bad_status(&r, why, whylen);
  notice_reply_free(&r);
  return rc;
}

const notice_backend_t notice_backend_azure = {
    .kind = NOTICE_AZURE, .base = "http://169.254.169.254", .poll = poll_azure, .ack = ack_azure};
