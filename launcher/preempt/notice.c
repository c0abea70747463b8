/* The notice watcher: which cloud (DMI), its backend from the table, the polling thread, one
 * warning per kind of trouble. */
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

static const char *const g_kind_names[] = {"off", "auto", "aws", "gcp", "azure", "alibaba"};
/* The backends, one per cloud (launcher/preempt/notice_<cloud>.c). */
static const notice_backend_t *const g_backends[] = {&notice_backend_aws, &notice_backend_gcp,
                                                     &notice_backend_azure, &notice_backend_alibaba};
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
  /* ECS: "Alibaba Cloud" / "Alibaba Cloud ECS" */
  else if (strncasecmp(sys, "Alibaba", 7) == 0 || strncasecmp(product, "Alibaba Cloud ECS", 17) == 0)
    k = NOTICE_ALIBABA;
  LOG_DEBUG(SUP, "preemption notice: DMI vendor '%s', product '%s': %s", sys, product,
            k == NOTICE_OFF ? "no cloud known" : notice_kind_name(k));
  return k;
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
    LOG_DEBUG(SUP, "preemption notice (%s): %s", notice_kind_name(w->be->kind), why);
    return;
  }
  w->warned |= bit;
  LOG_WARN("preemption notice (%s): %s (%s); polling goes on, this is said once", notice_kind_name(w->be->kind),
           why, gpl_err_name(rc));
}

static const notice_backend_t *backend(notice_kind_t kind) {
  for (size_t i = 0; i < GPL_ARRAY_LEN(g_backends); i++)
    if (g_backends[i]->kind == kind) return g_backends[i];
  return NULL;
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
  util_thread_name("gpl-notice");
  while (!atomic_load(&w->stop)) {
    double t0 = util_now();
    notice_t n;
    char why[512] = "";
    memset(&n, 0, sizeof n);
    int rc = w->be->poll(&w->cloud, &n, why, sizeof why);
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
      LOG_INFO(SUP, "%s: %s", n.advisory ? "advisory notice" : "preemption notice", n.text);
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
  const notice_backend_t *be = backend(kind);
  if (!be) return GPL_EINVAL;
  notice_watch_t *w = calloc(1, sizeof *w);
  if (!w) return GPL_ENOMEM;
  w->opts = *opts;
  if (!(w->opts.interval >= NOTICE_INTERVAL_MIN)) w->opts.interval = NOTICE_INTERVAL_MIN;
  w->be = be;
  w->cb = cb;
  w->arg = arg;
  util_strlcpy(w->base, opts->endpoint && *opts->endpoint ? opts->endpoint : be->base, sizeof w->base);
  for (size_t l = strlen(w->base); l && w->base[l - 1] == '/'; l--) w->base[l - 1] = 0;
  w->opts.endpoint = w->base;
  w->cloud.http = &w->http;
  w->cloud.base = w->base;
  w->cloud.opts = &w->opts;
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
  LOG_DEBUG(SUP, "preemption notice: polling %s%s at %s every %.0f s", notice_kind_name(kind),
            w->opts.rebalance && kind == NOTICE_AWS ? " (and the rebalance recommendation)" : "", w->base,
            w->opts.interval);
  *out = w;
  return 0;
}

notice_kind_t notice_watch_kind(const notice_watch_t *w) { return w ? w->be->kind : NOTICE_OFF; }

void notice_watch_stats(notice_watch_t *w, notice_stats_t *st) {
  memset(st, 0, sizeof *st);
  if (!w) return;
  pthread_mutex_lock(&w->mu);
  *st = w->stats;
  pthread_mutex_unlock(&w->mu);
}

int notice_ack(notice_watch_t *w, const char *event_id) {
  if (!w || !event_id || !*event_id) return GPL_EINVAL;
  if (!w->be->ack) return 0;
  notice_http_t h;
  char why[512] = "";
  int rc = notice_http_init(&h, &w->opts, &w->stop);
  if (rc == 0) rc = w->be->ack(&w->cloud, &h, event_id, why, sizeof why);
  notice_http_free(&h);
  if (rc < 0)
    LOG_WARN("preemption notice: acknowledging %s event %s: %s", notice_kind_name(w->be->kind), event_id, why);
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
