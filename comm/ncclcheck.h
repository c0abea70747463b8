/* NCCL check macros: log NCCL's own error string and where, convert to a gpulaunch code (NCCL's
 * checks.h habit). Only for files compiled with NCCL; CUDACHECK is in common/check.h. */
#ifndef GPL_COMM_NCCLCHECK_H
#define GPL_COMM_NCCLCHECK_H

#include <cuda_runtime.h>
#include <nccl.h>

#include "common/check.h"

/* ncclInProgress is not an error: non-blocking communicators return it while work is being set
 * up, and the caller polls ncclCommGetAsyncError. */
#define NCCLCHECK(call)                                                                      \
  do {                                                                                       \
    ncclResult_t nccl_r_ = (call);                                                           \
    if (nccl_r_ != ncclSuccess && nccl_r_ != ncclInProgress) {                               \
      LOG_WARN("NCCL call %s failed: %s (%s)", #call, ncclGetErrorString(nccl_r_),           \
               ncclGetLastError(NULL));                                                      \
      return GPL_ENCCL;                                                                      \
    }                                                                                        \
  } while (0)

#define NCCLCHECKGOTO(call, rc, label)                                                       \
  do {                                                                                       \
    ncclResult_t nccl_r_ = (call);                                                           \
    if (nccl_r_ != ncclSuccess && nccl_r_ != ncclInProgress) {                               \
      LOG_WARN("NCCL call %s failed: %s (%s)", #call, ncclGetErrorString(nccl_r_),           \
               ncclGetLastError(NULL));                                                      \
      (rc) = GPL_ENCCL;                                                                      \
      goto label;                                                                            \
    }                                                                                        \
  } while (0)

#endif
