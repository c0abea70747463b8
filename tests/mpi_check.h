/* The one assert helper of the MPI test programs (run on every rank of an mpirun, where cmocka's
 * runner does not fit): each failed check prints the rank, the case, file:line, the expression
 * and both values; failures are counted, so one run reports every rank's problems, and the
 * program's end turns the count (MPI_Allreduce over the ranks where there is MPI) into its exit
 * status. Every other C test uses cmocka (tests/README.md). */
#ifndef GPL_TESTS_MPI_CHECK_H
#define GPL_TESTS_MPI_CHECK_H

#include <stdio.h>
#include <stdlib.h>

static int mpi_check_failures;
static int mpi_check_rank = -1;
static const char *mpi_check_case = "";

/* A failure with a message: the first 20 of a rank are printed, all are counted. */
#define MPI_CHECK_FAIL(...)                                                                      \
  do {                                                                                           \
    if (mpi_check_failures < 20) {                                                               \
      fprintf(stderr, "FAIL rank %d [%s] %s:%d: ", mpi_check_rank, mpi_check_case, __FILE__,     \
              __LINE__);                                                                         \
      fprintf(stderr, __VA_ARGS__);                                                              \
      fprintf(stderr, "\n");                                                                     \
    }                                                                                            \
    mpi_check_failures++;                                                                        \
  } while (0)

#define MPI_CHECK_INT(a, b)                                                                      \
  do {                                                                                           \
    long long ma_ = (long long)(a), mb_ = (long long)(b);                                        \
    if (ma_ != mb_) MPI_CHECK_FAIL("%s == %s: %lld != %lld", #a, #b, ma_, mb_);                  \
  } while (0)

#define MPI_CHECK(cond)                                                                          \
  do {                                                                                           \
    if (!(cond)) MPI_CHECK_FAIL("%s", #cond);                                                    \
  } while (0)

/* A call that later checks depend on returns 0 (GPL_OK), or this rank stops here (exit 1). */
#define MPI_CHECK_OK(call)                                                                       \
  do {                                                                                           \
    int mrc_ = (call);                                                                           \
    if (mrc_ != 0) {                                                                             \
      MPI_CHECK_FAIL("%s returned %d (%s)", #call, mrc_, gpl_strerror(mrc_));                    \
      exit(1);                                                                                   \
    }                                                                                            \
  } while (0)

#endif
