/* Weak stand-ins for modes whose modules have not landed in this tree yet; the real ones win. */
#include <stdio.h>

#include "launcher/launcher.h"

#define PENDING(fn, what)                                                          \
  __attribute__((weak)) int fn(launch_t *L) {                                      \
    (void)L;                                                                       \
    fprintf(stderr, "gpulaunch: %s is not available in this build yet\n", what);   \
    return GPL_EXIT_INTERNAL;                                                      \
  }

PENDING(mode_topo, "topo")
PENDING(mode_bench, "bench")
PENDING(mode_accept, "accept")
PENDING(mode_diag, "diag")
PENDING(trainer_run, "the built-in trainer")
