/* Who this process is before MPI: short host name, launcher's rank, scheduler's job id; the
 * names of its threads.
 * (util_ prefix kept: its functions are called from dozens of files.) */
#include "common/util_host.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "gpulaunch/error.h"

const char *util_hostname(void) {
  static char host[256];
  if (!host[0]) {
    if (gethostname(host, sizeof host - 1) < 0) util_strlcpy(host, "localhost", sizeof host);
    char *dot = strchr(host, '.');
    if (dot) *dot = 0;
  }
  return host;
}

int util_env_rank(void) {
  static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(vars); i++) {
    const char *v = getenv(vars[i]);
    long r;
    if (v && util_parse_long(v, 0, 1L << 30, &r) == GPL_OK) return (int)r;
  }
  return -1;
}

const char *util_sched_job_id(void) {
  static const char *const ids[] = {"SLURM_JOB_ID", "PBS_JOBID", "LSB_JOBID", "OMPI_MCA_ess_base_jobid"};
  for (size_t i = 0; i < GPL_ARRAY_LEN(ids); i++) {
    const char *v = getenv(ids[i]);
    if (v && *v) return v;
  }
  return NULL;
}

void util_thread_name(const char *name) {
  char n[16];
  util_strlcpy(n, name, sizeof n);
  (void)pthread_setname_np(pthread_self(), n); /* a name is for people: no error to report */
}
