/* Backend choice and bootstrap: an explicit nccl fails with a clear message where there is no GPU
 * (GPL_ENOGPU, naming CUDA's own reason) or no CUDA in the build (GPL_ENOCUDA); auto falls back to
 * cpu; GPULAUNCH_COMM_BACKEND overrides auto. Runs under mpirun (MPI started by the test) or alone
 * (a job of one, no MPI) or wrapped (through the proxy); on a machine with a GPU, nccl must be
 * chosen instead. */
#include <mpi.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpulaunch/gpulaunch.h"
#include "tests/comm/capture.h"
#include "tests/mpi_check.h"

static char g_log[65536];

static int init_with(gpl_backend_t b, gpl_comm_t **c) {
  gpl_init_opts_t o;
  gpl_init_opts_default(&o);
  o.backend = b;
  o.timeout = 20;
  o.init_timeout = 20;
  capture_begin();
  int rc = gpl_init(c, &o);
  capture_end(g_log, sizeof g_log);
  return rc;
}

int main(int argc, char **argv) {
  /* alone: a job of one; child: a program wrapped by gpulaunch (through the proxy, no MPI here) */
  int alone = argc > 1 && strcmp(argv[1], "alone") == 0;
  int child = argc > 1 && strcmp(argv[1], "child") == 0;
  if (!alone && !child) MPI_Init(&argc, &argv);
  int have_gpu = access("/dev/nvidiactl", F_OK) == 0;
  gpl_comm_t *c = NULL;

  /* explicit nccl */
  mpi_check_case = "backend nccl";
  int rc = init_with(GPL_BACKEND_NCCL, &c);
#ifdef GPULAUNCH_HAVE_NCCL
  if (!have_gpu) {
    MPI_CHECK_INT(rc, GPL_ENOGPU);
    MPI_CHECK(strstr(g_log, "no GPU") != NULL);
    MPI_CHECK(strstr(g_log, "backend nccl was asked for") != NULL);
  } else {
    MPI_CHECK_INT(rc, 0);
  }
#else
  MPI_CHECK_INT(rc, GPL_ENOCUDA);
  MPI_CHECK(strstr(g_log, "not built with CUDA") != NULL);
#endif
  if (rc == 0) {
    mpi_check_rank = gpl_comm_rank(c);
    MPI_CHECK_INT(gpl_comm_backend(c), GPL_BACKEND_NCCL);
    MPI_CHECK(gpl_comm_device(c) >= 0);
    MPI_CHECK_OK(gpl_finalize(c));
  }
  MPI_CHECK(rc != 0 || have_gpu);

  /* auto: cpu without a GPU, with the reason at info level */
  mpi_check_case = "backend auto";
  setenv("GPULAUNCH_LOG", "info", 1);
  MPI_CHECK_OK(init_with(GPL_BACKEND_AUTO, &c));
  mpi_check_rank = gpl_comm_rank(c);
  if (have_gpu) {
    MPI_CHECK_INT(gpl_comm_backend(c), GPL_BACKEND_NCCL);
  } else {
    MPI_CHECK_INT(gpl_comm_backend(c), GPL_BACKEND_CPU);
    MPI_CHECK_INT(gpl_comm_device(c), -1);
    MPI_CHECK(strstr(g_log, "backend auto: using cpu") != NULL);
  }
  if (alone) {
    MPI_CHECK_INT(gpl_comm_size(c), 1);
    MPI_CHECK_INT(gpl_comm_rank(c), 0);
  }
  /* the communicator works */
  int one = 1, sum = 0;
  if (gpl_comm_backend(c) == GPL_BACKEND_CPU) {
    MPI_CHECK_OK(gpl_allreduce(c, &one, &sum, 1, GPL_INT32, GPL_OP_SUM, NULL));
    MPI_CHECK_INT(sum, gpl_comm_size(c));
  }
  MPI_CHECK_OK(gpl_finalize(c));
  unsetenv("GPULAUNCH_LOG");

  /* the environment overrides auto (what gpulaunch passes to a program it wraps) */
  mpi_check_case = "GPULAUNCH_COMM_BACKEND";
  setenv("GPULAUNCH_COMM_BACKEND", "cpu", 1);
  MPI_CHECK_OK(init_with(GPL_BACKEND_AUTO, &c));
  MPI_CHECK_INT(gpl_comm_backend(c), GPL_BACKEND_CPU);
  MPI_CHECK_OK(gpl_finalize(c));
  setenv("GPULAUNCH_COMM_BACKEND", "tpu", 1);
  MPI_CHECK_INT(init_with(GPL_BACKEND_AUTO, &c), GPL_EINVAL);
  MPI_CHECK(strstr(g_log, "GPULAUNCH_COMM_BACKEND=tpu") != NULL);
  unsetenv("GPULAUNCH_COMM_BACKEND");

  gpl_backend_t b;
  MPI_CHECK_INT(gpl_backend_parse("NCCL", &b), 0);
  MPI_CHECK_INT(b, GPL_BACKEND_NCCL);
  MPI_CHECK_INT(gpl_backend_parse("gloo", &b), GPL_EINVAL);

  if (!alone && !child) MPI_Finalize();
  if (child) {
    int mpi_up = 0;
    MPI_Initialized(&mpi_up);
    MPI_CHECK_INT(mpi_up, 0); /* a wrapped program never starts MPI */
  }
  if (mpi_check_failures) fprintf(stderr, "test_comm_boot: %d failures\n", mpi_check_failures);
  return mpi_check_failures ? 1 : 0;
}
