/* A wrapped C program for the silent-rank tests (issue 29): every rank prints a step a second;
 * then one rank sleeps in stuck_in_data_loader(), the others wait in allreduce_wait() as if in a
 * collective, and FAIL_RANK gives up after TIMEOUT seconds there as a collective's timeout would.
 *   silent_prog STUCK_RANK FAIL_RANK STEPS TIMEOUT   (STUCK_RANK -1: nobody stuck, all wait)
 *   silent_prog busy FAIL_RANK STEPS                 every rank prints steps, FAIL_RANK fails */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void nap(double s) {
  struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
  nanosleep(&ts, NULL);
}

__attribute__((noinline)) static void stuck_in_data_loader(void) {
  for (;;) nap(1.0);
}

/* Waits for a peer that never comes; FAIL_RANK's wait ends with a timeout. */
__attribute__((noinline)) static int allreduce_wait(double timeout) {
  for (double t = 0; timeout <= 0 || t < timeout; t += 0.1) nap(0.1);
  return -1;
}

int main(int argc, char **argv) {
  const char *r = getenv("RANK");
  int rank = r ? atoi(r) : 0;
  if (argc == 4 && strcmp(argv[1], "busy") == 0) {
    int fail = atoi(argv[2]), steps = atoi(argv[3]);
    for (int s = 0;; s++) {
      printf("rank %d step %d\n", rank, s);
      fflush(stdout);
      if (rank == fail && s == steps) {
        fprintf(stderr, "rank %d: loss is nan, giving up\n", rank);
        return 1;
      }
      nap(0.2);
    }
  }
  if (argc < 5) {
    fprintf(stderr, "usage: silent_prog STUCK_RANK FAIL_RANK STEPS TIMEOUT | busy FAIL_RANK STEPS\n");
    return 2;
  }
  int stuck = atoi(argv[1]), fail = atoi(argv[2]), steps = atoi(argv[3]);
  double timeout = atof(argv[4]);
  for (int s = 0; s < steps; s++) {
    printf("rank %d step %d\n", rank, s);
    fflush(stdout);
    nap(0.5);
  }
  if (rank == stuck) stuck_in_data_loader();
  if (allreduce_wait(rank == fail ? timeout : 0) < 0) {
    fprintf(stderr, "rank %d: allreduce timed out after %.0f s waiting for its peers\n", rank, timeout);
    return 1;
  }
  return 0;
}
