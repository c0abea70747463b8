/* Elastic membership (gpulaunch-run --nodes MIN:MAX): the job runs on the hosts a host source
 * lists, is stopped with the grace and started again by a new launcher when hosts are lost or
 * announce their end, and grows back when hosts return. */
#ifndef GPL_LAUNCHER_FRONT_ELASTIC_H
#define GPL_LAUNCHER_FRONT_ELASTIC_H

#include "common/envvar.h"
#include "launcher/front/front_job.h"

#include "launcher/exitcode.h"


typedef struct front_elastic_s {
  int min, max;             /* hosts */
  const char *hostfile;     /* --hostfile FILE (re-read), or */
  const char *script;       /* --host-discovery-script SCRIPT */
  double interval;          /* seconds between polls of the host source */
  double cooldown;          /* a lost or noticed host is left out this long */
  double scale_up_every;    /* grow at most this often (and not before the job ran this long) */
  double min_wait;          /* below MIN: wait this long for hosts, then exit 78 */
  int max_restarts;         /* membership restarts allowed (-1: no limit) */
  char **head;              /* the launcher's words before the job's: mpirun, -x ..., --mca ... */
  int nhead;
  char **tail;              /* the user's launcher options and `gpulaunch ARGS...` */
  int ntail;
  int nopts;                /* ... of which the launcher options are the first nopts */
  double start_limit;       /* rank 0 must connect within this long of a launch */
  int srun;                 /* the launcher is srun: each launch is a step inside the allocation */
} front_elastic_t;

/* What every launch passes to the ranks besides the channel (srun --export lists get them). */
#define FRONT_ELASTIC_ENV_NAMES ENVVAR_LITERAL(RESTART_BASE) "," ENVVAR_LITERAL(RUN_ID) "," ENVVAR_LITERAL(ELASTIC_HISTORY)

/* Run the job elastically until it ends; returns the exit status for gpulaunch-run. j carries the
 * channel (token, listening socket) for every launch. */
int front_elastic_run(const front_elastic_t *e, front_job_t *j);

#endif
