/* The wrapped program's environment: torchrun's variables, the placement plan's, [nccl] and [env]. */
#ifndef GPL_LAUNCHER_CHILDENV_H
#define GPL_LAUNCHER_CHILDENV_H

#include "common/strbuf.h"
#include "launcher/conf/conf.h"
#include "launcher/job/job.h"

typedef struct childenv_s {
  const job_t *job;
  const conf_t *conf;
  char master_addr[64];
  int master_port;
  char run_id[40];
  int omp_threads;      /* cores available to the rank */
  int max_restarts;
  char **plan_env;      /* "KEY=VALUE" from the placement plan and interface choice (owned) */
  int nplan_env, plan_cap;
} childenv_t;

/* Add (or replace) one KEY=VALUE of the plan's. */
int childenv_add(childenv_t *ce, const char *key, const char *value);
/* The full environment for an attempt: inherited (without Open MPI's/PMIx's own variables, so the
 * program does not mistake itself for an MPI rank) + ours. NULL-terminated, malloc'd strings. */
int childenv_build(const childenv_t *ce, int attempt, char ***envp);
/* Only what gpulaunch sets, one KEY=VALUE per line, secrets redacted (for `gpulaunch env`). */
void childenv_describe(const childenv_t *ce, int attempt, strbuf_t *out);
/* The value the program will see for key (NULL: unset). Result valid until the next call. */
const char *childenv_get(const childenv_t *ce, int attempt, const char *key);
void childenv_free(childenv_t *ce);

#endif
