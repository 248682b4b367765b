// gemv.bf16 device code: the tensor-core (mma.sync) and CUDA-core (FMA) kernels. The PTX
// helpers and the deterministic K reduction are in ../common. Included only by gemv_bf16.cu.
//
// Work split (both paths): a CTA holds warps_n x warps_k warps; warps_n warps take adjacent
// weight-row tiles, warps_k warps take adjacent K slices. split_k CTAs of one thread-block
// cluster (grid.y) take further K slices. Slice s = cluster_rank * warps_k + warp_k covers
// a fixed, contiguous K range; every warp sums its slice in increasing K, writes an fp32
// partial to shared memory, and the cluster adds the k_slices = warps_k * split_k partials in
// slice order 0, 1, ..., k_slices - 1 (distributed shared memory across the cluster). The
// summation order of an output therefore depends on the path and k_slices alone, never on
// rows, rows_per_cta, outputs_per_warp, warps_n or how k_slices factors into warps_k x
// split_k.
#pragma once

#include <cstdint>

#include <cooperative_groups.h>
#include <cuda_bf16.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/common/ptx.cuh"
#include "cuda/kernels/common/register_pipeline.cuh"
#include "cuda/kernels/common/split_k_reduce.cuh"
#include "cuda/kernels/common/weight_stream.cuh"

namespace hone::cuda::gemv_bf16_detail {

struct Params {
  const uint16_t *x; // bf16 [rows, k]
  const uint16_t *w; // bf16 [n, k]
  uint16_t *y;       // bf16 [rows, n]
  int rows, n, k;
  int warps_n, warps_k, split_k;
  int slice_granules; // [8-element granules] K per slice; a multiple of 4 on the mma path
  int silu_inter = 0; // the SILU kernels' y is [rows, silu_inter], n = 2 silu_inter
                      // (split_k_reduce.cuh); the others ignore it
};

using namespace kernel_detail; // NOLINT: the shared PTX helpers and reduction

// One 32-element chunk into the m16n8 accumulators: elements 8t..8t+3 of the lane's weight
// rows (w[mt][h]: rows g and g + 8 of m16 tile mt) and activation rows (x[nt]: row g of n8 tile
// nt) feed the first k16 step, 8t+4..8t+7 the second. The mma path's whole arithmetic, and so its
// summation order: every kernel that feeds a K slice's chunks through it in increasing K gets
// the same bits.
template <int MT, int NT>
__device__ __forceinline__ void mma_chunk(float (&acc)[MT][NT][4], const uint4 (&w)[MT][2],
                                          const uint4 (&x)[NT]) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt) {
      mma_m16n8k16(acc[mt][nt], w[mt][0].x, w[mt][1].x, w[mt][0].y, w[mt][1].y, x[nt].x, x[nt].y);
      mma_m16n8k16(acc[mt][nt], w[mt][0].z, w[mt][1].z, w[mt][0].w, w[mt][1].w, x[nt].z, x[nt].w);
    }
}

// Tensor-core path. A warp owns MT tiles of 16 weight rows (the mma M dimension) and NT
// tiles of 8 activation rows (the mma N dimension) over one K slice. K is walked in chunks
// of 32: lane (g = lane / 4, t = lane % 4) loads 16 bytes, elements 8t..8t+7 of the chunk,
// from weight rows g and g + 8 and from activation row g, and feeds elements 8t..8t+3 to the
// first k16 step and 8t+4..8t+7 to the second. A and B see the same permutation of K inside
// the chunk, so no shuffle or ldmatrix is needed. J chunks are in flight per warp, and the
// next J are loaded before the current ones are multiplied.
// S > 0 (asynchronous pipeline): instead of the register double buffer, each lane copies its
// own fragments of the next S chunks (cp.async) into a lane-private ring in shared memory
// after the partials, S stages x (2 MT + NT) 16-byte pieces, and reads back only what it
// copied itself (no barrier). More bytes in flight per warp at fewer registers. Same
// fragments, same mma order: bit-identical to S = 0.
// SILU: the gate/up linear with SiLU x up in its epilogue (split_k_reduce.cuh, weight_row).
template <int NT, int MT, int J, int MAX_THREADS, int S = 0, bool SILU = false>
__global__ void __launch_bounds__(MAX_THREADS) gemv_bf16_mma_kernel(const Params p) {
  // A chain link (a dependent launch) waits for the kernel before it (griddepcontrol.wait)
  // before its first activation load and lets the next one start; both are no-ops otherwise.
  // The register pipeline (S = 0) issues its first J chunks of weights, which no kernel of the
  // chain writes, before the wait; the cp.async kernels wait first of all.
  if constexpr (S > 0) {
    pdl_wait();
    pdl_launch_dependents();
  }
  extern __shared__ float4 shared_partials[];
  const auto [lane, warp, slice, g, t, m_cta, m_warp, row0] = mma_warp_coords<MT, NT>(p);

  // Rows past the end are clamped to a valid row; their results are never stored.
  const uint16_t *wp[MT][2];
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int h = 0; h < 2; ++h)
      wp[mt][h] = p.w +
                  static_cast<size_t>(weight_row<SILU>(p, m_warp + mt * 16 + h * 8 + g)) * p.k +
                  8 * t;
  const uint16_t *xp[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
    xp[nt] = p.x + static_cast<size_t>(min(row0 + nt * 8 + g, p.rows - 1)) * p.k + 8 * t;

  float acc[MT][NT][4]; // m16n8 accumulators, fp32
  zero_accumulators(acc);

  auto multiply = [&](const uint4(&w)[MT][2], const uint4(&x)[NT]) { mma_chunk(acc, w, x); };

  const int slice_chunks = p.slice_granules / 4;
  const int total_chunks = (p.k + 31) / 32;
  int c = slice * slice_chunks;
  const int c_end = min(c + slice_chunks, total_chunks);
  const int c_full = min(c_end, p.k / 32); // chunks [c, c_full) need no K guard

  // Weights and activations of the next J chunks are in flight while the current J are
  // multiplied, so neither DRAM nor L1/L2 latency is exposed per iteration.
  if constexpr (S > 0) {
    constexpr int kPieces = 2 * MT + NT;
    uint4 *ring = reinterpret_cast<uint4 *>(shared_partials + (blockDim.x >> 5) * MT * NT * 32) +
                  warp * S * kPieces * 32 + lane;
    auto issue = [&](int chunk, int stage) {
      uint4 *slot = ring + stage * kPieces * 32;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          copy_weight_async(slot + (mt * 2 + h) * 32, wp[mt][h] + chunk * 32);
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        copy_activation_async(slot + (2 * MT + nt) * 32, xp[nt] + chunk * 32);
    };
#pragma unroll
    for (int s = 0; s < S; ++s) {
      if (c + s < c_full)
        issue(c + s, s);
      copy_async_commit();
    }
    for (int stage = 0; c < c_full; ++c) {
      copy_async_wait<S - 1>();
      const uint4 *slot = ring + stage * kPieces * 32;
      uint4 w[MT][2];
      uint4 x[NT];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          w[mt][h] = slot[(mt * 2 + h) * 32];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        x[nt] = slot[(2 * MT + nt) * 32];
      multiply(w, x);
      if (c + S < c_full)
        issue(c + S, stage);
      copy_async_commit();
      stage = stage + 1 == S ? 0 : stage + 1;
    }
    copy_async_wait<0>();
  } else {
    // Weights addressed by 32-bit offsets, in 16-byte units, of each lane row's first fragment
    // (the launcher checks n x k / 8 < 2^31): one LEA pair an address, where from the 64-bit
    // row pointers nvcc recomputed each chunk's addresses in 64 bits. The J chunks' fragments
    // alternate between two sets (register_pipeline's ping-pong) instead of being copied from
    // one to the other every J chunks. Same chunks and order, so the same bits.
    uint32_t wo[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        wo[mt][h] = static_cast<uint32_t>(weight_row<SILU>(p, m_warp + mt * 16 + h * 8 + g)) *
                        static_cast<uint32_t>(p.k / 8) +
                    static_cast<uint32_t>(t);
    const uint4 *w16 = reinterpret_cast<const uint4 *>(p.w);
    // One chunk's weights and activations.
    struct Fragment {
      uint4 w[MT][2];
      uint4 x[NT];
    };
    auto load_weights = [&](int chunk, Fragment &f) {
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          f.w[mt][h] = load_weight(w16 + (wo[mt][h] + static_cast<uint32_t>(chunk) * 4u));
    };
    auto load_activations = [&](int chunk, Fragment &f) {
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        f.x[nt] = load_activation(xp[nt] + chunk * 32);
    };
    auto load = [&](int chunk, Fragment &f) {
      load_weights(chunk, f);
      load_activations(chunk, f);
    };
    // The first J chunks' weights go out before the wait, their activations after it.
    Fragment fa[J];
    const bool first_block = c + J <= c_full;
    if (first_block)
#pragma unroll
      for (int j = 0; j < J; ++j)
        load_weights(c + j, fa[j]);
    pdl_wait();
    pdl_launch_dependents();
    if (first_block)
#pragma unroll
      for (int j = 0; j < J; ++j)
        load_activations(c + j, fa[j]);
    c = register_pipeline<J, true>(c, c_full, fa, load,
                                   [&](int, const Fragment &f) { multiply(f.w, f.x); });
  }
  // Remaining chunks one at a time; elements past K read as zero.
  for (; c < c_end; ++c) {
    const bool in_k = c * 32 + 8 * t < p.k;
    uint4 w[MT][2];
    uint4 x[NT];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        w[mt][h] = in_k ? load_weight(wp[mt][h] + c * 32) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
      x[nt] = in_k ? load_activation(xp[nt] + c * 32) : make_uint4(0, 0, 0, 0);
    multiply(w, x);
  }

  store_mma_partials_and_reduce<MT, NT, SILU>(p, shared_partials, acc, warp, lane, m_cta, row0);
}

// CUDA-core path. A warp owns O weight rows and R activation rows over one K slice; lane l
// takes the 8-element granules l, l + 32, ... of the slice, U granules in flight, fp32 FMA
// in granule order, then a fixed butterfly across lanes.
template <int R, int O, int U, int MAX_THREADS>
__global__ void __launch_bounds__(MAX_THREADS) gemv_bf16_fma_kernel(const Params p) {
  // A chain link (a dependent launch) waits for the kernel before it (griddepcontrol.wait)
  // after asking L2 for its first step's weights, which no kernel of the chain writes, before
  // its first activation load, and lets the next one start; both are no-ops otherwise.
  extern __shared__ float4 shared_partials[];
  float *partials = reinterpret_cast<float *>(shared_partials);
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int warp_n = warp % p.warps_n;
  const int warp_k = warp / p.warps_n;
  const int slice = static_cast<int>(blockIdx.y) * p.warps_k + warp_k;
  const int m_cta = static_cast<int>(blockIdx.x) * p.warps_n * O;
  const int m_warp = m_cta + warp_n * O;
  const int row0 = static_cast<int>(blockIdx.z) * R;

  const uint16_t *wp[O];
#pragma unroll
  for (int o = 0; o < O; ++o)
    wp[o] = p.w + static_cast<size_t>(min(m_warp + o, p.n - 1)) * p.k + 8 * lane;
  const uint16_t *xp[R];
#pragma unroll
  for (int r = 0; r < R; ++r)
    xp[r] = p.x + static_cast<size_t>(min(row0 + r, p.rows - 1)) * p.k + 8 * lane;

  float acc[O][R];
#pragma unroll
  for (int o = 0; o < O; ++o)
#pragma unroll
    for (int r = 0; r < R; ++r)
      acc[o][r] = 0.0f;

  auto multiply = [&](const uint4(&w)[O], const uint4(&x)[R]) {
#pragma unroll
    for (int o = 0; o < O; ++o)
#pragma unroll
      for (int r = 0; r < R; ++r) {
        const uint32_t wv[4] = {w[o].x, w[o].y, w[o].z, w[o].w};
        const uint32_t xv[4] = {x[r].x, x[r].y, x[r].z, x[r].w};
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          acc[o][r] = fmaf(bf16_lo(wv[i]), bf16_lo(xv[i]), acc[o][r]);
          acc[o][r] = fmaf(bf16_hi(wv[i]), bf16_hi(xv[i]), acc[o][r]);
        }
      }
  };

  const int granules = p.k / 8;
  int gb = slice * p.slice_granules;
  const int ge = min(gb + p.slice_granules, granules);
  // Before the wait, the one-row kernels ask L2 for the first step's weight lines (a hint;
  // holding the weights in registers across the wait took 62 registers where <1, 2, 4> has 40,
  // and the hint alone cost the kernels of more rows 6-18 registers, a CTA an SM for two).
  if constexpr (R == 1)
    if (gb + 32 * U <= ge)
#pragma unroll
      for (int u = 0; u < U; ++u)
#pragma unroll
        for (int o = 0; o < O; ++o)
          prefetch_line_l2(wp[o] + (gb + 32 * u) * 8);
  pdl_wait();
  pdl_launch_dependents();
  for (; gb + 32 * U <= ge; gb += 32 * U) {
    uint4 w[U][O];
    uint4 x[U][R];
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int o = 0; o < O; ++o)
        w[u][o] = load_weight(wp[o] + (gb + 32 * u) * 8);
#pragma unroll
    for (int u = 0; u < U; ++u)
#pragma unroll
      for (int r = 0; r < R; ++r)
        x[u][r] = load_activation(xp[r] + (gb + 32 * u) * 8);
#pragma unroll
    for (int u = 0; u < U; ++u)
      multiply(w[u], x[u]);
  }
  for (; gb < ge; gb += 32) {
    const bool in_slice = gb + lane < ge;
    uint4 w[O];
    uint4 x[R];
#pragma unroll
    for (int o = 0; o < O; ++o)
      w[o] = in_slice ? load_weight(wp[o] + gb * 8) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int r = 0; r < R; ++r)
      x[r] = in_slice ? load_activation(xp[r] + gb * 8) : make_uint4(0, 0, 0, 0);
    multiply(w, x);
  }

#pragma unroll
  for (int o = 0; o < O; ++o)
#pragma unroll
    for (int r = 0; r < R; ++r) {
#pragma unroll
      for (int offset = 16; offset > 0; offset /= 2)
        acc[o][r] += __shfl_xor_sync(0xffffffffu, acc[o][r], offset);
    }
  if (lane == 0) {
#pragma unroll
    for (int o = 0; o < O; ++o)
#pragma unroll
      for (int r = 0; r < R; ++r)
        partials[warp * O * R + o * R + r] = acc[o][r];
  }
  reduce_and_store(p, partials, O * R, O, R, m_cta, row0,
                   [](int m_in_warp, int r_local) { return m_in_warp * R + r_local; });
}

// --- stream path (weights once) -----------------------------------------------------------
//
// A persistent grid: CTA c of C owns the contiguous weight-row tiles [c T / C, (c + 1) T / C)
// of T = ceil(n / TM) tiles of TM = 16 MT rows, over all of K, and every activation row
// (rows <= NT * 8), so every weight byte is read from DRAM once per call. Warp W of the CTA is
// the producer: its lanes stream each tile in steps of W x kStreamStageK elements of K, one
// bulk copy per weight row and step (W x 256 bytes), into a ring of `stages` shared-memory
// stages guarded by full / empty mbarriers (weight_stream.cuh). Warps 0..W-1 are consumers:
// consumer w takes the K block w of every step (elements [j W + w, j W + w + 1) x
// kStreamStageK of step j), reads its weight fragments from the stage with 16-byte shared
// loads (row pitch 64 mod 128 bytes: conflict-free), its activation fragments from L1 / L2
// (issued before it waits for the stage), and multiplies with mma.sync in the fragment layout
// of the mma path (lane (g, t) takes elements 8t..8t+7 of a 32-element chunk of rows g, g + 8
// and activation row g; A and B share the K permutation, so no ldmatrix).
// Summation order: each consumer sums its blocks in increasing K; at the end of a tile the W
// partials are added in order 0..W-1 (shared memory, consumer warps only). The order is a
// function of (k, W) alone: never of rows, NT, MT, stages or the grid, so every stream config
// with W = warps_k consumers is bit-identical per row at every row count.
constexpr int kStreamStageK = kStreamStepBytes / 2; // [elements] of K per consumer and step

struct StreamParams : StreamShape {
  const uint16_t *w; // bf16 [n, k]
};

template <int NT, int MT>
__global__ void __launch_bounds__(kStreamMaxThreads, 1)
    gemv_bf16_stream_kernel(const StreamParams p) {
#if __CUDA_ARCH__ >= 900
  constexpr int TM = 16 * MT;
  constexpr int kChunks = kStreamStageK / 32; // chunks per consumer and step
  extern __shared__ __align__(128) uint8_t stream_shared[];
  const int consumers = p.consumer_warps;
  const StreamCta s = stream_cta_begin(stream_shared, MT, NT, consumers, p.stages, p.tiles);
  if (s.warp == consumers) { // producer: weights only, before any wait
    stream_weights(s, reinterpret_cast<const uint8_t *>(p.w), p.n, p.k * 2, p.steps, consumers, TM);
    return;
  }
  // Consumers read the activations and write y: only once the previous kernel of a dependent
  // launch has completed. Every consumer waits, so the CTA completes after that kernel.
  pdl_wait();
  pdl_launch_dependents();

  // Consumer `warp`: block `warp` of every step.
  const int lane = s.lane, warp = s.warp;
  const int g = lane >> 2, t = lane & 3;
  const int step_k = consumers * kStreamStageK;
  const uint16_t *xp[NT];
  stream_activation_rows(xp, p.x, g, p.rows, p.k);
  StageCursor q;
  for (int tile = s.tile_begin; tile < s.tile_end; ++tile) {
    float acc[MT][NT][4];
    zero_accumulators(acc);
    for (int j = 0; j < p.steps; ++j, q.advance(p.stages)) {
      const int block = j * step_k + warp * kStreamStageK;
      // Activations first: their L1 / L2 latency overlaps the wait for the weights.
      uint4 x[kChunks][NT];
      bool in_k[kChunks];
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        const int kk = block + c * 32 + 8 * t;
        in_k[c] = kk < p.k; // K is a multiple of 8
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
          x[c][nt] = in_k[c] ? load_activation(xp[nt] + kk) : make_uint4(0, 0, 0, 0);
      }
      s.ring.wait_full(q);
      const uint8_t *sw =
          s.stages_base + q.stage * s.stage_bytes + g * s.pitch + warp * kStreamStepBytes + 16 * t;
#pragma unroll
      for (int c = 0; c < kChunks; ++c) {
        uint4 w[MT][2];
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            w[mt][h] =
                in_k[c]
                    ? *reinterpret_cast<const uint4 *>(sw + (mt * 16 + h * 8) * s.pitch + c * 64)
                    : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int nt = 0; nt < NT; ++nt) {
            mma_m16n8k16(acc[mt][nt], w[mt][0].x, w[mt][1].x, w[mt][0].y, w[mt][1].y, x[c][nt].x,
                         x[c][nt].y);
            mma_m16n8k16(acc[mt][nt], w[mt][0].z, w[mt][1].z, w[mt][0].w, w[mt][1].w, x[c][nt].z,
                         x[c][nt].w);
          }
      }
      s.ring.release(q, lane);
    }
    stream_store_tile<MT, NT>(s, acc, consumers, tile * TM, p.n, p.rows, p.y);
  }
#endif
}

} // namespace hone::cuda::gemv_bf16_detail
