/* NCCL loaded at run time (dlopen): the functions the nccl backend calls, the library's version
 * and where it was found. A machine without NCCL, or with one too old, still runs gpulaunch. */
#ifndef GPL_COMM_NCCL_LIB_H
#define GPL_COMM_NCCL_LIB_H

#include <stddef.h>

#include <nccl.h>

/* Oldest NCCL the backend works with: non-blocking communicators (ncclCommInitRankConfig,
 * ncclCommFinalize, ncclCommGetAsyncError on them) and ncclGetLastError came in 2.14. */
#define NCCL_LIB_MIN_VERSION 21400

/* One pointer per NCCL function used, named as in nccl.h without the "nccl" prefix. The types
 * come from the nccl.h we build with; the ABI of each of these calls has not changed since 2.14
 * (a ncclConfig_t from a newer header is read up to the library's own size). */
typedef struct nccl_lib_s {
  __typeof__(&ncclGetVersion) GetVersion;
  __typeof__(&ncclGetUniqueId) GetUniqueId;
  __typeof__(&ncclCommInitRankConfig) CommInitRankConfig;
  __typeof__(&ncclCommGetAsyncError) CommGetAsyncError;
  __typeof__(&ncclCommFinalize) CommFinalize;
  __typeof__(&ncclCommDestroy) CommDestroy;
  __typeof__(&ncclCommAbort) CommAbort;
  __typeof__(&ncclGetErrorString) GetErrorString;
  __typeof__(&ncclGetLastError) GetLastError;
  __typeof__(&ncclAllReduce) AllReduce;
  __typeof__(&ncclAllGather) AllGather;
  __typeof__(&ncclReduceScatter) ReduceScatter;
  __typeof__(&ncclBroadcast) Broadcast;
  __typeof__(&ncclSend) Send;
  __typeof__(&ncclRecv) Recv;
  __typeof__(&ncclGroupStart) GroupStart;
  __typeof__(&ncclGroupEnd) GroupEnd;
  /* NULL where the library lacks it (ncclAlltoAll came in 2.28): alltoall is then a group of
   * ncclSend/ncclRecv, which every NCCL since 2.7 has. */
  __typeof__(&ncclAlltoAll) AlltoAll;
  int version;     /* ncclGetVersion: 22809 for 2.28.9 */
  char path[512];  /* the file that was loaded */
} nccl_lib_t;

/* Load NCCL once per process and return its table, or NULL with the reason in why (not found,
 * a missing function, older than NCCL_LIB_MIN_VERSION). Where it looks: GPULAUNCH_NCCL_LIB (a
 * file or a name) if set, else "libnccl.so.2" through the dynamic loader's search (LD_LIBRARY_PATH,
 * the program's RPATH, ld.so.cache). Not thread-safe on the first call; later calls return the
 * same answer at once. */
const nccl_lib_t *nccl_lib_load(char *why, size_t len);

/* "2.28.9" for 22809 (NCCL_VERSION_CODE >= 2.9's encoding) into buf. */
const char *nccl_lib_version_str(int code, char *buf, size_t len);

#endif
