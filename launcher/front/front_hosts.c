/* Elastic jobs' host sources (front_hosts.h): a hostfile, a discovery script's output, or a Slurm
 * allocation's nodes (a script of Slurm's commands). Libc only. */
#include "launcher/front/front_hosts.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define OUT_MAX (1u << 20) /* a discovery script's output beyond this is an error */

static int valid_name(const char *s, size_t n) {
  if (n == 0 || n >= sizeof((front_host_t *)0)->name) return 0;
  for (size_t i = 0; i < n; i++)
    if (!(isalnum((unsigned char)s[i]) || s[i] == '-' || s[i] == '.' || s[i] == '_')) return 0;
  return 1;
}

static int whole(const char *s, size_t n, int *v) {
  if (n == 0 || n > 6) return 0;
  int x = 0;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i])) return 0;
    x = x * 10 + (s[i] - '0');
  }
  *v = x;
  return x > 0;
}

/* The slots of a host listed without a count (front_hosts_set_bare_slots). */
static int g_bare_slots = 1;

int front_hosts_set_bare_slots(const char *v) {
  int n = 1;
  if (v && *v && !whole(v, strlen(v), &n)) return -1;
  g_bare_slots = n;
  return 0;
}

int front_hosts_parse(const char *text, const char *origin, front_host_t *out, int max, char *err,
                      size_t errlen) {
  int n = 0, lineno = 0;
  const char *p = text;
  while (*p) {
    const char *end = strchr(p, '\n');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    lineno++;
    char line[512];
    if (len >= sizeof line) {
      snprintf(err, errlen, "%s:%d: line too long", origin, lineno);
      return -1;
    }
    memcpy(line, p, len);
    line[len] = 0;
    p += len + (end ? 1 : 0);
    char *hash = strchr(line, '#');
    if (hash) *hash = 0;
    char *s = line;
    while (isspace((unsigned char)*s)) s++;
    if (!*s) continue;
    size_t nl = strcspn(s, " \t\r:"); /* (\r: a file written on Windows) */
    int slots = g_bare_slots;
    if (!valid_name(s, nl)) {
      snprintf(err, errlen, "%s:%d: '%.*s' is not a host name", origin, lineno, (int)(nl < 64 ? nl : 64), s);
      return -1;
    }
    char *rest = s + nl;
    if (*rest == ':') {
      size_t dn = strcspn(rest + 1, " \t\r");
      if (!whole(rest + 1, dn, &slots)) {
        snprintf(err, errlen, "%s:%d: slots must be a whole number > 0 (host:slots)", origin, lineno);
        return -1;
      }
      rest += 1 + dn;
    }
    char *save = NULL; /* (the polling thread parses while the loop runs) */
    for (char *w = strtok_r(rest, " \t\r", &save); w; w = strtok_r(NULL, " \t\r", &save)) {
      if (strncmp(w, "slots=", 6) == 0 && !whole(w + 6, strlen(w + 6), &slots)) {
        snprintf(err, errlen, "%s:%d: slots must be a whole number > 0 (host slots=N)", origin, lineno);
        return -1;
      }
    }
    int at = -1;
    for (int i = 0; i < n; i++)
      if (strlen(out[i].name) == nl && strncmp(out[i].name, s, nl) == 0) at = i;
    if (at < 0) {
      if (n >= max) {
        snprintf(err, errlen, "%s:%d: more than %d hosts", origin, lineno, max);
        return -1;
      }
      at = n++;
      memcpy(out[at].name, s, nl);
      out[at].name[nl] = 0;
    }
    out[at].slots = slots;
  }
  return n;
}

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The script's standard output, within timeout_s; NULL with a reason on error. */
static char *run_script(const char *script, double timeout_s, char *err, size_t errlen) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) < 0) {
    snprintf(err, errlen, "pipe: %s", strerror(errno));
    return NULL;
  }
  pid_t pid = fork();
  if (pid < 0) {
    snprintf(err, errlen, "fork: %s", strerror(errno));
    close(fds[0]);
    close(fds[1]);
    return NULL;
  }
  if (pid == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    int devnull = open("/dev/null", O_RDONLY);
    if (devnull >= 0) dup2(devnull, 0);
    execl("/bin/sh", "sh", "-c", script, (char *)NULL);
    _exit(127);
  }
  setpgid(pid, pid);
  close(fds[1]);
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  double until = mono() + timeout_s;
  int timed_out = 0, too_big = 0;
  while (buf) {
    double left = until - mono();
    if (left <= 0) {
      timed_out = 1;
      break;
    }
    struct pollfd pf = {.fd = fds[0], .events = POLLIN};
    int rc = poll(&pf, 1, (int)(left * 1000) + 1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    if (len + 1 >= cap) {
      if (cap >= OUT_MAX) {
        too_big = 1;
        break;
      }
      char *nb = realloc(buf, cap * 2);
      if (!nb) break;
      buf = nb;
      cap *= 2;
    }
    ssize_t r = read(fds[0], buf + len, cap - 1 - len);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    len += (size_t)r;
  }
  close(fds[0]);
  if (timed_out || too_big || !buf) kill(-pid, SIGKILL);
  int st = 0;
  /* The output ended (or it was killed): its end follows within the same bound. */
  while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  if (!buf) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  buf[len] = 0;
  const char *why = timed_out ? "did not finish" : too_big ? "printed more than 1 MiB" : NULL;
  if (!why && !(WIFEXITED(st) && WEXITSTATUS(st) == 0)) why = "failed";
  if (why) {
    if (strchr(script, '\n')) script = "(the Slurm allocation's nodes)"; /* ours: too long to quote */
    if (timed_out)
      snprintf(err, errlen, "host discovery script '%s' did not finish within %.0f s", script, timeout_s);
    else if (WIFEXITED(st))
      snprintf(err, errlen, "host discovery script '%s' %s (exit status %d)", script, why, WEXITSTATUS(st));
    else
      snprintf(err, errlen, "host discovery script '%s' %s", script, why);
    free(buf);
    return NULL;
  }
  return buf;
}

int front_hosts_read(const char *hostfile, const char *script, double timeout_s, front_host_t *out,
                     int max, char *err, size_t errlen) {
  char *text = NULL;
  const char *origin = hostfile;
  if (script) {
    text = run_script(script, timeout_s, err, errlen);
    origin = "host discovery script";
  } else {
    FILE *f = fopen(hostfile, "r");
    if (!f) {
      snprintf(err, errlen, "cannot read the hostfile %s: %s", hostfile, strerror(errno));
      return -1;
    }
    size_t cap = 1 << 16, len = 0;
    text = malloc(cap);
    while (text) {
      size_t r = fread(text + len, 1, cap - 1 - len, f);
      len += r;
      if (r == 0) break;
      if (len + 1 >= cap) {
        if (cap >= OUT_MAX) break;
        char *nb = realloc(text, cap * 2);
        if (!nb) break;
        text = nb;
        cap *= 2;
      }
    }
    fclose(f);
    if (text) text[len] = 0;
    else snprintf(err, errlen, "out of memory");
  }
  if (!text) return -1;
  int n = front_hosts_parse(text, origin, out, max, err, errlen);
  free(text);
  return n;
}

/* The first count of a Slurm tasks-per-node value ("8", "8(x2)", "8(x2),4"); 0 when none. */
static int first_count(const char *v) {
  if (!v || !isdigit((unsigned char)*v)) return 0;
  long x = strtol(v, NULL, 10);
  return x > 0 && x < 1000000 ? (int)x : 0;
}

char *front_hosts_slurm_script(void) {
  const char *job = getenv("SLURM_JOB_ID");
  if (!job || !*job) return NULL;
  int slots = first_count(getenv("SLURM_NTASKS_PER_NODE"));
  if (!slots) slots = first_count(getenv("SLURM_TASKS_PER_NODE"));
  if (!slots) slots = 1;
  /* A node Slurm lost leaves the job (sbatch --no-kill) or shows down: it is no longer listed. A
   * node that only stopped answering Slurm for a moment (NO_RESPOND) is the liveness tree's to
   * judge, not the host list's. */
  static const char fmt[] =
      "nodes=$(squeue -h -j \"$SLURM_JOB_ID\" -o %%N 2>/dev/null | head -n 1)\n"
      "[ -n \"$nodes\" ] && [ \"$nodes\" != '(null)' ] || nodes=$SLURM_JOB_NODELIST\n"
      "[ -n \"$nodes\" ] || { echo 'no SLURM_JOB_NODELIST' >&2; exit 1; }\n"
      "bad=\" $(sinfo -h -N -n \"$nodes\" -t down,drain,fail -o %%N 2>/dev/null | tr '\\n' ' ') \"\n"
      "scontrol show hostnames \"$nodes\" | while read -r h; do\n"
      "  case $bad in *\" $h \"*) ;; *) echo \"$h:%d\" ;; esac\n"
      "done\n";
  size_t len = sizeof fmt + 16;
  char *s = malloc(len);
  if (s) snprintf(s, len, fmt, slots);
  return s;
}

const char *front_hosts_slurm_addr_script(void) {
  const char *job = getenv("SLURM_JOB_ID");
  if (!job || !*job) return NULL;
  return "nodes=$SLURM_JOB_NODELIST\n"
         "[ -n \"$nodes\" ] || { echo 'no SLURM_JOB_NODELIST' >&2; exit 1; }\n"
         "sinfo -h -N -n \"$nodes\" -o '%N %o' 2>/dev/null | awk '!seen[$1]++ { print $2 }' | grep . ||\n"
         "  scontrol show hostnames \"$nodes\"\n";
}
