/* A rank that never arrives is a deadline and a name, not a hang. GPL_TEST_SLEEP_RANK (read only
 * by this test) makes that rank sleep GPL_TEST_SLEEP_S seconds before the step named by argv[1]:
 *   init        before gpl_init (the start-up exchange),
 *   collective  before a small allreduce (MPI, after a good start-up),
 *   large       before a large allreduce (the shared-memory path);
 * the other ranks must fail with GPL_ETIMEDOUT within the deadline plus its grace, and their log
 * must name the sleeping rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gpulaunch/gpulaunch.h"
#include "tests/comm/capture.h"
#include "tests/mpi_check.h"

enum { TIMEOUT_S = 2 };

/* The log line that says who did not answer names `sleeper` and no other rank. */
static void names_only(const char *log, int sleeper, int size) {
  const char *l = strstr(log, "no answer from");
  MPI_CHECK(l != NULL);
  if (!l) return;
  const char *end = strchr(l, '\n');
  size_t len = end ? (size_t)(end - l) : strlen(l);
  char line[4096];
  snprintf(line, sizeof line, "%.*s", (int)len, l);
  for (int q = 0; q < size; q++) {
    char name[32];
    snprintf(name, sizeof name, "rank %d", q);
    const char *hit = strstr(line, name);
    /* "rank 1" must not match inside "rank 12" */
    while (hit && hit[strlen(name)] >= '0' && hit[strlen(name)] <= '9') hit = strstr(hit + 1, name);
    if (q == sleeper) MPI_CHECK(hit != NULL);
    else if (hit) MPI_CHECK_FAIL("rank %d is named as missing: %s", q, line);
  }
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "collective";
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  mpi_check_rank = rank;
  mpi_check_case = mode;
  const char *sr = getenv("GPL_TEST_SLEEP_RANK"), *ss = getenv("GPL_TEST_SLEEP_S");
  int sleeper = sr ? atoi(sr) : size - 1;
  double nap = ss ? atof(ss) : 8.0;
  char want[64];
  snprintf(want, sizeof want, "rank %d", sleeper);
  static char log[65536];

  gpl_init_opts_t o;
  gpl_init_opts_default(&o);
  o.backend = GPL_BACKEND_CPU;
  o.timeout = TIMEOUT_S;
  gpl_comm_t *c = NULL;
  /* the deadline, the grace of the diagnosis, and scheduling slack on 2 oversubscribed cores */
  double limit = TIMEOUT_S + 2.0 * TIMEOUT_S + 3.0;

  if (strcmp(mode, "init") == 0) {
    if (rank == sleeper) {
      util_sleep(nap);
      (void)gpl_init(&c, &o); /* too late: whatever it says */
    } else {
      double t0 = util_now();
      capture_begin();
      int rc = gpl_init(&c, &o);
      capture_end(log, sizeof log);
      double dt = util_now() - t0;
      MPI_CHECK_INT(rc, GPL_ETIMEDOUT);
      names_only(log, sleeper, size);
      MPI_CHECK(dt >= TIMEOUT_S * 0.9);
      MPI_CHECK(dt < limit);
      printf("rank %d: gpl_init timed out after %.2f s naming %s\n", rank, dt, want);
    }
  } else {
    MPI_CHECK_OK(gpl_init(&c, &o));
    size_t n = strcmp(mode, "large") == 0 ? 300000 : 1001;
    float *x = calloc(n, sizeof *x);
    for (size_t i = 0; i < n; i++) x[i] = (float)i;
    if (rank == sleeper) {
      util_sleep(nap);
      (void)gpl_allreduce(c, x, x, n, GPL_FLOAT, GPL_OP_SUM, NULL);
    } else {
      double t0 = util_now();
      capture_begin();
      int rc = gpl_allreduce(c, x, x, n, GPL_FLOAT, GPL_OP_SUM, NULL);
      capture_end(log, sizeof log);
      double dt = util_now() - t0;
      MPI_CHECK_INT(rc, GPL_ETIMEDOUT);
      names_only(log, sleeper, size);
      MPI_CHECK(dt < limit);
      /* the communicator is broken from here on */
      MPI_CHECK_INT(gpl_barrier(c), GPL_ESTATE);
      printf("rank %d: allreduce of %zu floats timed out after %.2f s naming %s\n", rank, n, dt,
             want);
    }
    MPI_CHECK_OK(gpl_finalize(c));
    /* x is not freed: after a timeout MPI may still write the call's buffers (see comm.h) */
  }
  fflush(stdout);
  MPI_Finalize();
  return mpi_check_failures ? 1 : 0;
}
