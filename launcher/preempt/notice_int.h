/* What the notice module's files share: the watcher, bounded HTTP requests, each cloud's poll. */
#ifndef GPL_LAUNCHER_PREEMPT_NOTICE_INT_H
#define GPL_LAUNCHER_PREEMPT_NOTICE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include <curl/curl.h>

#include "launcher/preempt/notice.h"

/* The most an answer may hold: metadata answers are a few hundred bytes. */
#define NOTICE_BODY_MAX (64u * 1024)

/* Requests with libcurl's multi interface, so that a stop cuts off the one in flight. */
typedef struct notice_http_s {
  CURLM *multi;
  atomic_int *stop;   /* set: the request in flight ends with GPL_ESTATE */
  long connect_ms, total_ms;
} notice_http_t;

typedef struct notice_reply_s {
  char url[600];      /* what was asked (base and path) */
  long status;        /* HTTP status */
  char *body;         /* NUL-terminated (malloc'd), len bytes before the NUL */
  size_t len;
} notice_reply_t;

/* 0, GPL_ENOMEM. */
int notice_http_init(notice_http_t *h, const notice_opts_t *opts, atomic_int *stop);
void notice_http_free(notice_http_t *h);
/* Wake a request in flight (from another thread), so that it sees the stop flag at once. */
void notice_http_wake(notice_http_t *h);
/* One request to base + path: method GET, PUT or POST, headers NULL-terminated (or NULL), body (or
 * NULL). 0 with
 * any HTTP status in *r (free with notice_reply_free), or GPL_ETIMEDOUT (no answer within the
 * bounds), GPL_EUNREACH (refused, no route), GPL_EPROTO (answer over NOTICE_BODY_MAX), GPL_EIO,
 * GPL_ENOMEM, GPL_ESTATE (stopped); why says what and where. */
int notice_http_do(notice_http_t *h, const char *method, const char *base, const char *path,
                   const char *const *headers, const char *body, notice_reply_t *r, char *why, size_t whylen);
void notice_reply_free(notice_reply_t *r);

struct notice_watch_s {
  notice_opts_t opts;
  notice_kind_t kind;        /* resolved: AWS, GCP or AZURE */
  char base[512];            /* the endpoint, without a trailing '/' */
  notice_cb cb;
  void *arg;
  notice_http_t http;        /* the watcher thread's */
  atomic_int stop;
  pthread_t thread;
  pthread_mutex_t mu;        /* stats, and the wait between polls */
  pthread_cond_t cv;
  notice_stats_t stats;
  unsigned warned;           /* one bit per kind of trouble already warned about */
  char last_id[128];         /* the last notice reported */
  char aws_token[256];       /* AWS: IMDSv2 session token, and when it was got (monotonic) */
  double aws_token_at;
  char vm_name[128];         /* Azure: this VM's name, once known */
};

/* One poll of each cloud: 1 with *out filled, 0 when nothing is pending, or a negative code with
 * the reason in why. At most two requests. */
int notice_aws_poll(notice_watch_t *w, notice_t *out, char *why, size_t whylen);
int notice_gcp_poll(notice_watch_t *w, notice_t *out, char *why, size_t whylen);
int notice_azure_poll(notice_watch_t *w, notice_t *out, char *why, size_t whylen);
/* POST StartRequests for event_id (notice_ack). */
int notice_azure_ack(const notice_watch_t *w, notice_http_t *h, const char *event_id, char *why, size_t whylen);

/* "2026-12-06T08:22:00Z" (ISO 8601, UTC, fraction allowed) or "Mon, 19 Sep 2016 18:29:47 GMT"
 * (RFC 1123) to seconds since the epoch: 0 or GPL_EINVAL. */
int notice_time_parse(const char *s, double *out);
/* At most 40 bytes of an answer for a reason, anything unprintable as '?'. */
void notice_quote(char *dst, size_t dstlen, const char *body, size_t len);
/* The reason for an answer with an HTTP status this poll did not expect: GPL_EPROTO. */
int notice_bad_status(const notice_reply_t *r, char *why, size_t whylen);

#endif
