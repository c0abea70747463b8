/* NCCL loaded at run time: find libnccl.so.2, resolve the functions the backend calls, check the
 * version. The machine's own NCCL is used (a GPU machine's PyTorch wheel, say): it is far too big to
 * ship, and may be older or newer than the nccl.h we were built with. */
#include "comm/nccl_lib.h"

#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/envvar.h"
#include "common/log.h"
#include "common/util.h"

static nccl_lib_t g_lib;
static int g_state; /* 0 not tried, 1 loaded, -1 failed */
static char g_why[1024];

const char *nccl_lib_version_str(int code, char *buf, size_t len) {
  if (code >= 20900) snprintf(buf, len, "%d.%d.%d", code / 10000, (code / 100) % 100, code % 100);
  else snprintf(buf, len, "%d.%d.%d", code / 1000, (code / 100) % 10, code % 100);
  return buf;
}

/* dlsym into a typed pointer (a cast through memcpy: ISO C has no void* -> function cast). */
static int sym(void *h, const char *name, void *fp, size_t fpsize, int required) {
  void *p = dlsym(h, name);
  if (!p && required) {
    snprintf(g_why, sizeof g_why, "%.500s has no %.100s (NCCL older than 2.14?)", g_lib.path, name);
    return -1;
  }
  memcpy(fp, &p, fpsize);
  return 0;
}

static int load(void) {
  const char *want = envvar_get(ENVVAR_NCCL_LIB);
  if (!want || !*want) want = "libnccl.so.2";
  /* RTLD_NODELETE: NCCL starts threads and allocates at load; never unmap it under them. */
  void *h = dlopen(want, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
  if (!h) {
    snprintf(g_why, sizeof g_why, "NCCL not found: %.700s%s", dlerror(),
             envvar_get(ENVVAR_NCCL_LIB) ? "" : " (set GPULAUNCH_NCCL_LIB=/path/to/libnccl.so.2)");
    return -1;
  }
  struct link_map *lm = NULL;
  if (dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name && *lm->l_name)
    util_strlcpy(g_lib.path, lm->l_name, sizeof g_lib.path);
  else
    util_strlcpy(g_lib.path, want, sizeof g_lib.path);
#define NCCL_SYM(field, req)                                                                     \
  if (sym(h, "nccl" #field, &g_lib.field, sizeof g_lib.field, (req)) < 0) return -1
  NCCL_SYM(GetVersion, 1);
  NCCL_SYM(GetUniqueId, 1);
  NCCL_SYM(CommInitRankConfig, 1);
  NCCL_SYM(CommGetAsyncError, 1);
  NCCL_SYM(CommFinalize, 1);
  NCCL_SYM(CommDestroy, 1);
  NCCL_SYM(CommAbort, 1);
  NCCL_SYM(GetErrorString, 1);
  NCCL_SYM(GetLastError, 1);
  NCCL_SYM(AllReduce, 1);
  NCCL_SYM(AllGather, 1);
  NCCL_SYM(ReduceScatter, 1);
  NCCL_SYM(Broadcast, 1);
  NCCL_SYM(Send, 1);
  NCCL_SYM(Recv, 1);
  NCCL_SYM(GroupStart, 1);
  NCCL_SYM(GroupEnd, 1);
  NCCL_SYM(AlltoAll, 0);
#undef NCCL_SYM
  int v = 0;
  if (g_lib.GetVersion(&v) != ncclSuccess) {
    snprintf(g_why, sizeof g_why, "%.500s: ncclGetVersion failed", g_lib.path);
    return -1;
  }
  g_lib.version = v;
  char vs[32];
  if (v < NCCL_LIB_MIN_VERSION) {
    snprintf(g_why, sizeof g_why, "%.500s is NCCL %s; the nccl backend needs 2.14 or newer", g_lib.path,
             nccl_lib_version_str(v, vs, sizeof vs));
    return -1;
  }
  LOG_INFO(COMM, "NCCL %s from %s (built with nccl.h %d.%d.%d)%s", nccl_lib_version_str(v, vs, sizeof vs),
           g_lib.path, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH,
           g_lib.AlltoAll ? "" : "; no ncclAlltoAll: alltoall through ncclSend/ncclRecv");
  return 0;
}

const nccl_lib_t *nccl_lib_load(char *why, size_t len) {
  if (g_state == 0) g_state = load() == 0 ? 1 : -1;
  if (g_state < 0) {
    if (why) util_strlcpy(why, g_why, len);
    return NULL;
  }
  return &g_lib;
}
