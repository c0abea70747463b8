/* The cloud's interruption notice (AWS spot and its rebalance recommendation, GCP preemptible/spot,
 * Azure spot, Alibaba ECS spot): detect, poll, report. */
#ifndef GPL_LAUNCHER_PREEMPT_NOTICE_H
#define GPL_LAUNCHER_PREEMPT_NOTICE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which metadata service to poll. AUTO picks one from the machine's DMI ids (notice_kind_detect);
 * OFF polls nothing. The names are those of `[preempt] notice = auto|aws|gcp|azure|alibaba|off`. */
typedef enum notice_kind_e {
  NOTICE_OFF = 0,
  NOTICE_AUTO,
  NOTICE_AWS,
  NOTICE_GCP,
  NOTICE_AZURE,
  NOTICE_ALIBABA
} notice_kind_t;

/* The fewest seconds between two polls ("every 5 s at most"): a lower interval is raised to it. */
#define NOTICE_INTERVAL_MIN 5.0
/* The notice GCP and Azure give at least, when the answer itself names no time. */
#define NOTICE_GRACE_DEFAULT 30.0

typedef struct notice_opts_s {
  notice_kind_t kind;      /* default NOTICE_AUTO */
  const char *endpoint;    /* base URL instead of the cloud's own ("http://127.0.0.1:8080/aws"), or NULL */
  double interval;         /* seconds between polls; default and floor NOTICE_INTERVAL_MIN */
  double connect_timeout;  /* seconds one request may take to connect (default 2) */
  double timeout;          /* seconds one request may take in all (default 3) */
  const char *dmi_dir;     /* where the DMI ids are (default /sys/class/dmi/id); tests */
  int rebalance;           /* AWS: also report the rebalance recommendation (an advisory notice) */
} notice_opts_t;

/* One notice, as the cloud said it. */
typedef struct notice_s {
  notice_kind_t cloud;  /* NOTICE_AWS, NOTICE_GCP, NOTICE_AZURE or NOTICE_ALIBABA */
  char action[32];      /* AWS: terminate, stop, hibernate, rebalance; GCP: preempted; Azure: preempt,
                         * terminate; Alibaba: terminate */
  int advisory;         /* 1: a recommendation (AWS rebalance), the machine is not going yet */
  double deadline;      /* wall clock (seconds since the epoch) when the machine goes away; for an
                         * advisory notice, when it was posted */
  char event_id[128];   /* what tells this notice from the next one; Azure's EventId (notice_ack) */
  char text[256];       /* one line describing it, for the user ("AWS spot interruption: ...") */
} notice_t;

/* Called on the watcher's thread, once per new notice: quick, and safe to call from another
 * thread than the one that started the watcher (uv_async_send, a pipe, a flag). */
typedef void (*notice_cb)(const notice_t *notice, void *arg);

typedef struct notice_watch_s notice_watch_t;

/* What a watcher did so far (notice_watch_stats). */
typedef struct notice_stats_s {
  int polls;          /* polls finished */
  int notices;        /* notices reported */
  int failures;       /* polls that got no usable answer (slow, refused, malformed) */
  double longest;     /* seconds the longest poll took */
} notice_stats_t;

/* The defaults above. */
void notice_opts_init(notice_opts_t *opts);
/* "auto", "aws", "gcp", "azure", "alibaba", "off". */
const char *notice_kind_name(notice_kind_t kind);
/* The reverse, case-insensitive: 0 or GPL_EINVAL. */
int notice_kind_parse(const char *s, notice_kind_t *kind);
/* The cloud this machine runs in, from its DMI ids under dmi_dir (NULL: /sys/class/dmi/id), with
 * no network probe: AWS (a vendor "Amazon EC2", or a Xen BIOS with an "amazon" version), GCP
 * (vendor or product "Google"), Azure (vendor "Microsoft Corporation" with Azure's chassis asset
 * tag, which tells it from Hyper-V elsewhere), Alibaba (vendor "Alibaba Cloud" or a product
 * "Alibaba Cloud ECS"); NOTICE_OFF anywhere else. */
notice_kind_t notice_kind_detect(const char *dmi_dir);

/* Start a thread that polls this node's notice every opts->interval seconds and calls cb once
 * for each new one (an advisory one too, then the notice that may follow it). Each request is
 * bounded (connect_timeout, timeout); a poll makes at most three;
 * slow, refused or malformed answers are logged once for each kind of trouble and never end the
 * watcher. AUTO resolves through notice_kind_detect; OFF (given or detected) starts nothing and
 * sets *out to NULL. 0, GPL_EINVAL, GPL_ENOMEM or GPL_ESYS. */
int notice_watch_start(notice_watch_t **out, const notice_opts_t *opts, notice_cb cb, void *arg);
/* The cloud a watcher polls (NOTICE_OFF for NULL). */
notice_kind_t notice_watch_kind(const notice_watch_t *w);
/* Copy of the counters; thread-safe. */
void notice_watch_stats(notice_watch_t *w, notice_stats_t *st);
/* Azure: tell the platform that this node is ready for the event (POST StartRequests), once its
 * programs are done. Blocks at most one request's bound (opts->timeout). Other clouds: 0 and
 * nothing sent. 0, GPL_EINVAL, GPL_ETIMEDOUT, GPL_EUNREACH, GPL_EPROTO or GPL_EIO. */
int notice_ack(notice_watch_t *w, const char *event_id);
/* Stop the thread and free the watcher (NULL is fine). Returns without waiting for a request in
 * flight to time out: it is cut off. */
void notice_watch_stop(notice_watch_t *w);

/* The parsers: an answer's body (not NUL-terminated) to a notice. 1 with *out filled, 0 when
 * nothing is pending, or a negative code (GPL_EPROTO for a body that is not what the cloud sends)
 * with the reason in why. now is the wall clock, for notices whose deadline is relative. */
/* AWS spot/instance-action (200): {"action": "terminate", "time": "2026-12-06T08:22:00Z"}. */
int notice_aws_parse(const char *body, size_t len, notice_t *out, char *why, size_t whylen);
/* GCP instance/preempted: TRUE (notice, deadline now + 30 s) or FALSE. */
int notice_gcp_parse(const char *body, size_t len, double now, notice_t *out, char *why, size_t whylen);
/* AWS events/recommendations/rebalance (200): {"noticeTime": "2026-12-06T08:17:00Z"}: an advisory
 * notice (action "rebalance", deadline the time it was posted). */
int notice_aws_rebalance_parse(const char *body, size_t len, notice_t *out, char *why, size_t whylen);
/* Alibaba ECS instance/spot/termination-time (200): "2026-12-06T08:22:00Z", the time the instance
 * is released (ISO 8601 UTC). */
int notice_alibaba_parse(const char *body, size_t len, notice_t *out, char *why, size_t whylen);
/* Azure scheduledevents: the first Preempt or Terminate event whose Resources name vm_name
 * (deadline NotBefore, or now + 30 s when it names none). */
int notice_azure_parse(const char *body, size_t len, const char *vm_name, double now, notice_t *out,
                       char *why, size_t whylen);

#ifdef __cplusplus
}
#endif

#endif
