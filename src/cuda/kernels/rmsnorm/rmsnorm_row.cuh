// rmsnorm of rows by a whole CTA, in rmsnorm's own summation order (rmsnorm.cuh): the rows a
// linear wrote, normalised by its grid's last CTA (grid_norm_rows below; the NORM twin of
// qmv.affine, docs/notes/decode_step.md). For the lanes L of an rmsnorm config it gives that
// config's bits, whatever the CTA's size, so a fused launch can give the separate launches'.
//
// Why the order carries over: rmsnorm's partial j (j < L) takes the squares of elements j,
// j + L, j + 2L, ... in increasing order, and the L partials are summed as a complete binary
// tree, neighbours first. A contiguous, aligned block of 2^m partials is a subtree. Here thread
// t of T owns a block of partials and sums it as its subtree, then the threads combine by xor
// shuffles 1, 2, ..., 16 and the warps through shared memory, neighbours first, as rmsnorm's
// warps do. fp32 addition is commutative, so only the tree's shape matters, not which operand
// is on the left.
#pragma once

#include <cstddef>
#include <cstdint>

#include <cuda_bf16.h>

namespace hone::cuda::rmsnorm_row {

// out = bf16((h x rstd) x w), rmsnorm's one rounding.
__device__ __forceinline__ uint16_t normalised(float h, float rstd, uint16_t w) {
  const float y = h * rstd * __uint_as_float(static_cast<uint32_t>(w) << 16);
  return __bfloat16_as_ushort(__float2bfloat16_rn(y));
}

// The sum of N partials (N a power of two) as a complete binary tree, neighbours first:
// rmsnorm's order inside a thread.
template <int N> __device__ __forceinline__ float tree_sum(float (&part)[N]) {
#pragma unroll
  for (int step = 1; step < N; step *= 2)
#pragma unroll
    for (int v = 0; v < N; v += 2 * step)
      part[v] += part[v + step];
  return part[0];
}

// The sum of `warps` warp sums (warps <= MAX_WARPS), neighbours first as a complete binary tree
// over MAX_WARPS leaves padded with +0 (which changes nothing): rmsnorm's cross-warp order.
template <int MAX_WARPS>
__device__ __forceinline__ float warp_tree_sum(const float *warp_sums, int warps) {
  float s[MAX_WARPS];
#pragma unroll
  for (int i = 0; i < MAX_WARPS; ++i)
    s[i] = i < warps ? warp_sums[i] : 0.f;
  return tree_sum(s);
}

// Warps a CTA may have.
inline constexpr int kMaxWarps = 32;

// --- rmsnorm of a grid's output rows, by the grid's last CTA --------------------------------
// A linear whose output is the input of the rmsnorm that follows (a decode step's o_proj or
// down and the next norm) normalises its own rows at its end: every CTA counts itself done
// after its stores, and the last one reads the rows back through L2 and normalises them in
// rmsnorm's own order for `lanes` partials (the launch's rmsnorm config), so that out and
// residual_out are the separate rmsnorm launch's bits. One CTA's work in place of a launch, its
// wait for the linear and the next kernel's wait for it.
// The last CTA reads its row into registers through L2, every load of it in flight at once.
// Measured on an H100 (Llama-3.1-8B int4 step, docs/benchmark_results/2026-12-07-3): this form
// made the step 3.8 % slower than the separate launches (call2), a first one that staged the
// row in 24.7 KB of shared memory and fenced every thread's stores 8 % (call1). The tail it adds
// after the linear's last output costs more than the separate launch under PDL, so the step
// keeps the norm apart (model::StepOptions::fuse_norm).
struct GridRowsNorm {
  const uint16_t *x = nullptr;        // bf16 [rows, hidden]: the grid's output, read through L2
  const uint16_t *residual = nullptr; // bf16 [rows, hidden] or null
  uint16_t *residual_out = nullptr;   // bf16 [rows, hidden] with residual (may be residual)
  const uint16_t *w = nullptr;        // bf16 [hidden]
  uint16_t *out = nullptr;            // bf16 [rows, hidden]
  unsigned *counter = nullptr; // 0 before the launch, 0 again after it (the last CTA resets it)
  int rows = 0, hidden = 0, lanes = 0;
  float eps = 0.f;
};

// Strides of `lanes` a row may take: rmsnorm's kRmsnormMaxChunks vectors a thread, whatever
// its vec (hidden <= threads x vec x 8 = lanes x 8).
inline constexpr int kGridNormMaxStrides = 8;
// Partials a thread may own (P = lanes / threads).
inline constexpr int kGridNormMaxPerThread = 8;

// Whether a CTA of `threads` can normalise rows of `hidden` in the order of `lanes` partials:
// a power of two of at most kGridNormMaxPerThread partials a thread (P = lanes / threads, or 1
// with idle threads where lanes < threads), at most kGridNormMaxStrides strides, hidden a
// multiple of 8.
__host__ __device__ constexpr bool grid_norm_fits(int threads, int hidden, int lanes) {
  if (threads < 32 || threads > 32 * kMaxWarps || (threads & (threads - 1)) != 0 || lanes < 1 ||
      (lanes & (lanes - 1)) != 0 || hidden < 8 || hidden % 8 != 0)
    return false;
  const int per_thread = lanes >= threads ? lanes / threads : 1;
  return per_thread <= kGridNormMaxPerThread && hidden <= lanes * kGridNormMaxStrides;
}

namespace grid_norm_detail {

// P bf16 bits as (P + 1) / 2 words, the first value in the low half of word 0.
template <int P> struct Bits {
  uint32_t w[(P + 1) / 2];
  __device__ __forceinline__ uint16_t bits(int v) const {
    return static_cast<uint16_t>((w[v / 2] >> (16 * (v % 2))) & 0xffffu);
  }
  __device__ __forceinline__ float value(int v) const {
    return __uint_as_float(static_cast<uint32_t>(bits(v)) << 16);
  }
  __device__ __forceinline__ void set(int v, uint16_t b) {
    const uint32_t shift = 16 * (v % 2);
    w[v / 2] = (w[v / 2] & ~(0xffffu << shift)) | (static_cast<uint32_t>(b) << shift);
  }
};

// P contiguous values (2 P-byte aligned) from shared or global memory, or stored to it.
template <int P> __device__ __forceinline__ Bits<P> load(const uint16_t *p) {
  Bits<P> b;
  if constexpr (P == 8) {
    const uint4 v = *reinterpret_cast<const uint4 *>(p);
    b.w[0] = v.x, b.w[1] = v.y, b.w[2] = v.z, b.w[3] = v.w;
  } else if constexpr (P == 4) {
    const uint2 v = *reinterpret_cast<const uint2 *>(p);
    b.w[0] = v.x, b.w[1] = v.y;
  } else if constexpr (P == 2) {
    b.w[0] = *reinterpret_cast<const uint32_t *>(p);
  } else {
    b.w[0] = *p;
  }
  return b;
}
template <int P> __device__ __forceinline__ void store(uint16_t *p, const Bits<P> &b) {
  if constexpr (P == 8)
    *reinterpret_cast<uint4 *>(p) = make_uint4(b.w[0], b.w[1], b.w[2], b.w[3]);
  else if constexpr (P == 4)
    *reinterpret_cast<uint2 *>(p) = make_uint2(b.w[0], b.w[1]);
  else if constexpr (P == 2)
    *reinterpret_cast<uint32_t *>(p) = b.w[0];
  else
    *p = static_cast<uint16_t>(b.w[0]);
}

// P contiguous values of global memory through L2 only (another CTA of this grid may have
// written them: L1 is not coherent).
template <int P> __device__ __forceinline__ Bits<P> load_l2(const uint16_t *p) {
  Bits<P> b;
  if constexpr (P == 8) {
    const uint4 v = __ldcg(reinterpret_cast<const uint4 *>(p));
    b.w[0] = v.x, b.w[1] = v.y, b.w[2] = v.z, b.w[3] = v.w;
  } else if constexpr (P == 4) {
    const uint2 v = __ldcg(reinterpret_cast<const uint2 *>(p));
    b.w[0] = v.x, b.w[1] = v.y;
  } else if constexpr (P == 2) {
    b.w[0] = __ldcg(reinterpret_cast<const unsigned *>(p));
  } else {
    b.w[0] = __ldcg(reinterpret_cast<const unsigned short *>(p));
  }
  return b;
}

// One row by the whole CTA, thread t owning partials [t P, t P + P) (none where t P >= lanes):
// their elements at each stride of `lanes` are P consecutive values. A contiguous aligned block
// of partials is a subtree of rmsnorm's tree (above), and idle threads add +0, so the sum is
// rmsnorm's. h = x (+ residual, rounded once) stays in registers between the two passes; the
// weight is read in the second.
template <int P>
__device__ __forceinline__ void norm_row(const GridRowsNorm &a, int row, float *warp_sums) {
  const int t = static_cast<int>(threadIdx.x);
  const int lanes = a.lanes;
  const bool owns = t * P < lanes;
  const size_t base = static_cast<size_t>(row) * static_cast<size_t>(a.hidden);
  Bits<P> h[kGridNormMaxStrides];
#pragma unroll
  for (int s = 0; s < kGridNormMaxStrides; ++s) {
    const int i = s * lanes + t * P;
    if (owns && i < a.hidden) { // hidden % 8 == 0 and P <= 8: a block is whole or absent
      h[s] = load_l2<P>(a.x + base + i);
      if (a.residual != nullptr) {
        const Bits<P> r = load_l2<P>(a.residual + base + i);
#pragma unroll
        for (int v = 0; v < P; ++v) // bf16(x + residual), rounded once, as rmsnorm
          h[s].set(v, __bfloat16_as_ushort(__float2bfloat16_rn(h[s].value(v) + r.value(v))));
      }
    }
  }
  float part[P];
#pragma unroll
  for (int v = 0; v < P; ++v)
    part[v] = 0.f;
#pragma unroll
  for (int s = 0; s < kGridNormMaxStrides; ++s)
    if (owns && s * lanes + t * P < a.hidden)
#pragma unroll
      for (int v = 0; v < P; ++v)
        part[v] = fmaf(h[s].value(v), h[s].value(v), part[v]);
  float sum = tree_sum(part);
  for (int offset = 1; offset < 32; offset *= 2)
    sum += __shfl_xor_sync(0xffffffffu, sum, offset);
  const int warps = static_cast<int>(blockDim.x) >> 5;
  if (warps > 1) {
    if ((t & 31) == 0)
      warp_sums[t >> 5] = sum;
    __syncthreads();
    sum = warp_tree_sum<kMaxWarps>(warp_sums, warps);
    __syncthreads(); // warp_sums is the next row's
  }
  const float rstd = rsqrtf(sum / static_cast<float>(a.hidden) + a.eps);
#pragma unroll
  for (int s = 0; s < kGridNormMaxStrides; ++s) {
    const int i = s * lanes + t * P;
    if (owns && i < a.hidden) {
      const Bits<P> w = load<P>(a.w + i);
      Bits<P> y;
#pragma unroll
      for (int v = 0; v < P; ++v)
        y.set(v, normalised(h[s].value(v), rstd, w.bits(v)));
      store<P>(a.out + base + i, y);
      if (a.residual != nullptr)
        store<P>(a.residual_out + base + i, h[s]);
    }
  }
}

} // namespace grid_norm_detail

// Asks L2 for the norm's weight (one 128-byte line a thread of CTA 0): a weight, which no kernel
// of the chain writes, so a dependent launch may do it before its wait. By the time the last
// CTA reads it, it comes from L2 rather than from memory (the step streams gigabytes of linear
// weights between two reads of one norm's).
__device__ __forceinline__ void grid_norm_prefetch(const GridRowsNorm &a) {
  if (blockIdx.x == 0 && blockIdx.y == 0 && blockIdx.z == 0)
    for (int i = 64 * static_cast<int>(threadIdx.x); i < a.hidden;
         i += 64 * static_cast<int>(blockDim.x))
      asm volatile("prefetch.global.L2 [%0];" ::"l"(a.w + i) : "memory");
}

// Whether this CTA is the last of its grid to get here. The barrier orders every store of the
// CTA before thread 0's count, an acquire-release atomic at GPU scope: its release publishes
// them, and in the last CTA its acquire makes every other CTA's published stores visible to the
// threads past the second barrier. The last CTA sets the counter back to 0 for the next launch
// (every CTA of this grid has counted by then). One atomic a CTA and no fence: a fence in every
// thread made each CTA's tail wait for its stores. Every thread of the CTA calls it. `flag`: an
// int of shared memory that no thread still reads.
__device__ __forceinline__ bool grid_last_cta(unsigned *counter, int *flag) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned ctas = gridDim.x * gridDim.y * gridDim.z;
    unsigned ticket;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;"
                 : "=r"(ticket)
                 : "l"(counter)
                 : "memory");
    const bool last = ticket == ctas - 1;
    if (last)
      *counter = 0u;
    *flag = last ? 1 : 0;
  }
  __syncthreads();
  return *flag != 0;
}

// The rows of `a`, one after another, by the grid's last CTA; the others return at once. Every
// thread of every CTA calls it after its last store of a.x. REQUIRES grid_norm_fits(blockDim.x,
// a.hidden, a.lanes); the rows and w 16-byte aligned; `shared`: kMaxWarps + 4 words of shared
// memory that no thread still reads or writes.
__device__ __forceinline__ void grid_norm_rows(const GridRowsNorm &a, float *shared) {
  if (!grid_last_cta(a.counter, reinterpret_cast<int *>(shared)))
    return;
  float *warp_sums = shared + 4;
  const int threads = static_cast<int>(blockDim.x);
  const int per_thread = a.lanes >= threads ? a.lanes / threads : 1;
  for (int r = 0; r < a.rows; ++r) {
    switch (per_thread) {
    case 8:
      grid_norm_detail::norm_row<8>(a, r, warp_sums);
      break;
    case 4:
      grid_norm_detail::norm_row<4>(a, r, warp_sums);
      break;
    case 2:
      grid_norm_detail::norm_row<2>(a, r, warp_sums);
      break;
    default:
      grid_norm_detail::norm_row<1>(a, r, warp_sums);
      break;
    }
  }
}

} // namespace hone::cuda::rmsnorm_row
