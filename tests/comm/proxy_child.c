/* A wrapped program for the proxy tests: GPL_TEST_SLEEP_RANK (read only by this test) sleeps
 * GPL_TEST_SLEEP_S seconds before an allreduce; the other ranks must get GPL_ETIMEDOUT within the
 * deadline plus its grace (gpulaunch's log names the sleeper), the sleeper whatever it gets. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gpulaunch/gpulaunch.h"

/* Restarts (GPULAUNCH_RESTART_COUNT): in attempt 0 the last rank leaves right after gpl_init
 * while the others wait in an allreduce (long deadline) until gpulaunch kills them; in attempt 1
 * every rank's allreduce must work, on a fresh communicator. */
static int restart(void) {
  const char *a = getenv("GPULAUNCH_RESTART_COUNT");
  int attempt = a ? atoi(a) : 0;
  gpl_init_opts_t o;
  gpl_init_opts_default(&o);
  o.timeout = 60;
  gpl_comm_t *c;
  int rc = gpl_init(&c, &o);
  if (rc < 0) {
    fprintf(stderr, "proxy_child: attempt %d: gpl_init: %s\n", attempt, gpl_strerror(rc));
    return 1;
  }
  int rank = gpl_comm_rank(c), size = gpl_comm_size(c), one = 1, sum = 0;
  if (attempt == 0 && rank == size - 1) return 0; /* gone without a word, mid-job */
  rc = gpl_allreduce(c, &one, &sum, 1, GPL_INT32, GPL_OP_SUM, NULL);
  printf("proxy_child: attempt %d rank %d: allreduce %s, sum %d\n", attempt, rank,
         gpl_err_name(rc), sum);
  gpl_finalize(c);
  return rc == GPL_OK && sum == size ? 0 : 1;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "restart") == 0) return restart();
  gpl_init_opts_t o;
  gpl_init_opts_default(&o);
  o.timeout = 2;
  gpl_comm_t *c;
  int rc = gpl_init(&c, &o);
  if (rc < 0) {
    fprintf(stderr, "proxy_child: gpl_init: %s\n", gpl_strerror(rc));
    return 1;
  }
  int rank = gpl_comm_rank(c);
  const char *sr = getenv("GPL_TEST_SLEEP_RANK"), *ss = getenv("GPL_TEST_SLEEP_S");
  int sleeper = sr ? atoi(sr) : gpl_comm_size(c) - 1;
  float x[4096];
  for (int i = 0; i < 4096; i++) x[i] = 1.0f;
  int bad = 0;
  if (rank == sleeper) {
    util_sleep(ss ? atof(ss) : 8.0);
    (void)gpl_allreduce(c, x, x, 4096, GPL_FLOAT, GPL_OP_SUM, NULL);
  } else {
    double t0 = util_now();
    rc = gpl_allreduce(c, x, x, 4096, GPL_FLOAT, GPL_OP_SUM, NULL);
    double dt = util_now() - t0;
    printf("proxy_child rank %d: allreduce returned %s after %.2f s\n", rank, gpl_err_name(rc), dt);
    bad = rc != GPL_ETIMEDOUT || dt > 2 + 2 * 2 + 6;
    if (gpl_barrier(c) != GPL_ESTATE) bad = 1; /* broken from here on */
  }
  gpl_finalize(c);
  return bad;
}
