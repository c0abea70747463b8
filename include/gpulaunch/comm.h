/* gpulaunch communication API: collectives and the fused mixed-precision gradient allreduce. */
#ifndef GPULAUNCH_COMM_H
#define GPULAUNCH_COMM_H

#include <stddef.h>

#include "gpulaunch/error.h"
#include "gpulaunch/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Error rule, for every function below that returns int: 0 (GPL_OK) on success, or a negative
 * GPL_E* code from gpulaunch/error.h (gpl_strerror() gives its message); the cause, with the names
 * of the ranks involved, has already been logged on stderr. A collective that timed out or failed
 * because of another rank (GPL_ETIMEDOUT, GPL_EPEER, GPL_EMPI, GPL_ENCCL) leaves the communicator
 * broken: every later call on it returns GPL_ESTATE, the buffers of the failed call may still be
 * written by the library, and the only useful next steps are gpl_finalize() and exiting.
 *
 * Memory: "comm memory" is memory the backend's collectives read and write. It is device memory
 * (cudaMalloc) on the nccl backend and host memory on the cpu backend. Any host memory works on
 * the cpu backend; memory from gpl_mem_alloc() works everywhere and avoids a copy when the program
 * runs under gpulaunch as a wrapped child.
 *
 * Streams: a `void *stream` argument is a cudaStream_t on the nccl backend and is ignored on the
 * cpu backend. NULL means the communicator's own stream, ordered both ways with the legacy default
 * stream (stream 0): the call's work starts after everything already queued there (gradients a
 * program computed on stream 0) and what is queued there afterwards starts after it. A stream of
 * the caller's own is used as it is: order it with your other streams yourself, as with NCCL.
 * Calls on different streams may share the fused allreduce's scratch; the library orders that.
 * Collectives are asynchronous on the nccl backend (enqueued on the stream; call gpl_synchronize()
 * before reading the results on the host) and synchronous on the cpu backend (done when the call
 * returns).
 *
 * Waits: no call waits on another rank without a deadline (the communicator's timeout); when it
 * passes, the ranks that did not arrive are named in the log.
 *
 * Threads: a communicator is used by one thread at a time.
 */

/** A communicator over all ranks of the job (opaque). */
typedef struct gpl_comm_s gpl_comm_t;

/** Communication backends. */
typedef enum gpl_backend_e {
  GPL_BACKEND_AUTO = 0, /**< nccl when built with CUDA and every rank has a GPU, cpu otherwise */
  GPL_BACKEND_NCCL,     /**< NCCL on GPU buffers and CUDA streams */
  GPL_BACKEND_CPU       /**< Open MPI on host buffers */
} gpl_backend_t;

/** Options of gpl_init(); set them with gpl_init_opts_default() first. */
typedef struct gpl_init_opts_s {
  gpl_backend_t backend; /**< AUTO (default): also overridden by GPULAUNCH_COMM_BACKEND */
  double init_timeout;   /**< seconds for NCCL communicator creation (default 60, or
                          *   GPULAUNCH_COMM_INIT_TIMEOUT) */
  double timeout;        /**< seconds any call may wait on another rank (default: GPULAUNCH_TIMEOUT,
                          *   else 60) */
  int device;            /**< CUDA device for nccl; -1 (default): local rank modulo the count of
                          *   visible devices */
} gpl_init_opts_t;

/** Fill \p opts with the defaults described in gpl_init_opts_t. */
void gpl_init_opts_default(gpl_init_opts_t *opts);

/** Create the communicator of the job this process belongs to, found from its environment:
 *  - an MPI process (MPI already initialised, e.g. a program started by mpirun that called
 *    MPI_Init): all ranks of MPI_COMM_WORLD; gpl_finalize() leaves MPI running;
 *  - started by mpirun/srun without MPI initialised: calls MPI_Init itself and MPI_Finalize in
 *    gpl_finalize();
 *  - a program wrapped by gpulaunch (GPULAUNCH_PROXY in the environment): the ranks of the
 *    gpulaunch job, reached through this rank's gpulaunch process; MPI is not initialised here;
 *  - otherwise: a job of one rank.
 * Every rank must call it; the backend is agreed by all ranks (auto falls back to cpu, with an
 * info line, when any rank lacks a GPU; an explicit nccl then fails with GPL_ENOGPU, or
 * GPL_ENOCUDA in a build without CUDA).
 * \param comm   out: the communicator
 * \param opts   options, or NULL for the defaults
 * \return 0 or a negative code (GPL_ETIMEDOUT names the ranks that did not arrive). */
int gpl_init(gpl_comm_t **comm, const gpl_init_opts_t *opts);

/** Destroy a communicator (every rank calls it) and, when gpl_init() initialised MPI, finalise MPI.
 * \return 0 or a negative code; \p comm is freed in every case. NULL is allowed. */
int gpl_finalize(gpl_comm_t *comm);

/** \return this process's rank in \p comm (0..size-1). */
int gpl_comm_rank(const gpl_comm_t *comm);
/** \return the number of ranks in \p comm. */
int gpl_comm_size(const gpl_comm_t *comm);
/** \return the rank among the ranks of this node. */
int gpl_comm_local_rank(const gpl_comm_t *comm);
/** \return the number of ranks on this node. */
int gpl_comm_local_size(const gpl_comm_t *comm);
/** \return this node's index (0..nnodes-1; torchrun's GROUP_RANK). */
int gpl_comm_node(const gpl_comm_t *comm);
/** \return the number of nodes. */
int gpl_comm_nnodes(const gpl_comm_t *comm);
/** \return the backend in use (never GPL_BACKEND_AUTO). */
gpl_backend_t gpl_comm_backend(const gpl_comm_t *comm);
/** \return the CUDA device used by the nccl backend, -1 on the cpu backend. */
int gpl_comm_device(const gpl_comm_t *comm);

/** \return "auto", "nccl" or "cpu". */
const char *gpl_backend_name(gpl_backend_t backend);
/** Parse "auto", "nccl" or "cpu". \return 0 and *out set, or GPL_EINVAL. */
int gpl_backend_parse(const char *s, gpl_backend_t *out);

/* ---- Memory and streams ---- */

/** Directions of gpl_memcpy(): host memory and comm memory. */
typedef enum gpl_copy_e {
  GPL_COPY_TO_COMM = 0, /**< host -> comm memory */
  GPL_COPY_TO_HOST,     /**< comm memory -> host */
  GPL_COPY_COMM         /**< comm memory -> comm memory */
} gpl_copy_t;

/** Allocate \p bytes of comm memory. \param ptr out: the memory (NULL when bytes is 0). */
int gpl_mem_alloc(gpl_comm_t *comm, void **ptr, size_t bytes);
/** Free memory from gpl_mem_alloc() (NULL allowed). */
int gpl_mem_free(gpl_comm_t *comm, void *ptr);
/** Copy \p bytes; ordered after the work already on \p stream, and done when the call returns. */
int gpl_memcpy(gpl_comm_t *comm, void *dst, const void *src, size_t bytes, gpl_copy_t dir,
               void *stream);
/** Wait, with the communicator's deadline, until the work on \p stream is done (nccl); returns at
 * once on the cpu backend. A deadline that passes aborts the communicator (GPL_ETIMEDOUT). */
int gpl_synchronize(gpl_comm_t *comm, void *stream);

/* ---- Collectives (NCCL semantics; comm memory; counts in elements) ---- */

/** recvbuf[i] = op over ranks of sendbuf[i], for i < count. In place when sendbuf == recvbuf.
 * GPL_OP_AVG is the sum divided by the number of ranks (integer division for integer types).
 * Half and bfloat16 are reduced in float and rounded to nearest even. */
int gpl_allreduce(gpl_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                  gpl_dtype_t dtype, gpl_redop_t op, void *stream);
/** recvbuf[r*sendcount + i] = sendbuf of rank r [i]. In place when
 * sendbuf == recvbuf + rank*sendcount elements. */
int gpl_allgather(gpl_comm_t *comm, const void *sendbuf, void *recvbuf, size_t sendcount,
                  gpl_dtype_t dtype, void *stream);
/** recvbuf[i] = op over ranks of sendbuf[rank*recvcount + i]; sendbuf holds size*recvcount
 * elements. In place when recvbuf == sendbuf + rank*recvcount elements. */
int gpl_reduce_scatter(gpl_comm_t *comm, const void *sendbuf, void *recvbuf, size_t recvcount,
                       gpl_dtype_t dtype, gpl_redop_t op, void *stream);
/** recvbuf = sendbuf of \p root on every rank (sendbuf is read on the root only). */
int gpl_broadcast(gpl_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                  gpl_dtype_t dtype, int root, void *stream);
/** recvbuf[r*count + i] = sendbuf of rank r [rank*count + i]: \p count elements to and from every
 * rank. sendbuf and recvbuf must not overlap. */
int gpl_alltoall(gpl_comm_t *comm, const void *sendbuf, void *recvbuf, size_t count,
                 gpl_dtype_t dtype, void *stream);
/** Return when every rank has called it (host-side; the nccl backend also drains its stream). */
int gpl_barrier(gpl_comm_t *comm);

/** Tell gpulaunch's hang watchdog that this rank makes progress, and (\p step >= 0) that it
 * reached step \p step, for the straggler view (`[job] hang_timeout`, `straggler_fraction`).
 * Cheap (one message, no reply, no wait on other ranks); a no-op when the program is not wrapped
 * by gpulaunch. Host collectives through gpulaunch count as progress already.
 * \param step the step number, or -1 for none
 * \return 0, GPL_EINVAL for a NULL comm, GPL_EPEER when gpulaunch cannot be reached. */
int gpl_progress(gpl_comm_t *comm, long long step);

/* ---- Dynamic loss scaling (torch.amp.GradScaler's rule) ---- */

/** Loss-scaler state, kept in comm memory so that the nccl path never syncs with the host. */
typedef struct gpl_scaler_s gpl_scaler_t;

/** A host copy of a scaler's state (gpl_scaler_read()). */
typedef struct gpl_scaler_state_s {
  float scale;              /**< current loss scale */
  int found_inf;            /**< an inf/NaN was seen since the last gpl_scaler_update() */
  int skipped;              /**< the last gpl_scaler_update() saw an overflow: skip that step */
  int good_steps;           /**< clean steps since the last growth or overflow */
  long long overflow_steps; /**< overflowed (skipped) steps so far */
} gpl_scaler_state_t;

/** Create a scaler: loss scale \p init_scale (e.g. 65536), multiplied by \p growth_factor (2) after
 * \p growth_interval (2000) clean steps and by \p backoff_factor (0.5) on an overflow. */
int gpl_scaler_create(gpl_comm_t *comm, gpl_scaler_t **scaler, float init_scale,
                      float growth_factor, float backoff_factor, int growth_interval);
/** Apply the rule once, after the step's gradients went through gpl_fused_allreduce(): on an
 * overflow halve the scale and mark the step skipped, else count a clean step; clears found_inf.
 * Asynchronous on \p stream (nccl). */
int gpl_scaler_update(gpl_comm_t *comm, gpl_scaler_t *scaler, void *stream);
/** Copy the state to the host (waits for \p stream on nccl). */
int gpl_scaler_read(gpl_comm_t *comm, const gpl_scaler_t *scaler, gpl_scaler_state_t *state,
                    void *stream);
/** Free a scaler (NULL allowed). */
void gpl_scaler_destroy(gpl_comm_t *comm, gpl_scaler_t *scaler);

/* ---- Fused gradient allreduce ---- */

/** One fp32 tensor in comm memory: any length (0 allowed), any alignment. */
typedef struct gpl_tensor_s {
  float *data;
  size_t count;
} gpl_tensor_t;

/** Options of gpl_fused_allreduce(); set them with gpl_fused_opts_default() first. */
typedef struct gpl_fused_opts_s {
  double bucket_mb;     /**< bucket size in MiB of wire data (default 25, as PyTorch DDP) */
  gpl_dtype_t wire;     /**< GPL_FLOAT (default), GPL_BFLOAT16 or GPL_HALF */
  float prescale;       /**< multiplies every value before the sum (default 1; e.g. 1/size, or
                         *   a power of two to keep fp16 sums in range) */
  float postscale;      /**< multiplies every sum (default 1) */
  gpl_scaler_t *scaler; /**< NULL, or: results are also multiplied by 1/scale and an inf/NaN sets
                         *   the scaler's found_inf (for gpl_scaler_update()) */
  int *overflow;        /**< NULL, or out: 1 when any result was inf or NaN (with a scaler: since
                         *   its last update), else 0. On nccl this waits for the stream. */
} gpl_fused_opts_t;

/** Fill \p opts with the defaults described in gpl_fused_opts_t. */
void gpl_fused_opts_default(gpl_fused_opts_t *opts);

/** Sum \p n fp32 tensors over all ranks, in place:
 *     t[i][j] = postscale / scale * sum over ranks of wire(prescale * t[i][j])
 * with the tensors packed back to back into buckets of bucket_mb (a tensor larger than a bucket is
 * split across buckets), each bucket converted to the wire dtype in one pass (round to nearest
 * even; inf and NaN kept), summed in the wire dtype, and converted back in one pass that also
 * checks for inf/NaN. An inf or NaN on any rank sets the overflow flag on every rank. Every rank
 * passes the same list of tensor lengths. Asynchronous on the nccl backend (stream), synchronous
 * on cpu. */
int gpl_fused_allreduce(gpl_comm_t *comm, const gpl_tensor_t *tensors, int n,
                        const gpl_fused_opts_t *opts, void *stream);

/** The unfused baseline for comparison: the same result computed as PyTorch DDP without bucketing
 * would: for each tensor, one pass to pre-scale, one fp32 allreduce, one pass to post-scale and
 * check (opts->wire and opts->bucket_mb are ignored). */
int gpl_unfused_allreduce(gpl_comm_t *comm, const gpl_tensor_t *tensors, int n,
                          const gpl_fused_opts_t *opts, void *stream);

#ifdef __cplusplus
}
#endif
#endif
