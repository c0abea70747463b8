/* gpulaunch public error codes: 0 or a negative code from one table, with names and messages. */
#ifndef GPULAUNCH_ERROR_H
#define GPULAUNCH_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

/* Every gpulaunch function that can fail returns 0 on success or one of these negative codes.
 * XX(NAME, value, message) */
#define GPL_ERR_MAP(XX)                                                        \
  XX(EINVAL, -1, "invalid argument")                                           \
  XX(ENOMEM, -2, "out of memory")                                              \
  XX(ESYS, -3, "system call failed")                                           \
  XX(ECONFIG, -4, "configuration error")                                       \
  XX(ETOPO, -5, "topology error")                                              \
  XX(ENET, -6, "network interface error")                                      \
  XX(ETIMEDOUT, -7, "timed out waiting for other ranks")                       \
  XX(EMPI, -8, "MPI error")                                                    \
  XX(ECUDA, -9, "CUDA error")                                                  \
  XX(ENCCL, -10, "NCCL error")                                                 \
  XX(ENOGPU, -11, "no usable GPU")                                             \
  XX(ENOCUDA, -12, "not built with CUDA")                                      \
  XX(EUV, -13, "libuv error")                                                  \
  XX(EPEER, -14, "another rank failed")                                        \
  XX(ENOTSUP, -15, "not supported")                                            \
  XX(EIO, -16, "input/output error")                                           \
  XX(EHWLOC, -17, "hwloc error")                                               \
  XX(ENOENT, -18, "no such file or object")                                    \
  XX(ERANGE, -19, "value out of range")                                        \
  XX(EUNREACH, -20, "peer unreachable")                                        \
  XX(ECHECK, -21, "result check failed")                                       \
  XX(EPROTO, -22, "protocol error")                                            \
  XX(ESTATE, -23, "wrong state for this call")                                 \
  XX(EAUTH, -24, "peer failed authentication")

typedef enum gpl_err_e {
  GPL_OK = 0,
#define GPL_ERR_ENUM_(name, val, msg) GPL_##name = (val),
  GPL_ERR_MAP(GPL_ERR_ENUM_)
#undef GPL_ERR_ENUM_
} gpl_err_t;

/** \return a static message for \p err ("success" for 0, "unknown error" otherwise). */
const char *gpl_strerror(int err);
/** \return the code's name without prefix ("ETIMEDOUT"), or "UNKNOWN". */
const char *gpl_err_name(int err);

#ifdef __cplusplus
}
#endif
#endif
