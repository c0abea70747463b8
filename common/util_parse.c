/* Parsing config and flag values: sizes, durations, numbers, booleans, signals (decimal only).
 * (util_ prefix kept: its functions are called from dozens of files.) */
#include "common/util_parse.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "gpulaunch/error.h"

/* strtod on a decimal number only: [+-]digits[.digits][e[+-]digits] (".5" too). strtod alone
 * also takes hex ("0x10", "0x1p3"), "inf", "nan" and leading blanks, which the documentation
 * does not promise and a typo should not become. *end as strtod's; errno set on overflow. */
static double decimal_strtod(const char *s, char **end) {
  const char *p = s;
  *end = (char *)s;
  if (*p == '+' || *p == '-') p++;
  const char *d0 = p;
  while (isdigit((unsigned char)*p)) p++;
  size_t ndig = (size_t)(p - d0);
  if (*p == '.') {
    const char *f0 = ++p;
    while (isdigit((unsigned char)*p)) p++;
    ndig += (size_t)(p - f0);
  }
  if (!ndig) return 0;
  if (*p == 'e' || *p == 'E') {
    const char *q = p + 1;
    if (*q == '+' || *q == '-') q++;
    if (isdigit((unsigned char)*q)) {
      while (isdigit((unsigned char)*q)) q++;
      p = q;
    }
  }
  char small[64], *buf = (size_t)(p - s) < sizeof small ? small : strndup(s, (size_t)(p - s));
  if (!buf) return 0;
  if (buf == small) {
    memcpy(small, s, (size_t)(p - s));
    small[p - s] = 0;
  }
  char *e;
  errno = 0;
  double v = strtod(buf, &e);
  size_t used = (size_t)(e - buf);
  if (buf != small) free(buf);
  *end = (char *)s + used;
  return v;
}

int util_parse_size(const char *s, uint64_t *out) {
  if (!s || !*s) return GPL_EINVAL;
  char *end;
  double v = decimal_strtod(s, &end);
  if (end == s || errno || v < 0 || !isfinite(v)) return GPL_EINVAL;
  while (*end == ' ') end++;
  double mult = 1;
  switch (toupper((unsigned char)*end)) {
    case 'K': mult = 1024.0; end++; break;
    case 'M': mult = 1024.0 * 1024; end++; break;
    case 'G': mult = 1024.0 * 1024 * 1024; end++; break;
    case 'T': mult = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: break;
  }
  if (mult > 1 && (*end == 'i' || *end == 'I')) end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end) return GPL_EINVAL;
  double bytes = v * mult;
  if (bytes > 1.8e19) return GPL_EINVAL;
  *out = (uint64_t)bytes;
  return GPL_OK;
}

int util_parse_duration(const char *s, double *seconds) {
  if (!s || !*s) return GPL_EINVAL;
  char *end;
  double v = decimal_strtod(s, &end);
  if (end == s || errno || v < 0 || !isfinite(v)) return GPL_EINVAL;
  while (*end == ' ') end++;
  double mult;
  if (*end == 0 || strcmp(end, "s") == 0 || strcmp(end, "sec") == 0) mult = 1;
  else if (strcmp(end, "ms") == 0) mult = 1e-3;
  else if (strcmp(end, "us") == 0) mult = 1e-6;
  else if (strcmp(end, "m") == 0 || strcmp(end, "min") == 0) mult = 60;
  else if (strcmp(end, "h") == 0) mult = 3600;
  else return GPL_EINVAL;
  /* Checked before anyone converts it to integer milliseconds (1e20 s would be undefined). */
  if (v * mult > UTIL_DURATION_MAX) return GPL_ERANGE;
  *seconds = v * mult;
  return GPL_OK;
}

int util_parse_long(const char *s, long min, long max, long *out) {
  if (!s || !*s) return GPL_EINVAL;
  char *end;
  errno = 0;
  /* decimal only: "010" is ten, as people mean it, not octal; no blanks before it (strtol skips
   * them), as no other number takes them */
  if (!(isdigit((unsigned char)s[0]) || ((s[0] == '-' || s[0] == '+') && isdigit((unsigned char)s[1]))))
    return GPL_EINVAL;
  long v = strtol(s, &end, 10);
  if (end == s || *end) return GPL_EINVAL;
  if (errno == ERANGE || v < min || v > max) return GPL_ERANGE;
  *out = v;
  return GPL_OK;
}

int util_parse_double(const char *s, double *out) {
  if (!s || !*s) return GPL_EINVAL;
  char *end;
  double v = decimal_strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v)) return GPL_EINVAL;
  *out = v;
  return GPL_OK;
}

int util_parse_bool(const char *s, int *out) {
  static const char *const yes[] = {"1", "true", "yes", "on"};
  static const char *const no[] = {"0", "false", "no", "off"};
  if (!s) return GPL_EINVAL;
  for (size_t i = 0; i < GPL_ARRAY_LEN(yes); i++)
    if (strcasecmp(s, yes[i]) == 0) return *out = 1, GPL_OK;
  for (size_t i = 0; i < GPL_ARRAY_LEN(no); i++)
    if (strcasecmp(s, no[i]) == 0) return *out = 0, GPL_OK;
  return GPL_EINVAL;
}

static const struct { const char *name; int signo; } g_signals[] = {
    {"SIGHUP", SIGHUP},   {"SIGINT", SIGINT},   {"SIGQUIT", SIGQUIT}, {"SIGILL", SIGILL},
    {"SIGTRAP", SIGTRAP}, {"SIGABRT", SIGABRT}, {"SIGBUS", SIGBUS},   {"SIGFPE", SIGFPE},
    {"SIGKILL", SIGKILL}, {"SIGUSR1", SIGUSR1}, {"SIGSEGV", SIGSEGV}, {"SIGUSR2", SIGUSR2},
    {"SIGPIPE", SIGPIPE}, {"SIGALRM", SIGALRM}, {"SIGTERM", SIGTERM}, {"SIGCHLD", SIGCHLD},
    {"SIGCONT", SIGCONT}, {"SIGSTOP", SIGSTOP}, {"SIGTSTP", SIGTSTP}, {"SIGXCPU", SIGXCPU},
    {"SIGXFSZ", SIGXFSZ}, {"SIGSYS", SIGSYS},
};

int util_parse_signal(const char *s, int *signo) {
  if (!s || !*s) return GPL_EINVAL;
  long n;
  if (util_parse_long(s, 1, 64, &n) == GPL_OK) return *signo = (int)n, GPL_OK;
  for (size_t i = 0; i < GPL_ARRAY_LEN(g_signals); i++)
    if (strcasecmp(s, g_signals[i].name) == 0 || strcasecmp(s, g_signals[i].name + 3) == 0)
      return *signo = g_signals[i].signo, GPL_OK;
  return GPL_EINVAL;
}

const char *util_signal_name(int signo) {
  static __thread char buf[16];
  for (size_t i = 0; i < GPL_ARRAY_LEN(g_signals); i++)
    if (g_signals[i].signo == signo) return g_signals[i].name;
  snprintf(buf, sizeof buf, "SIG%d", signo);
  return buf;
}
