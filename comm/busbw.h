/* nccl-tests' bus bandwidth of an allreduce, shared by `gpulaunch bench` and `gpulaunch accept`. */
#ifndef GPL_COMM_BUSBW_H
#define GPL_COMM_BUSBW_H

/* busbw = algbw * factor: a ring allreduce moves 2(n-1)/n of the data over each rank's link, so
 * the bus bandwidth compares with the link's peak whatever the rank count (nccl-tests'
 * PERFORMANCE.md). A count below 1 counts as 1. */
static inline double busbw_allreduce_factor(int nranks) {
  double n = nranks > 0 ? nranks : 1;
  return 2.0 * (n - 1) / n;
}

#endif
