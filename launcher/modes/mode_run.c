/* `gpulaunch train.conf` / `gpulaunch -- PROGRAM ARGS`: place the rank, agree on the rendezvous,
 * then supervise the program (or run the built-in job) and report one root cause. */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/envvar.h"
#include "common/mpix.h"
#include "common/redact.h"
#include "common/util.h"
#include "launcher/preempt/notice.h"
#include "launcher/job/childenv.h"
#include "launcher/monitor/monitor.h"
#include "launcher/launcher.h"
#include "launcher/job/place.h"
#include "launcher/hang/progress.h"
#include "launcher/hang/straggler.h"
#include "launcher/job/rendezvous.h"
#include "launcher/sup/supervise.h"
#include "comm/proxy.h"
#include "topology/plan.h"
#include "topology/topo.h"

typedef struct resolve_s {
  int rc;
  int wd_errno;
  char path[240];
} resolve_t;

/* Every rank checks that it can run the program before any starts it, so a typo in the command
 * ends the job at once with one message per failing host, not one crash per rank. */
static int check_program(launch_t *L, childenv_t *ce, char *const *argv) {
  job_t *job = L->job;
  resolve_t me, *all = calloc((size_t)job->size, sizeof *all);
  ALLOCCHECK(all);
  memset(&me, 0, sizeof me);
  const char *path = childenv_get(ce, 0, "PATH");
  const char *wd = L->conf ? L->conf->job.workdir : "";
  me.rc = sup_locate(argv[0], path, wd, me.path, sizeof me.path, &me.wd_errno);
  int rc = mpix_allgather(&me, (int)sizeof me, all, job->world, job->timeout, "start-up (program check)");
  if (rc < 0) {
    free(all);
    return rc;
  }
  /* where the command came from, when a config file gave it */
  char from[PATH_MAX + 40] = "";
  if (!L->argc && L->conf && conf_is_set(L->conf, &L->conf->job.command))
    snprintf(from, sizeof from, " (%s: [job] command)", conf_origin(L->conf, &L->conf->job.command));
  int bad = 0, bad_wd = 0;
  for (int r = 0; r < job->size; r++) {
    if (all[r].rc == GPL_OK) continue;
    if (job->rank == 0 && bad < 8) {
      if (all[r].wd_errno)
        log_print("gpulaunch: rank %d (host %s): [job] workdir '%s': %s (%s)\n", r, job->hosts[r],
                wd, strerror(all[r].wd_errno), conf_origin(L->conf, &L->conf->job.workdir));
      else
        log_print("gpulaunch: rank %d (host %s): cannot run '%s': %s%s\n", r, job->hosts[r],
                argv[0], sup_locate_reason(argv[0], all[r].rc), from);
    }
    bad_wd += all[r].wd_errno != 0;
    bad++;
  }
  free(all);
  return bad_wd ? GPL_ECONFIG : bad ? GPL_ENOENT : GPL_OK;
}

static int make_env(void *arg, int attempt, char ***envp) { return childenv_build(arg, attempt, envp); }

/* The comm proxy: a wrapped program's gpl_init reaches this rank over a Unix socket and runs its
 * collectives on this rank's MPI (the program itself is not an MPI process). */
typedef struct proxy_hook_s {
  launch_t *L;
  childenv_t *ce;
  comm_proxy_t *proxy;
  prog_t *progress;
} proxy_hook_t;

/* The program's collectives and gpl_progress() are progress; a step goes to the straggler view. */
static void proxy_progress(void *arg, double step) {
  prog_t *p = arg;
  if (step >= 0) prog_step(p, step);
  else prog_touch(p);
}

static int proxy_attach(void *arg, struct uv_loop_s *loop) {
  proxy_hook_t *h = arg;
  job_t *job = h->L->job;
  comm_job_t cj;
  job_to_comm(job, &cj);
  char path[256];
  CHECK(comm_proxy_start(loop, &cj, &h->proxy, path, sizeof path));
  if (h->progress) comm_proxy_on_progress(h->proxy, proxy_progress, h->progress);
  char t[64];
  CHECK(childenv_add(h->ce, COMM_PROXY_ENV, path));
  CHECK(childenv_add(h->ce, envvar_name(ENVVAR_COMM_BACKEND), h->L->conf->comm.backend));
  snprintf(t, sizeof t, "%g", h->L->conf->comm.init_timeout);
  CHECK(childenv_add(h->ce, envvar_name(ENVVAR_COMM_INIT_TIMEOUT), t));
  snprintf(t, sizeof t, "%g", job->timeout);
  CHECK(childenv_add(h->ce, envvar_name(ENVVAR_TIMEOUT), t));
  return GPL_OK;
}

static void proxy_detach(void *arg) {
  proxy_hook_t *h = arg;
  if (h->proxy) comm_proxy_stop(h->proxy);
  h->proxy = NULL;
}

static void add_summary(launch_t *L, const sup_opts_t *o, const sup_result_t *res) {
  if (!L->summary) return;
  cJSON *run = cJSON_AddObjectToObject(L->summary, "run");
  cJSON *cmd = cJSON_AddArrayToObject(run, "command");
  int argc = 0;
  while (o->argv[argc]) argc++;
  char **red = redact_argv(o->argv, argc); /* a summary is shared: no --hf_token VALUE in it */
  for (int i = 0; red && i < argc; i++) cJSON_AddItemToArray(cmd, cJSON_CreateString(red[i]));
  util_free_argv(red);
  cJSON_AddNumberToObject(run, "exit_code", res->exit_code);
  cJSON_AddNumberToObject(run, "attempts", res->attempts);
  cJSON_AddNumberToObject(run, "seconds", res->seconds);
  cJSON_AddBoolToObject(run, "preempted", res->preempted);
  cJSON_AddBoolToObject(run, "cancelled", res->cancelled);
  cJSON_AddBoolToObject(run, "hung", res->hung);
  if (res->hang_report[0]) cJSON_AddStringToObject(run, "hang_report", res->hang_report);
  if (res->failed_rank >= 0) {
    cJSON *rc = cJSON_AddObjectToObject(run, "root_cause");
    cJSON_AddNumberToObject(rc, "rank", res->failed_rank);
    cJSON_AddStringToObject(rc, "host", res->failed_host);
    cJSON_AddNumberToObject(rc, "status", res->status);
    if (res->signo) cJSON_AddStringToObject(rc, "signal", util_signal_name(res->signo));
    cJSON_AddStringToObject(rc, "message", res->root_cause);
    if (res->oom) { /* for tools: the figures the message gives (null: the monitor saw none) */
      cJSON *oom = cJSON_AddObjectToObject(rc, "cuda_oom");
      if (res->peak_mem_mib >= 0) cJSON_AddNumberToObject(oom, "peak_mem_mib", res->peak_mem_mib);
      else cJSON_AddNullToObject(oom, "peak_mem_mib");
      if (res->mem_total_mib > 0) cJSON_AddNumberToObject(oom, "mem_total_mib", res->mem_total_mib);
      else cJSON_AddNullToObject(oom, "mem_total_mib");
    }
    if (res->silent_rank >= 0) { /* a rank still running and silent at the failure: its likely cause */
      cJSON *si = cJSON_AddObjectToObject(rc, "silent");
      cJSON_AddNumberToObject(si, "rank", res->silent_rank);
      cJSON_AddStringToObject(si, "host", L->job->hosts[res->silent_rank]);
      cJSON_AddNumberToObject(si, "silent_s", res->silent_s);
      cJSON_AddStringToObject(si, "function", res->silent_func);
    }
  } else if (res->root_cause[0]) {
    cJSON_AddStringToObject(run, "root_cause", res->root_cause);
  }
}

int mode_run(launch_t *L) {
  job_t *job = L->job;
  conf_t *c = L->conf;
  char *const *argv = NULL;
  int argc = 0;
  if (L->argc > 0) {
    argv = L->argv;
    argc = L->argc;
  } else {
    argv = c->job.command.argv;
    argc = c->job.command.argc;
  }
  const char *builtin = c->job.builtin;
  if (argc == 0 && builtin && strcmp(builtin, "mlp") == 0) return trainer_run(L);
  if (argc == 0) {
    if (job->rank == 0)
      log_print("gpulaunch: %s: [job] has neither 'command' nor 'builtin': nothing to run\n",
              L->conf_path ? L->conf_path : "(no config)");
    return GPL_EXIT_CONFIG;
  }

  childenv_t ce;
  memset(&ce, 0, sizeof ce);
  ce.job = job;
  ce.conf = c;
  ce.max_restarts = (int)c->job.restarts;
  place_t pl;
  rdv_t rdv;
  sup_opts_t o;
  sup_result_t res;
  monitor_t *mon = NULL;
  prog_t *prog = NULL;
  char hang_dir[PATH_MAX] = ".";
  int code;
  double t0 = util_now();
  int rc = place_rank(L, &ce, &pl);
  if (rc < 0) {
    code = exitcode_of(rc);
    goto out;
  }
  double t1 = util_now();
  ce.omp_threads = pl.cores;
  if (job->rank == 0) place_summary(&pl, L->summary); /* NCCL's and MPI's interfaces */
  rc = rdv_agree(job, pl.master_addr, (int)c->job.master_port, &rdv);
  if (rc < 0) {
    code = exitcode_of(rc);
    goto out;
  }
  util_strlcpy(ce.master_addr, rdv.master_addr, sizeof ce.master_addr);
  ce.master_port = rdv.master_port;
  util_strlcpy(ce.run_id, rdv.run_id, sizeof ce.run_id);

  double t2 = util_now();
  rc = check_program(L, &ce, argv);
  if (rc < 0) {
    code = rc == GPL_ETIMEDOUT ? GPL_EXIT_TIMEOUT : rc == GPL_ECONFIG ? GPL_EXIT_CONFIG : GPL_EXIT_SPAWN;
    goto out;
  }
  LOG_INFO(JOB, "start-up: placement %.1f ms, rendezvous %.1f ms, program check %.1f ms",
           (t1 - t0) * 1e3, (t2 - t1) * 1e3, (util_now() - t2) * 1e3);

  /* The hang watchdog and the straggler view: what counts as progress, where the report goes. */
  {
    char err[256] = "", hb[PATH_MAX] = "";
    const char *hbf = c->job.heartbeat_file;
    size_t k = 0;
    for (const char *p = hbf; *p && k + 16 < sizeof hb; p++) {
      if (strncmp(p, "{rank}", 6) == 0) {
        k += (size_t)snprintf(hb + k, sizeof hb - k, "%d", job->rank);
        p += 5;
      } else {
        hb[k++] = *p;
      }
    }
    hb[k] = 0;
    const char *wdir = c->job.workdir;
    if (hb[0] && hb[0] != '/' && wdir && *wdir) { /* the program's relative path is from its workdir */
      char full[PATH_MAX];
      snprintf(full, sizeof full, "%s/%s", wdir, hb);
      util_strlcpy(hb, full, sizeof hb);
    }
    if (prog_create(&prog, c->job.step_regex, hb, err, sizeof err) < 0) {
      if (job->rank == 0)
        log_print("gpulaunch: %s: [job] step_regex: not a valid regular expression: %s\n",
                  conf_origin(c, &c->job.step_regex), err);
      code = GPL_EXIT_CONFIG;
      goto out;
    }
    if (hb[0]) childenv_add(&ce, envvar_name(ENVVAR_HEARTBEAT_FILE), hb);
    const char *ld = c->job.log_dir;
    if (ld && *ld) {
      util_strlcpy(hang_dir, ld, sizeof hang_dir);
    } else if (L->summary_path) {
      util_strlcpy(hang_dir, L->summary_path, sizeof hang_dir);
      char *sl = strrchr(hang_dir, '/');
      if (sl) *sl = 0;
      else util_strlcpy(hang_dir, ".", sizeof hang_dir);
      if (!hang_dir[0]) util_strlcpy(hang_dir, "/", sizeof hang_dir);
    }
  }

  memset(&o, 0, sizeof o);
  o.job = job;
  o.sec = &L->sec;
  o.argv = argv;
  o.make_env = make_env;
  o.env_arg = &ce;
  o.workdir = c->job.workdir;
  o.prefix = c->job.prefix;
  o.log_dir = c->job.log_dir;
  o.log_dir_origin = conf_origin(c, &c->job.log_dir);
  o.tail_lines = (int)c->job.tail_lines;
  o.grace = c->job.grace;
  o.stop_timeout = c->job.stop_timeout;
  o.preempt_signal = c->job.preempt_signal;
  o.checkpoint_signal = c->job.checkpoint_signal;
  o.restarts = (int)c->job.restarts;
  o.restart_on_oom = c->job.restart_on_oom;
  o.forward_output = strcmp(c->job.output, "rank0") == 0;
  o.liveness_timeout = c->job.liveness_timeout;
  o.master_addr = ce.master_addr;
  o.progress = prog;
  o.hang_timeout = c->job.hang_timeout;
  o.hang_report_only = strcmp(c->job.hang_action, "report") == 0;
  o.hang_dir = hang_dir;
  o.straggler_sample = strcmp(c->job.straggler, "sample") == 0;
  o.node_addrs = (const char *const *)pl.net.node_addrs;
  /* The cloud's interruption notice, polled by each node's first rank. */
  notice_opts_t no;
  notice_opts_init(&no);
  if (notice_kind_parse(c->preempt.notice, &no.kind) == GPL_OK && no.kind != NOTICE_OFF) {
    no.endpoint = *c->preempt.notice_endpoint ? c->preempt.notice_endpoint : NULL;
    no.rebalance = strcmp(c->preempt.rebalance, "checkpoint") == 0;
    if (no.rebalance && no.kind != NOTICE_AWS && no.kind != NOTICE_AUTO && job->rank == 0)
      LOG_WARN("[preempt] rebalance = checkpoint is AWS's recommendation; with notice = %s it is never posted",
               c->preempt.notice);
    o.notice = &no;
    o.notice_margin = c->preempt.notice_margin;
  } else if (strcmp(c->preempt.rebalance, "checkpoint") == 0 && job->rank == 0) {
    LOG_WARN("[preempt] rebalance = checkpoint needs the notice polled (notice = aws or auto): it is off");
  }
  proxy_hook_t ph = {L, &ce, NULL, prog};
  o.hooks.attach_arg = &ph;
  o.hooks.attach = proxy_attach;
  o.hooks.detach = proxy_detach;
  /* The GPU monitor, for ranks that have a GPU (or a recorded stream to replay). */
  if (pl.gpu >= 0 || *c->monitor.replay) {
    mon_opts_t mo;
    mon_opts_default(&mo);
    mon_opts_from_conf(&mo, c);
    mo.off_level = job->local_rank == 0 ? LOG_LVL_WARN : LOG_LVL_INFO;
    const char *pci = NULL;
    if (pl.plan && pl.plan->ranks[job->local_rank].gpu >= 0)
      pci = pl.topo->gpus[pl.plan->ranks[job->local_rank].gpu].pci;
    int gpu = pl.gpu >= 0 ? pl.gpu : job->local_rank;
    if (mon_create(&mon, &mo, job->rank, job->host, gpu, pci) < 0) {
      /* Its outputs or recording failed (said): a monitor that samples nothing still reads the
       * program's last lines for an out-of-memory error (the root cause, no restart). */
      mo.enabled = 0;
      mo.replay = mo.metrics = mo.prom = NULL;
      if (mon_create(&mon, &mo, job->rank, job->host, gpu, pci) < 0) mon = NULL;
    }
    if (mon) mon_hooks_fill(&o.hooks, mon);
  }
  rc = sup_run(&o, &res);
  if (rc < 0) {
    code = rc == GPL_ECONFIG ? GPL_EXIT_CONFIG : rc == GPL_ETIMEDOUT ? GPL_EXIT_TIMEOUT : GPL_EXIT_INTERNAL;
    goto out;
  }
  add_summary(L, &o, &res);
  code = res.exit_code;
  /* A lost rank: MPI may not reach it any more, so nothing collective follows (job_exit leaves at
   * once too). */
  job->lost = res.lost;
  if (res.root_cause[0]) util_strlcpy(L->root_cause, res.root_cause, sizeof L->root_cause);
  /* A recorded stream is played at the sampling interval while the job runs; what the job did not
   * last long enough to play is played now, so the warnings and the summary cover the whole
   * recording however short the program was. */
  if (mon && *c->monitor.replay) mon_drain(mon, 0);
  /* Every rank takes part (ranks without a monitor send empty stats). */
  if (!job->lost) mon_job_summary(mon, job->world, job->timeout, stdout, L->summary);
  /* One straggler verdict: the stack samples' where they ran, with the step view's (every rank). */
  const sample_verdict_t *sampled = job->rank == 0 && res.sampled ? &res.straggler : NULL;
  if (!job->lost && strcmp(c->job.straggler, "off") != 0)
    strag_job_summary(prog, job->world, job->hosts, c->job.straggler_fraction, sampled,
                      job->timeout, stderr, L->summary);
  else if (sampled)
    strag_verdict(NULL, sampled, job->hosts, stderr, L->summary);
out:
  mon_destroy(mon);
  prog_free(prog);
  childenv_free(&ce);
  place_free(&pl);
  return code;
}
