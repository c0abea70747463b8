/* Hang diagnosis, on rank 0: which ranks' stacks differ from the majority's (the ones not in the
 * collective), and the report of every rank's stacks as text and JSON. */
#include "launcher/hang/hang.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/safefile.h"
#include "common/strbuf.h"
#include "common/util.h"
#include "gpulaunch/error.h"

#define SIG_FRAMES 8 /* outermost frames compared: the program's own code, not a wait's innards */
#define MAX_FRAMES 64

typedef struct frames_s {
  int n;
  char f[MAX_FRAMES][128]; /* outermost first */
} frames_t;

/* The value of the first "@@key value" line of text (up to its newline), or "". */
static void header(const char *text, const char *key, char *out, size_t len) {
  out[0] = 0;
  if (!text) return;
  char want[32];
  snprintf(want, sizeof want, "@@%s ", key);
  for (const char *p = text; p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
    if (strncmp(p, want, strlen(want)) == 0) {
      p += strlen(want);
      size_t n = strcspn(p, "\n");
      if (n >= len) n = len - 1;
      memcpy(out, p, n);
      out[n] = 0;
      return;
    }
    if (strncmp(p, "@@stack-begin", 13) == 0) return; /* the first process only */
  }
}

/* The first process's main-thread frames, outermost first. */
static void frames_of(const char *text, frames_t *fr) {
  char line[8192];
  header(text, "frames", line, sizeof line);
  char *v[MAX_FRAMES];
  int n = 0;
  for (char *save = NULL, *t = strtok_r(line, ";", &save); t && n < MAX_FRAMES; t = strtok_r(NULL, ";", &save))
    v[n++] = t;
  fr->n = n;
  for (int i = 0; i < n; i++) util_strlcpy(fr->f[i], v[n - 1 - i], sizeof fr->f[i]);
}

/* A function's name as the C library means it: gdb with libc's debug symbols says __GI___poll
 * and __GI___libc_read, eu-stack and gdb without them __poll and read (and eu-stack may add
 * @@GLIBC_2.34): one rank read by another tool is not at another place. */
static const char *plain_name(const char *f, char *buf, size_t len) {
  if (strncmp(f, "__GI_", 5) == 0) f += 5;
  while (*f == '_') f++;
  if (strncmp(f, "libc_", 5) == 0) f += 5;
  util_strlcpy(buf, f, len);
  buf[strcspn(buf, "@")] = 0;
  return buf;
}

static int same_frame(const char *a, const char *b) {
  char x[128], y[128];
  return strcmp(a, b) == 0 || strcmp(plain_name(a, x, sizeof x), plain_name(b, y, sizeof y)) == 0;
}

static int same_prefix(const frames_t *a, const frames_t *b, int k) {
  int na = GPL_MIN(a->n, k), nb = GPL_MIN(b->n, k);
  if (na != nb) return 0;
  for (int i = 0; i < na; i++)
    if (!same_frame(a->f[i], b->f[i])) return 0;
  return 1;
}

int hang_starting(const char *text) {
  char v[8];
  header(text, "startup", v, sizeof v);
  return strcmp(v, "1") == 0;
}

/* A frame that waits for the other ranks: a collective, a barrier, or (any_wait) any wait, on a
 * peer perhaps. */
static int waits_for(const frames_t *fr, int any_wait) {
  static const char *const words[] = {"all_reduce", "allreduce", "barrier", "Barrier", "all_gather",
                                      "allgather", "broadcast", "reduce_scatter", "alltoall", "Allreduce",
                                      "Bcast", "wait", "Wait"};
  size_t nw = GPL_ARRAY_LEN(words) - (any_wait ? 0 : 2);
  for (int i = 0; i < fr->n; i++)
    for (size_t w = 0; w < nw; w++)
      if (strstr(fr->f[i], words[w])) return 1;
  return 0;
}
static int waits(const frames_t *fr) { return waits_for(fr, 1); }

int hang_waiting(const char *text) {
  frames_t *fr = calloc(1, sizeof *fr);
  if (!fr) return 0;
  frames_of(text, fr);
  int w = fr->n && waits(fr);
  free(fr);
  return w;
}

int hang_too_early(const hang_rank_t *ranks, int n, double hang_timeout_s, int *starting) {
  int silent = 0, who = -1, who_starts = 0;
  *starting = 0;
  for (int i = 0; i < n; i++) {
    int st = ranks[i].text && hang_starting(ranks[i].text), wt = ranks[i].text && hang_waiting(ranks[i].text);
    if (ranks[i].silent_s >= hang_timeout_s) {
      silent++;
      /* a silent rank not known to wait for a peer (no stack, or elsewhere): a verdict now */
      if (!st && !wt) return -1;
    }
    /* the peer the waiting ones wait for: one starting up (silent or not: its imports print
     * nothing), else one elsewhere that made progress within hang_timeout (still computing, or
     * only just stopped: the hang, if it is one, is found once it has been silent that long) */
    int moving = ranks[i].text && ranks[i].silent_s < hang_timeout_s && !wt;
    if ((st && !who_starts) || (moving && who < 0)) {
      who = i;
      who_starts = st;
    }
  }
  *starting = who_starts;
  return silent ? who : -1;
}

void hang_analyze(const hang_rank_t *ranks, int n, int *odd, hang_verdict_t *v) {
  hang_analyze_at(ranks, n, 0, odd, v);
}

void hang_analyze_at(const hang_rank_t *ranks, int n, double hang_timeout_s, int *odd, hang_verdict_t *v) {
  memset(v, 0, sizeof *v);
  v->first_odd = -1;
  frames_t *fr = calloc((size_t)(n > 0 ? n : 1), sizeof *fr);
  if (!fr) return;
  for (int i = 0; i < n; i++) {
    odd[i] = 0;
    frames_of(ranks[i].text, &fr[i]);
  }
  /* The majority: the most common signature among the ranks that gave a stack, held by more
   * than half of them (three ranks at least); the outermost SIG_FRAMES frames, then 3. */
  int best = -1, bestc = 0, have = 0, k = SIG_FRAMES;
  for (int pass = 0; pass < 2; pass++) {
    k = pass ? 3 : SIG_FRAMES;
    best = -1;
    have = bestc = 0;
    for (int i = 0; i < n; i++) {
      if (!fr[i].n) continue;
      have++;
      int c = 0;
      for (int j = 0; j < n; j++) c += fr[j].n && same_prefix(&fr[i], &fr[j], k);
      if (c > bestc) {
        bestc = c;
        best = i;
      }
    }
    if (have && bestc == have) break;             /* everyone alike */
    if (have >= 3 && bestc * 2 > have) break;     /* a majority */
    best = -1;
  }
  if (best >= 0 && bestc < have) {
    for (int i = 0; i < n; i++) odd[i] = fr[i].n && ranks[i].silent_s >= hang_timeout_s && !same_prefix(&fr[i], &fr[best], k);
  } else if (best < 0) {
    /* No majority (two ranks, or all different): the ones not waiting for a peer are odd, when
     * some are waiting. */
    int nw = 0;
    for (int i = 0; i < n; i++) nw += fr[i].n && waits(&fr[i]);
    if (nw > 0 && nw < have)
      for (int i = 0; i < n; i++) odd[i] = fr[i].n && ranks[i].silent_s >= hang_timeout_s && !waits(&fr[i]);
  }
  for (int i = 0; i < n; i++) {
    if (!odd[i]) continue;
    v->nodd++;
    if (v->first_odd < 0) v->first_odd = i;
  }
  strbuf_t s = STRBUF_INIT;
  if (v->first_odd >= 0) {
    const frames_t *o = &fr[v->first_odd];
    /* where it left the others' path: the first (outermost) frame that differs */
    int d = 0;
    if (best >= 0)
      while (d < o->n && d < fr[best].n && same_frame(o->f[d], fr[best].f[d])) d++;
    else
      d = o->n > 1 ? 1 : 0; /* past main */
    if (d >= o->n) d = o->n - 1;
    util_strlcpy(v->func, o->f[d], sizeof v->func);
    for (int i = 0; i < n; i++) {
      if (!odd[i]) continue;
      char pid[32];
      header(ranks[i].text, "pid", pid, sizeof pid);
      /* its own path from where it left the others' to its innermost frame: the function that
       * matters may be anywhere on it (data -> stuck_in_data_loader -> sleep) */
      int from = i == v->first_odd ? d : GPL_MAX(fr[i].n - 1, 0);
      strbuf_printf(&s, "%srank %d (host %s, pid %s) is in %s", s.len ? "; " : "", ranks[i].rank, ranks[i].host,
                    pid, fr[i].n ? fr[i].f[from] : "?");
      for (int q = from + 1; q < fr[i].n; q++) {
        if (q - from > 4 && q < fr[i].n - 1) {
          strbuf_append(&s, " > ...");
          q = fr[i].n - 2;
          continue;
        }
        strbuf_printf(&s, " > %s", fr[i].f[q]);
      }
    }
    if (best >= 0) {
      int bd = GPL_MIN(d, fr[best].n - 1);
      strbuf_printf(&s, "; the other %d rank%s are in %s (innermost %s)", bestc, bestc == 1 ? "" : "s",
                    bd >= 0 ? fr[best].f[bd] : "?", fr[best].n ? fr[best].f[fr[best].n - 1] : "?");
    }
  } else if (have && best >= 0 && bestc == have) {
    strbuf_printf(&s, "every rank has the same stack (innermost %s): nobody stands out",
                  fr[best].f[fr[best].n - 1]);
  } else {
    strbuf_printf(&s, "no majority stack among %d rank%s: see the report", have, have == 1 ? "" : "s");
  }
  int missing = 0;
  for (int i = 0; i < n; i++) missing += !ranks[i].text;
  if (missing) strbuf_printf(&s, "; %d rank%s sent no stack in time", missing, missing == 1 ? "" : "s");
  util_strlcpy(v->summary, strbuf_str(&s), sizeof v->summary);
  strbuf_free(&s);
  free(fr);
}

/* A frame that only says how a function waits (the C library, a lock, the interpreter's
 * internals): the function named is the innermost one that is not. */
static int plumbing(const char *f) {
  static const char *const names[] = {"sleep", "usleep", "nanosleep", "clock_nanosleep", "poll", "ppoll",
                                      "select", "pselect", "epoll_wait", "epoll_pwait", "read", "pread",
                                      "pread64", "recv", "recvfrom", "recvmsg", "write", "send", "accept",
                                      "accept4", "connect", "pause", "sigsuspend", "sigwaitinfo",
                                      "sigtimedwait", "wait", "waitpid", "wait4", "syscall", "sched_yield",
                                      "futex", "get", "acquire", "join", "??"};
  const char *base = strrchr(f, '.'); /* py-spy's Condition.wait, Queue.get */
  base = base ? base + 1 : f;
  if (f[0] == '_' || base[0] == '_' || strncmp(f, "pthread_", 8) == 0 || strncmp(f, "sem_", 4) == 0) return 1;
  for (size_t i = 0; i < GPL_ARRAY_LEN(names); i++)
    if (strcmp(base, names[i]) == 0) return 1;
  return 0;
}

int hang_silent_pick(const hang_rank_t *ranks, int n, const int *cand, int timed_out, char *func, size_t len) {
  func[0] = 0;
  int *odd = calloc((size_t)(n > 0 ? n : 1), sizeof *odd);
  frames_t *fr = calloc((size_t)(n > 0 ? n : 1), sizeof *fr);
  if (!odd || !fr) {
    free(odd);
    free(fr);
    return -1;
  }
  hang_verdict_t v;
  hang_analyze(ranks, n, odd, &v);
  int have = 0, nwait = 0, nc = 0, who = -1, bare = -1;
  for (int i = 0; i < n; i++) {
    frames_of(ranks[i].text, &fr[i]);
    have += fr[i].n > 0;
    nwait += fr[i].n > 0 && waits(&fr[i]);
  }
#define LONGER(i, j) ((j) < 0 || ranks[i].silent_s > ranks[j].silent_s)
  for (int i = 0; i < n; i++) {
    if (!cand[i]) continue;
    nc++;
    if (!fr[i].n && LONGER(i, bare)) bare = i;
    /* alone, it may just be busy (an evaluation) when a peer failed on its own */
    if (fr[i].n && (odd[i] || (have == 1 && timed_out && !waits_for(&fr[i], 0))) && LONGER(i, who)) who = i;
  }
#undef LONGER
  if (who < 0 && bare >= 0 && nwait == have && (have > 0 || nc == 1)) who = bare;
  if (who >= 0 && fr[who].n) {
    const frames_t *o = &fr[who];
    int k = o->n - 1, d = -1;
    while (k > 0 && plumbing(o->f[k])) k--;
    if (who == v.first_odd)
      for (int i = 0; i < k; i++)
        if (strcmp(o->f[i], v.func) == 0) d = i;
    if (d < 0 || strcmp(o->f[d], "main") == 0 || strcmp(o->f[d], "<module>") == 0) d = k;
    /* its path from there to that function, as the hang's summary writes it: a > b > c */
    strbuf_t p = STRBUF_INIT;
    for (int i = d; i <= k; i++) {
      if (i - d == 2 && k - i > 1) { /* the first two, "...", the last */
        strbuf_append(&p, " > ...");
        i = k - 1;
        continue;
      }
      strbuf_printf(&p, "%s%s", i > d ? " > " : "", o->f[i]);
    }
    util_strlcpy(func, strbuf_str(&p), len);
    strbuf_free(&p);
  }
  free(odd);
  free(fr);
  return who;
}

/* One rank's text as JSON: its processes with their threads, frames and the tools' output. */
static cJSON *rank_json(const hang_rank_t *r, int odd) {
  cJSON *o = cJSON_CreateObject();
  cJSON_AddNumberToObject(o, "rank", r->rank);
  cJSON_AddStringToObject(o, "host", r->host ? r->host : "");
  cJSON_AddBoolToObject(o, "odd", odd);
  cJSON_AddNumberToObject(o, "silent_s", r->silent_s);
  cJSON *procs = cJSON_AddArrayToObject(o, "processes");
  if (!r->text) {
    cJSON_AddStringToObject(o, "error", "no stack arrived in time");
    return o;
  }
  cJSON *p = NULL, *threads = NULL;
  const char *line = r->text;
  while (line && *line) {
    const char *eol = strchr(line, '\n');
    size_t n = eol ? (size_t)(eol - line) : strlen(line);
    char buf[8192];
    size_t m = GPL_MIN(n, sizeof buf - 1);
    memcpy(buf, line, m);
    buf[m] = 0;
    const char *next = eol ? eol + 1 : NULL;
    if (strncmp(buf, "@@pid ", 6) == 0) {
      p = cJSON_CreateObject();
      cJSON_AddItemToArray(procs, p);
      cJSON_AddNumberToObject(p, "pid", atoi(buf + 6));
      threads = cJSON_AddArrayToObject(p, "threads");
    } else if (p && strncmp(buf, "@@thread ", 9) == 0) {
      char tid[32], st[8], wchan[128], comm[64] = "";
      if (sscanf(buf + 9, "%31s %7s %127s %63[^\n]", tid, st, wchan, comm) >= 3) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "tid", atoi(tid));
        cJSON_AddStringToObject(t, "state", st);
        cJSON_AddStringToObject(t, "wchan", wchan);
        cJSON_AddStringToObject(t, "comm", comm);
        cJSON_AddItemToArray(threads, t);
      }
    } else if (p && strncmp(buf, "@@frames ", 9) == 0) {
      cJSON *fa = cJSON_AddArrayToObject(p, "frames"); /* innermost first */
      for (char *save = NULL, *t = strtok_r(buf + 9, ";", &save); t; t = strtok_r(NULL, ";", &save))
        cJSON_AddItemToArray(fa, cJSON_CreateString(t));
    } else if (p && strncmp(buf, "@@stack-begin", 13) == 0) {
      const char *end = next ? strstr(next, "\n@@stack-end") : NULL;
      size_t len = end ? (size_t)(end - next) : next ? strlen(next) : 0;
      char *raw = malloc(len + 1);
      if (raw) {
        memcpy(raw, next ? next : "", len);
        raw[len] = 0;
        cJSON_AddStringToObject(p, "stack", raw);
        free(raw);
      }
      next = end ? end + 1 : NULL;
      if (next) next = strchr(next, '\n') ? strchr(next, '\n') + 1 : NULL;
    } else if (p && strncmp(buf, "@@", 2) == 0) {
      char *sp = strchr(buf + 2, ' ');
      if (sp) {
        *sp = 0;
        cJSON_AddStringToObject(p, buf + 2, sp + 1);
      }
    } else if (!p && strncmp(buf, "@@none ", 7) == 0) {
      cJSON_AddStringToObject(o, "error", buf + 7);
    }
    line = next;
  }
  return o;
}

int hang_write_report(const char *dir, const hang_rank_t *ranks, int n, const int *odd,
                      const hang_verdict_t *v, double timeout_s, char *txt, char *json, size_t len) {
  const char *d = dir && *dir ? dir : ".";
  snprintf(txt, len, "%s/gpulaunch-hang.txt", d);
  snprintf(json, len, "%s/gpulaunch-hang.json", d);
  strbuf_t t = STRBUF_INIT;
  char when[64];
  util_iso_time(when, sizeof when);
  strbuf_printf(&t, "gpulaunch hang report, %s\nno progress for %.0f s ([job] hang_timeout)\n%s\n", when,
                timeout_s, v->summary);
  strbuf_append(&t, "odd ranks (stack not the majority's):");
  for (int i = 0; i < n; i++)
    if (odd[i]) strbuf_printf(&t, " %d", ranks[i].rank);
  strbuf_append(&t, v->nodd ? "\n" : " none\n");
  cJSON *root = cJSON_CreateObject();
  cJSON_AddStringToObject(root, "time", when);
  cJSON_AddNumberToObject(root, "hang_timeout_s", timeout_s);
  cJSON_AddStringToObject(root, "summary", v->summary);
  cJSON *oa = cJSON_AddArrayToObject(root, "odd_ranks");
  cJSON_AddStringToObject(root, "odd_function", v->func);
  cJSON *ra = cJSON_AddArrayToObject(root, "ranks");
  for (int i = 0; i < n; i++) {
    if (odd[i]) cJSON_AddItemToArray(oa, cJSON_CreateNumber(ranks[i].rank));
    cJSON_AddItemToArray(ra, rank_json(&ranks[i], odd[i]));
    strbuf_printf(&t, "\n==== rank %d (host %s)%s, silent %.1f s\n", ranks[i].rank, ranks[i].host ? ranks[i].host : "?",
                  odd[i] ? " ODD" : "", ranks[i].silent_s);
    strbuf_append(&t, ranks[i].text ? ranks[i].text : "(no stack arrived in time)\n");
  }
  char *js = cJSON_Print(root);
  cJSON_Delete(root);
  char err[512];
  int rc = safefile_write_text(txt, strbuf_str(&t), err, sizeof err);
  if (rc < 0) LOG_WARN("hang report: %s", err);
  int rc2 = js ? safefile_write_text(json, js, err, sizeof err) : GPL_ENOMEM;
  if (rc2 < 0 && js) LOG_WARN("hang report: %s", err);
  free(js);
  strbuf_free(&t);
  return rc < 0 ? rc : rc2;
}
