/* What every mode of the gpulaunch program receives: the job, the config and its own arguments
 * (launch_t). Below the modes (launcher/launcher.h), so that start-up steps such as placement
 * take it without knowing the modes. */
#ifndef GPL_LAUNCHER_LAUNCH_H
#define GPL_LAUNCHER_LAUNCH_H

#include <cjson/cJSON.h>

#include "launcher/conf/conf.h"
#include "launcher/job/job.h"
#include "launcher/job/seckey.h"

typedef struct launch_s {
  job_t *job;               /* initialised (MPI up) before a mode runs, except `check`/`help` */
  conf_t *conf;             /* the config file's settings, or the defaults when there is none */
  const char *conf_path;    /* NULL when no config file was given */
  const char *topology_xml; /* --topology FILE (overrides [topology] xml), or NULL */
  const char *summary_path; /* --summary FILE.json, or NULL */
  int argc;                 /* the mode's own arguments (after the mode word and config) */
  char **argv;
  cJSON *summary;           /* the job summary; modes add their objects ("train", "bench", ...);
                             * main writes it to summary_path from rank 0 */
  seckey_t sec;             /* the job key and TLS settings, agreed by place_rank (sec_done) */
  int sec_done;
  char root_cause[512];     /* why the job failed, when a mode knows (the audit log's end line) */
} launch_t;

#endif
