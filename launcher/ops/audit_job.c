/* The audit log's two lines around a job of any mode that runs on the job (run, bench, accept),
 * and where every rank's control events go (launcher/audit/audit_event.h). */
#include <stdlib.h>
#include <string.h>

#include "common/envvar.h"
#include "common/util.h"
#include "launcher/audit/audit_event.h"
#include "launcher/ops/audit.h"
#include "launcher/exitcode.h"
#include "launcher/launcher.h"

static audit_info_t g_info;
static const char **g_hosts;
static const char *g_path;

void audit_job_begin(launch_t *L, const char *mode) {
  const char *path = L->conf->audit.log;
  job_t *job = L->job;
  if (!path || !*path) return;
  if (strcmp(mode, "run") != 0 && strcmp(mode, "bench") != 0 && strcmp(mode, "accept") != 0) return;
  /* Control events are written by the rank that sees them, to [audit] log on its host (one file
   * on a shared file system: each append is chained under the lock). Rank 0 checked its log
   * before the job started; another host's is said once here. The job id: the launcher's, the
   * same on every rank (no user lookup on the others: 16,384 ranks would ask NSS at once). */
  int rank = job ? job->rank : 0;
  if (rank == 0) audit_info_init(&g_info);
  audit_event_syslog(L->conf->audit.syslog);
  audit_event_identity(rank == 0 ? g_info.job_id : util_sched_job_id(), rank);
  audit_event_open(path, NULL, 0); /* rank 0 checked it; an append that fails says so */
  if (rank != 0) return;
  g_info.ranks = job ? job->size : 1;
  g_info.nodes = job ? job->nnodes : 1;
  if (job) {
    g_hosts = calloc((size_t)job->nnodes, sizeof *g_hosts);
    for (int n = 0; g_hosts && n < job->nnodes; n++) g_hosts[n] = job->hosts[job->leader_of_node[n]];
    g_info.hosts = g_hosts;
  }
  int argc = L->argc;
  char *const *argv = L->argv;
  /* a run from a config: the program it wraps (a built-in job has none) */
  if (strcmp(mode, "run") == 0 && argc == 0 && L->conf) {
    argv = L->conf->job.command.argv;
    argc = L->conf->job.command.argc;
  }
  g_info.argv = argc > 0 ? argv : NULL;
  g_info.argc = argc;
  g_info.mode = mode;
  g_info.conf_path = L->conf_path;
  g_info.elastic = envvar_get(ENVVAR_ELASTIC_HISTORY);
  g_path = path;
  audit_job_start(path, &g_info);
}

/* What a gpulaunch exit code says, when the mode left no root cause of its own. */
static const char *code_meaning(int code) {
  switch (code) {
    case GPL_EXIT_USAGE: return "gpulaunch: bad command line";
    case GPL_EXIT_CONFIG: return "gpulaunch: configuration error";
    case GPL_EXIT_TOPOLOGY: return "gpulaunch: topology or placement error";
    case GPL_EXIT_NETWORK: return "gpulaunch: network error (interface choice or preflight)";
    case GPL_EXIT_TIMEOUT: return "gpulaunch: a start-up wait timed out";
    case GPL_EXIT_NOGPU: return "gpulaunch: no GPU, or not built with CUDA";
    case GPL_EXIT_SPAWN: return "gpulaunch: the program could not be started";
    case GPL_EXIT_BENCH: return "gpulaunch bench: wrong results or bus bandwidth below the threshold";
    case GPL_EXIT_ACCEPT_FAIL: return "gpulaunch accept: at least one check failed";
    case GPL_EXIT_ACCEPT_ERROR: return "gpulaunch accept: the checks could not run";
    case GPL_EXIT_PREEMPTED: return "gpulaunch: preempted (SIGTERM)";
    default: return code >= 64 && code < 80 ? "gpulaunch: internal error" : NULL;
  }
}

void audit_job_finish(launch_t *L, int code) {
  if (!g_path) return;
  const char *why = code == 0 ? NULL : L->root_cause[0] ? L->root_cause : code_meaning(code);
  g_info.key_source = L->sec_done ? seckey_src_name(L->sec.src) : NULL; /* agreed after the start line */
  audit_job_end(g_path, &g_info, code, why);
  free(g_hosts);
  g_hosts = NULL;
  g_path = NULL;
}
