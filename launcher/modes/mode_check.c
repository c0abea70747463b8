/* `gpulaunch check CONF` (validate, print the effective settings) and `gpulaunch env CONF`
 * (each rank's environment for the program, nothing run). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/mpix.h"
#include "common/util.h"
#include "launcher/job/childenv.h"
#include "common/redact.h"
#include "launcher/launcher.h"
#include "launcher/job/place.h"
#include "launcher/job/rendezvous.h"
#include "launcher/sup/supervise.h"

int mode_check(launch_t *L) {
  if (!L->conf_path) {
    log_print("gpulaunch check: give a config file: gpulaunch check train.conf\n");
    return GPL_EXIT_USAGE;
  }
  /* The file was loaded and validated by main; a run needs something to run. */
  int argc = L->conf->job.command.argc;
  int has_job = argc > 0 || conf_is_set(L->conf, &L->conf->job.builtin);
  /* A file for bench or accept needs no [job]; a file with a [job] needs something to run. */
  int other = !conf_has_section(L->conf, "job") &&
              (conf_has_section(L->conf, "bench") || conf_has_section(L->conf, "accept"));
  if (!has_job && !other) {
    log_print("gpulaunch: %s: [job] has neither 'command' nor 'builtin': nothing to run\n",
            L->conf_path);
    return GPL_EXIT_CONFIG;
  }
  /* What bench and accept would refuse, refused now (those values are plain text in the schema). */
  int code = bench_check_conf(L);
  if (code == GPL_EXIT_OK) code = accept_check_conf(L);
  if (code != GPL_EXIT_OK) return code;
  /* The program and its folder, as a run on this machine would find them. */
  char *const *argv = L->conf->job.command.argv;
  if (argc > 0) {
    const char *path = NULL;
    for (int i = 0; i < conf_vars_count(L->conf, CONF_VARS_ENV); i++) {
      const char *k, *v;
      conf_vars_entry(L->conf, CONF_VARS_ENV, i, &k, &v);
      if (strcmp(k, "PATH") == 0) path = v;
    }
    if (!path) path = getenv("PATH");
    const char *wd = L->conf->job.workdir;
    char found[PATH_MAX];
    int wd_errno = 0;
    int rc = sup_locate(argv[0], path, wd, found, sizeof found, &wd_errno);
    if (wd_errno) {
      log_print("gpulaunch: %s: [job] workdir: '%s': %s\n", conf_origin(L->conf, &L->conf->job.workdir),
              wd, strerror(wd_errno));
      return GPL_EXIT_CONFIG;
    }
    if (rc < 0) {
      log_print("gpulaunch: %s: [job] command: cannot run '%s' here: %s\n",
              conf_origin(L->conf, &L->conf->job.command), argv[0], sup_locate_reason(argv[0], rc));
      return GPL_EXIT_CONFIG;
    }
  }
  /* Printed, so redacted: [env] secrets by name, and the command's --hf_token VALUE, URL
   * passwords and secret values wherever they are. */
  char *text = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&text, &len);
  if (!m) return GPL_EXIT_INTERNAL;
  fprintf(m, "# %s: OK\n", L->conf_path);
  conf_print(m, L->conf);
  fclose(m);
  char *clean = text ? redact_text(text, len) : NULL;
  free(text);
  if (!clean) return GPL_EXIT_INTERNAL;
  fputs(clean, stdout);
  free(clean);
  return GPL_EXIT_OK;
}

int mode_env(launch_t *L) {
  job_t *job = L->job;
  childenv_t ce;
  memset(&ce, 0, sizeof ce);
  ce.job = job;
  ce.conf = L->conf;
  ce.max_restarts = (int)L->conf->job.restarts;
  place_t pl;
  int rc = place_rank(L, &ce, &pl);
  if (rc < 0) {
    childenv_free(&ce);
    place_free(&pl);
    return exitcode_of(rc);
  }
  ce.omp_threads = pl.cores;
  rdv_t rdv;
  rc = rdv_agree(job, pl.master_addr, (int)L->conf->job.master_port, &rdv);
  if (rc < 0) {
    childenv_free(&ce);
    place_free(&pl);
    return exitcode_of(rc);
  }
  util_strlcpy(ce.master_addr, rdv.master_addr, sizeof ce.master_addr);
  ce.master_port = rdv.master_port;
  util_strlcpy(ce.run_id, rdv.run_id, sizeof ce.run_id);

  strbuf_t mine = STRBUF_INIT;
  int argc = L->argc ? 0 : L->conf->job.command.argc;
  char *const *argv = L->argc ? L->argv : L->conf->job.command.argv;
  strbuf_printf(&mine, "# rank %d (host %s, node %d, local rank %d):", job->rank, job->host, job->node,
                job->local_rank);
  int nargs = L->argc ? L->argc : argc;
  if (argv && nargs > 0) { /* "--hf_token VALUE": by word */
    char *line = redact_command(argv, nargs);
    strbuf_printf(&mine, " %s", line ? line : REDACTED);
    free(line);
  }
  if (!argv && conf_is_set(L->conf, &L->conf->job.builtin))
    strbuf_printf(&mine, " (builtin %s)", L->conf->job.builtin);
  strbuf_append(&mine, "\n");
  if (pl.mpi_net[0]) strbuf_printf(&mine, "# %s\n", pl.mpi_net); /* NCCL's interface and MPI's */
  childenv_describe(&ce, 0, &mine);
  char **all = NULL;
  /* Printed, so credentials are redacted: by name, URL passwords, and secret values anywhere. */
  char *clean = redact_text(strbuf_str(&mine), strlen(strbuf_str(&mine)));
  rc = mpix_allgather_str(clean ? clean : strbuf_str(&mine), &all, job->world, job->timeout, "env (gather)");
  free(clean);
  strbuf_free(&mine);
  childenv_free(&ce);
  place_free(&pl);
  if (rc < 0) return GPL_EXIT_TIMEOUT;
  if (job->rank == 0) {
    for (int r = 0; r < job->size; r++) printf("%s%s", r ? "\n" : "", all[r]);
    fflush(stdout);
  }
  mpix_free_strs(all, job->size);
  return GPL_EXIT_OK;
}
