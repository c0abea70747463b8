/* Assertions for the MPI tests (programs run on each rank of an mpirun): print both values, the
 * rank and file:line; count failures so one run reports every problem, and the exit status says
 * whether any rank saw one. */
#ifndef GPL_TESTS_COMM_TESTUTIL_H
#define GPL_TESTS_COMM_TESTUTIL_H

#include <stdio.h>
#include <stdlib.h>

static int t_failures;
static int t_rank = -1;
static const char *t_case = "";

/* Prints the first 20 failures of a rank, counts them all. */
#define T_FAIL(...)                                                                        \
  do {                                                                                     \
    if (t_failures < 20) {                                                                 \
      fprintf(stderr, "FAIL rank %d [%s] %s:%d: ", t_rank, t_case, __FILE__, __LINE__);    \
      fprintf(stderr, __VA_ARGS__);                                                        \
      fprintf(stderr, "\n");                                                               \
    }                                                                                      \
    t_failures++;                                                                          \
  } while (0)

#define T_EQ_INT(a, b)                                                                     \
  do {                                                                                     \
    long long ta_ = (long long)(a), tb_ = (long long)(b);                                  \
    if (ta_ != tb_) T_FAIL("%s == %s: %lld != %lld", #a, #b, ta_, tb_);                    \
  } while (0)

#define T_TRUE(cond)                                                                       \
  do {                                                                                     \
    if (!(cond)) T_FAIL("%s", #cond);                                                      \
  } while (0)

/* Stop at the first failure of a call that later checks depend on. */
#define T_OK(call)                                                                         \
  do {                                                                                     \
    int trc_ = (call);                                                                     \
    if (trc_ != 0) {                                                                       \
      T_FAIL("%s returned %d (%s)", #call, trc_, gpl_strerror(trc_));                      \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

#endif
