/* Device side of the CUDA fused ops: tensor tables, the split of each tensor into 16-byte units,
 * wire vectors, the kernels, and the host loop that fills tables and launches them. Included by
 * fused_cuda.cu, and by a CPU emulation test that runs the same kernel bodies thread by thread
 * (tests/kernels/test_kernels_emul.cc), so the indexing is tested without a GPU. */
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

/* Work decomposition. Each tensor is cut where the side a kernel *stores to* is 16-byte aligned:
 * the bucket for pack, the tensor for unpack. Between the cuts lie whole units of V elements (one
 * 16-byte bucket vector: 4 fp32 or 8 16-bit values), stored with 128-bit stores only; the other
 * side is read with 128-bit loads when it has the same 16-byte phase, element by element when not.
 * Each block takes kChunk elements' worth of units of one tensor. What lies before the first cut
 * and after the last whole unit (fewer than V elements at each end) is the tensor's edge: pack
 * writes its edges itself (into the bucket); unpack leaves them to edge_kernel, so that the
 * unpack kernel holds 128-bit global stores only (a narrower store anywhere in a kernel is what
 * the SASS check would find, and 16-byte stores cannot reach a tensor's unaligned ends without
 * writing outside it). */
constexpr int kThreads = 256;
constexpr int kUnroll = 4;
constexpr unsigned long long kChunk = 8192;
/* Edge elements per tensor: fewer than V (8) at the head and fewer than V at the tail. */
constexpr int kEdgeSlots = 16;
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
  unsigned char head[MAXT];        /* elements before the first 16-byte cut (< 8) */
};
static_assert(sizeof(Table<kLargeTable>) <= 32764, "tensor table exceeds the kernel-parameter limit");

/* fp16 conversions on the device: the hardware's conversion instruction (IEEE round to nearest
 * even, subnormals and overflow to inf included), one instruction where mp_f32_to_f16's integer
 * rounding takes about 25 and made the fp16 pack ALU-bound on an H200 (0.60 of a copy); NaN lanes
 * take mp_*'s rule (quieted, payload kept), which the instruction does not (canonical NaN). Equal to
 * mp_f32_to_f16 / mp_f16_to_f32 for every one of the 2^32 / 2^16 inputs: kern_selftest_cuda checks
 * that on the device. The CPU emulation of the kernels uses the mp_* functions themselves. */
#if defined(__CUDA_ARCH__)
__device__ __forceinline__ uint16_t f32_to_f16_dev(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  uint32_t u = __float_as_uint(f), a = u & MP_F32_ABS_MASK;
  uint32_t nan = ((u >> 16) & 0x8000u) | 0x7e00u | ((a >> 13) & 0x03ffu);
  return (uint16_t)(a > MP_F32_INF ? nan : h);
}
__device__ __forceinline__ float f16_to_f32_dev(uint16_t w) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"((unsigned short)w));
  uint32_t a = (uint32_t)w & 0x7fffu;
  uint32_t nan = (((uint32_t)w & 0x8000u) << 16) | ((a << 13) + 0x70000000u);
  return a > MP_F16_INF ? __uint_as_float(nan) : f;
}
#else
static inline uint16_t f32_to_f16_dev(float f) { return mp_f32_to_f16(f); }
static inline float f16_to_f32_dev(uint16_t w) { return mp_f16_to_f32(w); }
#endif

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
  static __device__ __forceinline__ T to(float x) { return f32_to_f16_dev(x); }
  static __device__ __forceinline__ float from(T w) { return f16_to_f32_dev(w); }
};

/* The units of one tensor that block b works on. */
struct Body {
  int i;                 /* tensor in the table */
  unsigned long long u0; /* first unit */
  unsigned int nu;       /* units in this block */
  bool first, last;      /* this block holds the tensor's first / last units (pack: its edges) */
};

template <gpl_dtype_t W> __host__ __device__ __forceinline__ unsigned long long units_of(
    unsigned long long count, unsigned head) {
  return (count - head) / Wire<W>::kVec;
}

template <gpl_dtype_t W, int MAXT> __device__ __forceinline__ Body find_body(const Table<MAXT> &t,
                                                                            unsigned int b) {
  /* largest i with block0[i] <= b: tensors without a block have block0[i] == block0[i + 1], so
   * the largest such i is the one that owns block b */
  int lo = 0, hi = t.n - 1;
  while (lo < hi) {
    int mid = (lo + hi + 1) / 2;
    if (t.block0[mid] <= b) lo = mid;
    else hi = mid - 1;
  }
  constexpr unsigned long long kUnits = kChunk / Wire<W>::kVec;
  unsigned long long units = units_of<W>(t.count[lo], t.head[lo]);
  unsigned long long u0 = (unsigned long long)(b - t.block0[lo]) * kUnits;
  unsigned long long rest = units > u0 ? units - u0 : 0;
  Body c;
  c.i = lo;
  c.u0 = u0;
  c.nu = (unsigned int)(rest < kUnits ? rest : kUnits);
  c.first = b == t.block0[lo];
  c.last = b + 1 == t.block0[lo + 1];
  return c;
}

/* kVec fp32 values (one float4 for fp32 wire, two for 16-bit wires). */
template <gpl_dtype_t W> struct Vec {
  float f[Wire<W>::kVec];
};

/* fp32 side: 16-byte vectors when the tensor is aligned there, else element by element. */
template <gpl_dtype_t W, bool kAligned> __device__ __forceinline__ Vec<W> load_f32(const float *p) {
  Vec<W> v;
  if (kAligned) {
    KERN_VECTOR_ACCESS(p);
#pragma unroll
    for (int q = 0; q < Wire<W>::kVec / 4; q++) {
      float4 x = reinterpret_cast<const float4 *>(p)[q];
      v.f[4 * q + 0] = x.x;
      v.f[4 * q + 1] = x.y;
      v.f[4 * q + 2] = x.z;
      v.f[4 * q + 3] = x.w;
    }
  } else {
#pragma unroll
    for (int k = 0; k < Wire<W>::kVec; k++) v.f[k] = p[k];
  }
  return v;
}

/* pack: units of the bucket (always aligned, so one 128-bit store each); the tensor side aligned
 * or not. All loads of an unrolled group first, then the stores, to keep bytes in flight. */
template <gpl_dtype_t W, bool kAligned>
__device__ __forceinline__ void pack_units(const float *__restrict__ in, uint4 *__restrict__ out,
                                           unsigned nu, float s) {
  typedef typename Wire<W>::T T;
  constexpr int V = Wire<W>::kVec;
  for (unsigned base = threadIdx.x; base < nu; base += kThreads * kUnroll) {
    Vec<W> v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      unsigned i = base + u * kThreads;
      if (i < nu) v[u] = load_f32<W, kAligned>(in + (size_t)i * V);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      unsigned i = base + u * kThreads;
      if (i < nu) {
        T w[V];
#pragma unroll
        for (int k = 0; k < V; k++) w[k] = Wire<W>::to(mp_mul(v[u].f[k], s));
        uint4 r;
        memcpy(&r, w, sizeof r);
        KERN_VECTOR_ACCESS(out + i);
        out[i] = r;
      }
    }
  }
}

/* unpack: units of the tensor (always aligned), done as quads of 4 elements: quad h reads 4 wire
 * values (one 16-byte load for fp32, one 8-byte load for 16-bit wires, when the bucket is aligned;
 * element by element when not) and writes float4 h of the tensor, so that a warp's store covers
 * 512 contiguous bytes. (With one 8-element unit per thread, a 16-bit unpack's two float4 stores
 * per thread were each strided by 32 bytes: 0.72 of a copy on an H200.) Returns whether any output
 * was inf or NaN. */
template <gpl_dtype_t W> struct Quad;
template <> struct Quad<GPL_FLOAT> {
  typedef uint4 L;
};
template <> struct Quad<GPL_BFLOAT16> {
  typedef uint2 L;
};
template <> struct Quad<GPL_HALF> {
  typedef uint2 L;
};
template <gpl_dtype_t W, bool kAligned>
__device__ __forceinline__ unsigned unpack_units(const typename Wire<W>::T *__restrict__ in,
                                                 float4 *__restrict__ out, unsigned nu, float f) {
  typedef typename Wire<W>::T T;
  typedef typename Quad<W>::L L;
  static_assert(sizeof(L) == 4 * sizeof(T), "a quad load is 4 wire elements");
  const unsigned nq = nu * (Wire<W>::kVec / 4);
  unsigned bad = 0;
  for (unsigned base = threadIdx.x; base < nq; base += kThreads * kUnroll) {
    T w[kUnroll][4];
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      unsigned h = base + u * kThreads;
      if (h < nq) {
        if (kAligned) {
          if (sizeof(L) == 16) KERN_VECTOR_ACCESS(reinterpret_cast<const L *>(in) + h);
          L r = reinterpret_cast<const L *>(in)[h];
          memcpy(w[u], &r, sizeof r);
        } else {
#pragma unroll
          for (int k = 0; k < 4; k++) w[u][k] = in[(size_t)h * 4 + k];
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; u++) {
      unsigned h = base + u * kThreads;
      if (h < nq) {
        float y[4];
#pragma unroll
        for (int k = 0; k < 4; k++) {
          y[k] = mp_mul(Wire<W>::from(w[u][k]), f);
          bad |= !mp_isfinite(y[k]);
        }
        KERN_VECTOR_ACCESS(out + h);
        out[h] = make_float4(y[0], y[1], y[2], y[3]);
      }
    }
  }
  return bad;
}

/* Element j of tensor i's edges, for the k-th edge slot (head first, then tail); false when the
 * tensor has fewer edge elements than k + 1. */
template <gpl_dtype_t W, int MAXT> __device__ __forceinline__ bool edge_element(
    const Table<MAXT> &t, int i, unsigned k, unsigned long long &j) {
  unsigned head = t.head[i];
  unsigned long long body = head + units_of<W>(t.count[i], head) * Wire<W>::kVec;
  j = k < head ? k : body + (k - head);
  return j < t.count[i] && (k < head || j >= body);
}

template <gpl_dtype_t W, int MAXT>
__global__ void __launch_bounds__(kThreads) pack_kernel(const Table<MAXT> tab, void *bucket) {
  typedef typename Wire<W>::T T;
  constexpr int V = Wire<W>::kVec;
  const Body c = find_body<W>(tab, blockIdx.x);
  const float s = tab.scale;
  const float *in = tab.data[c.i] + tab.head[c.i] + c.u0 * V;
  T *bt = reinterpret_cast<T *>(bucket) + tab.boff[c.i];
  uint4 *out = reinterpret_cast<uint4 *>(bt + tab.head[c.i]) + c.u0;
  if (((uintptr_t)in & 15u) == 0) pack_units<W, true>(in, out, c.nu, s);
  else pack_units<W, false>(in, out, c.nu, s);
  /* the edges go to the bucket, which has no alignment to lose: the first block of the tensor
   * writes its head, the last its tail */
  if (c.first || c.last)
    for (unsigned k = threadIdx.x; k < (unsigned)kEdgeSlots; k += kThreads) {
      unsigned long long j;
      bool head = k < tab.head[c.i];
      if ((head ? c.first : c.last) && edge_element<W>(tab, c.i, k, j))
        bt[j] = Wire<W>::to(mp_mul(tab.data[c.i][j], s));
    }
}

template <gpl_dtype_t W, int MAXT>
__global__ void __launch_bounds__(kThreads)
    unpack_kernel(const Table<MAXT> tab, const void *bucket, kern_scaler_t *sc) {
  typedef typename Wire<W>::T T;
  constexpr int V = Wire<W>::kVec;
  const Body c = find_body<W>(tab, blockIdx.x);
  /* the same product, in the same order, as kern_unpack_ref */
  const float f = sc ? tab.scale * sc->inv_scale : tab.scale;
  const T *in = reinterpret_cast<const T *>(bucket) + tab.boff[c.i] + tab.head[c.i] + c.u0 * V;
  float4 *out = reinterpret_cast<float4 *>(tab.data[c.i] + tab.head[c.i]) + c.u0 * (V / 4);
  unsigned bad = ((uintptr_t)in & 15u) == 0 ? unpack_units<W, true>(in, out, c.nu, f)
                                            : unpack_units<W, false>(in, out, c.nu, f);
  /* one atomic per block that saw inf/NaN; the host never waits for it */
  if (__syncthreads_or(bad) && threadIdx.x == 0 && sc) atomicOr(&sc->found_inf, 1);
}

/* unpack's edges: kEdgeSlots threads per tensor of the table, one element each. */
template <gpl_dtype_t W, int MAXT>
__global__ void __launch_bounds__(kThreads)
    edge_kernel(const Table<MAXT> tab, const void *bucket, kern_scaler_t *sc) {
  typedef typename Wire<W>::T T;
  unsigned g = blockIdx.x * kThreads + threadIdx.x;
  int i = (int)(g / kEdgeSlots);
  unsigned long long j;
  if (i >= tab.n || !edge_element<W>(tab, i, g % kEdgeSlots, j)) return;
  const float f = sc ? tab.scale * sc->inv_scale : tab.scale;
  float y = mp_mul(Wire<W>::from(reinterpret_cast<const T *>(bucket)[tab.boff[i] + j]), f);
  tab.data[i][j] = y;
  if (!mp_isfinite(y) && sc) atomicOr(&sc->found_inf, 1);
}

__global__ void scaler_update_kernel(kern_scaler_t *sc) { mp_scaler_update(sc); }

/* ---- host side: tensor tables ---- */

enum Op { kPack, kUnpack };

/* Non-empty tensors in a list (empty ones take no block and no table slot). */
static inline int count_nonempty(const kern_tensor_t *t, int n) {
  int k = 0;
  for (int i = 0; i < n; i++) k += t[i].count > 0;
  return k;
}

/* Elements of a tensor before the first place where the stored side is 16-byte aligned (at most
 * the tensor's length): the bucket's position for pack, the tensor's own address for unpack. */
template <gpl_dtype_t W> static inline unsigned head_of(Op op, const float *data, unsigned long long cnt,
                                                        const void *bucket, unsigned long long boff) {
  constexpr unsigned ws = sizeof(typename Wire<W>::T);
  uintptr_t a = op == kPack ? (uintptr_t)bucket + (uintptr_t)(boff * ws) : (uintptr_t)data;
  unsigned esz = op == kPack ? ws : 4u;
  unsigned long long h = ((16u - (a & 15u)) & 15u) / esz;
  return (unsigned)(h < cnt ? h : cnt);
}

/* Blocks of one tensor: one per kChunk elements of units; pack gives a tensor without a unit one
 * block for its edges; unpack gives it none (edge_kernel writes it). */
template <gpl_dtype_t W> static inline unsigned long long blocks_of(Op op, unsigned long long cnt,
                                                                    unsigned head) {
  constexpr unsigned long long kUnits = kChunk / Wire<W>::kVec;
  unsigned long long b = (units_of<W>(cnt, head) + kUnits - 1) / kUnits;
  return op == kPack && b == 0 ? 1 : b;
}

/* Fill `tab` with up to MAXT non-empty tensors at a time and call launch(tab, edges) for each
 * filling, edges = 1 when some tensor of it has edge elements; the bucket offset runs over all
 * tensors in list order, empty ones included. Returns the first non-zero result of launch, or 0.
 * The caller checked that no tensor needs 2^31 blocks. */
template <gpl_dtype_t W, int MAXT, typename Launch>
int for_each_table(Op op, const kern_tensor_t *t, int n, const void *bucket, float scale,
                   Table<MAXT> &tab, Launch launch) {
  tab.n = 0;
  tab.scale = scale;
  tab.block0[0] = 0;
  int edges = 0;
  unsigned long long boff = 0;
  for (int i = 0; i < n; i++) {
    unsigned long long cnt = t[i].count;
    if (cnt > 0) {
      unsigned head = head_of<W>(op, t[i].data, cnt, bucket, boff);
      unsigned long long blocks = blocks_of<W>(op, cnt, head);
      if (tab.n == MAXT || tab.block0[tab.n] + blocks > 0x7fffffffull) {
        int rc = launch(static_cast<const Table<MAXT> &>(tab), edges);
        if (rc != 0) return rc;
        tab.n = 0;
        tab.block0[0] = 0;
        edges = 0;
      }
      tab.data[tab.n] = t[i].data;
      tab.count[tab.n] = cnt;
      tab.boff[tab.n] = boff;
      tab.head[tab.n] = (unsigned char)head;
      tab.block0[tab.n + 1] = tab.block0[tab.n] + (unsigned int)blocks;
      edges |= head > 0 || (cnt - head) % Wire<W>::kVec != 0;
      tab.n++;
    }
    boff += cnt;
  }
  return tab.n > 0 ? launch(static_cast<const Table<MAXT> &>(tab), edges) : 0;
}

/* Blocks of edge_kernel for a table of n tensors. */
static inline unsigned edge_blocks(int n) {
  return (unsigned)(((unsigned long long)n * kEdgeSlots + kThreads - 1) / kThreads);
}

} // namespace
#endif
