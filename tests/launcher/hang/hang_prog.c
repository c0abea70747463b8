/* A wrapped C program for the hang watchdog's tests: steps of gpl_progress + gpl_barrier through
 * gpulaunch's proxy; one rank hangs in a blocking read, or the others idle in a sleep loop.
 *   hang_prog barrier HANG_RANK HANG_STEP STEPS   the others wait in gpl_barrier
 *   hang_prog sleep HANG_RANK HANG_STEP STEPS     after HANG_STEP every other rank sleeps, calling nothing
 *   hang_prog slow SLOW_RANK MS STEPS             SLOW_RANK sleeps MS more before each step's report */
#include <gpulaunch/gpulaunch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

/* A read that never returns: the write end stays open and nobody writes. */
__attribute__((noinline)) static void stuck_in_read(void) {
  int fds[2];
  char c;
  if (pipe(fds) == 0) (void)!read(fds[0], &c, 1);
}

__attribute__((noinline)) static void idle_forever(void) {
  for (;;) nap(0.2);
}

int main(int argc, char **argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: hang_prog barrier|sleep|slow RANK N STEPS\n");
    return 2;
  }
  const char *mode = argv[1];
  int who = atoi(argv[2]), n = atoi(argv[3]), steps = atoi(argv[4]);
  gpl_comm_t *c = NULL;
  if (gpl_init(&c, NULL) != 0) return 3;
  int rank = gpl_comm_rank(c);
  for (int step = 0; step < steps; step++) {
    if (strcmp(mode, "slow") != 0 && step == n) {
      if (rank == who) stuck_in_read();
      else if (strcmp(mode, "sleep") == 0) idle_forever();
    }
    if (strcmp(mode, "slow") == 0) {
      nap(0.02);
      if (rank == who) nap(n / 1000.0);
    }
    gpl_progress(c, step);
    if (gpl_barrier(c) != 0) return 4;
  }
  if (rank == 0) printf("done\n");
  gpl_finalize(c);
  return 0;
}
