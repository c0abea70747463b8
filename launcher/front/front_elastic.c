/* Elastic membership (front_elastic.h): a thread polls the host source; the loop gives the reads,
 * the time, each launch's end and the probe's answers to the controller (elastic_core.c, which
 * decides) and carries out what it asks for: a launch (argv, environment), a stop, a probe. */
#include "launcher/front/front_elastic.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/util_host.h"
#include "common/envvar.h"
#include "launcher/audit/audit_event.h"
#include "launcher/front/elastic_core.h"
#include "launcher/front/front_hosts.h"
#include "launcher/front/front_probe.h"

#define SOURCE_TIMEOUT_S 10.0 /* a discovery script that takes longer failed this poll */
#define PROBE_TIMEOUT_S 15.0  /* a host that cannot start `true` within this long is unreachable */
#define RESTART_LINGER_S 1.0 /* mpirun lingering after a membership change's status is ended */

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
  unsigned taken;  /* the read the controller has */
  front_host_t *copy;
  /* the controller and what it asks for */
  ecore_t core;
  ecore_acts_t acts;
  int done, code;
  front_host_t *launch; /* ECORE_LAUNCH's hosts (to run once the actions are done) */
  int nlaunch, restart_base;
  front_host_t *probe;  /* ECORE_PROBE's hosts */
  int nprobe;
} el_t;

static void *source_thread(void *arg) {
  el_t *el = arg;
  util_thread_name("gpl-hosts");
  front_host_t *buf = calloc(FRONT_HOST_MAX, sizeof *buf);
  if (!buf) return NULL;
  for (;;) {
    char err[512] = "";
    int n = front_hosts_read(el->e->hostfile, el->e->script, SOURCE_TIMEOUT_S, buf, FRONT_HOST_MAX, err,
                             sizeof err);
    pthread_mutex_lock(&el->mu);
    if (n >= 0) memcpy(el->seen, buf, (size_t)n * sizeof *buf);
    snprintf(el->err, sizeof el->err, "%s", n < 0 ? err : "");
    el->nseen = n;
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

/* A new read of the host source, if there is one, to the controller. */
static void feed_hosts(el_t *el) {
  pthread_mutex_lock(&el->mu);
  unsigned seq = el->seq;
  int n = el->nseen;
  char err[512];
  snprintf(err, sizeof err, "%s", el->err);
  if (seq != el->taken && n > 0) memcpy(el->copy, el->seen, (size_t)n * sizeof *el->seen);
  pthread_mutex_unlock(&el->mu);
  if (seq == el->taken) return;
  el->taken = seq;
  ecore_hosts(&el->core, el->copy, n, err, front_now(), &el->acts);
}

/* The newest restart of the record (a JSON array the controller made) as a chained audit event. */
static void audit_last_restart(const char *record) {
  cJSON *a = cJSON_Parse(record);
  cJSON *o = cJSON_GetArrayItem(a, cJSON_GetArraySize(a) - 1);
  if (cJSON_IsObject(o))
    audit_note_restart(cJSON_GetObjectItem(o, "restart") ? cJSON_GetObjectItem(o, "restart")->valueint : 0,
                       cJSON_GetStringValue(cJSON_GetObjectItem(o, "cause")),
                       cJSON_GetStringValue(cJSON_GetObjectItem(o, "hosts_before")),
                       cJSON_GetStringValue(cJSON_GetObjectItem(o, "hosts_after")));
  cJSON_Delete(a);
}

/* The controller's actions, in order; a launch or a probe is left for the loop (el->launch, probe). */
static void carry_out(el_t *el, front_job_t *j) {
  for (int i = 0; i < el->acts.n; i++) {
    ecore_act_t *x = &el->acts.v[i];
    switch (x->type) {
      case ECORE_SAY: front_say("%s", x->text); break;
      case ECORE_STOP: if (j) front_job_stop(j); break;
      case ECORE_RECORD:
        setenv(envvar_name(ENVVAR_ELASTIC_HISTORY), x->text, 1);
        audit_last_restart(x->text);
        break;
      case ECORE_EXIT:
        el->done = 1;
        el->code = x->code;
        break;
      case ECORE_LAUNCH:
        memcpy(el->launch, x->hosts, (size_t)x->nhosts * sizeof *x->hosts);
        el->nlaunch = x->nhosts;
        el->restart_base = x->code;
        break;
      case ECORE_PROBE:
        memcpy(el->probe, x->hosts, (size_t)x->nhosts * sizeof *x->hosts);
        el->nprobe = x->nhosts;
        break;
    }
  }
  ecore_acts_clear(&el->acts);
}

/* While the job runs (about every 200 ms): the host list and the time to the controller. */
static void tick(void *arg, front_job_t *j) {
  el_t *el = arg;
  if (j->asked_stop || j->user_stop) return;
  feed_hosts(el);
  ecore_tick(&el->core, front_now(), &el->acts);
  carry_out(el, j);
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
  snprintf(base, sizeof base, "%d", el->restart_base);
  setenv(envvar_name(ENVVAR_RESTART_BASE), base, 1);
  int k = 0;
  for (int i = 0; i < e->nhead; i++) av[k++] = e->head[i];
  if (e->srun) { /* srun passes the environment on by itself */
    k = srun_words(hosts, n, av, k, hostarg, hlen, &slurm_hostfile);
  } else {
    ecore_host_list(hosts, n, hostarg, hlen);
    const envvar_id_t xs[] = {ENVVAR_RESTART_BASE, ENVVAR_RUN_ID, ENVVAR_ELASTIC_HISTORY};
    for (size_t i = 0; i < sizeof xs / sizeof *xs; i++) {
      av[k++] = "-x";
      av[k++] = (char *)envvar_name(xs[i]);
    }
    av[k++] = "-np";
    av[k++] = npbuf;
    av[k++] = "--host";
    av[k++] = hostarg;
  }
  int rc = -1;
  if (k >= 0) {
    for (int i = 0; i < e->ntail; i++) av[k++] = e->tail[i];
    av[k] = NULL;
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

/* The launch's end to the controller. */
static void launch_ended(el_t *el, const front_job_t *j) {
  ecore_end_t end = {.code = j->code, .user_stop = j->user_stop, .asked_stop = j->asked_stop,
                     .rank0_seen = j->rank0_seen, .verdict_said = j->verdict >= 0,
                     .start_timed_out = j->start_timed_out, .stop_asked_at = j->stop_asked_at,
                     .claims = j->claims, .nclaims = j->nclaims, .notice = j->notice, .nnotice = j->nnotice};
  ecore_launch_ended(&el->core, &end, front_now(), &el->acts);
}

/* The probe the controller asked for, and its answer. */
static void probe(el_t *el) {
  const front_elastic_t *e = el->e;
  int *ok = calloc((size_t)(el->nprobe ? el->nprobe : 1), sizeof *ok);
  int rc = ok ? front_probe(e->head, e->nhead, e->tail, e->nopts, e->srun, el->probe, el->nprobe, PROBE_TIMEOUT_S, ok)
              : -1;
  el->nprobe = 0;
  ecore_probe_result(&el->core, rc == 0 ? ok : NULL, front_now(), &el->acts);
  free(ok);
}

int front_elastic_run(const front_elastic_t *e, front_job_t *j) {
  el_t *el = calloc(1, sizeof *el);
  ecore_opts_t o = {.min = e->min, .max = e->max, .cooldown = e->cooldown, .scale_up_every = e->scale_up_every,
                    .min_wait = e->min_wait, .max_restarts = e->max_restarts};
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  o.wall_offset = (double)wall.tv_sec + (double)wall.tv_nsec * 1e-9 - front_now();
  if (!el || ecore_init(&el->core, &o) < 0) {
    front_say("out of memory");
    free(el);
    return GPL_EXIT_INTERNAL;
  }
  el->seen = calloc(FRONT_HOST_MAX, sizeof *el->seen);
  el->copy = calloc(FRONT_HOST_MAX, sizeof *el->copy);
  el->launch = calloc(FRONT_HOST_MAX, sizeof *el->launch);
  el->probe = calloc(FRONT_HOST_MAX, sizeof *el->probe);
  if (!el->seen || !el->copy || !el->launch || !el->probe) {
    front_say("out of memory");
    return GPL_EXIT_INTERNAL;
  }
  el->e = e;
  el->nseen = -1;
  pthread_mutex_init(&el->mu, NULL);
  /* The same run id on every launch: TORCHELASTIC_RUN_ID does not change across restarts. */
  if (!envvar_get(ENVVAR_RUN_ID)) {
    char id[64];
    snprintf(id, sizeof id, "gpl-%lx-%x", (unsigned long)wall.tv_sec,
             (unsigned)(wall.tv_nsec ^ (unsigned)getpid()) & 0xffffffu);
    setenv(envvar_name(ENVVAR_RUN_ID), id, 1);
  }
  setenv(envvar_name(ENVVAR_ELASTIC_HISTORY), "[]", 1); /* mpirun -x wants it set */
  if (pthread_create(&el->thread, NULL, source_thread, el) != 0) {
    front_say("cannot start the host source's thread");
    return GPL_EXIT_INTERNAL;
  }
  /* The controller decides after the source's first read (bounded by the script's timeout); the
   * loop waits for the next read of the source or a cool-down's end (100 ms steps). */
  while (!el->done) {
    feed_hosts(el);
    ecore_tick(&el->core, front_now(), &el->acts);
    carry_out(el, NULL);
    if (el->nlaunch) {
      int n = el->nlaunch;
      el->nlaunch = 0;
      if (launch(el, j, el->launch, n) < 0) {
        el->code = GPL_EXIT_INTERNAL;
        break;
      }
      launch_ended(el, j);
      continue;
    }
    if (el->nprobe) {
      probe(el);
      continue;
    }
    if (el->done) break;
    struct timespec ts = {0, 100 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  pthread_mutex_lock(&el->mu);
  el->stop_thread = 1;
  pthread_mutex_unlock(&el->mu);
  pthread_join(el->thread, NULL);
  pthread_mutex_destroy(&el->mu);
  ecore_acts_free(&el->acts);
  ecore_free(&el->core);
  int code = el->code;
  free(el->seen);
  free(el->copy);
  free(el->launch);
  free(el->probe);
  free(el);
  return code;
}
