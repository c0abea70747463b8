/* Authentication failures on the control channels (tls.h): counted per source address, the first
 * from each address logged at once, the rest summed up; a hook for the audit log. */
#include <pthread.h>
#include <string.h>

#include "common/log.h"
#include "common/tls.h"
#include "common/util.h"

#define NSRC 256 /* addresses remembered; later ones share the last slot ("other addresses") */

typedef struct src_s {
  char channel[16];
  char peer[64];
  unsigned count, logged;
} src_t;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static src_t g_src[NSRC];
static int g_n;
static unsigned g_total;
static tls_fail_fn g_hook;

void tls_set_fail_hook(tls_fail_fn fn) {
  pthread_mutex_lock(&g_mu);
  g_hook = fn;
  pthread_mutex_unlock(&g_mu);
}

void tls_fail_note(const char *channel, const char *peer, const char *why) {
  pthread_mutex_lock(&g_mu);
  src_t *s = NULL;
  for (int i = 0; i < g_n && !s; i++)
    if (strcmp(g_src[i].peer, peer) == 0 && strcmp(g_src[i].channel, channel) == 0) s = &g_src[i];
  if (!s) {
    s = &g_src[g_n < NSRC ? g_n++ : NSRC - 1];
    if (s->count == 0 || g_n < NSRC) {
      memset(s, 0, sizeof *s);
      util_strlcpy(s->channel, channel, sizeof s->channel);
      util_strlcpy(s->peer, g_n < NSRC ? peer : "other addresses", sizeof s->peer);
    }
  }
  unsigned count = ++s->count;
  g_total++;
  int first = count == 1;
  if (first) s->logged = 1;
  tls_fail_fn hook = g_hook;
  pthread_mutex_unlock(&g_mu);
  if (first)
    LOG_WARN("%s channel: a connection from %s failed authentication (%s) and was dropped; further "
             "failures from it are counted", channel, peer, why && *why ? why : "no TLS handshake");
  if (hook && first) hook(channel, peer, count); /* the rest: once, with the total, in tls_fail_report */
}

void tls_fail_report(void) {
  static src_t said[NSRC]; /* (under g_said: the hook runs outside g_mu) */
  static pthread_mutex_t g_said = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&g_said);
  int n = 0;
  pthread_mutex_lock(&g_mu);
  tls_fail_fn hook = g_hook;
  for (int i = 0; i < g_n; i++) {
    src_t *s = &g_src[i];
    if (s->count > s->logged) {
      LOG_WARN("%s channel: %u connections from %s failed authentication and were dropped", s->channel,
               s->count, s->peer);
      s->logged = s->count;
      said[n++] = *s;
    }
  }
  pthread_mutex_unlock(&g_mu);
  for (int i = 0; hook && i < n; i++) hook(said[i].channel, said[i].peer, said[i].count);
  pthread_mutex_unlock(&g_said);
}

unsigned tls_fail_total(void) {
  pthread_mutex_lock(&g_mu);
  unsigned n = g_total;
  pthread_mutex_unlock(&g_mu);
  return n;
}
