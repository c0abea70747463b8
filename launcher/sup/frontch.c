/* Rank 0's end of the channel to gpulaunch-run (frontch.h): a plain TCP socket, read from the
 * supervisor's loop, written with short blocking writes (a few bytes, twice per job). */
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
#include "common/util.h"

int frontch_present(void) {
  const char *e = envvar_get(ENVVAR_FRONTEND);
  return e && *e;
}

static int write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0 && errno == EAGAIN) {
      struct pollfd pf = {.fd = fd, .events = POLLOUT};
      if (poll(&pf, 1, 1000) <= 0) return -1;
      continue;
    }
    if (w <= 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

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

/* Connect to the front end named in the environment and say "VERB TOKEN"; the fd once it
 * answered "ok", 0 when no front end is named, -1 (said on stderr when loud) when none answered. */
static int connect_front(const char *verb, double timeout_s, int loud) {
  const char *list = envvar_get(ENVVAR_FRONTEND), *token = envvar_get(ENVVAR_FRONTEND_TOKEN);
  if (!list || !*list) return 0;
  if (!token || !*token || strlen(token) > 64) {
    if (loud)
      log_print("gpulaunch: %s is set without %s: not under gpulaunch-run's control\n", FRONTCH_ENV,
                FRONTCH_TOKEN_ENV);
    return -1;
  }
  char line[96];
  snprintf(line, sizeof line, "%s %s\n", verb, token);
  char copy[1024];
  util_strlcpy(copy, list, sizeof copy);
  char *save = NULL;
  for (char *ap = strtok_r(copy, ",", &save); ap; ap = strtok_r(NULL, ",", &save)) {
    int fd = connect_one(ap, timeout_s);
    if (fd < 0) continue;
    if (write_all(fd, line, strlen(line)) < 0) {
      close(fd);
      continue;
    }
    /* The front end answers "ok" to the right token and closes on a wrong one (another job's
     * front end on the same port of this host). */
    char ok[8] = "";
    size_t got = 0;
    while (got < 3) {
      struct pollfd pf = {.fd = fd, .events = POLLIN};
      if (poll(&pf, 1, (int)(timeout_s * 1000)) != 1) break;
      ssize_t r = recv(fd, ok + got, 3 - got, 0);
      if (r <= 0) break;
      got += (size_t)r;
    }
    if (got == 3 && memcmp(ok, "ok\n", 3) == 0) {
      LOG_INFO(SUP, "connected to gpulaunch-run at %s", ap);
      return fd;
    }
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
  int fd = connect_front("hello", timeout_s, 1);
  if (fd <= 0) return fd;
  f->fd = fd;
  return 1;
}

/* "from BY" (the host that makes the claim), then "lost HOST" for every "(host NAME)" in who
 * (mpix_rank_name's words), each host once. */
static void send_lost(int fd, const char *by, const char *who) {
  char seen[1024] = " ", from[96];
  snprintf(from, sizeof from, "from %s\n", by && *by && strlen(by) < 64 ? by : "");
  if (by && *by && strlen(by) < 64 && write_all(fd, from, strlen(from)) < 0) return;
  for (const char *p = strstr(who, "(host "); p; p = strstr(p, "(host ")) {
    p += 6;
    size_t n = strcspn(p, ")");
    char line[96], key[80];
    if (n == 0 || n > 63) continue;
    snprintf(key, sizeof key, " %.*s ", (int)n, p);
    if (strstr(seen, key) || strlen(seen) + strlen(key) >= sizeof seen) continue;
    strcat(seen, key + 1);
    snprintf(line, sizeof line, "lost %.*s\n", (int)n, p);
    if (write_all(fd, line, strlen(line)) < 0) return;
  }
}

void frontch_lost(frontch_t *f, const char *by, const char *who) {
  if (f->fd >= 0 && !f->exit_sent) send_lost(f->fd, by, who);
}

void frontch_notice(frontch_t *f, const char *host) {
  char line[96];
  if (f->fd < 0 || f->exit_sent || !*host || strlen(host) > 63) return;
  snprintf(line, sizeof line, "notice %s\n", host);
  if (write_all(f->fd, line, strlen(line)) < 0) LOG_INFO(SUP, "gpulaunch-run did not take the notice");
}

void frontch_tell_lost(const char *by, const char *who, double timeout_s) {
  int fd = connect_front("tell", timeout_s, 0);
  if (fd <= 0) return;
  send_lost(fd, by, who);
  close(fd);
}

int frontch_read(frontch_t *f) {
  if (f->fd < 0) return -1;
  for (;;) {
    ssize_t r = recv(f->fd, f->buf + f->len, sizeof f->buf - 1 - f->len, MSG_DONTWAIT);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (r <= 0) {
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
  int sig = strcmp(f->buf, "stop TERM") == 0 ? SIGTERM : strcmp(f->buf, "stop INT") == 0 ? SIGINT : 0;
  size_t used = (size_t)(nl + 1 - f->buf);
  memmove(f->buf, nl + 1, f->len - used);
  f->len -= used;
  return sig;
}

void frontch_exit(frontch_t *f, int code) {
  if (f->fd < 0 || f->exit_sent) return;
  f->exit_sent = 1;
  char line[32];
  snprintf(line, sizeof line, "exit %d\n", code);
  if (write_all(f->fd, line, strlen(line)) < 0) LOG_INFO(SUP, "gpulaunch-run did not take the exit status");
}

void frontch_close(frontch_t *f) {
  if (f->fd >= 0) close(f->fd);
  f->fd = -1;
}
