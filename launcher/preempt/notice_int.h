/* What the notice module's files share: the backends' table ({poll, ack} per cloud), their state,
 * and the bounded HTTP requests and time helpers of notice_http.c. The layers: notice.c (the
 * watcher) calls a backend through its table entry; a backend (notice_<cloud>.c) calls only
 * notice_http.c; notice_http.c calls neither. */
#ifndef GPL_LAUNCHER_PREEMPT_NOTICE_INT_H
#define GPL_LAUNCHER_PREEMPT_NOTICE_INT_H

#include <pthread.h>
#include <stdatomic.h>

#include <curl/curl.h>

#include "launcher/preempt/notice.h"

/* The most an answer may hold: metadata answers are a few hundred bytes. */
#define NOTICE_BODY_MAX (64u * 1024)

/* ---- notice_http.c: bounded requests, times, reasons ---- */

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
 * NULL). 0 with any HTTP status in *r (free with notice_reply_free), or GPL_ETIMEDOUT (no answer
 * within the bounds), GPL_EUNREACH (refused, no route), GPL_EPROTO (answer over NOTICE_BODY_MAX),
 * GPL_EIO (reset, garbage that is not HTTP), GPL_ENOMEM, GPL_ESTATE (stopped); why says what and
 * where. */
int notice_http_do(notice_http_t *h, const char *method, const char *base, const char *path,
                   const char *const *headers, const char *body, notice_reply_t *r, char *why, size_t whylen);
void notice_reply_free(notice_reply_t *r);

/* "2026-12-06T08:22:00Z" (ISO 8601, UTC, fraction allowed) or "Mon, 19 Sep 2016 18:29:47 GMT"
 * (RFC 1123) to seconds since the epoch: 0 or GPL_EINVAL. */
int notice_time_parse(const char *s, double *out);
/* At most 40 bytes of an answer for a reason, anything unprintable as '?'. */
void notice_quote(char *dst, size_t dstlen, const char *body, size_t len);
/* The reason for an answer with an HTTP status this poll did not expect: GPL_EPROTO. */
int notice_bad_status(const notice_reply_t *r, char *why, size_t whylen);
/* A metadata session token (AWS IMDSv2, Alibaba's hardened mode): PUT base + path with the header
 * "ttl_header: 21600", kept in tok until a minute before it ends. 0 (tok filled), 1 (the service
 * answered the PUT with a status other than 200 and optional is set: no token, go on without),
 * or a negative code with why. */
typedef struct notice_token_s {
  char value[256];
  double at;          /* when it was got (monotonic); 0: none */
} notice_token_t;
int notice_token_get(notice_http_t *h, const char *base, const char *path, const char *ttl_header,
                     int optional, notice_token_t *tok, char *why, size_t whylen);

/* ---- the backends ---- */

/* What a backend works with: the watcher's requests, its endpoint and options, and what the
 * backend keeps between polls. */
typedef struct notice_cloud_s {
  notice_http_t *http;       /* the watcher thread's */
  const char *base;          /* the endpoint, without a trailing '/' */
  const notice_opts_t *opts;
  notice_token_t token;      /* AWS, Alibaba: the metadata session token */
  int no_token;              /* Alibaba: the service gives no tokens (normal mode) */
  char vm_name[128];         /* Azure: this VM's name, once known */
} notice_cloud_t;

typedef struct notice_backend_s {
  notice_kind_t kind;
  const char *base;          /* the cloud's own metadata address */
  /* One poll: 1 with *out filled, 0 when nothing is pending, or a negative code with the reason
   * in why. At most three requests. */
  int (*poll)(notice_cloud_t *c, notice_t *out, char *why, size_t whylen);
  /* Tell the platform this node is done with the event (on h, a request of its own); NULL: the
   * cloud wants nothing. */
  int (*ack)(const notice_cloud_t *c, notice_http_t *h, const char *event_id, char *why, size_t whylen);
} notice_backend_t;

extern const notice_backend_t notice_backend_aws;
extern const notice_backend_t notice_backend_gcp;
extern const notice_backend_t notice_backend_azure;
extern const notice_backend_t notice_backend_alibaba;

/* ---- notice.c: the watcher ---- */

struct notice_watch_s {
  notice_opts_t opts;
  const notice_backend_t *be; /* the cloud polled */
  notice_cloud_t cloud;      /* its state */
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
};

#endif
