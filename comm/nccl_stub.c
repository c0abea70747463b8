/* The nccl backend of a build without CUDA/NCCL: it says so, and auto falls back to cpu. */
#include <stdio.h>

#include "comm/internal.h"

static int stub_probe(gpl_comm_t *c, int device, char *why, size_t len) {
  (void)c;
  (void)device;
  snprintf(why, len, "not built with CUDA (configure with -DGPULAUNCH_CUDA=ON and NCCL present)");
  return GPL_ENOCUDA;
}

static int stub_init(gpl_comm_t *c, const gpl_init_opts_t *o) {
  (void)c;
  (void)o;
  LOG_ERROR("nccl backend: not built with CUDA");
  return GPL_ENOCUDA;
}

/* Only probe and init are ever reached: init fails, so no communicator has this backend. */
const comm_backend_t comm_backend_nccl = {
    .kind = GPL_BACKEND_NCCL,
    .name = "nccl",
    .probe = stub_probe,
    .init = stub_init,
};
