/* Example: average three gradient tensors over all ranks with gpulaunch's fused allreduce, using
 * only the public API. Works under mpirun, wrapped by gpulaunch, or alone:
 *   mpirun -np 4 build/examples/allreduce_example
 * Rank r contributes (r + 1) * (j + 1) at element j, so the average is (size + 1) / 2 * (j + 1). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpulaunch/gpulaunch.h"

#define CHECK(call)                                                                        \
  do {                                                                                     \
    int rc_ = (call);                                                                      \
    if (rc_ != 0) {                                                                        \
      fprintf(stderr, "allreduce_example: %s failed: %s\n", #call, gpl_strerror(rc_));     \
      exit(1);                                                                             \
    }                                                                                      \
  } while (0)

int main(void) {
  gpl_comm_t *comm;
  CHECK(gpl_init(&comm, NULL)); /* backend auto: nccl with GPUs, cpu otherwise */
  int rank = gpl_comm_rank(comm), size = gpl_comm_size(comm);

  /* Three "gradients" of odd sizes, in comm memory (device memory on nccl). */
  enum { N = 3 };
  const size_t counts[N] = {5, 1000, 3};
  gpl_tensor_t grads[N];
  float *host[N];
  for (int i = 0; i < N; i++) {
    host[i] = malloc(counts[i] * sizeof(float));
    for (size_t j = 0; j < counts[i]; j++) host[i][j] = (float)(rank + 1) * (float)(j + 1);
    grads[i].count = counts[i];
    CHECK(gpl_mem_alloc(comm, (void **)&grads[i].data, counts[i] * sizeof(float)));
    CHECK(gpl_memcpy(comm, grads[i].data, host[i], counts[i] * sizeof(float), GPL_COPY_TO_COMM,
                     NULL));
  }

  /* bf16 on the wire, each value divided by the rank count before the sum: an average. */
  gpl_fused_opts_t opts;
  gpl_fused_opts_default(&opts);
  opts.wire = GPL_BFLOAT16;
  opts.prescale = 1.0f / (float)size;
  int overflow = 0;
  opts.overflow = &overflow;
  CHECK(gpl_fused_allreduce(comm, grads, N, &opts, NULL));

  int wrong = 0;
  for (int i = 0; i < N; i++) {
    CHECK(gpl_memcpy(comm, host[i], grads[i].data, counts[i] * sizeof(float), GPL_COPY_TO_HOST,
                     NULL));
    for (size_t j = 0; j < counts[i]; j++) {
      double want = (size + 1) / 2.0 * (double)(j + 1);
      /* bf16 keeps 8 significant bits: each of the size values and size-1 partial sums is
       * rounded once, each by at most 2^-8 of its size */
      if (fabs(host[i][j] - want) > 2.0 * size * 0x1p-8 * want) wrong++;
    }
  }
  if (rank == 0) {
    printf("allreduce_example: %d ranks, backend %s, wire bf16, overflow %d\n", size,
           gpl_backend_name(gpl_comm_backend(comm)), overflow);
    printf("  grad0 = [%g %g %g %g %g] (expected [%g .. %g])\n", host[0][0], host[0][1],
           host[0][2], host[0][3], host[0][4], (size + 1) / 2.0, (size + 1) / 2.0 * 5);
    printf("  grad1[999] = %g (expected %g)\n", host[1][999], (size + 1) / 2.0 * 1000);
    printf("  %s\n", wrong ? "WRONG" : "ok");
  }
  for (int i = 0; i < N; i++) {
    gpl_mem_free(comm, grads[i].data);
    free(host[i]);
  }
  CHECK(gpl_finalize(comm));
  return wrong ? 1 : 0;
}
