/* A stand-in for the few CUDA runtime calls that order streams (streams, events, waits), with a
 * model of what they promise: vector clocks per stream, so a test can ask whether one piece of
 * work is ordered before another. Linked instead of libcudart into tests that need no GPU. */
#ifndef GPL_TESTS_COMM_CUDA_STANDIN_H
#define GPL_TESTS_COMM_CUDA_STANDIN_H

#include <cuda_runtime.h>

/* Work queued on a stream (a kernel, a collective), as the model sees it. */
typedef struct standin_op_s {
  int stream;        /* index of the stream it ran on */
  unsigned vc[8];    /* what of each stream's work was ordered before it */
} standin_op_t;

/* Forget every stream and event (the legacy stream stays, as index 0). */
void standin_reset(void);
/* Queue a piece of work on stream (NULL or cudaStreamLegacy: the legacy stream). */
standin_op_t standin_work(cudaStream_t stream);
/* 1 when a is ordered before b by stream order and event waits. */
int standin_before(const standin_op_t *a, const standin_op_t *b);
/* cudaEventQuery answers cudaErrorNotReady this many more times, then cudaSuccess; -1: forever. */
void standin_event_busy(int times);
/* Calls of cudaEventQuery so far. */
int standin_event_queries(void);

#endif
