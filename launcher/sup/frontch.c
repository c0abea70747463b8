/* Rank 0's end of the channel to gpulaunch-run (frontch.h): TLS 1.3 on a TCP socket (common/tls.h,
 * socket mode), read from the supervisor's loop, written with short bounded writes (a few lines
 * per job); the words in frontproto.h. */
#include "launcher/sup/frontch.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/envvar.h"
#include "common/log.h"
#include "gpulaunch/error.h"
#include "common/util.h"
#include "launcher/job/seckey.h"
#include "launcher/sup/frontproto.h"

static tls_ctx_t *g_ctx;                          /* the "front" channel, client side */
static char g_token[2 * FRONTPROTO_TOKEN_BYTES + 1]; /* "hello TOKEN" */

void frontch_set_key(const seckey_t *k) {
  tls_ctx_free(g_ctx);
  g_ctx = NULL;
  uint8_t t[FRONTPROTO_TOKEN_BYTES];
  if (seckey_derive(k, "front token", t, sizeof t) < 0 || tls_ctx_new(&g_ctx, &k->tls, "front", 0) < 0) {
    g_ctx = NULL;
    return;
  }
  tls_hex(t, sizeof t, g_token);
}

int frontch_present(void) {
  const char *e = envvar_get(ENVVAR_FRONTEND);
  return e && *e;
}

static int write_line(tls_t *t, const char *line) { return tls_write_all(t, line, strlen(line), 1.0); }

/* A non-blocking connect to one "ADDR:PORT", bounded by timeout_s. The fd, or -1. */
static int connect_one(const char *ap, double timeout_s) {
  char addr[64];
  const char *colon = strrchr(ap, ':');
  if (!colon || (size_t)(colon - ap) >= sizeof addr) return -1;
  memcpy(addr, ap, (size_t)(colon - ap));
  addr[colon - ap] = 0;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(colon + 1))};
  if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) return -1;
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) < 0 && errno != EINPROGRESS) goto fail;
  struct pollfd pf = {.fd = fd, .events = POLLOUT};
  if (poll(&pf, 1, (int)(timeout_s * 1000)) != 1) goto fail;
  int err = 0;
  socklen_t el = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err) goto fail;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
fail:
  close(fd);
  return -1;
}

/* A loopback address ("127.0.0.1:P"): tried only on gpulaunch-run's own host, where no other
 * user's listener can stand in for it. */
static int is_loopback(const char *ap) { return strncmp(ap, "127.", 4) == 0; }

/* Connect to the front end named in the environment, complete the TLS handshake and say "VERB
 * TOKEN"; the connection once it answered "ok" (*out), 1; 0 when no front end is named; -1 (said
 * on stderr when loud) when none answered. */
static int connect_front(const char *verb, double timeout_s, int loud, int *fd_out, tls_t **out) {
  const char *list = envvar_get(ENVVAR_FRONTEND);
  if (!list || !*list) return 0;
  if (!g_ctx) {
    if (loud) log_print("gpulaunch: no key for gpulaunch-run's channel: not under its control\n");
    return -1;
  }
  const char *fh = envvar_get(ENVVAR_FRONTEND_HOST);
  int same_host = fh && strcmp(fh, util_hostname()) == 0;
  char line[96];
  snprintf(line, sizeof line, "%s %s\n", verb, g_token);
  char copy[1024];
  util_strlcpy(copy, list, sizeof copy);
  char *save = NULL;
  for (char *ap = strtok_r(copy, ",", &save); ap; ap = strtok_r(NULL, ",", &save)) {
    if (is_loopback(ap) && !same_host) continue;
    int fd = connect_one(ap, timeout_s);
    if (fd < 0) continue;
    tls_t *t = NULL;
    int rc = tls_new(&t, g_ctx, fd);
    if (rc == 0) rc = tls_handshake_wait(t, timeout_s);
    if (rc == GPL_EAUTH) tls_fail_note("front", ap, tls_why(t)); /* not our gpulaunch-run */
    if (rc == 0) rc = write_line(t, line);
    /* The front end answers "ok" to the right token and closes on a wrong one. */
    char ok[8] = "";
    size_t got = 0;
    double deadline = util_now() + timeout_s;
    while (rc == 0 && got < 3 && util_now() < deadline) {
      ssize_t r = tls_read(t, ok + got, 3 - got);
      if (r < 0) break;
      if (r > 0) {
        got += (size_t)r;
        continue;
      }
      struct pollfd pf = {.fd = fd, .events = POLLIN};
      poll(&pf, 1, (int)((deadline - util_now()) * 1000) + 1);
    }
    if (rc == 0 && got == 3 && memcmp(ok, FRONTPROTO_OK "\n", 3) == 0) {
      LOG_INFO(SUP, "connected to gpulaunch-run at %s", ap);
      *fd_out = fd;
      *out = t;
      return 1;
    }
    tls_free(t);
    close(fd);
  }
  if (loud)
    log_print("gpulaunch: cannot reach gpulaunch-run at %s: a SIGTERM to it cannot stop the job "
              "with the grace\n", list);
  return -1;
}

int frontch_open(frontch_t *f, double timeout_s) {
  memset(f, 0, sizeof *f);
  f->fd = -1;
  int fd = -1;
  tls_t *t = NULL;
  int rc = connect_front(FRONTPROTO_HELLO, timeout_s, 1, &fd, &t);
  if (rc <= 0) return rc;
  f->fd = fd;
  f->tls = t;
  return 1;
}

/* "from BY" (the host that makes the claim), then "lost HOST" for every "(host NAME)" in who
 * (mpix_rank_name's words), each host once. */
static void send_lost(tls_t *t, const char *by, const char *who) {
  char seen[1024] = " ", from[96];
  if (by && *by && strlen(by) <= FRONTPROTO_HOST_MAX) {
    snprintf(from, sizeof from, FRONTPROTO_FROM " %s\n", by);
    if (write_line(t, from) < 0) return;
  }
  for (const char *p = strstr(who, "(host "); p; p = strstr(p, "(host ")) {
    p += 6;
    size_t n = strcspn(p, ")");
    char line[96], key[80];
    if (n == 0 || n > FRONTPROTO_HOST_MAX) continue;
    snprintf(key, sizeof key, " %.*s ", (int)n, p);
    if (strstr(seen, key) || strlen(seen) + strlen(key) >= sizeof seen) continue;
    strcat(seen, key + 1);
    snprintf(line, sizeof line, FRONTPROTO_LOST " %.*s\n", (int)n, p);
    if (write_line(t, line) < 0) return;
  }
}

void frontch_lost(frontch_t *f, const char *by, const char *who) {
  if (f->fd >= 0 && !f->exit_sent) send_lost(f->tls, by, who);
}

void frontch_notice(frontch_t *f, const char *host) {
  char line[96];
  if (f->fd < 0 || f->exit_sent || !*host || strlen(host) > FRONTPROTO_HOST_MAX) return;
  snprintf(line, sizeof line, FRONTPROTO_NOTICE " %s\n", host);
  if (write_line(f->tls, line) < 0) LOG_INFO(SUP, "gpulaunch-run did not take the notice");
}

void frontch_tell_lost(const char *by, const char *who, double timeout_s) {
  int fd = -1;
  tls_t *t = NULL;
  if (connect_front(FRONTPROTO_TELL, timeout_s, 0, &fd, &t) <= 0) return;
  send_lost(t, by, who);
  tls_free(t);
  close(fd);
}

int frontch_read(frontch_t *f) {
  if (f->fd < 0) return -1;
  for (;;) {
    ssize_t r = tls_read(f->tls, f->buf + f->len, sizeof f->buf - 1 - f->len);
    if (r == 0) break;
    if (r < 0) {
      frontch_close(f);
      return -1;
    }
    f->len += (size_t)r;
    if (f->len >= sizeof f->buf - 1) f->len = 0; /* no line of ours is that long */
  }
  f->buf[f->len] = 0;
  char *nl = strchr(f->buf, '\n');
  if (!nl) return 0;
  *nl = 0;
  const char *arg = frontproto_arg(f->buf, FRONTPROTO_STOP);
  int sig = !arg ? 0 : strcmp(arg, FRONTPROTO_TERM) == 0 ? SIGTERM : strcmp(arg, FRONTPROTO_INT) == 0 ? SIGINT : 0;
  size_t used = (size_t)(nl + 1 - f->buf);
  memmove(f->buf, nl + 1, f->len - used);
  f->len -= used;
  return sig;
}

void frontch_exit(frontch_t *f, int code) {
  if (f->fd < 0 || f->exit_sent) return;
  f->exit_sent = 1;
  char line[32];
  snprintf(line, sizeof line, FRONTPROTO_EXIT " %d\n", code);
  if (write_line(f->tls, line) < 0) LOG_INFO(SUP, "gpulaunch-run did not take the exit status");
}

void frontch_close(frontch_t *f) {
  tls_free(f->tls);
  f->tls = NULL;
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
}
