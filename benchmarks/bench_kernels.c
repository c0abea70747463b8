/* Benchmark of the fused pack/unpack ops against memcpy (CPU) and cudaMemcpy device-to-device
 * (--gpu) over a gradient-like set of fp32 tensors; prints a Markdown table for RESULTS.md. */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "gpulaunch/error.h"
#include "kernels/fused.h"

#ifdef GPL_BENCH_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

/* Bytes are counted as read + written by each op: pack reads 4 B and writes ws B per element,
 * unpack reads ws B and writes 4 B, memcpy of n bytes reads n and writes n. Rates are 1e9 B/s. */

typedef struct bench_opts_s {
  size_t mib;
  int reps;
  int gpu;
  int cpu;
  int nwires;
  gpl_dtype_t wires[3];
} bench_opts_t;

/* A GPT-2-small-like gradient set (d=768): token and position embeddings, then per layer
 * ln/attention/MLP weights and biases, repeated until `total` floats; the last one is cut so the
 * sum is exact. Sizes range from 768 to ~38.6M elements, several of them odd multiples. */
static int make_sizes(size_t total, size_t **out) {
  const size_t d = 768;
  const size_t first[] = {50257 * d, 1024 * d};
  const size_t layer[] = {d, d, 3 * d * d, 3 * d, d * d, d, d, d, 4 * d * d, 4 * d, 4 * d * d, d};
  size_t cap = 64, n = 0, sum = 0;
  size_t *s = malloc(cap * sizeof *s);
  for (size_t i = 0; sum < total; i++) {
    size_t c = i < 2 ? first[i] : layer[(i - 2) % 12];
    if (c > total - sum) c = total - sum;
    if (n == cap) s = realloc(s, (cap *= 2) * sizeof *s);
    s[n++] = c;
    sum += c;
  }
  *out = s;
  return (int)n;
}

static const char *wire_name(gpl_dtype_t w) {
  return w == GPL_FLOAT ? "fp32" : w == GPL_BFLOAT16 ? "bf16" : "fp16";
}

static void print_header(const char *where, const char *base, size_t total, int n, size_t smin,
                         size_t smax, int reps) {
  printf("\n### bench_kernels %s: %.0f MiB of fp32 in %d tensors (%zu .. %zu elements), median of %d\n\n",
         where, (double)total * 4 / (1 << 20), n, smin, smax, reps);
  printf("| op | wire | bytes (r+w) | ms | GB/s | vs %s |\n", base);
  printf("|---|---|---:|---:|---:|---:|\n");
}

static void print_row(const char *op, const char *wire, double bytes, double sec, double base_rate) {
  double rate = bytes / sec / 1e9;
  printf("| %s | %s | %.1f MB | %.2f | %.1f | %.2f |\n", op, wire, bytes / 1e6, sec * 1e3, rate,
         rate / base_rate);
}

/* ---- CPU ---- */

static int bench_cpu(const bench_opts_t *o, const size_t *sizes, int n, size_t total) {
  /* each tensor 64-byte aligned, as an allocator would place it */
  size_t cap = 0;
  for (int i = 0; i < n; i++) cap += (sizes[i] + 15) & ~(size_t)15;
  float *arena = aligned_alloc(64, cap * sizeof(float));
  float *copy = aligned_alloc(64, total * sizeof(float));
  void *bucket = aligned_alloc(64, total * sizeof(float));
  kern_tensor_t *t = calloc((size_t)n, sizeof *t);
  double *tm = calloc((size_t)o->reps, sizeof *tm), *tp = calloc((size_t)o->reps, sizeof *tp),
         *tu = calloc((size_t)o->reps, sizeof *tu);
  if (!arena || !copy || !bucket || !t || !tm || !tp || !tu) {
    fprintf(stderr, "bench_kernels: out of memory\n");
    return 1;
  }
  size_t off = 0;
  uint64_t x = 88172645463325252ull;
  for (int i = 0; i < n; i++) {
    t[i].data = arena + off;
    t[i].count = sizes[i];
    for (size_t j = 0; j < sizes[i]; j++) { /* gradient-like values, xorshift noise */
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      t[i].data[j] = (float)((double)(int32_t)(x >> 32) * 0x1p-40);
    }
    off += (sizes[i] + 15) & ~(size_t)15;
  }
  memset(copy, 0, total * sizeof(float)); /* fault every page in before timing */
  memset(bucket, 0, total * sizeof(float));
  size_t smin = SIZE_MAX, smax = 0;
  for (int i = 0; i < n; i++) smin = GPL_MIN(smin, sizes[i]), smax = GPL_MAX(smax, sizes[i]);
  print_header("cpu", "memcpy", total, n, smin, smax, o->reps);
  kern_scaler_t sc;
  kern_scaler_init(&sc, 1024.0f, 2.0f, 0.5f, 2000);
  double mbytes = 2.0 * (double)total * 4;
  for (int w = 0; w < o->nwires; w++) {
    gpl_dtype_t wire = o->wires[w];
    double ws = (double)gpl_dtype_size(wire);
    /* memcpy, pack and unpack interleaved in each repetition so they see the same machine */
    for (int r = -1; r < o->reps; r++) {
      double t0 = util_now();
      memcpy(copy, arena, total * sizeof(float));
      double t1 = util_now();
      int rc = kern_pack_ref(t, n, bucket, wire, 0.125f);
      double t2 = util_now();
      rc |= kern_unpack_ref(bucket, wire, t, n, 8.0f, &sc);
      double t3 = util_now();
      if (rc != 0) {
        fprintf(stderr, "bench_kernels: kernel failed: %s\n", gpl_strerror(rc));
        return 1;
      }
      if (r >= 0) tm[r] = t1 - t0, tp[r] = t2 - t1, tu[r] = t3 - t2;
    }
    size_t reps = (size_t)o->reps;
    double m = util_median(tm, reps), p = util_median(tp, reps), u = util_median(tu, reps);
    double mrate = mbytes / m / 1e9, pbytes = (double)total * (4 + ws);
    print_row("memcpy", "-", mbytes, m, mrate);
    print_row("pack", wire_name(wire), pbytes, p, mrate);
    print_row("unpack", wire_name(wire), pbytes, u, mrate);
    print_row("**pack+unpack**", wire_name(wire), 2 * pbytes, p + u, mrate);
  }
  if (sc.found_inf) printf("\n(warning: an unpack saw inf/NaN)\n");
  free(arena);
  free(copy);
  free(bucket);
  free(t);
  free(tm);
  free(tp);
  free(tu);
  return 0;
}

/* ---- GPU ---- */

#ifdef GPL_BENCH_HAVE_CUDA
#define BCU(call)                                                                              \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      fprintf(stderr, "bench_kernels: %s: %s\n", #call, cudaGetErrorString(e_));               \
      return 1;                                                                                \
    }                                                                                          \
  } while (0)

static int bench_gpu(const bench_opts_t *o, const size_t *sizes, int n, size_t total) {
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    fprintf(stderr, "bench_kernels: no GPU (%s)\n", e ? cudaGetErrorString(e) : "0 devices");
    return 3;
  }
  struct cudaDeviceProp prop;
  BCU(cudaGetDeviceProperties(&prop, 0));
  size_t cap = 0;
  for (int i = 0; i < n; i++) cap += (sizes[i] + 63) & ~(size_t)63; /* 256-byte aligned tensors */
  float *arena, *copy;
  void *bucket;
  kern_scaler_t *sc, hsc;
  BCU(cudaMalloc((void **)&arena, cap * sizeof(float)));
  BCU(cudaMalloc((void **)&copy, total * sizeof(float)));
  BCU(cudaMalloc(&bucket, total * sizeof(float)));
  BCU(cudaMalloc((void **)&sc, sizeof *sc));
  kern_scaler_init(&hsc, 1024.0f, 2.0f, 0.5f, 2000);
  BCU(cudaMemcpy(sc, &hsc, sizeof hsc, cudaMemcpyHostToDevice));
  /* gradient-like values, not zeros: zeros can hide unwritten outputs and time differently */
  float *host = malloc(cap * sizeof(float));
  if (!host) return 1;
  uint64_t x = 88172645463325252ull;
  for (size_t j = 0; j < cap; j++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    host[j] = (float)((double)(int32_t)(x >> 32) * 0x1p-40);
  }
  BCU(cudaMemcpy(arena, host, cap * sizeof(float), cudaMemcpyHostToDevice));
  free(host);
  BCU(cudaMemset(copy, 0, total * sizeof(float)));
  kern_tensor_t *t = calloc((size_t)n, sizeof *t);
  size_t off = 0;
  for (int i = 0; i < n; i++) {
    t[i].data = arena + off;
    t[i].count = sizes[i];
    off += (sizes[i] + 63) & ~(size_t)63;
  }
  cudaStream_t st;
  cudaEvent_t ev[4];
  BCU(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
  for (int k = 0; k < 4; k++) BCU(cudaEventCreate(&ev[k]));
  double *tm = calloc((size_t)o->reps, sizeof *tm), *tp = calloc((size_t)o->reps, sizeof *tp),
         *tu = calloc((size_t)o->reps, sizeof *tu);
  size_t smin = SIZE_MAX, smax = 0;
  for (int i = 0; i < n; i++) smin = GPL_MIN(smin, sizes[i]), smax = GPL_MAX(smax, sizes[i]);
  char where[300];
  snprintf(where, sizeof where, "gpu (%s, sm_%d%d)", prop.name, prop.major, prop.minor);
  print_header(where, "D2D copy", total, n, smin, smax, o->reps);
  double mbytes = 2.0 * (double)total * 4;
  for (int w = 0; w < o->nwires; w++) {
    gpl_dtype_t wire = o->wires[w];
    double ws = (double)gpl_dtype_size(wire);
    for (int r = -2; r < o->reps; r++) {
      BCU(cudaEventRecord(ev[0], st));
      BCU(cudaMemcpyAsync(copy, arena, total * sizeof(float), cudaMemcpyDeviceToDevice, st));
      BCU(cudaEventRecord(ev[1], st));
      int rc = kern_pack_cuda(t, n, bucket, wire, 0.125f, st);
      BCU(cudaEventRecord(ev[2], st));
      rc |= kern_unpack_cuda(bucket, wire, t, n, 8.0f, sc, st);
      BCU(cudaEventRecord(ev[3], st));
      BCU(cudaEventSynchronize(ev[3]));
      if (rc != 0) {
        fprintf(stderr, "bench_kernels: kernel failed: %s\n", gpl_strerror(rc));
        return 1;
      }
      float ms[3];
      for (int k = 0; k < 3; k++) BCU(cudaEventElapsedTime(&ms[k], ev[k], ev[k + 1]));
      if (r >= 0) tm[r] = ms[0] * 1e-3, tp[r] = ms[1] * 1e-3, tu[r] = ms[2] * 1e-3;
    }
    size_t reps = (size_t)o->reps;
    double m = util_median(tm, reps), p = util_median(tp, reps), u = util_median(tu, reps);
    double mrate = mbytes / m / 1e9, pbytes = (double)total * (4 + ws);
    print_row("D2D copy", "-", mbytes, m, mrate);
    print_row("pack", wire_name(wire), pbytes, p, mrate);
    print_row("unpack", wire_name(wire), pbytes, u, mrate);
    print_row("**pack+unpack**", wire_name(wire), 2 * pbytes, p + u, mrate);
  }
  for (int k = 0; k < 4; k++) cudaEventDestroy(ev[k]);
  cudaStreamDestroy(st);
  cudaFree(arena);
  cudaFree(copy);
  cudaFree(bucket);
  cudaFree(sc);
  free(t);
  free(tm);
  free(tp);
  free(tu);
  return 0;
}
#endif

static void usage(FILE *f) {
  fprintf(f,
          "usage: bench_kernels [--mib N] [--reps N] [--wire fp32,bf16,fp16] [--gpu] [--gpu-only]\n"
          "  pack + unpack over N MiB of fp32 gradients (default 256) against memcpy on the CPU,\n"
          "  and with --gpu also against cudaMemcpy device-to-device; median of --reps (default 7).\n"
          "  Exit status 3 when --gpu finds no usable GPU.\n");
}

int main(int argc, char **argv) {
  bench_opts_t o = {.mib = 256, .reps = 7, .cpu = 1, .nwires = 3,
                    .wires = {GPL_FLOAT, GPL_BFLOAT16, GPL_HALF}};
  static const struct option longopts[] = {
      {"mib", required_argument, NULL, 'm'}, {"reps", required_argument, NULL, 'r'},
      {"wire", required_argument, NULL, 'w'}, {"gpu", no_argument, NULL, 'g'},
      {"gpu-only", no_argument, NULL, 'G'},  {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0}};
  int c;
  long v;
  while ((c = getopt_long(argc, argv, "m:r:w:gGh", longopts, NULL)) != -1) {
    switch (c) {
    case 'm':
      if (util_parse_long(optarg, 1, 16384, &v) < 0) return usage(stderr), 2;
      o.mib = (size_t)v;
      break;
    case 'r':
      if (util_parse_long(optarg, 1, 1000, &v) < 0) return usage(stderr), 2;
      o.reps = (int)v;
      break;
    case 'w': {
      o.nwires = 0;
      char *s = strdup(optarg), *save = NULL;
      for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        gpl_dtype_t d;
        if (gpl_dtype_parse(tok, &d) < 0 || (d != GPL_FLOAT && d != GPL_BFLOAT16 && d != GPL_HALF) ||
            o.nwires == 3) {
          fprintf(stderr, "bench_kernels: bad wire type '%s' (fp32, bf16, fp16)\n", tok);
          free(s);
          return 2;
        }
        o.wires[o.nwires++] = d;
      }
      free(s);
      break;
    }
    case 'g': o.gpu = 1; break;
    case 'G': o.gpu = 1, o.cpu = 0; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  size_t total = o.mib * (1u << 20) / 4, *sizes;
  int n = make_sizes(total, &sizes);
  int rc = 0;
  if (o.cpu) rc = bench_cpu(&o, sizes, n, total);
  if (rc == 0 && o.gpu) {
#ifdef GPL_BENCH_HAVE_CUDA
    rc = bench_gpu(&o, sizes, n, total);
#else
    fprintf(stderr, "bench_kernels: --gpu: not built with CUDA\n");
    rc = 3;
#endif
  }
  free(sizes);
  return rc;
}
