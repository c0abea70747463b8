/* Elastic membership (front_elastic.h): a thread polls the host source; the loop launches the job
 * on the usable hosts (those listed, less those cooling down after a loss or a notice), and after
 * each launch decides: done, a membership change (restart on the hosts there are now), or the
 * job's own end. Libc and pthreads only. */
#include "launcher/front/front_elastic.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/envvar.h"
#include "launcher/front/front_hosts.h"
#include "launcher/front/front_probe.h"

#define SOURCE_TIMEOUT_S 10.0 /* a discovery script that takes longer failed this poll */
#define PROBE_TIMEOUT_S 15.0  /* a host that cannot start `true` within this long is unreachable */
#define RESTART_LINGER_S 1.0 /* mpirun lingering after a membership change's status is ended */
#define RUN_ID_ENV ENVVAR_LITERAL(RUN_ID)
#define HISTORY_ENV ENVVAR_LITERAL(ELASTIC_HISTORY)
#define HISTORY_MAX 16 /* the restarts --summary and the audit log carry: the last ones */
#define RESTART_BASE_ENV ENVVAR_LITERAL(RESTART_BASE)

typedef struct cool_s {
  char name[64];
  double until;
} cool_t;

typedef struct el_s {
  const front_elastic_t *e;
  /* the host source, as the polling thread last read it */
  pthread_mutex_t mu;
  pthread_t thread;
  int stop_thread;
  front_host_t *seen;
  int nseen;       /* -1: the last read failed */
  unsigned seq;    /* reads done */
  char err[512];
  /* the loop's own state */
  front_host_t *cur; /* hosts of the launch now running */
  int ncur;
  cool_t *cool;
  int ncool;
  int restarts;
  double last_launch;
  char why[512];   /* the membership change asked for while the job runs */
  char *history[HISTORY_MAX]; /* each restart as a JSON object, the oldest first */
  int nhistory;
} el_t;

static void *source_thread(void *arg) {
  el_t *el = arg;
  front_host_t *buf = calloc(FRONT_HOST_MAX, sizeof *buf);
  if (!buf) return NULL;
  for (;;) {
    char err[512] = "";
    int n = front_hosts_read(el->e->hostfile, el->e->script, SOURCE_TIMEOUT_S, buf, FRONT_HOST_MAX, err,
                             sizeof err);
    pthread_mutex_lock(&el->mu);
    if (n >= 0) memcpy(el->seen, buf, (size_t)n * sizeof *buf);
    if (n < 0 && strcmp(err, el->err) != 0) front_say("%s (the host list stays as it was)", err);
    snprintf(el->err, sizeof el->err, "%s", n < 0 ? err : "");
    if (n >= 0 || el->nseen < 0) el->nseen = n;
    el->seq++;
    int stop = el->stop_thread;
    pthread_mutex_unlock(&el->mu);
    for (double t = 0; t < el->e->interval && !stop; t += 0.1) {
      struct timespec ts = {0, 100 * 1000 * 1000};
      nanosleep(&ts, NULL);
      pthread_mutex_lock(&el->mu);
      stop = el->stop_thread;
      pthread_mutex_unlock(&el->mu);
    }
    if (stop) break;
  }
  free(buf);
  return NULL;
}

static int cooling(el_t *el, const char *name, double now) {
  for (int i = 0; i < el->ncool; i++)
    if (strcmp(el->cool[i].name, name) == 0 && el->cool[i].until > now) return 1;
  return 0;
}

static void cool_down(el_t *el, const char *name) {
  double until = front_now() + el->e->cooldown;
  for (int i = 0; i < el->ncool; i++)
    if (strcmp(el->cool[i].name, name) == 0) {
      el->cool[i].until = until;
      return;
    }
  if (el->ncool < FRONT_HOST_MAX) {
    snprintf(el->cool[el->ncool].name, sizeof el->cool[0].name, "%s", name);
    el->cool[el->ncool++].until = until;
  }
}

static int in_list(const front_host_t *h, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (strcmp(h[i].name, name) == 0) return i;
  return -1;
}

/* The hosts to launch on: the running set's hosts first while they are usable (ranks stay where
 * they were, rank 0's host first), then the source's new ones, at most max. Returns the count. */
static int choose(el_t *el, front_host_t *out) {
  double now = front_now();
  int n = 0;
  pthread_mutex_lock(&el->mu);
  for (int i = 0; i < el->ncur && n < el->e->max; i++) {
    int at = el->nseen > 0 ? in_list(el->seen, el->nseen, el->cur[i].name) : -1;
    if (at >= 0 && !cooling(el, el->cur[i].name, now)) out[n++] = el->seen[at];
  }
  for (int i = 0; i < el->nseen && n < el->e->max; i++)
    if (in_list(out, n, el->seen[i].name) < 0 && !cooling(el, el->seen[i].name, now)) out[n++] = el->seen[i];
  pthread_mutex_unlock(&el->mu);
  return n;
}

static void host_list(const front_host_t *h, int n, char *out, size_t len) {
  size_t off = 0;
  out[0] = 0;
  int i = 0;
  for (; i < n && off + 80 < len; i++) /* a name is < 64 bytes, slots < 7 digits */
    off += (size_t)snprintf(out + off, len - off, "%s%s:%d", i ? "," : "", h[i].name, h[i].slots);
  if (i < n) snprintf(out + off, len - off, ",...");
}

/* The hosts listed but left out (cooling down), for the below-MIN message. */
static void left_out(el_t *el, char *out, size_t len) {
  double now = front_now();
  size_t off = 0;
  out[0] = 0;
  for (int i = 0; i < el->ncool && off + 100 < len; i++)
    if (el->cool[i].until > now)
      off += (size_t)snprintf(out + off, len - off, "%s%s (for %.0f s more)", off ? ", " : "", el->cool[i].name,
                              el->cool[i].until - now);
}

/* While the job runs: grow when hosts came back (not more often than scale_up_every), shrink when
 * a running host left the host source. */
static void tick(void *arg, front_job_t *j) {
  el_t *el = arg;
  if (j->asked_stop || j->user_stop) return;
  double now = front_now();
  pthread_mutex_lock(&el->mu);
  int nseen = el->nseen;
  char gone[256] = "", joined[256] = "";
  if (nseen >= 0) {
    for (int i = 0; i < el->ncur; i++)
      if (in_list(el->seen, nseen, el->cur[i].name) < 0 && strlen(gone) + 70 < sizeof gone)
        snprintf(gone + strlen(gone), sizeof gone - strlen(gone), "%s%s", *gone ? ", " : "", el->cur[i].name);
    int room = el->e->max - el->ncur;
    for (int i = 0; i < nseen && room > 0; i++)
      if (in_list(el->cur, el->ncur, el->seen[i].name) < 0 && !cooling(el, el->seen[i].name, now)) {
        room--;
        if (strlen(joined) + 70 < sizeof joined)
          snprintf(joined + strlen(joined), sizeof joined - strlen(joined), "%s%s", *joined ? ", " : "",
                   el->seen[i].name);
      }
  }
  pthread_mutex_unlock(&el->mu);
  if (*gone) {
    snprintf(el->why, sizeof el->why, "%s left the host list", gone);
    front_say("%s: stopping the job with the grace to go on without it", el->why);
    front_job_stop(j);
  } else if (*joined && now - el->last_launch >= el->e->scale_up_every) {
    snprintf(el->why, sizeof el->why, "scale-up: %s joined", joined);
    front_say("%s: stopping the job with the grace to start again on more hosts", el->why);
    front_job_stop(j);
  }
}

/* Wait up to min_wait for MIN usable hosts; the count chosen (>= min), or -1 after the wait. */
static int wait_for_min(el_t *el, front_host_t *hosts) {
  double t0 = front_now();
  int said = 0;
  /* the source's first read (bounded by the script's timeout) */
  for (int i = 0; i < (int)(SOURCE_TIMEOUT_S * 10) + 10; i++) {
    pthread_mutex_lock(&el->mu);
    unsigned seq = el->seq;
    pthread_mutex_unlock(&el->mu);
    if (seq) break;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  for (;;) {
    pthread_mutex_lock(&el->mu);
    unsigned seq = el->seq;
    pthread_mutex_unlock(&el->mu);
    int n = choose(el, hosts);
    if (n >= el->e->min) return n;
    if (front_now() - t0 >= el->e->min_wait) {
      char have[1024], out[1024];
      host_list(hosts, n, have, sizeof have);
      left_out(el, out, sizeof out);
      front_say("fewer than %d usable hosts for %.0f s: %d usable (%s)%s%s; ending (exit status %d)", el->e->min,
                el->e->min_wait, n, n ? have : "none", *out ? "; left out after a loss or notice: " : "", out,
                FRONT_EXIT_BELOW_MIN);
      return -1;
    }
    if (!said) {
      char out[1024];
      left_out(el, out, sizeof out);
      front_say("%d usable host%s, %d needed: waiting up to %.0f s for more%s%s", n, n == 1 ? "" : "s", el->e->min,
                el->e->min_wait, *out ? "; left out: " : "", out);
      said = 1;
    }
    /* the next read of the source, or a cool-down's end */
    for (int i = 0; i < 10; i++) {
      struct timespec ts = {0, 100 * 1000 * 1000};
      nanosleep(&ts, NULL);
      pthread_mutex_lock(&el->mu);
      unsigned s2 = el->seq;
      pthread_mutex_unlock(&el->mu);
      if (s2 != seq) break;
    }
  }
}

/* srun's words for the hosts: the same slots everywhere: --ntasks-per-node; else each rank's
 * host in a file of its own (SLURM_HOSTFILE, --distribution=arbitrary; *hostfile is set to it). */
static int srun_words(const front_host_t *hosts, int n, char **av, int k, char *buf, size_t len,
                      char **hostfile) {
  int np = 0, same = 1;
  for (int i = 0; i < n; i++) {
    np += hosts[i].slots;
    same &= hosts[i].slots == hosts[0].slots;
  }
  size_t off = 0;
  char *nodes = buf, *ntasks = NULL, *nnodes = NULL, *per = NULL;
  off += (size_t)snprintf(buf + off, len - off, "--nodelist=");
  for (int i = 0; i < n && off + 70 < len; i++)
    off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? "," : "", hosts[i].name);
  off++;
  nnodes = buf + off;
  off += (size_t)snprintf(buf + off, len - off, "--nodes=%d", n) + 1;
  ntasks = buf + off;
  off += (size_t)snprintf(buf + off, len - off, "--ntasks=%d", np) + 1;
  per = buf + off;
  if (same) {
    snprintf(buf + off, len - off, "--ntasks-per-node=%d", hosts[0].slots);
  } else {
    char path[] = "/tmp/gpulaunch-run-hosts.XXXXXX";
    int fd = mkstemp(path);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    if (!f) {
      if (fd >= 0) close(fd);
      front_say("cannot write srun's SLURM_HOSTFILE in /tmp");
      return -1;
    }
    for (int i = 0; i < n; i++)
      for (int r = 0; r < hosts[i].slots; r++) fprintf(f, "%s\n", hosts[i].name);
    if (fclose(f) != 0) return -1;
    *hostfile = strdup(path);
    setenv("SLURM_HOSTFILE", path, 1);
    unsetenv("SLURM_NTASKS_PER_NODE"); /* srun reads it as --ntasks-per-node */
    snprintf(buf + off, len - off, "--distribution=arbitrary");
  }
  av[k++] = "--overlap"; /* a step beside the last one's, which Slurm may not have closed yet */
  av[k++] = nnodes;
  av[k++] = ntasks;
  av[k++] = per;
  if (same) av[k++] = nodes; /* (arbitrary: the hosts are the file's) */
  return k;
}

static int launch(el_t *el, front_job_t *j, const front_host_t *hosts, int n) {
  const front_elastic_t *e = el->e;
  int np = 0;
  for (int i = 0; i < n; i++) np += hosts[i].slots;
  size_t hlen = (size_t)n * 80 + 96;
  char npbuf[16], *hostarg = malloc(hlen), base[16], *slurm_hostfile = NULL;
  char **av = calloc((size_t)(e->nhead + e->ntail + 16), sizeof *av);
  if (!hostarg || !av) {
    free(hostarg);
    free(av);
    return -1;
  }
  snprintf(npbuf, sizeof npbuf, "%d", np);
  snprintf(base, sizeof base, "%d", el->restarts);
  setenv(RESTART_BASE_ENV, base, 1);
  int k = 0;
  for (int i = 0; i < e->nhead; i++) av[k++] = e->head[i];
  if (e->srun) { /* srun passes the environment on by itself */
    k = srun_words(hosts, n, av, k, hostarg, hlen, &slurm_hostfile);
  } else {
    host_list(hosts, n, hostarg, hlen);
    static char *const xs[] = {"-x", RESTART_BASE_ENV, "-x", RUN_ID_ENV, "-x", HISTORY_ENV, "-np"};
    for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) av[k++] = xs[i];
    av[k++] = npbuf;
    av[k++] = "--host";
    av[k++] = hostarg;
  }
  int rc = -1;
  if (k >= 0) {
    for (int i = 0; i < e->ntail; i++) av[k++] = e->tail[i];
    av[k] = NULL;
    memcpy(el->cur, hosts, (size_t)n * sizeof *hosts);
    el->ncur = n;
    el->last_launch = front_now();
    el->why[0] = 0;
    j->av = av;
    j->start_limit = e->start_limit;
    j->restart_linger = RESTART_LINGER_S;
    rc = front_job_run(j, tick, el);
  }
  if (slurm_hostfile) {
    unlink(slurm_hostfile);
    unsetenv("SLURM_HOSTFILE");
    free(slurm_hostfile);
  }
  free(av);
  free(hostarg);
  return rc;
}

/* One restart for --summary and the audit log (GPULAUNCH_ELASTIC_HISTORY, a JSON array of the
 * last HISTORY_MAX): its number, cause, hosts before and after and the seconds from the change to
 * the new launch. Host names and causes are ours ([A-Za-z0-9._-] names, fixed words): no escaping. */
static void remember(el_t *el, const char *why, const front_host_t *before, int nbefore,
                     const front_host_t *after, int nafter, double relaunch_s) {
  size_t len = (size_t)(nbefore + nafter) * 80 + strlen(why) + 256;
  char *e = malloc(len), *hb = malloc((size_t)nbefore * 80 + 96), *ha = malloc((size_t)nafter * 80 + 96);
  if (e && hb && ha) {
    host_list(before, nbefore, hb, (size_t)nbefore * 80 + 96);
    host_list(after, nafter, ha, (size_t)nafter * 80 + 96);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(e, len, "{\"restart\":%d,\"time\":%ld,\"cause\":\"%s\",\"hosts_before\":\"%s\","
             "\"hosts_after\":\"%s\",\"seconds_to_relaunch\":%.2f}", el->restarts, (long)ts.tv_sec, why, hb, ha,
             relaunch_s);
    if (el->nhistory == HISTORY_MAX) {
      free(el->history[0]);
      memmove(el->history, el->history + 1, (HISTORY_MAX - 1) * sizeof *el->history);
      el->nhistory--;
    }
    el->history[el->nhistory++] = e;
    e = NULL;
  }
  free(e);
  free(hb);
  free(ha);
  size_t total = 3;
  for (int i = 0; i < el->nhistory; i++) total += strlen(el->history[i]) + 1;
  char *all = malloc(total);
  if (!all) return;
  strcpy(all, "[");
  for (int i = 0; i < el->nhistory; i++) {
    if (i) strcat(all, ",");
    strcat(all, el->history[i]);
  }
  strcat(all, "]");
  setenv(HISTORY_ENV, all, 1);
  free(all);
}

/* After a launch: the hosts named lost or noticed are left out; "" when this end is no
 * membership change (the job's own end). */
static void membership_change(el_t *el, front_job_t *j, char *why, size_t len) {
  why[0] = 0;
  size_t off = 0;
  for (int i = 0; i < j->nlost && off + 100 < len; i++) {
    cool_down(el, j->lost[i]);
    off += (size_t)snprintf(why + off, len - off, "%shost %s lost", off ? ", " : "", j->lost[i]);
  }
  for (int i = 0; i < j->nnotice && off + 100 < len; i++) {
    cool_down(el, j->notice[i]);
    off += (size_t)snprintf(why + off, len - off, "%shost %s announced its interruption", off ? ", " : "",
                            j->notice[i]);
  }
  if (!off && j->asked_stop && el->why[0]) snprintf(why, len, "%s", el->why);
  if (off || j->asked_stop) return;
  /* Nobody named a host, yet the launch lost a rank, failed the network checks or did not start
   * (a host that went with others at once, one that cannot be reached at all): the hosts where
   * the launcher cannot start a program now are the ones to leave out. A config error and the
   * like (64-79, the job started or not) are no membership change. */
  int code = j->code;
  /* (also when rank 0 never said the job's status: mpirun itself ended the job, as it does when
   * its keepalive gives up on a host's daemon before the liveness tree names the host) */
  if (code == 68 || code == 67 || j->start_timed_out || (!j->rank0_seen && (code < 64 || code > 79)) ||
      (j->rank0_seen && j->verdict < 0)) {
    int *ok = calloc((size_t)el->ncur, sizeof *ok);
    if (ok && front_probe(el->e->head, el->e->nhead, el->e->tail, el->e->nopts, el->e->srun, el->cur, el->ncur,
                          PROBE_TIMEOUT_S, ok) == 0)
      for (int i = 0; i < el->ncur && off + 100 < len; i++)
        if (!ok[i]) {
          cool_down(el, el->cur[i].name);
          off += (size_t)snprintf(why + off, len - off, "%shost %s unreachable", off ? ", " : "", el->cur[i].name);
        }
    free(ok);
  }
  if (!off && code == 68) snprintf(why, len, "a rank was lost (exit status 68) and no host was named");
}

int front_elastic_run(const front_elastic_t *e, front_job_t *j) {
  el_t *el = calloc(1, sizeof *el);
  front_host_t *hosts = calloc(FRONT_HOST_MAX, sizeof *hosts);
  if (el) {
    el->seen = calloc(FRONT_HOST_MAX, sizeof *el->seen);
    el->cur = calloc(FRONT_HOST_MAX, sizeof *el->cur);
    el->cool = calloc(FRONT_HOST_MAX, sizeof *el->cool);
  }
  if (!el || !hosts || !el->seen || !el->cur || !el->cool) {
    front_say("out of memory");
    return 70;
  }
  el->e = e;
  el->nseen = -1;
  pthread_mutex_init(&el->mu, NULL);
  /* The same run id on every launch: TORCHELASTIC_RUN_ID does not change across restarts. */
  if (!envvar_get(ENVVAR_RUN_ID)) {
    char id[64];
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(id, sizeof id, "gpl-%lx-%x", (unsigned long)ts.tv_sec,
             (unsigned)(ts.tv_nsec ^ (unsigned)getpid()) & 0xffffffu);
    setenv(RUN_ID_ENV, id, 1);
  }
  setenv(HISTORY_ENV, "[]", 1); /* mpirun -x wants it set */
  if (pthread_create(&el->thread, NULL, source_thread, el) != 0) {
    front_say("cannot start the host source's thread");
    return 70;
  }
  int code = 0, unnamed = 0;
  double change_at = 0; /* when the last membership change was seen (time to relaunch) */
  char why[1024] = "";
  for (;;) {
    int n = wait_for_min(el, hosts);
    if (n < 0) {
      code = FRONT_EXIT_BELOW_MIN;
      break;
    }
    char list[2048];
    host_list(hosts, n, list, sizeof list);
    if (el->restarts == 0)
      front_say("elastic job on %d host%s (%d to %d): %s", n, n == 1 ? "" : "s", e->min, e->max, list);
    else {
      front_say("restart %d: %s; going on with %d host%s: %s (relaunched %.1f s after the change)", el->restarts,
                why, n, n == 1 ? "" : "s", list, front_now() - change_at);
      remember(el, why, el->cur, el->ncur, hosts, n, front_now() - change_at);
    }
    if (launch(el, j, hosts, n) < 0) {
      code = 70;
      break;
    }
    code = j->code;
    if (j->user_stop || code == 0) break;
    change_at = j->stop_asked_at > 0 ? j->stop_asked_at : front_now();
    membership_change(el, j, why, sizeof why);
    if (!why[0]) break; /* the program failed on healthy hosts: [job] restarts applied already */
    unnamed = j->nlost || j->nnotice || j->asked_stop ? 0 : unnamed + 1;
    if (unnamed > 1) {
      front_say("%s again: ending (exit status %d)", why, code);
      break;
    }
    if (e->max_restarts >= 0 && el->restarts >= e->max_restarts) {
      front_say("%s, but %d membership restart%s were allowed (--max-restarts): ending (exit status %d)", why,
                e->max_restarts, e->max_restarts == 1 ? "" : "s", code);
      break;
    }
    el->restarts++;
  }
  pthread_mutex_lock(&el->mu);
  el->stop_thread = 1;
  pthread_mutex_unlock(&el->mu);
  pthread_join(el->thread, NULL);
  pthread_mutex_destroy(&el->mu);
  for (int i = 0; i < el->nhistory; i++) free(el->history[i]);
  free(el->seen);
  free(el->cur);
  free(el->cool);
  free(el);
  free(hosts);
  return code;
}
