/* Stream order of the nccl backend: the communicator's own stream against the legacy default
 * stream (a NULL stream argument), and the fused allreduce's scratch bucket shared by calls on
 * different streams. CUDA events only; no host waits except before the scratch is freed. */
#ifndef GPL_COMM_NCCL_STREAMS_H
#define GPL_COMM_NCCL_STREAMS_H

#include <cuda_runtime.h>

typedef struct nccl_streams_s {
  cudaStream_t own;          /* the communicator's stream (non-blocking: it never waits for
                              * unrelated work on the legacy stream by itself) */
  cudaEvent_t legacy_mark;   /* recorded on the legacy stream, then waited for by own */
  cudaEvent_t own_mark;      /* recorded on own, then waited for by the legacy stream */
  cudaEvent_t scratch_free;  /* recorded after the last work that used the scratch */
  int scratch_used;          /* scratch_free has been recorded at least once */
} nccl_streams_t;

/* Create the own stream and the events (on the current device). 0 or GPL_ECUDA. */
int nccl_streams_init(nccl_streams_t *s);
/* Destroy what init made (after the work is done or the communicator aborted). */
void nccl_streams_destroy(nccl_streams_t *s);

/* The stream that work for the caller's `stream` runs on: the caller's own when not NULL (the
 * caller orders it, as with NCCL); for NULL, the communicator's stream after it waits for all
 * that was queued on the legacy default stream so far (the gradients a program computed there). */
int nccl_streams_enter(nccl_streams_t *s, void *stream, cudaStream_t *use);
/* After the work enqueued on `use` for the caller's `stream`: for NULL, the legacy stream waits
 * for it, so what the program queues there next sees the results. */
int nccl_streams_leave(nccl_streams_t *s, void *stream, cudaStream_t use);

/* Before work on `use` writes the scratch: wait (on the device) for the last work that used it,
 * whatever stream that was on. */
int nccl_streams_scratch_acquire(nccl_streams_t *s, cudaStream_t use);
/* After the last work on `use` that reads the scratch. */
int nccl_streams_scratch_release(nccl_streams_t *s, cudaStream_t use);
/* Before the scratch is freed or replaced: wait on the host, at most timeout seconds, until its
 * last user is done. 0, GPL_ETIMEDOUT or GPL_ECUDA. */
int nccl_streams_scratch_idle(nccl_streams_t *s, double timeout);

#endif
