/* The nccl backend: the machine's NCCL loaded at run time (comm/nccl_lib.c), bootstrapped over
 * the host transport with deadlines (non-blocking ncclCommInitRankConfig polled with
 * ncclCommGetAsyncError, abort and names on a timeout), collectives on CUDA streams ordered by
 * comm/nccl_streams.c, and the fused allreduce's steps from the kernels' CUDA versions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/internal.h"
#include "comm/nccl_lib.h"
#include "comm/nccl_streams.h"
#include "common/util.h"

/* One communicator over all ranks: every collective here is over the world, and a communicator
 * nothing uses would still cost its own connections, buffers and set-up time on every rank. */
typedef struct nccl_state_s {
  const nccl_lib_t *L; /* the NCCL functions */
  ncclComm_t world;    /* all ranks */
  nccl_streams_t st;   /* the communicator's stream and the events that order it */
  uint64_t ops;        /* NCCL operations enqueued; compared between ranks after a timeout */
} nccl_state_t;

/* Outcomes of one rank's part of a collective set-up step, exchanged between ranks. */
enum { PART_DONE = 0, PART_FAILED = 1, PART_TIMEDOUT = 2 };

static ncclDataType_t nccl_type(gpl_dtype_t dt) {
  switch (dt) {
    case GPL_INT8: return ncclInt8;
    case GPL_UINT8: return ncclUint8;
    case GPL_INT32: return ncclInt32;
    case GPL_UINT32: return ncclUint32;
    case GPL_INT64: return ncclInt64;
    case GPL_UINT64: return ncclUint64;
    case GPL_HALF: return ncclFloat16;
    case GPL_FLOAT: return ncclFloat32;
    case GPL_DOUBLE: return ncclFloat64;
    case GPL_BFLOAT16: return ncclBfloat16;
    default: return ncclFloat32;
  }
}

static ncclRedOp_t nccl_op(gpl_redop_t op) {
  switch (op) {
    case GPL_OP_PROD: return ncclProd;
    case GPL_OP_MAX: return ncclMax;
    case GPL_OP_MIN: return ncclMin;
    case GPL_OP_AVG: return ncclAvg;
    default: return ncclSum;
  }
}

/* The stream for the caller's: its own, or the communicator's ordered after the legacy stream. */
static int enter(gpl_comm_t *c, void *stream, cudaStream_t *use) {
  nccl_state_t *s = c->be_state;
  return nccl_streams_enter(&s->st, stream, use);
}

static int leave(gpl_comm_t *c, void *stream, cudaStream_t use, int rc) {
  nccl_state_t *s = c->be_state;
  if (rc < 0) return rc;
  return nccl_streams_leave(&s->st, stream, use);
}

/* ---- probe ---- */

static int nccl_probe(gpl_comm_t *c, int device, char *why, size_t len) {
  int n = 0;
  if (!nccl_lib_load(why, len)) return GPL_ENOCUDA;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    /* Without a driver (or a new enough one) every CUDA call fails this way: no GPU here. */
    snprintf(why, len, "no GPU: %s", cudaGetErrorString(e));
    (void)cudaGetLastError();
    return GPL_ENOGPU;
  }
  if (n == 0) {
    const char *vis = getenv("CUDA_VISIBLE_DEVICES");
    snprintf(why, len, "no GPU: no CUDA device is visible%s%s%s", vis ? " (CUDA_VISIBLE_DEVICES=" : "",
             vis ? vis : "", vis ? ")" : "");
    return GPL_ENOGPU;
  }
  int dev = device >= 0 ? device : c->local_rank % n;
  if (dev >= n) {
    snprintf(why, len, "no GPU: device %d asked for, %d visible", dev, n);
    return GPL_ENOGPU;
  }
  /* Create the context now: a device that is busy in exclusive mode, or broken, fails here. */
  if ((e = cudaSetDevice(dev)) != cudaSuccess || (e = cudaFree(NULL)) != cudaSuccess) {
    snprintf(why, len, "no usable GPU: device %d: %s", dev, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return GPL_ENOGPU;
  }
  if (!kern_have_cuda()) {
    snprintf(why, len, "the fused kernels were not built with CUDA");
    return GPL_ENOCUDA;
  }
  return GPL_OK;
}

/* ---- bounded waits ---- */

/* Poll a non-blocking communicator until its pending work (init, split, enqueue) is done:
 * PART_DONE, PART_FAILED (logged) or PART_TIMEDOUT at the deadline. */
static int wait_ready(const nccl_lib_t *L, ncclComm_t comm, ncclResult_t first, double deadline,
                      const char *what) {
  ncclResult_t st = first;
  double nap = 1e-4;
  while (st == ncclInProgress) {
    if (util_now() >= deadline) return PART_TIMEDOUT;
    util_sleep(nap);
    if (nap < 1e-2) nap *= 2;
    if (L->CommGetAsyncError(comm, &st) != ncclSuccess) st = ncclInternalError;
  }
  if (st != ncclSuccess) {
    NCCLWARN(L, st, what, comm);
    return PART_FAILED;
  }
  return PART_DONE;
}

/* After a set-up step, every rank tells every other (bounded) how its part ended. The step
 * succeeded only when every rank's did; otherwise the ranks that failed, timed out or never
 * answered are named. */
static int agree(gpl_comm_t *c, const char *what, int mine, double deadline, double budget) {
  int n = c->size, rc = GPL_OK;
  int *all = calloc((size_t)n, sizeof *all), *ans = calloc((size_t)n, sizeof *ans);
  int *late = calloc((size_t)n, sizeof *late), *failed = calloc((size_t)n, sizeof *failed);
  if (!all || !ans || !late || !failed) {
    rc = GPL_ENOMEM;
    goto out;
  }
  double left = deadline - util_now();
  int xrc = comm_exchange_flags(c, mine, all, ans, left > 1.0 ? left : 1.0);
  if (xrc < 0 && xrc != GPL_ETIMEDOUT) {
    rc = xrc;
    goto out;
  }
  int nlate = 0, nfailed = 0;
  for (int r = 0; r < n; r++) {
    late[r] = ans[r] == 0 || (ans[r] > 0 && all[r] == PART_TIMEDOUT);
    failed[r] = ans[r] > 0 && all[r] == PART_FAILED;
    nlate += late[r];
    nfailed += failed[r];
  }
  if (!nlate && !nfailed) goto out;
  char *l = nlate ? comm_rank_list(c, late) : NULL;
  char *f = nfailed ? comm_rank_list(c, failed) : NULL;
  if (nlate)
    LOG_ERROR("%s: ranks that did not finish within %.1f s: %s%s%s", what, budget, l ? l : "?",
              nfailed ? "; failed on " : "", nfailed && f ? f : "");
  else
    LOG_ERROR("%s failed on %s (see their messages)", what, f ? f : "?");
  free(l);
  free(f);
  rc = nlate ? GPL_ETIMEDOUT : GPL_ENCCL;
out:
  free(all);
  free(ans);
  free(late);
  free(failed);
  return rc;
}

/* ---- init / destroy ---- */

static void abort_world(nccl_state_t *s) {
  if (s->world) {
    s->L->CommAbort(s->world);
    s->world = NULL;
  }
}

/* Rank 0's unique id: GPL_OK, or GPL_ENCCL with NCCL's message logged. */
static int make_unique_id(const nccl_lib_t *L, ncclUniqueId *id) {
  NCCLCHECK(L, L->GetUniqueId(id), "ncclGetUniqueId", NULL);
  return GPL_OK;
}

static int nccl_init(gpl_comm_t *c, const gpl_init_opts_t *o) {
  char why[512];
  const nccl_lib_t *L = nccl_lib_load(why, sizeof why);
  if (!L) {
    LOG_ERROR("nccl backend: %s", why); /* probe said so already; init is reached after it */
    return GPL_ENOCUDA;
  }
  nccl_state_t *s = calloc(1, sizeof *s);
  ALLOCCHECK(s);
  s->L = L;
  c->be_state = s;
  int ndev = 0;
  CUDACHECK(cudaGetDeviceCount(&ndev));
  c->device = o->device >= 0 ? o->device : c->local_rank % ndev;
  CUDACHECK(cudaSetDevice(c->device));
  CHECK(nccl_streams_init(&s->st));

  /* Rank 0 makes the unique id and sends it with its own status, so a failure there is a message
   * on every rank rather than a hang in ncclCommInitRank. */
  struct {
    int rc;
    ncclUniqueId id;
  } uid;
  memset(&uid, 0, sizeof uid);
  if (c->rank == 0) uid.rc = make_unique_id(L, &uid.id);
  hostop_t h = {.kind = HOP_BCAST, .send = &uid, .recv = &uid, .count = sizeof uid,
                .dtype = GPL_UINT8, .root = 0};
  CHECK(comm_host_run(c, &h, "NCCL unique id broadcast"));
  if (uid.rc) {
    if (c->rank != 0) LOG_ERROR("rank 0 could not create the NCCL unique id (see its message)");
    return GPL_ENCCL;
  }

  double budget = o->init_timeout, deadline = util_now() + budget;
  ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
  cfg.blocking = 0;
  cfg.commName = "gpulaunch";
  ncclResult_t r = L->CommInitRankConfig(&s->world, c->size, uid.id, c->rank, &cfg);
  int part = r == ncclSuccess || r == ncclInProgress
                 ? wait_ready(L, s->world, r, deadline, "ncclCommInitRankConfig")
                 : PART_FAILED;
  if (part == PART_FAILED && r != ncclSuccess && r != ncclInProgress)
    NCCLWARN(L, r, "ncclCommInitRankConfig", NULL);
  int rc = agree(c, "NCCL communicator init", part, deadline + comm_grace(budget), budget);
  if (rc < 0) {
    double t_abort = util_now();
    abort_world(s);
    LOG_INFO(COMM, "nccl: communicator aborted in %.2f s", util_now() - t_abort);
    return rc;
  }
  char vs[32];
  LOG_INFO(COMM, "nccl: rank %d of %d on device %d, NCCL %s (%s)", c->rank, c->size, c->device,
           nccl_lib_version_str(L->version, vs, sizeof vs), L->path);
  return GPL_OK;
}

static void nccl_destroy(gpl_comm_t *c) {
  nccl_state_t *s = c->be_state;
  if (!s) return;
  if (c->broken) {
    abort_world(s);
  } else if (s->world) {
    /* ncclCommFinalize flushes outstanding work (collective); bounded, then destroy. */
    ncclResult_t r = s->L->CommFinalize(s->world);
    int part = r == ncclSuccess || r == ncclInProgress
                   ? wait_ready(s->L, s->world, r, util_now() + c->timeout, "ncclCommFinalize")
                   : PART_FAILED;
    if (part == PART_DONE) s->L->CommDestroy(s->world);
    else s->L->CommAbort(s->world);
    s->world = NULL;
  }
  nccl_streams_destroy(&s->st);
  free(s);
  c->be_state = NULL;
}

/* ---- collectives ---- */

/* An enqueue on a non-blocking communicator may return ncclInProgress: wait until it is in. */
static int enqueued(gpl_comm_t *c, ncclResult_t r, const char *what) {
  nccl_state_t *s = c->be_state;
  if (r == ncclSuccess) {
    s->ops++;
    return GPL_OK;
  }
  if (r != ncclInProgress) {
    NCCLWARN(s->L, r, what, s->world);
    return GPL_ENCCL;
  }
  int part = wait_ready(s->L, s->world, r, util_now() + c->timeout, what);
  if (part == PART_TIMEDOUT) {
    LOG_ERROR("%s: could not enqueue within %.1f s", what, c->timeout);
    return GPL_ETIMEDOUT;
  }
  if (part != PART_DONE) return GPL_ENCCL;
  s->ops++;
  return GPL_OK;
}

static int nccl_allreduce(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                          gpl_redop_t op, void *stream) {
  nccl_state_t *s = c->be_state;
  cudaStream_t st;
  CHECK(enter(c, stream, &st));
  return leave(c, stream, st,
               enqueued(c, s->L->AllReduce(send, recv, count, nccl_type(dt), nccl_op(op), s->world, st),
                        "ncclAllReduce"));
}

static int nccl_allgather(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                          void *stream) {
  nccl_state_t *s = c->be_state;
  cudaStream_t st;
  CHECK(enter(c, stream, &st));
  return leave(c, stream, st,
               enqueued(c, s->L->AllGather(send, recv, count, nccl_type(dt), s->world, st),
                        "ncclAllGather"));
}

static int nccl_reduce_scatter(gpl_comm_t *c, const void *send, void *recv, size_t count,
                               gpl_dtype_t dt, gpl_redop_t op, void *stream) {
  nccl_state_t *s = c->be_state;
  cudaStream_t st;
  CHECK(enter(c, stream, &st));
  return leave(c, stream, st,
               enqueued(c, s->L->ReduceScatter(send, recv, count, nccl_type(dt), nccl_op(op), s->world, st),
                        "ncclReduceScatter"));
}

static int nccl_broadcast(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                          int root, void *stream) {
  nccl_state_t *s = c->be_state;
  cudaStream_t st;
  CHECK(enter(c, stream, &st));
  return leave(c, stream, st,
               enqueued(c, s->L->Broadcast(send, recv, count, nccl_type(dt), root, s->world, st),
                        "ncclBroadcast"));
}

/* ncclAlltoAll where the library has it (2.28+); else what it does: one group of a send and a
 * receive per peer, which every NCCL since 2.7 can. */
static ncclResult_t alltoall_p2p(nccl_state_t *s, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                        int size, cudaStream_t st) {
  size_t bytes = count * gpl_dtype_size(dt);
  ncclResult_t r = s->L->GroupStart();
  for (int p = 0; p < size && r == ncclSuccess; p++) {
    r = s->L->Send((const char *)send + (size_t)p * bytes, count, nccl_type(dt), p, s->world, st);
    if (r == ncclSuccess || r == ncclInProgress)
      r = s->L->Recv((char *)recv + (size_t)p * bytes, count, nccl_type(dt), p, s->world, st);
    if (r == ncclInProgress) r = ncclSuccess;
  }
  /* A group opened must be closed, whatever went wrong inside it. */
  ncclResult_t e = s->L->GroupEnd();
  return r != ncclSuccess ? r : e;
}

static int nccl_alltoall(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                         void *stream) {
  nccl_state_t *s = c->be_state;
  cudaStream_t st;
  CHECK(enter(c, stream, &st));
  if (s->L->AlltoAll)
    return leave(c, stream, st,
                 enqueued(c, s->L->AlltoAll(send, recv, count, nccl_type(dt), s->world, st),
                          "ncclAlltoAll"));
  return leave(c, stream, st,
               enqueued(c, alltoall_p2p(s, send, recv, count, dt, c->size, st),
                        "alltoall (ncclSend/ncclRecv group)"));
}

/* Wait for a stream with the communicator's deadline; NCCL errors end the wait at once. On the
 * deadline, the ranks compare how many operations they enqueued (bounded), so the message says
 * who is behind or missing; then the communicator is aborted. */
static int nccl_synchronize(gpl_comm_t *c, void *stream) {
  nccl_state_t *s = c->be_state;
  cudaStream_t st = stream ? (cudaStream_t)stream : s->st.own;
  double deadline = util_now() + c->timeout, nap = 2e-5;
  for (;;) {
    cudaError_t e = cudaStreamQuery(st);
    if (e == cudaSuccess) return GPL_OK;
    if (e != cudaErrorNotReady) {
      LOG_WARN("CUDA stream failed: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
      return GPL_ECUDA;
    }
    ncclResult_t ae = ncclSuccess;
    s->L->CommGetAsyncError(s->world, &ae);
    if (ae != ncclSuccess && ae != ncclInProgress) {
      LOG_ERROR("NCCL failed while waiting for the stream: %s (%s)", s->L->GetErrorString(ae),
                s->L->GetLastError(s->world));
      abort_world(s);
      return GPL_ENCCL;
    }
    if (util_now() >= deadline) break;
    util_sleep(nap);
    if (nap < 1e-3) nap *= 2;
  }
  /* Abort first: it ends the kernels that wait for the missing peers, so the stream drains. */
  abort_world(s);
  int n = c->size, mine = (int)(s->ops & 0x7fffffff);
  int *all = calloc((size_t)n, sizeof *all), *ans = calloc((size_t)n, sizeof *ans);
  int *missing = calloc((size_t)n, sizeof *missing), *behind = calloc((size_t)n, sizeof *behind);
  if (all && ans && missing && behind) {
    (void)comm_exchange_flags(c, mine, all, ans, comm_grace(c->timeout));
    int nm = 0, nb = 0;
    for (int r = 0; r < n; r++) {
      missing[r] = ans[r] == 0;
      behind[r] = ans[r] > 0 && all[r] < mine;
      nm += missing[r];
      nb += behind[r];
    }
    char *lm = nm ? comm_missing_list(c, ans) : NULL, *lb = nb ? comm_rank_list(c, behind) : NULL;
    LOG_ERROR("NCCL operations did not complete within %.1f s (NCCL operation #%d)%s%s%s%s; "
              "communicator aborted", c->timeout, mine, nm ? ": no answer from " : "",
              nm && lm ? lm : "", nb ? "; behind (fewer operations enqueued): " : "",
              nb && lb ? lb : "");
    free(lm);
    free(lb);
  } else {
    LOG_ERROR("NCCL operations did not complete within %.1f s; communicator aborted", c->timeout);
  }
  free(all);
  free(ans);
  free(missing);
  free(behind);
  return GPL_ETIMEDOUT;
}

static int nccl_barrier(gpl_comm_t *c) {
  CHECK(nccl_synchronize(c, NULL));
  hostop_t h = {.kind = HOP_BARRIER};
  return comm_host_run(c, &h, "barrier");
}

/* ---- memory ---- */

static int nccl_mem_alloc(gpl_comm_t *c, void **p, size_t bytes) {
  (void)c;
  cudaError_t e = cudaMalloc(p, bytes);
  if (e != cudaSuccess) {
    LOG_WARN("cudaMalloc of %zu bytes failed: %s", bytes, cudaGetErrorString(e));
    *p = NULL;
    return e == cudaErrorMemoryAllocation ? GPL_ENOMEM : GPL_ECUDA;
  }
  return GPL_OK;
}

static void nccl_mem_free(gpl_comm_t *c, void *p) {
  (void)c;
  cudaFree(p);
}

static int nccl_memcpy(gpl_comm_t *c, void *dst, const void *src, size_t bytes, gpl_copy_t dir,
                       void *stream) {
  enum cudaMemcpyKind kind = dir == GPL_COPY_TO_COMM   ? cudaMemcpyHostToDevice
                             : dir == GPL_COPY_TO_HOST ? cudaMemcpyDeviceToHost
                                                       : cudaMemcpyDeviceToDevice;
  cudaStream_t st;
  CHECK(enter(c, stream, &st));
  CUDACHECK(cudaMemcpyAsync(dst, src, bytes, kind, st));
  CHECK(leave(c, stream, st, GPL_OK));
  return nccl_synchronize(c, stream);
}

/* ---- fused steps ---- */

static int nccl_pack(gpl_comm_t *c, const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire,
                     float prescale, void *stream) {
  cudaStream_t st;
  CHECK(enter(c, stream, &st));
  return leave(c, stream, st, kern_pack_cuda(t, n, bucket, wire, prescale, st));
}

static int nccl_unpack(gpl_comm_t *c, const void *bucket, gpl_dtype_t wire, const kern_tensor_t *t,
                       int n, float postscale, kern_scaler_t *sc, void *stream) {
  cudaStream_t st;
  CHECK(enter(c, stream, &st));
  return leave(c, stream, st, kern_unpack_cuda(bucket, wire, t, n, postscale, sc, st));
}

static int nccl_scaler_update(gpl_comm_t *c, kern_scaler_t *sc, void *stream) {
  cudaStream_t st;
  CHECK(enter(c, stream, &st));
  return leave(c, stream, st, kern_scaler_update_cuda(sc, st));
}

/* The steps between acquire and release run on `use` (for a NULL stream the communicator's,
 * entered once here and left once at release), so each step's own enter and leave do nothing. */
static int nccl_scratch_acquire(gpl_comm_t *c, void *stream, void **use) {
  nccl_state_t *s = c->be_state;
  cudaStream_t st;
  CHECK(enter(c, stream, &st));
  CHECK(nccl_streams_scratch_acquire(&s->st, st));
  *use = st;
  return GPL_OK;
}

static int nccl_scratch_release(gpl_comm_t *c, void *stream, void *use) {
  nccl_state_t *s = c->be_state;
  CHECK(nccl_streams_scratch_release(&s->st, (cudaStream_t)use));
  return leave(c, stream, (cudaStream_t)use, GPL_OK);
}

static int nccl_scratch_idle(gpl_comm_t *c) {
  nccl_state_t *s = c->be_state;
  return nccl_streams_scratch_idle(&s->st, c->timeout);
}

const comm_backend_t comm_backend_nccl = {
    .kind = GPL_BACKEND_NCCL,
    .name = "nccl",
    .probe = nccl_probe,
    .init = nccl_init,
    .destroy = nccl_destroy,
    .allreduce = nccl_allreduce,
    .allgather = nccl_allgather,
    .reduce_scatter = nccl_reduce_scatter,
    .broadcast = nccl_broadcast,
    .alltoall = nccl_alltoall,
    .barrier = nccl_barrier,
    .synchronize = nccl_synchronize,
    .mem_alloc = nccl_mem_alloc,
    .mem_free = nccl_mem_free,
    .memcpy = nccl_memcpy,
    .pack = nccl_pack,
    .unpack = nccl_unpack,
    .scaler_update = nccl_scaler_update,
    .scratch_acquire = nccl_scratch_acquire,
    .scratch_release = nccl_scratch_release,
    .scratch_idle = nccl_scratch_idle,
};
