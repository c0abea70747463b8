/* Start-up placement of a rank (until the topology module is wired in: CPU count only). */
#include "launcher/place.h"

#include <sched.h>
#include <string.h>

#include "common/check.h"

int place_rank(launch_t *L, childenv_t *ce, place_t *out) {
  memset(out, 0, sizeof *out);
  out->gpu = -1;
  cpu_set_t set;
  int ncpu = 1;
  if (sched_getaffinity(0, sizeof set, &set) == 0) ncpu = CPU_COUNT(&set);
  int local = L->job ? L->job->local_size : 1;
  out->cores = ncpu / (local > 0 ? local : 1);
  if (out->cores < 1) out->cores = 1;
  (void)ce; /* NULL for modes that only need the binding (bench, accept) */
  return GPL_OK;
}

int place_exit_code(int err) {
  switch (err) {
    case GPL_ETOPO: return GPL_EXIT_TOPOLOGY;
    case GPL_ENET:
    case GPL_EUNREACH: return GPL_EXIT_NETWORK;
    case GPL_ETIMEDOUT: return GPL_EXIT_TIMEOUT;
    case GPL_ECONFIG: return GPL_EXIT_CONFIG;
    default: return GPL_EXIT_INTERNAL;
  }
}
