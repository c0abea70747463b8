/* Small utilities: clocks, parsing, suggestions, POSIX word splitting, secrets, files. */
#include "common/util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "gpulaunch/error.h"

double util_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

uint64_t util_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double util_wall_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void util_iso_time(char *out, size_t len) {
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  char base[32];
  strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(out, len, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}

void util_sleep(double seconds) {
  if (seconds <= 0) return;
  struct timespec ts = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
  while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {
  }
}

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

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

void util_sort_doubles(double *v, size_t n) {
  if (n > 1) qsort(v, n, sizeof *v, cmp_double);
}

typedef struct str_at_s {
  const char *s;
  int i;
} str_at_t;

static int cmp_str_at(const void *a, const void *b) {
  const str_at_t *x = a, *y = b;
  int c = strcmp(x->s, y->s);
  return c ? c : (x->i > y->i) - (x->i < y->i);
}

int util_first_of_each(const char *const *s, int n, int *first) {
  if (n <= 0) return GPL_OK;
  str_at_t *v = malloc((size_t)n * sizeof *v);
  if (!v) return GPL_ENOMEM;
  for (int i = 0; i < n; i++) v[i] = (str_at_t){s[i], i};
  qsort(v, (size_t)n, sizeof *v, cmp_str_at);
  /* in each run of equal strings the lowest index comes first */
  for (int k = 0, head = 0; k < n; k++) {
    if (k > 0 && strcmp(v[k - 1].s, v[k].s) != 0) head = k;
    first[v[k].i] = v[head].i;
  }
  free(v);
  return GPL_OK;
}

double util_median(double *v, size_t n) {
  if (n == 0) return 0;
  util_sort_doubles(v, n);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int util_levenshtein(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 255 || lb > 255) return (int)(la > lb ? la : lb);
  int row[256];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int prev = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int cur = row[j];
      int cost = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]) ? 0 : 1;
      int best = prev + cost;
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      prev = cur;
    }
  }
  return row[lb];
}

const char *util_nearest(const char *word, const char *const *cands, size_t n) {
  const char *best = NULL;
  int best_d = 1 << 30;
  for (size_t i = 0; i < n; i++) {
    int d = util_levenshtein(word, cands[i]);
    if (d < best_d) best_d = d, best = cands[i];
  }
  /* Close enough to be a typo: at most a third of the word, and at least 1 or 2 edits. */
  size_t len = strlen(word);
  int limit = (int)(len / 3);
  if (limit < 2) limit = 2;
  return best && best_d <= limit ? best : NULL;
}

int util_split_words(const char *s, char ***argv_out, int *argc_out, char *err, size_t errlen) {
  size_t cap = 8, argc = 0;
  char **argv = calloc(cap, sizeof *argv);
  size_t slen = strlen(s);
  char *word = malloc(slen + 1);
  if (!argv || !word) goto oom;
  const char *p = s;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
    if (!*p) break;
    size_t w = 0;
    while (*p && !(*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')) {
      if (*p == '\'') {
        const char *q = strchr(p + 1, '\'');
        if (!q) {
          snprintf(err, errlen, "unterminated single quote at column %zu", (size_t)(p - s) + 1);
          goto bad;
        }
        memcpy(word + w, p + 1, (size_t)(q - p - 1));
        w += (size_t)(q - p - 1);
        p = q + 1;
      } else if (*p == '"') {
        const char *start = p++;
        while (*p && *p != '"') {
          /* Inside double quotes a backslash escapes only $ ` " \ and newline. */
          if (*p == '\\' && p[1] && strchr("$`\"\\\n", p[1])) p++;
          word[w++] = *p++;
        }
        if (*p != '"') {
          snprintf(err, errlen, "unterminated double quote at column %zu", (size_t)(start - s) + 1);
          goto bad;
        }
        p++;
      } else if (*p == '\\') {
        if (!p[1]) {
          snprintf(err, errlen, "trailing backslash");
          goto bad;
        }
        word[w++] = p[1];
        p += 2;
      } else {
        word[w++] = *p++;
      }
    }
    if (argc + 2 > cap) {
      cap *= 2;
      char **n = realloc(argv, cap * sizeof *argv);
      if (!n) goto oom;
      argv = n;
    }
    argv[argc] = malloc(w + 1);
    if (!argv[argc]) goto oom;
    memcpy(argv[argc], word, w);
    argv[argc][w] = 0;
    argv[++argc] = NULL;
  }
  free(word);
  *argv_out = argv;
  *argc_out = (int)argc;
  return GPL_OK;
oom:
  snprintf(err, errlen, "out of memory");
bad:
  free(word);
  if (argv) util_free_argv(argv);
  return GPL_EINVAL;
}

void util_free_argv(char **argv) {
  if (!argv) return;
  for (char **a = argv; *a; a++) free(*a);
  free(argv);
}

char *util_quote_word(const char *w) {
  int plain = *w != 0;
  for (const char *p = w; *p; p++)
    if (!(isalnum((unsigned char)*p) || strchr("-_./=:,+@%", *p))) plain = 0;
  if (plain) return strdup(w);
  size_t n = 3;
  for (const char *p = w; *p; p++) n += *p == '\'' ? 4 : 1;
  char *out = malloc(n), *o = out;
  if (!out) return NULL;
  *o++ = '\'';
  for (const char *p = w; *p; p++) {
    if (*p == '\'') {
      memcpy(o, "'\\''", 4);
      o += 4;
    } else {
      *o++ = *p;
    }
  }
  *o++ = '\'';
  *o = 0;
  return out;
}

void util_fmt(char *dst, size_t len, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(dst, len, fmt, ap);
  va_end(ap);
}

size_t util_strlcpy(char *dst, const char *src, size_t size) {
  size_t n = strlen(src);
  if (size) {
    size_t c = n < size - 1 ? n : size - 1;
    memcpy(dst, src, c);
    dst[c] = 0;
  }
  return n;
}

char *util_trim(char *s) {
  while (isspace((unsigned char)*s)) s++;
  size_t n = strlen(s);
  while (n && isspace((unsigned char)s[n - 1])) s[--n] = 0;
  return s;
}

const char *util_hostname(void) {
  static char host[256];
  if (!host[0]) {
    if (gethostname(host, sizeof host - 1) < 0) util_strlcpy(host, "localhost", sizeof host);
    char *dot = strchr(host, '.');
    if (dot) *dot = 0;
  }
  return host;
}

/* Is w (n bytes, upper case) one of the words that name a credential when they stand alone
 * between separators (MYSQL_PWD, DOCKER_PASS, GITLAB_PAT, SENTRY_DSN, --pw, --jwt)? As parts of
 * longer words they mean other things (PATH, PATTERN, BYPASS). */
static int secret_word(const char *w, size_t n) {
  static const char *const words[] = {"PASS", "PWD", "PW", "PAT", "DSN", "JWT", "COOKIE", "OTP"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(words); i++)
    if (strlen(words[i]) == n && memcmp(words[i], w, n) == 0) return 1;
  return 0;
}

static int secret_upper(const char *up, size_t n);

int util_is_secret_name(const char *name) {
  char small[256], *up = small;
  size_t n = strlen(name);
  if (n >= sizeof small && !(up = malloc(n + 1))) return 1; /* no memory: the safe answer */
  for (size_t i = 0; i < n; i++) up[i] = (char)toupper((unsigned char)name[i]);
  up[n] = 0;
  int r = secret_upper(up, n);
  if (up != small) free(up);
  return r;
}

/* util_is_secret_name on the upper-case name up (n bytes): a name of any length is judged whole
 * (a long one cut short could lose the part that makes it a secret). */
static int secret_upper(const char *up, size_t n) {
  static const char *const parts[] = {"SECRET", "TOKEN", "PASSWORD", "PASSWD", "PASSPHRASE",
                                      "CREDENTIAL", "PRIVATE", "APIKEY", "API_KEY", "AUTH",
                                      "WEBHOOK"};
  static const char *const prefixes[] = {"AWS_", "AZURE_"};
  /* the shell's working folders, not passwords */
  if (strcmp(up, "PWD") == 0 || strcmp(up, "OLDPWD") == 0) return 0;
  for (size_t i = 0; i < GPL_ARRAY_LEN(parts); i++)
    if (strstr(up, parts[i])) return 1;
  for (size_t i = 0; i < GPL_ARRAY_LEN(prefixes); i++)
    if (strncmp(up, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  if (n >= 4 && strcmp(up + n - 4, "_KEY") == 0) return 1;
  if (strcmp(up, "KEY") == 0 || (n >= 5 && strcmp(up + n - 5, "_KEYS") == 0)) return 1;
  for (size_t i = 0; i < n;) {
    size_t w = strcspn(up + i, "_-.");
    if (secret_word(up + i, w)) return 1;
    i += w + (up[i + w] ? 1 : 0);
    if (!w && !up[i]) break;
  }
  return 0;
}

int util_read_small(const char *path, char *buf, size_t len) {
  if (!len) return -1;
  buf[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return -1;
  size_t n = fread(buf, 1, len - 1, f);
  int err = ferror(f);
  fclose(f);
  if (err) return -1;
  buf[n] = 0;
  while (n && isspace((unsigned char)buf[n - 1])) buf[--n] = 0;
  return (int)n;
}

int util_env_rank(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(vars); i++) {
    const char *v = getenv(vars[i]);
    long r;
    if (v && util_parse_long(v, 0, 1L << 30, &r) == GPL_OK) return (int)r;
  }
  return -1;
}

const char *util_sched_job_id(void) {
  static const char *const ids[] = {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "OMPI_MCA_ess_base_jobid"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(ids); i++) {
    const char *v = getenv(ids[i]);
    if (v && *v) return v;
  }
  return NULL;
}
