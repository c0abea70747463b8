/* Control events as chained audit lines (and syslog copies), from the ranks and gpulaunch-run. */
#include "launcher/audit/audit_event.h"

#include <arpa/inet.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <syslog.h> /* not with common/log.h: both define LOG_INFO */
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/safefile.h"
#include "gpulaunch/error.h"
#include "launcher/audit/audit_chain.h"

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static char g_path[PATH_MAX];
static char g_job[96];
static int g_rank = -1, g_syslog, g_syslog_open;

int audit_event_open(const char *path, char *err, size_t errlen) {
  pthread_mutex_lock(&g_mu);
  g_path[0] = 0;
  int rc = GPL_OK;
  if (path && *path) {
    if (strlen(path) >= sizeof g_path) {
      rc = GPL_EINVAL;
      if (err) snprintf(err, errlen, "%s: name too long", path);
    } else if (err) {
      rc = safefile_check_append(path, err, errlen);
    }
    if (rc == GPL_OK) snprintf(g_path, sizeof g_path, "%s", path);
  }
  pthread_mutex_unlock(&g_mu);
  return rc;
}

void audit_event_syslog(int on) {
  pthread_mutex_lock(&g_mu);
  g_syslog = on;
  pthread_mutex_unlock(&g_mu);
}

void audit_event_identity(const char *job_id, int rank) {
  pthread_mutex_lock(&g_mu);
  snprintf(g_job, sizeof g_job, "%s", job_id ? job_id : "");
  g_rank = rank;
  pthread_mutex_unlock(&g_mu);
}

int audit_event_line(const char *path, const char *obj) {
  char *line = NULL;
  int rc = path && *path ? audit_chain_append(path, obj, &line) : GPL_OK;
  pthread_mutex_lock(&g_mu);
  int to_syslog = g_syslog;
  if (to_syslog && !g_syslog_open) {
    openlog("gpulaunch", LOG_PID, LOG_AUTHPRIV);
    g_syslog_open = 1;
  }
  pthread_mutex_unlock(&g_mu);
  /* the line as chained (its "prev" too: a copy kept elsewhere proves the file's newest lines),
   * or the object alone when there is no file */
  if (to_syslog) syslog(LOG_AUTHPRIV | LOG_NOTICE, "%s", line ? line : obj);
  free(line);
  return rc;
}

/* A new event object: event, time (ISO 8601 UTC), job, host, rank, pid. */
static cJSON *event(const char *name) {
  cJSON *o = cJSON_CreateObject();
  if (!o) return NULL;
  struct timeval tv;
  gettimeofday(&tv, NULL);
  struct tm tm;
  gmtime_r(&tv.tv_sec, &tm);
  char t[40], host[256] = "";
  size_t k = strftime(t, sizeof t, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(t + k, sizeof t - k, ".%03dZ", (int)(tv.tv_usec / 1000));
  gethostname(host, sizeof host - 1);
  cJSON_AddStringToObject(o, "event", name);
  cJSON_AddStringToObject(o, "time", t);
  pthread_mutex_lock(&g_mu);
  if (g_job[0]) cJSON_AddStringToObject(o, "job", g_job);
  int rank = g_rank;
  pthread_mutex_unlock(&g_mu);
  cJSON_AddStringToObject(o, "host", host);
  if (rank >= 0) cJSON_AddNumberToObject(o, "rank", rank);
  else cJSON_AddStringToObject(o, "process", "gpulaunch-run");
  cJSON_AddNumberToObject(o, "pid", (double)getpid());
  return o;
}

static void put(cJSON *o) {
  if (!o) return;
  pthread_mutex_lock(&g_mu);
  char path[PATH_MAX];
  snprintf(path, sizeof path, "%s", g_path);
  int any = path[0] || g_syslog;
  pthread_mutex_unlock(&g_mu);
  char *text = any ? cJSON_PrintUnformatted(o) : NULL;
  cJSON_Delete(o);
  if (text) audit_event_line(path, text);
  free(text);
}

static void str(cJSON *o, const char *k, const char *v) {
  if (o && v) cJSON_AddStringToObject(o, k, v);
}

void audit_note_stop(int signum, const char *channel, const char *peer, int peer_pid) {
  cJSON *o = event("stop");
  const char *abbrev = sigabbrev_np(signum);
  char sig[32];
  snprintf(sig, sizeof sig, "SIG%s", abbrev ? abbrev : "?");
  str(o, "signal", sig);
  str(o, "channel", channel);
  str(o, "peer", peer);
  if (o && peer_pid > 0) cJSON_AddNumberToObject(o, "peer_pid", peer_pid);
  put(o);
}

void audit_note_stop_fd(int signum, const char *channel, int fd) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  char host[INET6_ADDRSTRLEN] = "", peer[INET6_ADDRSTRLEN + 16] = "";
  if (fd >= 0 && getpeername(fd, (struct sockaddr *)&sa, &len) == 0) {
    int port = 0;
    if (sa.ss_family == AF_INET) {
      inet_ntop(AF_INET, &((struct sockaddr_in *)&sa)->sin_addr, host, sizeof host);
      port = ntohs(((struct sockaddr_in *)&sa)->sin_port);
    } else if (sa.ss_family == AF_INET6) {
      inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&sa)->sin6_addr, host, sizeof host);
      port = ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
    }
    if (host[0]) snprintf(peer, sizeof peer, "%s:%d", host, port);
  }
  audit_note_stop(signum, channel, peer[0] ? peer : NULL, 0);
}

void audit_note_lost(const char *hosts, const char *why) {
  cJSON *o = event("lost");
  str(o, "hosts", hosts);
  str(o, "why", why);
  put(o);
}

void audit_note_notice(const char *host, const char *what, double left_s) {
  cJSON *o = event("notice");
  str(o, "notice_host", host);
  str(o, "notice", what);
  if (o) cJSON_AddNumberToObject(o, "seconds_left", left_s);
  put(o);
}

void audit_note_restart(int number, const char *cause, const char *hosts_before, const char *hosts_after) {
  cJSON *o = event("restart");
  if (o) cJSON_AddNumberToObject(o, "restart", number);
  str(o, "cause", cause);
  str(o, "hosts_before", hosts_before);
  str(o, "hosts_after", hosts_after);
  put(o);
}

void audit_note_auth_failure(const char *channel, const char *peer, unsigned count) {
  cJSON *o = event("auth_failure");
  str(o, "channel", channel);
  str(o, "peer", peer);
  if (o) cJSON_AddNumberToObject(o, "count", count);
  put(o);
}
