/* gpulaunch-run's side of the job key (front_sec.c): the config's [security], the key, the
 * channel's TLS context and token. */
#ifndef GPL_LAUNCHER_FRONT_SEC_H
#define GPL_LAUNCHER_FRONT_SEC_H

#include <stddef.h>

#include "launcher/job/seckey.h"

struct front_job_s;

/* The config file among gpulaunch's words in argv (after the gpulaunch word), or NULL. */
const char *front_sec_config(int argc, char **argv);
/* Make the job key as the config says (exporting what the ranks need), the channel's server
 * context into job->ctx and the token (hex) into token, job->token = token. 0, or -1 (said). */
int front_sec_init(int argc, char **argv, seckey_t *k, struct front_job_s *job, char *token, size_t len);

#endif
