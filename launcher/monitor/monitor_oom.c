/* Recognise a GPU out-of-memory error in a line of the wrapped program's output. */
#include <ctype.h>
#include <string.h>

#include "launcher/monitor/monitor.h"

/* Phrases that mean a GPU allocation failed, whatever else the line says (lower case). */
static const char *const definite[] = {
    "cuda out of memory",          /* PyTorch: "torch.OutOfMemoryError: CUDA out of memory." */
    "cuda.outofmemoryerror",       /* torch.cuda.OutOfMemoryError */
    "torch.outofmemoryerror",
    "cudaerrormemoryallocation",   /* CUDA runtime error name */
    "cuda_error_out_of_memory",    /* CUDA driver API */
    "cublas_status_alloc_failed",
    "cudnn_status_alloc_failed",
    "cusolver_status_alloc_failed",
    "cufft_alloc_failed",
    "ncclsystemerror: cuda failure 'out of memory'",
    "resource_exhausted: out of memory while trying to allocate", /* XLA / JAX on GPU */
};

/* "out of memory" counts only next to one of these words: a host OOM says otherwise. */
static const char *const gpu_context[] = {"cuda", "gpu", "device memory", "nccl", "cublas",
                                          "cudnn", "torch", "vram", "nvidia"};
/* ...and never with these (the kernel's OOM killer, malloc failing). */
static const char *const host_context[] = {"oom-kill", "killed process", "cannot allocate memory",
                                           "host memory", "std::bad_alloc", "memoryerror:"};

int mon_is_cuda_oom(const char *line, size_t len) {
  char low[1024];
  size_t n = len < sizeof low - 1 ? len : sizeof low - 1;
  for (size_t i = 0; i < n; i++) low[i] = (char)tolower((unsigned char)line[i]);
  low[n] = 0;
  for (size_t i = 0; i < sizeof definite / sizeof *definite; i++)
    if (strstr(low, definite[i])) return 1;
  int oom = strstr(low, "out of memory") != NULL ||
            (strstr(low, "oom when allocating") != NULL && strstr(low, "gpu") != NULL);
  if (!oom) return 0;
  for (size_t i = 0; i < sizeof host_context / sizeof *host_context; i++)
    if (strstr(low, host_context[i])) return 0;
  for (size_t i = 0; i < sizeof gpu_context / sizeof *gpu_context; i++)
    if (strstr(low, gpu_context[i])) return 1;
  return 0;
}
