/* gpulaunch bench: the CUDA pieces (events, a stream, device memset and names), in bench_cuda.c
 * with CUDA, or answering GPL_ENOCUDA from bench_cuda_stub.c without. */
#ifndef GPL_LAUNCHER_BENCH_CUDA_H
#define GPL_LAUNCHER_BENCH_CUDA_H

#include <stddef.h>

/* 2*iters events and a non-blocking stream on `device` (*stream). */
int bench_cuda_events_create(void **ev, int device, int iters, void **stream);
/* Record event k on the stream (no synchronisation). */
void bench_cuda_record(void *ev, int k);
/* Seconds between events 2i and 2i+1 for i < n (waits for the last event: call it after
 * gpl_synchronize, so that the wait has had its deadline). */
int bench_cuda_elapsed(void *ev, int n, double *secs);
/* Destroy the events and the stream. */
void bench_cuda_events_destroy(void *ev);

#endif
