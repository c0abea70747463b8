/* The nccl backend on one GPU (a job of one): every collective on device buffers, the fused
 * allreduce (CUDA pack/unpack + NCCL) against the kernels' C reference bit for bit, the overflow
 * flag and the loss scaler in device memory, the unfused baseline, a stream of the caller's.
 * Without a GPU or without CUDA in the build it says why and exits 77 (skipped). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpulaunch/gpulaunch.h"
#include "kernels/fused.h"
#include "tests/mpi_check.h"
#ifdef GPULAUNCH_HAVE_NCCL
#include <cuda_runtime.h>
#endif

static gpl_comm_t *g_c;

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static float gen(int t, size_t j) {
  double u = (double)(mix(mix((uint64_t)t) ^ j) >> 11) * 0x1p-53 * 2 - 1;
  return (float)ldexp(u, (int)(mix((uint64_t)t + 99) % 13) - 6);
}

/* With one rank every collective is a copy (avg of one value is itself): device plumbing, dtypes,
 * ops, in place. */
static void collectives(void) {
  mpi_check_case = "collectives";
  enum { N = 1001 };
  static const gpl_dtype_t dts[] = {GPL_INT8, GPL_INT32, GPL_UINT64, GPL_HALF, GPL_FLOAT,
                                    GPL_DOUBLE, GPL_BFLOAT16};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    size_t bytes = N * gpl_dtype_size(dts[k]);
    unsigned char *in = malloc(bytes), *out = malloc(bytes);
    for (size_t b = 0; b < bytes; b++) in[b] = (unsigned char)(mix(b + k) & 0x3f); /* no NaNs */
    void *d_in, *d_out;
    MPI_CHECK_OK(gpl_mem_alloc(g_c, &d_in, bytes));
    MPI_CHECK_OK(gpl_mem_alloc(g_c, &d_out, bytes));
    MPI_CHECK_OK(gpl_memcpy(g_c, d_in, in, bytes, GPL_COPY_TO_COMM, NULL));
    for (int op = 0; op < GPL_REDOP_COUNT; op++) {
      MPI_CHECK_OK(gpl_allreduce(g_c, d_in, d_out, N, dts[k], (gpl_redop_t)op, NULL));
      MPI_CHECK_OK(gpl_synchronize(g_c, NULL));
      MPI_CHECK_OK(gpl_memcpy(g_c, out, d_out, bytes, GPL_COPY_TO_HOST, NULL));
      if (memcmp(in, out, bytes)) MPI_CHECK_FAIL("allreduce %s %s of one rank is not a copy", gpl_dtype_name(dts[k]), gpl_redop_name((gpl_redop_t)op));
    }
    MPI_CHECK_OK(gpl_allgather(g_c, d_in, d_out, N, dts[k], NULL));
    MPI_CHECK_OK(gpl_memcpy(g_c, out, d_out, bytes, GPL_COPY_TO_HOST, NULL));
    MPI_CHECK(memcmp(in, out, bytes) == 0);
    MPI_CHECK_OK(gpl_reduce_scatter(g_c, d_in, d_out, N, dts[k], GPL_OP_SUM, NULL));
    MPI_CHECK_OK(gpl_memcpy(g_c, out, d_out, bytes, GPL_COPY_TO_HOST, NULL));
    MPI_CHECK(memcmp(in, out, bytes) == 0);
    MPI_CHECK_OK(gpl_broadcast(g_c, d_in, d_out, N, dts[k], 0, NULL));
    MPI_CHECK_OK(gpl_memcpy(g_c, out, d_out, bytes, GPL_COPY_TO_HOST, NULL));
    MPI_CHECK(memcmp(in, out, bytes) == 0);
    MPI_CHECK_OK(gpl_alltoall(g_c, d_in, d_out, N, dts[k], NULL));
    MPI_CHECK_OK(gpl_memcpy(g_c, out, d_out, bytes, GPL_COPY_TO_HOST, NULL));
    MPI_CHECK(memcmp(in, out, bytes) == 0);
    MPI_CHECK_OK(gpl_mem_free(g_c, d_in));
    MPI_CHECK_OK(gpl_mem_free(g_c, d_out));
    free(in);
    free(out);
  }
  MPI_CHECK_OK(gpl_barrier(g_c));
}

/* Fused on the GPU == the C reference on the host, bit for bit (with one rank NCCL's sum is the
 * value itself), for every wire dtype, pre/post/loss scale, small buckets, odd and misaligned
 * tensors; then the overflow flag and the scaler rule on the device. */
static void fused(void *stream) {
  static const size_t len[] = {0, 1, 3, 1000, 4097, 17, 0, 65539, 13107, 13108, 777};
  enum { NT = sizeof len / sizeof len[0] };
  static const gpl_dtype_t wires[] = {GPL_FLOAT, GPL_BFLOAT16, GPL_HALF};
  for (int w = 0; w < 3; w++) {
    char name[64];
    snprintf(name, sizeof name, "fused %s", gpl_dtype_name(wires[w]));
    mpi_check_case = name;
    size_t total = 0;
    for (int i = 0; i < NT; i++) total += len[i] + 1;
    float *host = malloc(total * sizeof *host), *ref = malloc(total * sizeof *ref), *d = NULL;
    MPI_CHECK_OK(gpl_mem_alloc(g_c, (void **)&d, total * sizeof *d));
    gpl_tensor_t t[NT];
    kern_tensor_t rt[NT];
    size_t off = 0;
    for (int i = 0; i < NT; i++) {
      off += (size_t)(i & 1); /* odd tensors one float past an aligned start */
      for (size_t j = 0; j < len[i]; j++) host[off + j] = gen(i + 10 * w, j);
      t[i] = (gpl_tensor_t){d + off, len[i]};
      rt[i] = (kern_tensor_t){ref + off, len[i]};
      off += len[i];
    }
    memcpy(ref, host, total * sizeof *ref);
    MPI_CHECK_OK(gpl_memcpy(g_c, d, host, total * sizeof *d, GPL_COPY_TO_COMM, stream));
    gpl_scaler_t *sc;
    MPI_CHECK_OK(gpl_scaler_create(g_c, &sc, 1024.0f, 2.0f, 0.5f, 2000));
    gpl_fused_opts_t o;
    gpl_fused_opts_default(&o);
    o.wire = wires[w];
    o.bucket_mb = 0.05;
    o.prescale = 0.25f;
    o.postscale = 4.0f;
    o.scaler = sc;
    MPI_CHECK_OK(gpl_fused_allreduce(g_c, t, NT, &o, stream)); /* asynchronous */
    MPI_CHECK_OK(gpl_synchronize(g_c, stream));
    MPI_CHECK_OK(gpl_memcpy(g_c, host, d, total * sizeof *d, GPL_COPY_TO_HOST, stream));
    /* the reference: the same buckets through the C code (a sum over one rank is the value) */
    kern_scaler_t hs;
    kern_scaler_init(&hs, 1024.0f, 2.0f, 0.5f, 2000);
    size_t cap = (size_t)(0.05 * 1048576.0) / gpl_dtype_size(wires[w]);
    void *bucket = malloc(cap * 4);
    for (int i = 0; i < NT; i++)
      for (size_t a = 0; a < len[i]; a += cap) { /* buckets never mix results: per slice is the same */
        kern_tensor_t s = {rt[i].data + a, len[i] - a < cap ? len[i] - a : cap};
        kern_pack_ref(&s, 1, bucket, wires[w], 0.25f);
        kern_unpack_ref(bucket, wires[w], &s, 1, 4.0f, &hs);
      }
    free(bucket);
    long diff = 0;
    for (size_t k = 0; k < total; k++)
      if (memcmp(&host[k], &ref[k], sizeof(float)) && diff++ < 5)
        MPI_CHECK_FAIL("element %zu: GPU %.9g, C reference %.9g", k, host[k], ref[k]);
    if (diff) MPI_CHECK_FAIL("%ld elements differ from the C reference", diff);

    /* an inf: the flag, then the scaler rule on the device */
    float inf = INFINITY;
    MPI_CHECK_OK(gpl_memcpy(g_c, t[3].data + 5, &inf, sizeof inf, GPL_COPY_TO_COMM, stream));
    int overflow = -1;
    o.overflow = &overflow;
    MPI_CHECK_OK(gpl_fused_allreduce(g_c, t, NT, &o, stream));
    MPI_CHECK_INT(overflow, 1);
    MPI_CHECK_OK(gpl_scaler_update(g_c, sc, stream));
    gpl_scaler_state_t st;
    MPI_CHECK_OK(gpl_scaler_read(g_c, sc, &st, stream));
    MPI_CHECK_INT(st.skipped, 1);
    MPI_CHECK_INT(st.overflow_steps, 1);
    MPI_CHECK(st.scale == 512.0f);
    /* unfused (fp32, per tensor) agrees with fused fp32 bit for bit on one rank */
    if (wires[w] == GPL_FLOAT) {
      MPI_CHECK_OK(gpl_memcpy(g_c, d, ref, total * sizeof *d, GPL_COPY_TO_COMM, stream));
      gpl_fused_opts_t u = o;
      u.scaler = NULL;
      u.overflow = &overflow;
      MPI_CHECK_OK(gpl_unfused_allreduce(g_c, t, NT, &u, stream));
      MPI_CHECK_INT(overflow, 0);
      MPI_CHECK_OK(gpl_memcpy(g_c, host, d, total * sizeof *d, GPL_COPY_TO_HOST, stream));
      MPI_CHECK_OK(gpl_memcpy(g_c, d, ref, total * sizeof *d, GPL_COPY_TO_COMM, stream));
      MPI_CHECK_OK(gpl_fused_allreduce(g_c, t, NT, &u, stream));
      MPI_CHECK_OK(gpl_memcpy(g_c, ref, d, total * sizeof *d, GPL_COPY_TO_HOST, stream));
      MPI_CHECK(memcmp(host, ref, total * sizeof *ref) == 0);
    }
    gpl_scaler_destroy(g_c, sc);
    MPI_CHECK_OK(gpl_mem_free(g_c, d));
    free(host);
    free(ref);
  }
}

int main(void) {
  gpl_init_opts_t o;
  gpl_init_opts_default(&o);
  o.backend = GPL_BACKEND_NCCL;
  o.init_timeout = 60;
  int rc = gpl_init(&g_c, &o);
  if (rc == GPL_ENOGPU || rc == GPL_ENOCUDA) {
    printf("SKIP: nccl backend unavailable here (%s)\n", gpl_strerror(rc));
    return 77;
  }
  MPI_CHECK_OK(rc);
  mpi_check_rank = gpl_comm_rank(g_c);
  MPI_CHECK_INT(gpl_comm_backend(g_c), GPL_BACKEND_NCCL);
  MPI_CHECK(gpl_comm_device(g_c) >= 0);
  collectives();
  fused(NULL);
#ifdef GPULAUNCH_HAVE_NCCL
  cudaStream_t s;
  if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess) {
    fused(s); /* the caller's own stream */
    cudaStreamDestroy(s);
  }
#endif
  MPI_CHECK_OK(gpl_finalize(g_c));
  printf("test_comm_gpu: %d failures\n", mpi_check_failures);
  return mpi_check_failures ? 1 : 0;
}
