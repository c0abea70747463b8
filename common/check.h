/* Check macros: propagate negative error codes and log where they came from (NCCL's "-> rc" habit). */
#ifndef GPL_COMMON_CHECK_H
#define GPL_COMMON_CHECK_H

#include <errno.h>
#include <string.h>

#include "gpulaunch/error.h"
#include "common/log.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Log one step of an error's way up, at info level, under the subsystem of the file it is in
 * (log_subsys_of): "file:line -> -7 (ETIMEDOUT)". */
#define GPL_TRACE_(rc)                                                                      \
  do {                                                                                       \
    log_subsys_t trace_sub_ = log_subsys_of(__FILE__);                                       \
    if (log_enabled(LOG_LVL_INFO, trace_sub_))                                               \
      log_write(LOG_LVL_INFO, trace_sub_, __FILE__, __LINE__, "%s:%d -> %d (%s)", __FILE__,  \
                __LINE__, (rc), gpl_err_name(rc));                                           \
  } while (0)

/* Call something that returns 0 or a negative gpulaunch code; return the code on failure. */
#define CHECK(call)                                                                          \
  do {                                                                                       \
    int check_rc_ = (call);                                                                  \
    if (check_rc_ < 0) {                                                                     \
      GPL_TRACE_(check_rc_);                                                                 \
      return check_rc_;                                                                      \
    }                                                                                        \
  } while (0)

/* Same, but store the code in rc and jump to label (cleanup). */
#define CHECKGOTO(call, rc, label)                                                           \
  do {                                                                                       \
    (rc) = (call);                                                                           \
    if ((rc) < 0) {                                                                          \
      GPL_TRACE_(rc);                                                                        \
      goto label;                                                                            \
    }                                                                                        \
  } while (0)

/* A libc call that returns -1 and sets errno: warn with the call and strerror, return GPL_ESYS. */
#define SYSCHECK(call, what)                                                                 \
  do {                                                                                       \
    if ((call) < 0) {                                                                        \
      LOG_WARN("%s failed: %s", (what), strerror(errno));                                    \
      return GPL_ESYS;                                                                       \
    }                                                                                        \
  } while (0)

/* Allocation that must not fail silently. */
#define ALLOCCHECK(ptr)                                                                      \
  do {                                                                                       \
    if ((ptr) == NULL) {                                                                     \
      LOG_WARN("out of memory allocating %s", #ptr);                                         \
      return GPL_ENOMEM;                                                                     \
    }                                                                                        \
  } while (0)

/* hwloc calls return -1 and set errno. */
#define HWLOCCHECK(call)                                                                     \
  do {                                                                                       \
    if ((call) < 0) {                                                                        \
      LOG_WARN("hwloc call %s failed: %s", #call, strerror(errno));                          \
      return GPL_EHWLOC;                                                                     \
    }                                                                                        \
  } while (0)

/* libuv calls return 0 or a negative errno; include <uv.h> before using. */
#define UVCHECK(call)                                                                        \
  do {                                                                                       \
    int uv_rc_ = (call);                                                                     \
    if (uv_rc_ < 0) {                                                                        \
      LOG_WARN("libuv call %s failed: %s", #call, uv_strerror(uv_rc_));                      \
      return GPL_EUV;                                                                        \
    }                                                                                        \
  } while (0)

/* CUDA runtime calls: log CUDA's message and name, return (or store in rc and jump) GPL_ECUDA.
 * Include <cuda_runtime.h> before using. */
#define CUDACHECK(call)                                                                      \
  do {                                                                                       \
    cudaError_t cuda_e_ = (call);                                                            \
    if (cuda_e_ != cudaSuccess) {                                                            \
      LOG_WARN("CUDA call %s failed: %s (%s)", #call, cudaGetErrorString(cuda_e_),           \
               cudaGetErrorName(cuda_e_));                                                   \
      return GPL_ECUDA;                                                                      \
    }                                                                                        \
  } while (0)

#define CUDACHECKGOTO(call, rc, label)                                                       \
  do {                                                                                       \
    cudaError_t cuda_e_ = (call);                                                            \
    if (cuda_e_ != cudaSuccess) {                                                            \
      LOG_WARN("CUDA call %s failed: %s (%s)", #call, cudaGetErrorString(cuda_e_),           \
               cudaGetErrorName(cuda_e_));                                                   \
      (rc) = GPL_ECUDA;                                                                      \
      goto label;                                                                            \
    }                                                                                        \
  } while (0)

/* NCCL calls. NCCL is loaded at run time (comm/nccl_lib.h): lib is its table of functions, comm
 * the communicator (or NULL) whose last error NCCL describes, what the call's name as printed.
 * NCCLWARN logs NCCL's message and last error for a result r that is not ncclSuccess; NCCLCHECK
 * also logs "-> code" where it came from and returns GPL_ENCCL. Include <nccl.h> before using. */
#define NCCLWARN(lib, r, what, comm)                                                         \
  LOG_WARN("%s failed: %s (%s)", (what), (lib)->GetErrorString(r), (lib)->GetLastError(comm))

#define NCCLCHECK(lib, call, what, comm)                                                     \
  do {                                                                                       \
    ncclResult_t nccl_r_ = (call);                                                           \
    if (nccl_r_ != ncclSuccess) {                                                            \
      NCCLWARN(lib, nccl_r_, what, comm);                                                    \
      GPL_TRACE_(GPL_ENCCL);                                                                 \
      return GPL_ENCCL;                                                                      \
    }                                                                                        \
  } while (0)

/* Asserts that matter stay compiled in and report file:line. */
#define GPL_ASSERT(cond)                                                                     \
  do {                                                                                       \
    if (!(cond)) {                                                                           \
      LOG_ERROR("assertion failed: %s", #cond);                                              \
      abort();                                                                               \
    }                                                                                        \
  } while (0)

#ifdef __cplusplus
}
#endif

#endif
