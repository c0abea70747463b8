/* Logging implementation: level/subsystem filter from the environment and host:rank-prefixed lines. */
#include "common/log.h"

#include "common/envvar.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static log_level_t g_level = LOG_LVL_WARN;
static unsigned g_mask = ~0u;
static char g_ident[160] = "-:-";
static int g_time; /* GPULAUNCH_LOG_TIME=1: each line starts with the wall clock (s.ms), for profiling */

static const char *const g_subsys_names[] = {
#define LOG_SUBSYS_NAME_(e, name) name,
    LOG_SUBSYS_MAP(LOG_SUBSYS_NAME_)
#undef LOG_SUBSYS_NAME_
};
static const char *const g_level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

static int subsys_index(const char *name, size_t len) {
  for (int i = 0; i < LOG_SUBSYS_COUNT; i++)
    if (strlen(g_subsys_names[i]) == len && strncasecmp(g_subsys_names[i], name, len) == 0) return i;
  return -1;
}

/* Each GPULAUNCH_* value read, once at debug level (envvar_set_note). */
static int note_env(const char *name, const char *value) {
  if (!log_enabled(LOG_LVL_DEBUG, LOG_CONF)) return 0;
  LOG_DEBUG(CONF, "environment: %s=%s", name, value);
  return 1;
}

void log_init(void) {
  /* All three read before any is applied (so none is logged under a half-made filter). */
  const char *lvl = envvar_get(ENVVAR_LOG), *tm = envvar_get(ENVVAR_LOG_TIME),
             *sub = envvar_get(ENVVAR_LOG_SUBSYS);
  if (lvl && *lvl) {
    for (int i = 0; i <= LOG_LVL_DEBUG; i++)
      if (strcasecmp(lvl, g_level_names[i]) == 0) g_level = (log_level_t)i;
    if (strcasecmp(lvl, "warning") == 0) g_level = LOG_LVL_WARN;
  }
  g_time = tm && strcmp(tm, "1") == 0;
  if (sub && *sub) {
    int invert = sub[0] == '^';
    unsigned mask = 0;
    const char *p = sub + invert;
    while (*p) {
      size_t n = strcspn(p, ",");
      int idx = subsys_index(p, n);
      if (idx >= 0) mask |= 1u << idx;
      else if (n == 3 && strncasecmp(p, "all", 3) == 0) mask = ~0u;
      p += n;
      if (*p == ',') p++;
    }
    g_mask = invert ? ~mask : mask;
  }
  /* Now that the level is known: log these three once at debug level, like every other. */
  envvar_set_note(note_env);
  envvar_get(ENVVAR_LOG);
  envvar_get(ENVVAR_LOG_SUBSYS);
  envvar_get(ENVVAR_LOG_TIME);
}

/* The subsystem of a source file's error chains: its folder's, or for a few files their own
 * (first match of the file's "folder/name" against these prefixes). */
static const struct {
  const char *prefix;
  log_subsys_t sub;
} g_file_subsys[] = {
    {"comm/", LOG_COMM},         {"kernels/", LOG_KERN},      {"topology/net", LOG_NET},
    {"topology/iface", LOG_NET}, {"topology/preflight", LOG_NET}, {"topology/", LOG_TOPO},
    {"conf/", LOG_CONF},         {"sup/", LOG_SUP},           {"live/", LOG_SUP},
    {"hang/", LOG_SUP},          {"bench/", LOG_BENCH},       {"accept/", LOG_ACCEPT},
    {"output/", LOG_SUP},        {"report/", LOG_ACCEPT},     {"exec/", LOG_SUP},
    {"monitor/", LOG_MON},       {"ops/diag", LOG_DIAG},      {"ops/", LOG_MON},
    {"modes/trainer", LOG_TRAIN},
};

log_subsys_t log_subsys_of(const char *file) {
  const char *base = strrchr(file, '/'), *dir = base;
  while (dir && dir > file && dir[-1] != '/') dir--;
  if (!dir) return LOG_JOB;
  for (size_t i = 0; i < sizeof g_file_subsys / sizeof g_file_subsys[0]; i++)
    if (strncmp(dir, g_file_subsys[i].prefix, strlen(g_file_subsys[i].prefix)) == 0) return g_file_subsys[i].sub;
  return LOG_JOB;
}

void log_set_identity(const char *host, int rank) {
  if (rank >= 0) snprintf(g_ident, sizeof g_ident, "%s:%d", host ? host : "-", rank);
  else snprintf(g_ident, sizeof g_ident, "%s:-", host ? host : "-");
}

void log_set_level(log_level_t level) { g_level = level; }
const char *log_identity(void) { return g_ident; }

int log_enabled(log_level_t level, log_subsys_t sub) {
  if (level > g_level) return 0;
  if (level <= LOG_LVL_WARN || sub >= LOG_SUBSYS_COUNT) return 1;
  return (g_mask >> sub) & 1u;
}

/* One write(2) of the whole text (short writes retried), so concurrent writers do not
 * interleave inside it. */
static void write_all(const char *buf, size_t n) {
  size_t off = 0;
  while (off < n) {
    ssize_t w = write(STDERR_FILENO, buf + off, n - off);
    if (w <= 0) break;
    off += (size_t)w;
  }
}

void log_vprint(const char *fmt, va_list ap) {
  char small[4096];
  va_list copy;
  va_copy(copy, ap);
  int n = vsnprintf(small, sizeof small, fmt, copy);
  va_end(copy);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    write_all(small, (size_t)n);
    return;
  }
  char *big = malloc((size_t)n + 1); /* a long block (usage, quoted lines) */
  if (!big) {
    write_all(small, sizeof small - 1);
    return;
  }
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  write_all(big, (size_t)n);
  free(big);
}

void log_print(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_vprint(fmt, ap);
  va_end(ap);
}

int log_time_prefix(char *buf, size_t len) {
  if (!g_time || len == 0) return 0;
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  int t = snprintf(buf, len, "%ld.%03ld ", (long)(ts.tv_sec % 100000), ts.tv_nsec / 1000000);
  return t < 0 ? 0 : (size_t)t >= len ? (int)len - 1 : t;
}

void log_vwrite(log_level_t level, log_subsys_t sub, const char *file, int line, const char *fmt,
                va_list ap) {
  if (!log_enabled(level, sub)) return;
  char buf[4096];
  const char *base = strrchr(file, '/');
  base = base ? base + 1 : file;
  int n, t = 0;
  const char *sname = sub < LOG_SUBSYS_COUNT ? g_subsys_names[sub] : "";
  t = log_time_prefix(buf, sizeof buf);
  if (level <= LOG_LVL_WARN)
    n = snprintf(buf + t, sizeof buf - (size_t)t, "gpulaunch %s [%s%s%s] %s:%d ", g_ident, g_level_names[level],
                 *sname ? " " : "", sname, base, line);
  else
    n = snprintf(buf + t, sizeof buf - (size_t)t, "gpulaunch %s [%s %s] ", g_ident, g_level_names[level], sname);
  if (n < 0) return;
  n += t;
  if ((size_t)n < sizeof buf) {
    int m = vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
    if (m > 0) n += m;
  }
  if ((size_t)n >= sizeof buf - 1) n = (int)sizeof buf - 2;
  buf[n++] = '\n';
  write_all(buf, (size_t)n);
}

void log_write(log_level_t level, log_subsys_t sub, const char *file, int line, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  log_vwrite(level, sub, file, line, fmt, ap);
  va_end(ap);
}
