/* A wrapped C program for the hang watchdog's tests: steps of gpl_progress + gpl_barrier through
 * gpulaunch's proxy; one rank hangs in a blocking read, or the others idle in a sleep loop.
 *   hang_prog barrier HANG_RANK HANG_STEP STEPS   the others wait in gpl_barrier
 *   hang_prog sleep HANG_RANK HANG_STEP STEPS     after HANG_STEP every other rank sleeps, calling nothing
 *   hang_prog slow SLOW_RANK MS STEPS             SLOW_RANK sleeps MS more before each step's report
 *   hang_prog straggle SLOW_RANK MS STEPS         every rank computes ~10 ms in shared_work() then
 *                                                 gpl_allreduce; SLOW_RANK (-1: none) also computes
 *                                                 MS in slow_transform() (the straggler view by stack
 *                                                 samples: the others wait in gpl_allreduce) */
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

/* Busy work for about ms milliseconds (CPU time, as a real transform is). */
static double spin(double ms) {
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  volatile double x = 1;
  for (;;) {
    for (int i = 0; i < 20000; i++) x = x * 1.0000001 + 1e-9;
    clock_gettime(CLOCK_MONOTONIC, &t);
    if ((double)(t.tv_sec - t0.tv_sec) * 1e3 + (double)(t.tv_nsec - t0.tv_nsec) / 1e6 >= ms) break;
  }
  return x;
}

__attribute__((noinline)) static double shared_work(void) { return spin(10); }
__attribute__((noinline)) static double slow_transform(double ms) { return spin(ms); }

static int straggle(gpl_comm_t *c, int who, int ms, int steps) {
  int rank = gpl_comm_rank(c);
  struct timespec t0 = {0, 0}, t1;
  for (int step = 0; step < steps; step++) {
    if (step == steps / 10) clock_gettime(CLOCK_MONOTONIC, &t0);
    double v = shared_work();
    if (rank == who) v += slow_transform(ms);
    float in = (float)(v > 0), out = 0;
    if (gpl_allreduce(c, &in, &out, 1, GPL_FLOAT, GPL_OP_SUM, NULL) != 0) return 4;
    if (rank == 0 && step % 10 == 0) printf("step %d\n", step);
    fflush(stdout);
  }
  clock_gettime(CLOCK_MONOTONIC, &t1);
  if (rank == 0)
    printf("mean step %.3f ms\ndone\n", ((double)(t1.tv_sec - t0.tv_sec) * 1e3 +
           (double)(t1.tv_nsec - t0.tv_nsec) / 1e6) / (steps - steps / 10));
  gpl_finalize(c);
  return 0;
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
  if (strcmp(mode, "straggle") == 0) return straggle(c, who, n, steps);
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
