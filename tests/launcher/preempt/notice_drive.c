/* Runs the notice watcher against a metadata endpoint and checks what it reports and how long it
 * takes (test_notice_http.sh runs it against mock_metadata.py):
 *   notice_drive --kind aws|gcp|azure|alibaba --endpoint URL [--timeout S] [--expect ACTION]
 *                [--polls N] [--stop-at S] [--ack] [--rebalance] [--wait S]
 * --expect: a notice with that action comes within --wait seconds (default 30), and only one;
 * without it, none may come. --polls: wait for N polls first. --stop-at: stop that many seconds
 * after the start (in the middle of a request, for the slow endpoint). --ack: acknowledge the
 * notice (Azure). --rebalance: AWS's rebalance recommendation too (expected advisory). Always: no poll
 * took longer than its bound (three requests), and the stop returned
 * within a second, however slow the endpoint. Prints one line per fact; the checks are one cmocka
 * case, whose failure says which (exit 1). */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "common/log.h"
#include "common/util.h"
#include "gpulaunch/error.h"
#include "launcher/preempt/notice.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv = PTHREAD_COND_INITIALIZER;
static notice_t g_notice;
static int g_count;

static void on_notice(const notice_t *n, void *arg) {
  (void)arg;
  pthread_mutex_lock(&g_mu);
  if (!g_count++) g_notice = *n;
  pthread_cond_broadcast(&g_cv);
  pthread_mutex_unlock(&g_mu);
}

/* The case as the command line asks for it. */
static notice_opts_t g_o;
static const char *g_expect;
static int g_polls, g_ack;
static double g_stop_at, g_wait = 30;

static void drive(void **state) {
  (void)state;
  notice_opts_t o = g_o;
  const char *expect = g_expect;
  int polls = g_polls, ack = g_ack;
  double stop_at = g_stop_at, wait = g_wait;
  double t0 = util_now();
  notice_watch_t *w;
  int rc = notice_watch_start(&w, &o, on_notice, NULL);
  if (rc < 0 || !w) fail_msg("notice_watch_start: %s", gpl_strerror(rc));

  if (expect) {
    pthread_mutex_lock(&g_mu);
    while (!g_count && util_now() - t0 < wait) {
      pthread_mutex_unlock(&g_mu);
      util_sleep(0.05);
      pthread_mutex_lock(&g_mu);
    }
    notice_t n = g_notice;
    int got = g_count;
    pthread_mutex_unlock(&g_mu);
    if (!got) fail_msg("no notice within %.0f s", wait);
    printf("notice cloud=%s action=%s deadline=%.0f id=%s advisory=%d after=%.1f\ntext: %s\n",
           notice_kind_name(n.cloud), n.action, n.deadline, n.event_id, n.advisory, util_now() - t0, n.text);
    if (n.advisory != (strcmp(n.action, "rebalance") == 0)) fail_msg("advisory %d for %s", n.advisory, n.action);
    if (strcmp(n.action, expect) != 0) fail_msg("action %s, expected %s", n.action, expect);
    if (n.cloud != o.kind) fail_msg("cloud %s", notice_kind_name(n.cloud));
    if (ack) {
      double a0 = util_now();
      rc = notice_ack(w, n.event_id);
      printf("ack rc=%d took=%.2f\n", rc, util_now() - a0);
      if (rc != 0) fail_msg("ack: %s", gpl_strerror(rc));
    }
  }
  notice_stats_t st;
  for (notice_watch_stats(w, &st); st.polls < polls && util_now() - t0 < wait; notice_watch_stats(w, &st))
    util_sleep(0.05);
  if (st.polls < polls) fail_msg("%d polls within %.0f s, expected %d", st.polls, wait, polls);
  /* a notice stays pending: the next polls see it again, and it is not reported twice */
  if (expect) {
    int seen = st.polls;
    for (; st.polls < seen + 1 && util_now() - t0 < wait; notice_watch_stats(w, &st)) util_sleep(0.05);
  }
  if (stop_at > 0 && util_now() - t0 < stop_at) util_sleep(stop_at - (util_now() - t0));
  notice_watch_stats(w, &st);
  double s0 = util_now();
  notice_watch_stop(w);
  double stop_took = util_now() - s0;
  printf("polls=%d failures=%d notices=%d longest=%.2f stop=%.2f\n", st.polls, st.failures, st.notices,
         st.longest, stop_took);
  fflush(stdout);
  /* a poll is at most three requests, each bounded by the timeout (with room for a loaded machine) */
  if (st.longest > 3 * o.timeout + 0.5) fail_msg("a poll took %.2f s, over its bound %.1f s", st.longest, 3 * o.timeout);
  if (stop_took >= 1.0) fail_msg("stop took %.2f s", stop_took);
  pthread_mutex_lock(&g_mu);
  int count = g_count;
  pthread_mutex_unlock(&g_mu);
  assert_int_equal(count, expect ? 1 : 0); /* notices reported */
}

int main(int argc, char **argv) {
  notice_opts_init(&g_o);
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--ack") == 0) {
      g_ack = 1;
      continue;
    }
    if (strcmp(a, "--rebalance") == 0) {
      g_o.rebalance = 1;
      continue;
    }
    if (!v) return fprintf(stderr, "usage: see notice_drive.c\n"), 2;
    i++;
    if (strcmp(a, "--kind") == 0 && notice_kind_parse(v, &g_o.kind) == 0) continue;
    if (strcmp(a, "--endpoint") == 0) g_o.endpoint = v;
    else if (strcmp(a, "--timeout") == 0) g_o.timeout = atof(v);
    else if (strcmp(a, "--expect") == 0) g_expect = v;
    else if (strcmp(a, "--polls") == 0) g_polls = atoi(v);
    else if (strcmp(a, "--stop-at") == 0) g_stop_at = atof(v);
    else if (strcmp(a, "--wait") == 0) g_wait = atof(v);
    else return fprintf(stderr, "notice_drive: unknown argument %s\n", a), 2;
  }
  log_init();
  const struct CMUnitTest tests[] = {cmocka_unit_test(drive)};
  return cmocka_run_group_tests_name("notice_drive", tests, NULL, NULL) ? 1 : 0;
}
