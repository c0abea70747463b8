/* The CUDA stand-in: streams and events as vector clocks (see cuda_standin.h). */
#include "tests/comm/cuda_standin.h"

#include <stdlib.h>
#include <string.h>

enum { MAXS = 8 };

struct CUstream_st {
  int index;
};
struct CUevent_st {
  unsigned vc[MAXS];
};

static unsigned g_vc[MAXS][MAXS]; /* g_vc[s]: what stream s's next work is ordered after */
static struct CUstream_st g_streams[MAXS];
static int g_nstreams = 1; /* 0 is the legacy stream */
static int g_busy, g_queries;

void standin_reset(void) {
  memset(g_vc, 0, sizeof g_vc);
  g_nstreams = 1;
  g_busy = 0;
  g_queries = 0;
}

static int index_of(cudaStream_t s) {
  if (s == NULL || s == cudaStreamLegacy) return 0;
  return s->index;
}

standin_op_t standin_work(cudaStream_t stream) {
  int s = index_of(stream);
  g_vc[s][s]++;
  standin_op_t op;
  op.stream = s;
  memcpy(op.vc, g_vc[s], sizeof op.vc);
  return op;
}

int standin_before(const standin_op_t *a, const standin_op_t *b) {
  return a->vc[a->stream] <= b->vc[a->stream] && !(a->stream == b->stream && a->vc[a->stream] == b->vc[b->stream]);
}

void standin_event_busy(int times) { g_busy = times; }
int standin_event_queries(void) { return g_queries; }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags) {
  (void)flags;
  if (g_nstreams == MAXS) return cudaErrorMemoryAllocation;
  g_streams[g_nstreams].index = g_nstreams;
  *s = &g_streams[g_nstreams++];
  return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t s) {
  (void)s;
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags) {
  (void)flags;
  *e = calloc(1, sizeof **e);
  return *e ? cudaSuccess : cudaErrorMemoryAllocation;
}

cudaError_t cudaEventDestroy(cudaEvent_t e) {
  free(e);
  return cudaSuccess;
}

/* The event stands for all the work queued on the stream so far. */
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t stream) {
  memcpy(e->vc, g_vc[index_of(stream)], sizeof e->vc);
  return cudaSuccess;
}

/* Work queued on the stream from now on is ordered after what the event stood for when waited on. */
cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t e, unsigned int flags) {
  (void)flags;
  unsigned *vc = g_vc[index_of(stream)];
  for (int k = 0; k < MAXS; k++)
    if (e->vc[k] > vc[k]) vc[k] = e->vc[k];
  return cudaSuccess;
}

cudaError_t cudaEventQuery(cudaEvent_t e) {
  (void)e;
  g_queries++;
  if (g_busy < 0) return cudaErrorNotReady;
  if (g_busy > 0) {
    g_busy--;
    return cudaErrorNotReady;
  }
  return cudaSuccess;
}

const char *cudaGetErrorString(cudaError_t e) { return e == cudaSuccess ? "no error" : "stand-in error"; }
const char *cudaGetErrorName(cudaError_t e) { return e == cudaSuccess ? "cudaSuccess" : "cudaErrorStandin"; }
