/* The watchdog thread: a deadline for calls that cannot be bounded otherwise (common/watchdog.h). */
#include "common/util_host.h"
#include "common/watchdog.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t g_cv;
static int g_started, g_armed, g_code;
static struct timespec g_deadline;
static double g_timeout;
static const char *g_what, *g_hint;

static void *watch(void *arg) {
  (void)arg;
  util_thread_name("gpl-watchdog");
  pthread_mutex_lock(&g_mu);
  for (;;) {
    if (!g_armed) {
      pthread_cond_wait(&g_cv, &g_mu);
      continue;
    }
    int rc = pthread_cond_timedwait(&g_cv, &g_mu, &g_deadline);
    if (rc == ETIMEDOUT && g_armed) break;
  }
  /* The deadline passed with the call still inside. Format into a buffer of our own and write
   * it in one call through the logger (no stdio: its locks may be held by the stuck thread). */
  char msg[768];
  int n = snprintf(msg, sizeof msg, "gpulaunch: %s: %s did not return within %.0f s%s%s; ending this rank "
                   "(exit status %d)\n", log_identity(), g_what, g_timeout, g_hint ? "; " : "",
                   g_hint ? g_hint : "", g_code);
  if (n > 0) log_print("%s", msg);
  _exit(g_code);
  return NULL;
}

void wdog_arm(double timeout_s, const char *what, const char *hint, int exit_code) {
  pthread_mutex_lock(&g_mu);
  if (!g_started) {
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&g_cv, &a);
    pthread_condattr_destroy(&a);
    pthread_t th;
    pthread_attr_t ta;
    pthread_attr_init(&ta);
    pthread_attr_setdetachstate(&ta, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &ta, watch, NULL) == 0) g_started = 1;
    pthread_attr_destroy(&ta);
    if (!g_started) LOG_WARN("cannot start the watchdog thread: %s will not be bounded", what);
  }
  clock_gettime(CLOCK_MONOTONIC, &g_deadline);
  double whole = (double)(long)timeout_s;
  g_deadline.tv_sec += (time_t)whole;
  g_deadline.tv_nsec += (long)((timeout_s - whole) * 1e9);
  if (g_deadline.tv_nsec >= 1000000000L) {
    g_deadline.tv_sec++;
    g_deadline.tv_nsec -= 1000000000L;
  }
  g_timeout = timeout_s;
  g_what = what;
  g_hint = hint;
  g_code = exit_code;
  g_armed = 1;
  pthread_cond_signal(&g_cv);
  pthread_mutex_unlock(&g_mu);
}

void wdog_disarm(void) {
  pthread_mutex_lock(&g_mu);
  g_armed = 0;
  if (g_started) pthread_cond_signal(&g_cv);
  pthread_mutex_unlock(&g_mu);
}
