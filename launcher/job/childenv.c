/* The wrapped program's environment, torchrun-compatible, the same on every attempt but the
 * restart count. Precedence, lowest first: inherited, torchrun's variables, the plan's, [nccl],
 * [env]; OMP_NUM_THREADS only when nobody set it. */
#include "launcher/job/childenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/envvar.h"
#include "common/check.h"
#include "common/util.h"
#include "launcher/conf/envset.h"
#include "launcher/job/slurm.h"

extern char **environ;

/* Variables of the MPI runtime: a program that inherits them may try to join the job as the
 * rank that gpulaunch already is. */
static int is_mpi_runtime_var(const char *kv) {
  static const char *const prefixes[] = {"OMPI_", "PMIX_", "PMI_", "OPAL_", "ORTE_", "PRTE_",
                                         "HYDRA_", "MPI_LOCALRANKID", "MPI_LOCALNRANKS"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(prefixes); i++)
    if (strncmp(kv, prefixes[i], strlen(prefixes[i])) == 0) return 1;
  /* gpulaunch-run's channel is rank 0's supervisor's, not the program's (its token a secret). */
  static const char front[] = ENVVAR_LITERAL(FRONTEND); /* and its _HOST, _MERGED */
  if (strncmp(kv, front, sizeof front - 1) == 0 && strchr("=_", kv[sizeof front - 1])) return 1;
  /* The job key (a secret) and where it came from: the supervisors', never the program's. */
  static const char key[] = ENVVAR_LITERAL(JOB_KEY) "=", src[] = ENVVAR_LITERAL(KEY_SOURCE) "=",
                    cred[] = ENVVAR_LITERAL(MUNGE_CREDENTIAL) "=";
  if (strncmp(kv, key, sizeof key - 1) == 0 || strncmp(kv, src, sizeof src - 1) == 0 ||
      strncmp(kv, cred, sizeof cred - 1) == 0)
    return 1;
  return slurm_is_task_var(kv); /* Slurm's PMIx plugin, and the task gpulaunch is */
}

/* The keys are few where a lookup is made (OMP_NUM_THREADS, PATH) and the sets are built by
 * appending, so building is linear whatever [env] holds (envset.h). */
static int kv_set(envset_t *kv, const char *key, const char *value) {
  return envset_add(kv, key, strlen(key), value);
}

int childenv_add(childenv_t *ce, const char *key, const char *value) {
  envset_t kv = {ce->plan_env, ce->nplan_env, ce->plan_cap};
  int rc = kv_set(&kv, key, value);
  if (rc == GPL_OK) rc = envset_finish(&kv); /* a few entries: replaced in place */
  ce->plan_env = kv.v;
  ce->nplan_env = kv.n;
  ce->plan_cap = kv.cap;
  return rc;
}

static int set_kv(void *kv, const char *key, const char *value) { return kv_set(kv, key, value); }

/* Restarts before this job's first attempt: an elastic gpulaunch-run starts the job again on other
 * hosts and counts on (GPULAUNCH_RESTART_BASE); 0 otherwise. */
static int restart_base(void) {
  const char *b = envvar_get(ENVVAR_RESTART_BASE);
  char *end = NULL;
  long v = b && *b ? strtol(b, &end, 10) : 0;
  return b && *b && !*end && v > 0 && v < 1000000 ? (int)v : 0;
}

/* Fill kv with gpulaunch's own variables (not the inherited ones). */
static int ours(const childenv_t *ce, int attempt, envset_t *kv, const envset_t *inherited) {
  const job_t *j = ce->job;
  char b[64];
#define SETI(k, v) do { snprintf(b, sizeof b, "%d", (v)); CHECK(kv_set(kv, (k), b)); } while (0)
  SETI("RANK", j->rank);
  SETI("LOCAL_RANK", j->local_rank);
  SETI("WORLD_SIZE", j->size);
  SETI("LOCAL_WORLD_SIZE", j->local_size);
  SETI("GROUP_RANK", j->node);
  SETI("GROUP_WORLD_SIZE", j->nnodes);
  SETI("ROLE_RANK", j->rank);
  SETI("ROLE_WORLD_SIZE", j->size);
  CHECK(kv_set(kv, "ROLE_NAME", "default"));
  CHECK(kv_set(kv, "MASTER_ADDR", ce->master_addr));
  SETI("MASTER_PORT", ce->master_port);
  CHECK(kv_set(kv, "TORCHELASTIC_RUN_ID", ce->run_id));
  attempt += restart_base();
  SETI("TORCHELASTIC_RESTART_COUNT", attempt);
  SETI("TORCHELASTIC_MAX_RESTARTS", ce->max_restarts);
  SETI(envvar_name(ENVVAR_RESTART_COUNT), attempt);
  SETI(envvar_name(ENVVAR_NODE), j->node);
  CHECK(kv_set(kv, envvar_name(ENVVAR_HOST), j->host));
  CHECK(kv_set(kv, envvar_name(ENVVAR_RUN_ID), ce->run_id));
  const char *ckpt = ce->conf ? ce->conf->job.checkpoint_dir : "";
  if (ckpt && *ckpt) CHECK(kv_set(kv, envvar_name(ENVVAR_CHECKPOINT_DIR), ckpt));
  /* Inside a Slurm job: SLURM_PROCID and the others describe this rank, not mpirun's daemon. */
  CHECK(slurm_child_env(j, set_kv, kv));
  for (int i = 0; i < ce->nplan_env; i++)
    if (strchr(ce->plan_env[i], '=')) CHECK(envset_add_kv(kv, ce->plan_env[i]));
  static const conf_vars_id_t free_sections[] = {CONF_VARS_NCCL, CONF_VARS_ENV};
  for (size_t s = 0; s < GPL_ARRAY_LEN(free_sections) && ce->conf; s++) {
    int n = conf_vars_count(ce->conf, free_sections[s]);
    for (int i = 0; i < n; i++) {
      const char *k, *v;
      conf_vars_entry(ce->conf, free_sections[s], i, &k, &v);
      CHECK(kv_set(kv, k, v));
    }
  }
  if (!envset_get(kv, "OMP_NUM_THREADS") && !(inherited && envset_get(inherited, "OMP_NUM_THREADS"))) {
    long conf_omp = ce->conf ? ce->conf->job.omp_num_threads : 0;
    SETI("OMP_NUM_THREADS", conf_omp > 0 ? (int)conf_omp : (ce->omp_threads > 0 ? ce->omp_threads : 1));
  }
#undef SETI
  return envset_finish(kv);
}

int childenv_build(const childenv_t *ce, int attempt, char ***envp) {
  envset_t kv = {0}, inh = {0};
  int rc = GPL_OK;
  for (char **e = environ; e && *e; e++) {
    if (is_mpi_runtime_var(*e)) continue;
    if (!strchr(*e, '=')) continue;
    CHECKGOTO(envset_add_kv(&inh, *e), rc, fail);
  }
  CHECKGOTO(ours(ce, attempt, &kv, &inh), rc, fail);
  /* ours after the inherited ones: a key of both keeps its place and takes our value */
  for (int i = 0; i < kv.n; i++) CHECKGOTO(envset_add_kv(&inh, kv.v[i]), rc, fail);
  CHECKGOTO(envset_finish(&inh), rc, fail);
  envset_free(&kv);
  if (!inh.v) CHECKGOTO(kv_set(&inh, "GPULAUNCH", "1"), rc, fail);
  *envp = inh.v;
  return GPL_OK;
fail:
  envset_free(&kv);
  envset_free(&inh);
  return rc;
}

void childenv_describe(const childenv_t *ce, int attempt, strbuf_t *out) {
  envset_t kv = {0}, inh = {0};
  for (char **e = environ; e && *e; e++) {
    if (!strchr(*e, '=') || is_mpi_runtime_var(*e)) continue;
    envset_add_kv(&inh, *e);
  }
  if (ours(ce, attempt, &kv, &inh) == GPL_OK) {
    for (int i = 0; i < kv.n; i++) {
      char *eq = strchr(kv.v[i], '=');
      *eq = 0; /* the key alone, for the name test; put back below */
      strbuf_printf(out, "%s=%s\n", kv.v[i], util_is_secret_name(kv.v[i]) ? "<redacted>" : eq + 1);
      *eq = '=';
    }
  }
  envset_free(&kv);
  envset_free(&inh);
}

const char *childenv_get(const childenv_t *ce, int attempt, const char *key) {
  static char value[4096];
  envset_t kv = {0};
  const char *v = NULL;
  if (ours(ce, attempt, &kv, NULL) == GPL_OK) v = envset_get(&kv, key);
  if (!v) v = getenv(key);
  if (v) util_strlcpy(value, v, sizeof value);
  envset_free(&kv);
  return v ? value : NULL;
}

void childenv_free(childenv_t *ce) {
  for (int i = 0; i < ce->nplan_env; i++) free(ce->plan_env[i]);
  free(ce->plan_env);
  ce->plan_env = NULL;
  ce->nplan_env = ce->plan_cap = 0;
}
