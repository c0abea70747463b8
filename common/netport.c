/* One port range for every listener: parse, keep, and bind inside it in a per-process order. */
#include "common/netport.h"

#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "common/log.h"
#include "gpulaunch/error.h"

#define AVOID_MAX 8

static netport_range_t g_range;
static char g_text[16];
static int g_avoid[AVOID_MAX], g_navoid;

int netport_parse(const char *text, netport_range_t *r, char *err, size_t errlen) {
  r->lo = r->hi = 0;
  if (!text || !*text) return GPL_OK;
  char *end = NULL;
  errno = 0;
  long lo = strtol(text, &end, 10), hi = -1;
  if (end != text && *end == '-') {
    const char *p = end + 1;
    hi = strtol(p, &end, 10);
    if (end == p) hi = -1;
  }
  if (errno || hi < 0 || *end || text[0] == '-' || text[0] == '+' || lo < 1 || hi > 65535 || lo > hi) {
    snprintf(err, errlen, "'%s' is not a port range LO-HI (1 <= LO <= HI <= 65535, e.g. 40000-40099)",
             text);
    return GPL_EINVAL;
  }
  r->lo = (int)lo;
  r->hi = (int)hi;
  return GPL_OK;
}

void netport_set(const netport_range_t *r) {
  g_range = r ? *r : (netport_range_t){0, 0};
  if (g_range.lo > 0) snprintf(g_text, sizeof g_text, "%d-%d", g_range.lo, g_range.hi);
  else g_text[0] = 0;
}

const netport_range_t *netport_get(void) { return &g_range; }
const char *netport_text(void) { return g_text; }

void netport_avoid(int port) {
  if (port > 0 && g_navoid < AVOID_MAX) g_avoid[g_navoid++] = port;
}

static int avoided(int port) {
  for (int i = 0; i < g_navoid; i++)
    if (g_avoid[i] == port) return 1;
  return 0;
}

/* A start and a stride prime to the range's size: a walk of every port in an order of this
 * process's own, without a table of 65,536 entries. */
static unsigned gcd(unsigned a, unsigned b) {
  while (b) {
    unsigned t = a % b;
    a = b;
    b = t;
  }
  return a;
}

int netport_try(const char *what, int (*try_port)(void *arg, int port), void *arg) {
  if (g_range.lo <= 0) {
    int rc = try_port(arg, 0);
    return rc < 0 ? rc : 0;
  }
  unsigned n = (unsigned)(g_range.hi - g_range.lo + 1);
  unsigned r[2] = {0, 0};
  if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
    /* the order only spreads the ranks of a host over the range; any order is correct */
    r[0] = (unsigned)getpid() * 2654435761u;
    r[1] = r[0] >> 7;
  }
  unsigned start = r[0] % n, step = n > 1 ? 1 + r[1] % (n - 1) : 1;
  while (gcd(step, n) != 1) step = step % (n - 1) + 1;
  for (unsigned i = 0; i < n; i++) {
    int port = g_range.lo + (int)((start + (unsigned long long)i * step) % n);
    if (avoided(port)) continue;
    int rc = try_port(arg, port);
    if (rc >= 0) return port;
    if (rc != -EADDRINUSE) return rc;
  }
  LOG_ERROR("%s: no free port in the port range %s (%u port%s, all in use on this host): widen "
            "[net] port_range or gpulaunch-run --port-range", what, g_text, n, n == 1 ? "" : "s");
  return -EADDRINUSE;
}

typedef struct listen_arg_s {
  struct sockaddr *sa;
  socklen_t len;
  int flags, backlog, fd;
} listen_arg_t;

static int try_listen(void *arg, int port) {
  listen_arg_t *b = arg;
  if (b->sa->sa_family == AF_INET6) ((struct sockaddr_in6 *)b->sa)->sin6_port = htons((uint16_t)port);
  else ((struct sockaddr_in *)b->sa)->sin_port = htons((uint16_t)port);
  int fd = socket(b->sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC | b->flags, 0);
  if (fd < 0) return -errno;
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, b->sa, b->len) < 0 || listen(fd, b->backlog) < 0) {
    int e = errno;
    close(fd);
    return -e;
  }
  socklen_t l = b->len;
  getsockname(fd, b->sa, &l); /* the kernel's port when there is no range */
  b->fd = fd;
  return 0;
}

static int port_of(const struct sockaddr *sa) {
  return ntohs(sa->sa_family == AF_INET6 ? ((const struct sockaddr_in6 *)sa)->sin6_port
                                         : ((const struct sockaddr_in *)sa)->sin_port);
}

int netport_listen(struct sockaddr *addr, socklen_t len, int flags, int backlog, const char *what) {
  /* Without a range the kernel picks, and it may pick an avoided port (MASTER_PORT: rank 0 only
   * tried it, the program binds it later, so it is free now): such a socket is held while the
   * kernel picks again, then closed. */
  int held[AVOID_MAX + 1], nheld = 0, fd = -1;
  for (;;) {
    listen_arg_t b = {addr, len, flags, backlog, -1};
    int rc = netport_try(what, try_listen, &b);
    if (rc < 0) {
      errno = -rc;
      break;
    }
    if (g_range.lo > 0 || !avoided(port_of(addr)) || nheld == AVOID_MAX + 1) {
      fd = b.fd;
      break;
    }
    held[nheld++] = b.fd;
  }
  int e = errno;
  while (nheld > 0) close(held[--nheld]);
  errno = e;
  return fd;
}
