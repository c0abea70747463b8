/* Device side of the CUDA fused ops: tensor tables, chunk split, wire vectors and the kernels.
 * Included by fused_cuda.cu, and by a CPU emulation test that runs the same kernel bodies thread by
 * thread (tests/kernels/test_kernels_emul.cc), so the indexing is tested without a GPU. */
#ifndef GPL_KERNELS_FUSED_CUDA_DEV_CUH
#define GPL_KERNELS_FUSED_CUDA_DEV_CUH

#include <stdint.h>
#include <string.h>

#include "kernels/fused.h"
#include "kernels/mpmath.h"

/* A 16-byte vector access at p; the emulation checks alignment and counts them. */
#ifndef KERN_VECTOR_ACCESS
#define KERN_VECTOR_ACCESS(p) ((void)0)
#endif

namespace {

/* Work decomposition: each block handles one chunk of KERN_CHUNK elements of one tensor. The chunk
 * is a multiple of every vector width, so all chunks of a tensor share its alignment phase. */
constexpr int kThreads = 256;
constexpr int kUnroll = 4;
constexpr unsigned long long kChunk = 8192;
/* Tensor tables: a small one for buckets of few tensors (a cheap launch), a large one that fills
 * most of the 32 KiB kernel-parameter space of sm_70+ (CUDA >= 12.1). A bucket with more non-empty
 * tensors than kLargeTable takes one launch per kLargeTable tensors. */
constexpr int kSmallTable = 32;
constexpr int kLargeTable = 1024;

template <int MAXT> struct Table {
  int n;        /* tensors in this launch (none empty) */
  float scale;  /* pack: prescale; unpack: postscale */
  float *data[MAXT];
  unsigned long long count[MAXT];
  unsigned long long boff[MAXT];   /* element offset of the tensor in the bucket */
  unsigned int block0[MAXT + 1];   /* first block of each tensor; block0[n] = blocks in all */
};
static_assert(sizeof(Table<kLargeTable>) <= 32764, "tensor table exceeds the kernel-parameter limit");

/* The chunk of the tensor table that block b works on. */
struct Chunk {
  float *data;           /* tensor data + j0 */
  unsigned long long b0; /* bucket element index of data[0] */
  unsigned int len;      /* elements in this chunk */
};

template <int MAXT> __device__ __forceinline__ Chunk find_chunk(const Table<MAXT> &t, unsigned int b) {
  /* largest i with block0[i] <= b; the table holds no empty tensor, so it is the owner */
  int lo = 0, hi = t.n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (t.block0[mid] <= b) lo = mid;
    else hi = mid - 1;
  }
  unsigned long long j0 = (unsigned long long)(b - t.block0[lo]) * kChunk;
  unsigned long long rest = t.count[lo] - j0;
  Chunk c;
  c.data = t.data[lo] + j0;
  c.b0 = t.boff[lo] + j0;
  c.len = (unsigned int)(rest < kChunk ? rest : kChunk);
  return c;
}

/* Wire traits: storage type, elements per 16-byte bucket vector, and the conversions. */
template <gpl_dtype_t W> struct Wire;
template <> struct Wire<GPL_FLOAT> {
  typedef float T;
  static constexpr int kVec = 4;
  static __device__ __forceinline__ T to(float x) { return x; }
  static __device__ __forceinline__ float from(T w) { return w; }
};
template <> struct Wire<GPL_BFLOAT16> {
  typedef uint16_t T;
  static constexpr int kVec = 8;
  static __device__ __forceinline__ T to(float x) { return mp_f32_to_bf16(x); }
  static __device__ __forceinline__ float from(T w) { return mp_bf16_to_f32(w); }
};
template <> struct Wire<GPL_HALF> {
  typedef uint16_t T;
  static constexpr int kVec = 8;
  static __device__ __forceinline__ T to(float x) { return mp_f32_to_f16(x); }
  static __device__ __forceinline__ float from(T w) { return mp_f16_to_f32(w); }
};

/* kVec fp32 values as 16-byte vectors (one float4 for fp32 wire, two for 16-bit wires) and their
 * kVec wire values as one 16-byte vector. */
template <gpl_dtype_t W> struct Vec {
  float f[Wire<W>::kVec];
};

template <gpl_dtype_t W> __device__ __forceinline__ Vec<W> load_f32(const float *p) {
  KERN_VECTOR_ACCESS(p);
  Vec<W> v;
#pragma unroll
  for (int q = 0; q < Wire<W>::kVec / 4; q++) {
    float4 x = reinterpret_cast<const float4 *>(p)[q];
    v.f[4 * q + 0] = x.x;
    v.f[4 * q + 1] = x.y;
    v.f[4 * q + 2] = x.z;
    v.f[4 * q + 3] = x.w;
  }
  return v;
}

template <gpl_dtype_t W> __device__ __forceinline__ void store_f32(float *p, const Vec<W> &v) {
  KERN_VECTOR_ACCESS(p);
#pragma unroll
  for (int q = 0; q < Wire<W>::kVec / 4; q++)
    reinterpret_cast<float4 *>(p)[q] =
        make_float4(v.f[4 * q + 0], v.f[4 * q + 1], v.f[4 * q + 2], v.f[4 * q + 3]);
}

/* Wire vectors are moved as a raw uint4 (16 bytes). */
template <gpl_dtype_t W> __device__ __forceinline__ uint4 to_wire_vec(const Vec<W> &v, float s) {
  typename Wire<W>::T w[Wire<W>::kVec];
#pragma unroll
  for (int k = 0; k < Wire<W>::kVec; k++) w[k] = Wire<W>::to(mp_mul(v.f[k], s));
  uint4 r;
  memcpy(&r, w, sizeof r);
  return r;
}

template <gpl_dtype_t W> __device__ __forceinline__ Vec<W> from_wire_vec(uint4 r, float s, unsigned &bad) {
  typename Wire<W>::T w[Wire<W>::kVec];
  memcpy(w, &r, sizeof r);
  Vec<W> v;
#pragma unroll
  for (int k = 0; k < Wire<W>::kVec; k++) {
    v.f[k] = mp_mul(Wire<W>::from(w[k]), s);
    bad |= !mp_isfinite(v.f[k]);
  }
  return v;
}

/* Split a chunk into a scalar head, a vector body and a scalar tail. The body starts where the
 * bucket position is 16-byte aligned; if the tensor is not also 16-byte aligned there, the whole
 * chunk takes the scalar path. */
struct Split {
  unsigned int head, nvec; /* scalar elements before the body, vectors in the body */
};

template <gpl_dtype_t W> __device__ __forceinline__ Split split_chunk(const Chunk &c, const void *bucket) {
  constexpr unsigned ws = sizeof(typename Wire<W>::T);
  uintptr_t bpos = (uintptr_t)bucket + (uintptr_t)(c.b0 * ws);
  unsigned head = (unsigned)((16u - (bpos & 15u)) & 15u) / ws;
  Split s;
  if (head > c.len) head = c.len;
  s.head = head;
  s.nvec = ((uintptr_t)(c.data + head) & 15u) == 0 ? (c.len - head) / Wire<W>::kVec : 0;
  if (s.nvec == 0) s.head = c.len; /* all scalar */
  return s;
}

template <gpl_dtype_t W, int MAXT>
__global__ void __launch_bounds__(kThreads) pack_kernel(const Table<MAXT> tab, void *bucket) {
  typedef typename Wire<W>::T T;
  constexpr int V = Wire<W>::kVec;
  const Chunk c = find_chunk(tab, blockIdx.x);
  const Split sp = split_chunk<W>(c, bucket);
  const float s = tab.scale;
  const float *__restrict__ in = c.data;
  T *__restrict__ out = reinterpret_cast<T *>(bucket) + c.b0;
  /* body: all loads of an unrolled group first, then the stores, to keep bytes in flight */
  const unsigned body = sp.head + sp.nvec * V;
  for (unsigned base = threadIdx.x; base < sp.nvec; base += kThreads * kUnroll) {
    Vec<W> v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      unsigned i = base + u * kThreads;
      if (i < sp.nvec) v[u] = load_f32<W>(in + sp.head + (size_t)i * V);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      unsigned i = base + u * kThreads;
      if (i < sp.nvec) {
        KERN_VECTOR_ACCESS(out + sp.head + (size_t)i * V);
        reinterpret_cast<uint4 *>(out + sp.head)[i] = to_wire_vec<W>(v[u], s);
      }
    }
  }
  /* head and tail, one element per thread */
  const unsigned nscalar = sp.head + (c.len - body);
  for (unsigned k = threadIdx.x; k < nscalar; k += kThreads) {
    unsigned j = k < sp.head ? k : body + (k - sp.head);
    out[j] = Wire<W>::to(mp_mul(in[j], s));
  }
}

template <gpl_dtype_t W, int MAXT>
__global__ void __launch_bounds__(kThreads)
    unpack_kernel(const Table<MAXT> tab, const void *bucket, kern_scaler_t *sc) {
  typedef typename Wire<W>::T T;
  constexpr int V = Wire<W>::kVec;
  const Chunk c = find_chunk(tab, blockIdx.x);
  const Split sp = split_chunk<W>(c, bucket);
  /* the same product, in the same order, as kern_unpack_ref */
  const float f = sc ? tab.scale * sc->inv_scale : tab.scale;
  const T *__restrict__ in = reinterpret_cast<const T *>(bucket) + c.b0;
  float *__restrict__ out = c.data;
  unsigned bad = 0;
  const unsigned body = sp.head + sp.nvec * V;
  for (unsigned base = threadIdx.x; base < sp.nvec; base += kThreads * kUnroll) {
    uint4 r[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      unsigned i = base + u * kThreads;
      if (i < sp.nvec) {
        KERN_VECTOR_ACCESS(in + sp.head + (size_t)i * V);
        r[u] = reinterpret_cast<const uint4 *>(in + sp.head)[i];
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      unsigned i = base + u * kThreads;
      if (i < sp.nvec) store_f32<W>(out + sp.head + (size_t)i * V, from_wire_vec<W>(r[u], f, bad));
    }
  }
  const unsigned nscalar = sp.head + (c.len - body);
  for (unsigned k = threadIdx.x; k < nscalar; k += kThreads) {
    unsigned j = k < sp.head ? k : body + (k - sp.head);
    float y = mp_mul(Wire<W>::from(in[j]), f);
    out[j] = y;
    bad |= !mp_isfinite(y);
  }
  /* one atomic per block that saw inf/NaN; the host never waits for it */
  if (__syncthreads_or(bad) && threadIdx.x == 0 && sc) atomicOr(&sc->found_inf, 1);
}

__global__ void scaler_update_kernel(kern_scaler_t *sc) { mp_scaler_update(sc); }

/* ---- host side: tensor tables ---- */

/* Non-empty tensors in a list (empty ones take no block and no table slot). */
static inline int count_nonempty(const kern_tensor_t *t, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) k += t[i].count > 0;
  return k;
}

/* Fill `tab` with up to MAXT non-empty tensors at a time and call launch(tab) for each filling;
 * the bucket offset runs over all tensors in list order, empty ones included. Returns the first
 * non-zero result of launch, or 0. The caller checked that no tensor needs 2^31 blocks. */
template <int MAXT, typename Launch>
int for_each_table(const kern_tensor_t *t, int n, float scale, Table<MAXT> &tab, Launch launch) {
  tab.n = 0;
  tab.scale = scale;
  tab.block0[0] = 0;
  unsigned long long boff = 0;
  for (int i = 0; i < n; i++) {
    unsigned long long cnt = t[i].count;
    if (cnt > 0) {
      unsigned long long blocks = (cnt + kChunk - 1) / kChunk;
      if (tab.n == MAXT || tab.block0[tab.n] + blocks > 0x7fffffffull) {
        int rc = launch(static_cast<const Table<MAXT> &>(tab));
        if (rc != 0) return rc;
        tab.n = 0;
        tab.block0[0] = 0;
      }
      tab.data[tab.n] = t[i].data;
      tab.count[tab.n] = cnt;
      tab.boff[tab.n] = boff;
      tab.block0[tab.n + 1] = tab.block0[tab.n] + (unsigned int)blocks;
      tab.n++;
    }
    boff += cnt;
  }
  return tab.n > 0 ? launch(static_cast<const Table<MAXT> &>(tab)) : 0;
}

} // namespace
#endif
