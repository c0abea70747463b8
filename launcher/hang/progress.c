/* A rank's progress tracker: an atomic time of the last progress, read by the liveness thread,
 * and a ring of the last steps with their wall-clock times. */
#include "launcher/hang/progress.h"

#include <math.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/util.h"
#include "gpulaunch/error.h"

struct prog_s {
  uint64_t last_ns;  /* __atomic: util_now_ns() of the last progress */
  int have_re;
  regex_t re;
  char *hb_path;
  struct timespec hb_mtime;
  prog_step_t ring[PROG_MAX_STEPS];
  int nsteps, head;  /* steps kept, next slot */
};

/* Perl's \d \s \w (which users write, as in `step (\d+)`) in POSIX ERE spelling. */
static char *to_ere(const char *re) {
  size_t n = strlen(re);
  char *out = malloc(n * 12 + 1), *o = out;
  if (!out) return NULL;
  for (const char *p = re; *p; p++) {
    if (p[0] == '\\' && p[1]) {
      const char *rep = NULL;
      switch (p[1]) {
        case 'd': rep = "[0-9]"; break;
        case 'D': rep = "[^0-9]"; break;
        case 's': rep = "[[:space:]]"; break;
        case 'S': rep = "[^[:space:]]"; break;
        case 'w': rep = "[[:alnum:]_]"; break;
        default: break;
      }
      if (rep) {
        size_t r = strlen(rep);
        memcpy(o, rep, r);
        o += r;
        p++;
        continue;
      }
      *o++ = *p++;
    }
    *o++ = *p;
  }
  *o = 0;
  return out;
}

/* What glibc's regcomp would take exponential memory for: a repetition of a repetition ("a++",
 * "a*{9}") or bounds that multiply ("((a{30}){30}){30}": regcomp copies the tree per count). A
 * step pattern needs neither. NULL: fine. */
static const char *regex_too_big(const char *re) {
  if (strlen(re) > 256) return "longer than 256 characters";
  int prev_rep = 0;
  double product = 1;
  for (const char *p = re; *p; p++) {
    if (p[0] == '\\' && p[1]) {
      p++;
      prev_rep = 0;
      continue;
    }
    int rep = *p == '+' || *p == '*' || *p == '?' || *p == '{';
    if (rep && prev_rep) return "a repetition of a repetition (such as a++ or a*{2})";
    if (*p == '{') {
      long most = 1;
      char *end;
      for (const char *q = p + 1; *q && *q != '}'; q = end) {
        long v = strtol(q, &end, 10);
        if (end == q) end = (char *)q + 1;
        else if (v > 32) return "a repetition bound over 32";
        else if (v > most) most = v;
      }
      product *= (double)most;
      if (product > 1024) return "repetition bounds that multiply to more than 1024";
      const char *c = strchr(p, '}');
      if (!c) break;
      p = c;
    }
    prev_rep = rep;
  }
  return NULL;
}

int prog_create(prog_t **out, const char *step_regex, const char *heartbeat_file, char *err, size_t errlen) {
  *out = NULL;
  const char *big = step_regex && *step_regex ? regex_too_big(step_regex) : NULL;
  if (big) {
    if (err) snprintf(err, errlen, "%s", big);
    return GPL_ECONFIG;
  }
  prog_t *p = calloc(1, sizeof *p);
  if (!p) return GPL_ENOMEM;
  if (step_regex && *step_regex) {
    char *ere = to_ere(step_regex);
    int rc = ere ? regcomp(&p->re, ere, REG_EXTENDED) : REG_ESPACE;
    free(ere);
    if (rc != 0) {
      if (err) regerror(rc, &p->re, err, errlen);
      free(p);
      return GPL_ECONFIG;
    }
    p->have_re = 1;
  }
  if (heartbeat_file && *heartbeat_file) p->hb_path = strdup(heartbeat_file);
  prog_reset(p);
  *out = p;
  return GPL_OK;
}

void prog_free(prog_t *p) {
  if (!p) return;
  if (p->have_re) regfree(&p->re);
  free(p->hb_path);
  free(p);
}

void prog_reset(prog_t *p) {
  if (!p) return;
  p->nsteps = p->head = 0;
  struct stat st;
  if (p->hb_path && stat(p->hb_path, &st) == 0) p->hb_mtime = st.st_mtim;
  prog_touch(p);
}

void prog_touch(prog_t *p) {
  if (p) __atomic_store_n(&p->last_ns, util_now_ns(), __ATOMIC_RELAXED);
}

void prog_step(prog_t *p, double step) {
  if (!p) return;
  prog_touch(p);
  p->ring[p->head] = (prog_step_t){step, util_wall_now()};
  p->head = (p->head + 1) % PROG_MAX_STEPS;
  if (p->nsteps < PROG_MAX_STEPS) p->nsteps++;
}

void prog_line(prog_t *p, const char *line, size_t len) {
  if (!p) return;
  prog_touch(p);
  if (!p->have_re) return;
  char buf[1024];
  if (len >= sizeof buf) len = sizeof buf - 1;
  memcpy(buf, line, len);
  buf[len] = 0;
  regmatch_t m[2];
  if (regexec(&p->re, buf, 2, m, 0) != 0) return;
  if (m[1].rm_so >= 0) {
    char *end;
    double v = strtod(buf + m[1].rm_so, &end);
    if (end != buf + m[1].rm_so && isfinite(v)) prog_step(p, v); /* not "nan" or "inf" */
  } else { /* no group: each matching line is the next step */
    prog_step(p, p->nsteps ? p->ring[(p->head + PROG_MAX_STEPS - 1) % PROG_MAX_STEPS].step + 1 : 0);
  }
}

void prog_poll(prog_t *p) {
  if (!p || !p->hb_path) return;
  struct stat st;
  if (stat(p->hb_path, &st) < 0) return;
  if (st.st_mtim.tv_sec != p->hb_mtime.tv_sec || st.st_mtim.tv_nsec != p->hb_mtime.tv_nsec) {
    p->hb_mtime = st.st_mtim;
    prog_touch(p);
  }
}

double prog_age(const prog_t *p) {
  if (!p) return -1;
  uint64_t last = __atomic_load_n(&p->last_ns, __ATOMIC_RELAXED), now = util_now_ns();
  return now > last ? (double)(now - last) / 1e9 : 0;
}

int prog_steps(const prog_t *p, prog_step_t *out, int max) {
  if (!p) return 0;
  int n = p->nsteps < max ? p->nsteps : max;
  for (int i = 0; i < n; i++) out[i] = p->ring[(p->head + PROG_MAX_STEPS - n + i) % PROG_MAX_STEPS];
  return n;
}
