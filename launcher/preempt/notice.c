/* The notice watcher: which cloud (DMI), the polling thread, one warning per kind of trouble. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "common/log.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/preempt/notice_int.h"

static const char *const g_kind_names[] = {"off", "auto", "aws", "gcp", "azure"};
/* Azure's chassis asset tag (what cloud-init and Azure's own agents look for). */
#define AZURE_ASSET_TAG "7783-7084-3265-9085-8269-3286-77"

void notice_opts_init(notice_opts_t *opts) {
  memset(opts, 0, sizeof *opts);
  opts->kind = NOTICE_AUTO;
  opts->interval = NOTICE_INTERVAL_MIN;
  opts->connect_timeout = 2;
  opts->timeout = 3;
}

const char *notice_kind_name(notice_kind_t kind) {
  return (unsigned)kind < GPL_ARRAY_LEN(g_kind_names) ? g_kind_names[kind] : "unknown";
}

int notice_kind_parse(const char *s, notice_kind_t *kind) {
  for (size_t i = 0; s && i < GPL_ARRAY_LEN(g_kind_names); i++)
    if (strcasecmp(s, g_kind_names[i]) == 0) return *kind = (notice_kind_t)i, 0;
  return GPL_EINVAL;
}

static void dmi(const char *dir, const char *name, char *buf, size_t len) {
  char path[512];
  util_fmt(path, sizeof path, "%s/%s", dir, name);
  if (util_read_small(path, buf, len) < 0) buf[0] = 0;
}

notice_kind_t notice_kind_detect(const char *dmi_dir) {
  const char *dir = dmi_dir ? dmi_dir : "/sys/class/dmi/id";
  char sys[128], board[128], bios[128], product[128], version[128], tag[128];
  dmi(dir, "sys_vendor", sys, sizeof sys);
  dmi(dir, "board_vendor", board, sizeof board);
  dmi(dir, "bios_vendor", bios, sizeof bios);
  dmi(dir, "product_name", product, sizeof product);
  dmi(dir, "product_version", version, sizeof version);
  dmi(dir, "chassis_asset_tag", tag, sizeof tag);
  notice_kind_t k = NOTICE_OFF;
  /* Nitro instances say "Amazon EC2"; the older Xen ones a Xen BIOS with "...amazon" as version */
  if (strncasecmp(sys, "Amazon", 6) == 0 || strncasecmp(board, "Amazon", 6) == 0 ||
      strncasecmp(bios, "Amazon", 6) == 0 || (strcasecmp(bios, "Xen") == 0 && strcasestr(version, "amazon")))
    k = NOTICE_AWS;
  else if (strncasecmp(sys, "Google", 6) == 0 || strncasecmp(product, "Google", 6) == 0)
    k = NOTICE_GCP;
  /* Hyper-V anywhere says Microsoft Corporation; only Azure's VMs carry its asset tag */
  else if (strcasecmp(sys, "Microsoft Corporation") == 0 && strcmp(tag, AZURE_ASSET_TAG) == 0)
    k = NOTICE_AZURE;
  LOG_DEBUG(SUP, "preemption notice: DMI vendor '%s', product '%s': %s", sys, product,
            k == NOTICE_OFF ? "no cloud known" : notice_kind_name(k));
  return k;
}

int notice_time_parse(const char *s, double *out) {
  static const char *const months[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                       "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  struct tm tm = {0};
  int y, mo = 0, d, h, mi, sec, n = 0;
  char mon[4] = "", wday[4] = "";
  double frac = 0;
  if (sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &n) == 6) {
    s += n;
    if (*s == '.') {
      char *end;
      frac = strtod(s, &end); /* ".5" */
      s = end;
    }
    if (strcmp(s, "Z") != 0 && strcmp(s, "+00:00") != 0) return GPL_EINVAL;
  } else if (sscanf(s, "%3[A-Za-z], %2d %3s %4d %2d:%2d:%2d GMT%n", wday, &d, mon, &y, &h, &mi, &sec, &n) == 7 &&
             wday[0] && s[n] == 0) {
    /* "Mon, 19 Sep 2016 18:29:47 GMT" */
    for (int i = 0; i < 12; i++)
      if (strcmp(mon, months[i]) == 0) mo = i + 1;
  } else {
    return GPL_EINVAL;
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60 || y < 1970 || h < 0 ||
      mi < 0 || sec < 0 || !(frac >= 0 && frac < 1))
    return GPL_EINVAL;
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  time_t t = timegm(&tm);
  if (t == (time_t)-1) return GPL_EINVAL;
  *out = (double)t + frac;
  return 0;
}

void notice_quote(char *dst, size_t dstlen, const char *body, size_t len) {
  size_t k = 0;
  for (size_t i = 0; i < len && i < 40 && k + 1 < dstlen; i++)
    dst[k++] = isprint((unsigned char)body[i]) ? body[i] : '?';
  if (dstlen) dst[k < dstlen ? k : dstlen - 1] = 0;
}

int notice_bad_status(const notice_reply_t *r, char *why, size_t whylen) {
  char q[48];
  notice_quote(q, sizeof q, r->body, r->len);
  util_fmt(why, whylen, "HTTP %ld from %s: '%s'", r->status, r->url, q);
  return GPL_EPROTO;
}

/* The kinds of trouble, each warned about once. */
static unsigned trouble_bit(int rc) {
  switch (rc) {
    case GPL_ETIMEDOUT: return 1u << 0;
    case GPL_EUNREACH: return 1u << 1;
    case GPL_EPROTO: return 1u << 2;
    default: return 1u << 3;
  }
}

static void trouble(notice_watch_t *w, int rc, const char *why) {
  unsigned bit = trouble_bit(rc);
  if (w->warned & bit) {
    LOG_DEBUG(SUP, "preemption notice (%s): %s", notice_kind_name(w->kind), why);
    return;
  }
  w->warned |= bit;
  LOG_WARN("preemption notice (%s): %s (%s); polling goes on, this is said once", notice_kind_name(w->kind),
           why, gpl_err_name(rc));
}

static int poll_once(notice_watch_t *w, notice_t *n, char *why, size_t whylen) {
  switch (w->kind) {
    case NOTICE_AWS: return notice_aws_poll(w, n, why, whylen);
    case NOTICE_GCP: return notice_gcp_poll(w, n, why, whylen);
    default: return notice_azure_poll(w, n, why, whylen);
  }
}

/* Wait until the next poll is due or the watcher stops (from: util_now, CLOCK_MONOTONIC as the
 * condition variable's clock). */
static void wait_next(notice_watch_t *w, double from) {
  double due = from + w->opts.interval;
  struct timespec ts = {.tv_sec = (time_t)due, .tv_nsec = (long)((due - (double)(time_t)due) * 1e9)};
  pthread_mutex_lock(&w->mu);
  while (!atomic_load(&w->stop))
    if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) == ETIMEDOUT) break;
  pthread_mutex_unlock(&w->mu);
}

static void *watch_main(void *arg) {
  notice_watch_t *w = arg;
  while (!atomic_load(&w->stop)) {
    double t0 = util_now();
    notice_t n;
    char why[512] = "";
    memset(&n, 0, sizeof n);
    int rc = poll_once(w, &n, why, sizeof why);
    if (rc == GPL_ESTATE) break;
    double took = util_now() - t0;
    int fresh = rc == 1 && strcmp(n.event_id, w->last_id) != 0;
    pthread_mutex_lock(&w->mu);
    w->stats.polls++;
    w->stats.failures += rc < 0;
    w->stats.notices += fresh;
    if (took > w->stats.longest) w->stats.longest = took;
    pthread_mutex_unlock(&w->mu);
    if (rc < 0) {
      trouble(w, rc, why);
    } else if (fresh) {
      util_strlcpy(w->last_id, n.event_id, sizeof w->last_id);
      LOG_INFO(SUP, "preemption notice: %s", n.text);
      w->cb(&n, w->arg);
    }
    wait_next(w, t0);
  }
  return NULL;
}

static void watch_free(notice_watch_t *w) {
  notice_http_free(&w->http);
  pthread_cond_destroy(&w->cv);
  pthread_mutex_destroy(&w->mu);
  free(w);
}

int notice_watch_start(notice_watch_t **out, const notice_opts_t *opts, notice_cb cb, void *arg) {
  *out = NULL;
  if (!opts || !cb || !(opts->timeout > 0) || !(opts->connect_timeout > 0)) return GPL_EINVAL;
  notice_kind_t kind = opts->kind == NOTICE_AUTO ? notice_kind_detect(opts->dmi_dir) : opts->kind;
  if (kind == NOTICE_OFF) return 0;
  if (kind != NOTICE_AWS && kind != NOTICE_GCP && kind != NOTICE_AZURE) return GPL_EINVAL;
  notice_watch_t *w = calloc(1, sizeof *w);
  if (!w) return GPL_ENOMEM;
  w->opts = *opts;
  if (!(w->opts.interval >= NOTICE_INTERVAL_MIN)) w->opts.interval = NOTICE_INTERVAL_MIN;
  w->kind = kind;
  w->cb = cb;
  w->arg = arg;
  /* the three clouds answer on the same link-local address */
  util_strlcpy(w->base, opts->endpoint && *opts->endpoint ? opts->endpoint : "http://169.254.169.254",
               sizeof w->base);
  for (size_t l = strlen(w->base); l && w->base[l - 1] == '/'; l--) w->base[l - 1] = 0;
  w->opts.endpoint = w->base;
  atomic_init(&w->stop, 0);
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&w->mu, NULL);
  pthread_cond_init(&w->cv, &ca);
  pthread_condattr_destroy(&ca);
  int rc = notice_http_init(&w->http, &w->opts, &w->stop);
  if (rc < 0) return watch_free(w), rc;
  if (pthread_create(&w->thread, NULL, watch_main, w) != 0) {
    LOG_WARN("preemption notice: cannot start the watcher thread: %s", strerror(errno));
    return watch_free(w), GPL_ESYS;
  }
  LOG_DEBUG(SUP, "preemption notice: polling %s at %s every %.0f s", notice_kind_name(kind), w->base,
            w->opts.interval);
  *out = w;
  return 0;
}

notice_kind_t notice_watch_kind(const notice_watch_t *w) { return w ? w->kind : NOTICE_OFF; }

void notice_watch_stats(notice_watch_t *w, notice_stats_t *st) {
  memset(st, 0, sizeof *st);
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  *st = w->stats;
  pthread_mutex_unlock(&w->mu);
}

int notice_ack(notice_watch_t *w, const char *event_id) {
  if (!w || !event_id || !*event_id) return GPL_EINVAL;
  if (w->kind != NOTICE_AZURE) return 0;
  notice_http_t h;
  char why[512] = "";
  int rc = notice_http_init(&h, &w->opts, &w->stop);
  if (rc == 0) rc = notice_azure_ack(w, &h, event_id, why, sizeof why);
  notice_http_free(&h);
  if (rc < 0) LOG_WARN("preemption notice: acknowledging Azure event %s: %s", event_id, why);
  return rc;
}

void notice_watch_stop(notice_watch_t *w) {
  if (!w) return;
  atomic_store(&w->stop, 1);
  notice_http_wake(&w->http);
  pthread_mutex_lock(&w->mu);
  pthread_cond_broadcast(&w->cv);
  pthread_mutex_unlock(&w->mu);
  pthread_join(w->thread, NULL);
  watch_free(w);
}
