/* The cpu backend: collectives on host buffers through the host transport (Open MPI, or the
 * gpulaunch proxy), and the fused allreduce's elementwise steps from the kernels' C reference. */
#include <string.h>

#include "comm/internal.h"

static int cpu_probe(gpl_comm_t *c, int device, char *why, size_t len) {
  (void)c;
  (void)device;
  (void)why;
  (void)len;
  return GPL_OK;
}

static int cpu_init(gpl_comm_t *c, const gpl_init_opts_t *o) {
  (void)o;
  c->device = -1;
  return GPL_OK;
}

static void cpu_destroy(gpl_comm_t *c) { (void)c; }

static int cpu_allreduce(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                         gpl_redop_t op, void *stream) {
  (void)stream;
  hostop_t h = {.kind = HOP_ALLREDUCE, .send = send, .recv = recv, .count = count, .dtype = dt,
                .op = op};
  return comm_host_run(c, &h, "allreduce");
}

static int cpu_allgather(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                         void *stream) {
  (void)stream;
  hostop_t h = {.kind = HOP_ALLGATHER, .send = send, .recv = recv, .count = count, .dtype = dt};
  return comm_host_run(c, &h, "allgather");
}

static int cpu_reduce_scatter(gpl_comm_t *c, const void *send, void *recv, size_t count,
                              gpl_dtype_t dt, gpl_redop_t op, void *stream) {
  (void)stream;
  hostop_t h = {.kind = HOP_REDUCE_SCATTER, .send = send, .recv = recv, .count = count,
                .dtype = dt, .op = op};
  return comm_host_run(c, &h, "reduce-scatter");
}

static int cpu_broadcast(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                         int root, void *stream) {
  (void)stream;
  hostop_t h = {.kind = HOP_BCAST, .send = send, .recv = recv, .count = count, .dtype = dt,
                .root = root};
  return comm_host_run(c, &h, "broadcast");
}

static int cpu_alltoall(gpl_comm_t *c, const void *send, void *recv, size_t count, gpl_dtype_t dt,
                        void *stream) {
  (void)stream;
  hostop_t h = {.kind = HOP_ALLTOALL, .send = send, .recv = recv, .count = count, .dtype = dt};
  return comm_host_run(c, &h, "alltoall");
}

static int cpu_barrier(gpl_comm_t *c) {
  hostop_t h = {.kind = HOP_BARRIER};
  return comm_host_run(c, &h, "barrier");
}

static int cpu_synchronize(gpl_comm_t *c, void *stream) {
  (void)c;
  (void)stream;
  return GPL_OK; /* every cpu collective is done when it returns */
}

static int cpu_mem_alloc(gpl_comm_t *c, void **p, size_t bytes) { return c->xp->alloc(c, p, bytes); }

static void cpu_mem_free(gpl_comm_t *c, void *p) { c->xp->free(c, p); }

static int cpu_memcpy(gpl_comm_t *c, void *dst, const void *src, size_t bytes, gpl_copy_t dir,
                      void *stream) {
  (void)c;
  (void)dir;
  (void)stream;
  if (bytes) memmove(dst, src, bytes);
  return GPL_OK;
}

static int cpu_pack(gpl_comm_t *c, const kern_tensor_t *t, int n, void *bucket, gpl_dtype_t wire,
                    float prescale, void *stream) {
  (void)c;
  (void)stream;
  return kern_pack_ref(t, n, bucket, wire, prescale);
}

static int cpu_unpack(gpl_comm_t *c, const void *bucket, gpl_dtype_t wire, const kern_tensor_t *t,
                      int n, float postscale, kern_scaler_t *sc, void *stream) {
  (void)c;
  (void)stream;
  return kern_unpack_ref(bucket, wire, t, n, postscale, sc);
}

static int cpu_scaler_update(gpl_comm_t *c, kern_scaler_t *sc, void *stream) {
  (void)c;
  (void)stream;
  kern_scaler_update_ref(sc);
  return GPL_OK;
}

const comm_backend_t comm_backend_cpu = {
    .kind = GPL_BACKEND_CPU,
    .name = "cpu",
    .probe = cpu_probe,
    .init = cpu_init,
    .destroy = cpu_destroy,
    .allreduce = cpu_allreduce,
    .allgather = cpu_allgather,
    .reduce_scatter = cpu_reduce_scatter,
    .broadcast = cpu_broadcast,
    .alltoall = cpu_alltoall,
    .barrier = cpu_barrier,
    .synchronize = cpu_synchronize,
    .mem_alloc = cpu_mem_alloc,
    .mem_free = cpu_mem_free,
    .memcpy = cpu_memcpy,
    .pack = cpu_pack,
    .unpack = cpu_unpack,
    .scaler_update = cpu_scaler_update,
};
