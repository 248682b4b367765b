// qmv.affine ring path device code: the mma path's arithmetic and summation order, with the
// packed words streamed once through a shared-memory ring by a producer warp. Included only by
// qmv_affine_ring.cu.
//
// Work split. A persistent grid: CTA c owns the contiguous tiles [c T / C, (c + 1) T / C) of
// tile_rows = warps_n x MT x 16 weight rows, over all of K and every activation row
// (rows <= NT x 8), so each packed word is read from DRAM once per call at every row count
// 1-32. Consumer warp (warp_n, warp_k), warp_n fastest, takes the MT m16 tiles from row
// warp_n x MT x 16 of the tile and K slice warp_k: chunks [warp_k x slice_chunks,
// (warp_k + 1) x slice_chunks), as the mma path's warp of slice warp_k does. Warp
// warps_n x warps_k is the producer.
//
// The ring. Step j of a tile holds, for every slice s, its chunks
// [s x slice_chunks + j x step_chunks, + step_chunks) of every row of the tile: one bulk copy per
// (slice, row), at stages_base + stage x stage_bytes + (s x tile_rows + row) x pitch, pitch
// 64 mod 128 (a quarter warp's 16-byte loads of rows 2i and 2i + 1 hit distinct banks). K is a
// multiple of the chunk (the launcher refuses other shapes), so no lane needs a K guard. Full /
// empty mbarriers as in weight_stream.cuh.
//
// Numerics. Each consumer feeds its slice's chunks, in increasing K, through mma_chunk (the mma
// path's own function) into one accumulator per m16n8 tile, and at the end of a tile the
// warps_k partials of an output are added in slice order from 0.0f, as reduce_and_store does.
// So a ring config is bit-identical to every mma-path config of the same k_slices, at every
// row count (the kernel test checks this).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>

#include "cuda/kernels/common/weight_stream.cuh"
#include "cuda/kernels/qmv_affine/qmv_affine.cuh"

namespace hone::cuda::qmv_affine_detail {

struct RingParams {
  const uint16_t *x;      // bf16 [rows, k]
  const uint8_t *q;       // packed words [n, row_bytes]
  const uint16_t *scales; // bf16 [n, k / group]
  const uint16_t *biases; // bf16 [n, k / group]
  uint16_t *y;            // bf16 [rows, n]
  int rows, n, k;
  int row_bytes;      // k x bits / 8
  int groups_per_row; // k / group
  int group_shift;    // log2(group)
  int warps_n, warps_k;
  int total_chunks; // ceil(k / chunk_k)
  int slice_chunks; // chunks per K slice (the mma path's)
  int step_chunks;  // chunks per slice and ring step
  int steps;        // ring steps per tile: ceil(slice_chunks / step_chunks)
  int stages;       // ring depth, <= 16
  int tiles;        // ceil(n / tile_rows)
  int pitch;        // [bytes] a row of a stage
};

// The loads of one chunk that do not come from the ring: the group parameters of the lane's
// rows and the activations, issued a chunk ahead of their use.
template <int BITS, int NT, int MT> struct RingChunkLoads {
  uint32_t scale[MT][2];
  uint32_t bias[MT][2];
  uint4 x[NT][Layout<BITS>::kXVectors];
};

template <int BITS, int NT, int MT, bool FACTORED, int MAX_THREADS>
__global__ void __launch_bounds__(MAX_THREADS, 1) qmv_affine_ring_kernel(const RingParams p) {
#if __CUDA_ARCH__ >= 900
  using L = Layout<BITS>;
  extern __shared__ __align__(128) uint8_t ring_shared[];
  const int consumers = p.warps_n * p.warps_k;
  const int tile_rows = p.warps_n * MT * 16;
  const int stage_bytes = p.warps_k * tile_rows * p.pitch;
  uint64_t *barriers = reinterpret_cast<uint64_t *>(ring_shared);
  const StageRing ring{barriers, barriers + p.stages, p.stages};
  float4 *partials = reinterpret_cast<float4 *>(ring_shared + kStreamBarrierBytes);
  uint8_t *stages_base = ring_shared + kStreamBarrierBytes + consumers * MT * NT * 512;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int ctas = static_cast<int>(gridDim.x), cta = static_cast<int>(blockIdx.x);
  const int tile_begin = static_cast<int>(static_cast<long long>(cta) * p.tiles / ctas);
  const int tile_end = static_cast<int>(static_cast<long long>(cta + 1) * p.tiles / ctas);
  if (threadIdx.x == 0)
    ring.init(consumers);
  __syncthreads();

  if (warp == consumers) {
    // Producer: packed words only, so it never waits for the kernel before it in a chain.
    const uint64_t policy = evict_first_policy();
    StageCursor q;
    for (int tile = tile_begin; tile < tile_end; ++tile) {
      const int m0 = tile * tile_rows;
      const int valid_rows = min(tile_rows, p.n - m0);
      for (int j = 0; j < p.steps; ++j, q.advance(p.stages)) {
        // Slice s's first byte of this step (its chunks [c0, c1)) and its length.
        auto first_byte = [&](int s) { return (s * p.slice_chunks + j * p.step_chunks) * 64; };
        auto length = [&](int s) {
          const int c0 = s * p.slice_chunks + j * p.step_chunks;
          const int c1 = min(min(c0 + p.step_chunks, (s + 1) * p.slice_chunks), p.total_chunks);
          return c1 > c0 ? (c1 - c0) * 64 : 0;
        };
        ring.acquire_empty(q);
        if (lane == 0) {
          int bytes = 0; // > 0: slice 0 has a chunk in every step
          for (int s = 0; s < p.warps_k; ++s)
            bytes += length(s);
          ring.expect(q, static_cast<uint32_t>(bytes * valid_rows));
        }
        __syncwarp();
        uint8_t *dst = stages_base + q.stage * stage_bytes;
        for (int i = lane; i < p.warps_k * valid_rows; i += 32) {
          const int s = i / valid_rows, r = i - s * valid_rows;
          const int len = length(s);
          if (len > 0)
            bulk_copy_to_shared(dst + (s * tile_rows + r) * p.pitch,
                                p.q + static_cast<size_t>(m0 + r) * p.row_bytes + first_byte(s),
                                static_cast<uint32_t>(len), ring.full_at(q), policy);
        }
      }
    }
    return;
  }

  // Consumers read the activations and write y: only once the previous kernel of a dependent
  // launch has completed.
  pdl_wait();
  pdl_launch_dependents();
  const int warp_n = warp % p.warps_n, slice = warp / p.warps_n;
  const int g = lane >> 2, t = lane & 3;
  // 32-bit element offsets from one base (rows x k < 2^31), which keeps registers for the
  // fragments: the lane's activation rows, and (per tile) its weight rows' group parameters.
  int xo[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
    xo[nt] = min(nt * 8 + g, p.rows - 1) * p.k + L::kLaneK * t;
  const int c_begin = slice * p.slice_chunks;
  const int c_end = min(c_begin + p.slice_chunks, p.total_chunks);
  // This lane's 16 bytes of row g of its first m16 tile, in slice `slice` of a stage.
  const int fragment = (slice * tile_rows + warp_n * MT * 16 + g) * p.pitch + 16 * t;
  // Activations a chunk ahead where registers allow (as the mma path's kXAhead).
  constexpr bool kXAhead = NT * MT <= 2;
  const uint32_t stages_shared = shared_address(stages_base);
  // The activations of chunk `chunk`.
  auto load_x = [&](int chunk, uint4(&x)[NT][L::kXVectors]) {
    const uint16_t *xc = p.x + static_cast<size_t>(chunk) * L::kChunkK;
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int v = 0; v < L::kXVectors; ++v)
        x[nt][v] = load_activation(xc + xo[nt] + 8 * v);
  };

  StageCursor q;
  for (int tile = tile_begin; tile < tile_end; ++tile) {
    const int m_warp = tile * tile_rows + warp_n * MT * 16;
    int so[MT][2]; // a row's first scale, and bias: n x groups_per_row < 2^31 (the packed words)
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int h = 0; h < 2; ++h)
        // Rows past the end are clamped to a valid row; their results are never stored.
        so[mt][h] = min(m_warp + mt * 16 + h * 8 + g, p.n - 1) * p.groups_per_row;
    // Chunk `chunk`'s group parameters (and, ahead, activations).
    auto issue = [&](int chunk, RingChunkLoads<BITS, NT, MT> &l) {
      const int group = (chunk * L::kChunkK + L::kLaneK * t) >> p.group_shift;
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          l.scale[mt][h] = __ldg(p.scales + so[mt][h] + group);
          l.bias[mt][h] = __ldg(p.biases + so[mt][h] + group);
        }
      if constexpr (kXAhead)
        load_x(chunk, l.x);
    };

    float acc[MT][NT][4];
    zero_accumulators(acc);
    RingChunkLoads<BITS, NT, MT> next;
    if (kXAhead && c_begin < c_end)
      issue(c_begin, next);
    int chunk = c_begin;
    for (int j = 0; j < p.steps; ++j, q.advance(p.stages)) {
      const int step_first = c_begin + j * p.step_chunks;
      const int step_end = min(step_first + p.step_chunks, c_end);
      ring.wait_full(q);
      const uint32_t stage = stages_shared + q.stage * stage_bytes + fragment;
      for (; chunk < step_end; ++chunk) {
        // A chunk ahead where the activations are; at use in the kernels that load those at use
        // (four m16 x n8 tiles: the copy a chunk ahead spilled).
        RingChunkLoads<BITS, NT, MT> cur;
        if constexpr (kXAhead) {
          cur = next;
          if (chunk + 1 < c_end)
            issue(chunk + 1, next);
        } else {
          issue(chunk, cur);
        }
        const uint32_t words = stage + (chunk - step_first) * 64;
        WeightFragment<MT> f;
#pragma unroll
        for (int mt = 0; mt < MT; ++mt)
#pragma unroll
          for (int h = 0; h < 2; ++h) {
            f.q[mt][h] = lds128(words + (mt * 16 + h * 8) * p.pitch);
            f.scale[mt][h] = cur.scale[mt][h];
            f.bias[mt][h] = cur.bias[mt][h];
          }
        if constexpr (kXAhead) {
          mma_chunk<BITS, NT, MT, FACTORED>(acc, f, cur.x);
        } else {
          uint4 x[NT][L::kXVectors];
          load_x(chunk, x);
          mma_chunk<BITS, NT, MT, FACTORED>(acc, f, x);
        }
      }
      ring.release(q, lane);
    }

    // The tile's outputs: the warps_k partials of each added in slice order from 0.0f (the
    // mma path's reduce_and_store at split_k = 1), by the consumer warps only.
    store_mma_partials(partials, acc, warp, lane);
    const int consumer_threads = consumers * 32;
    named_barrier(1, consumer_threads);
    const float *pf = reinterpret_cast<const float *>(partials);
    constexpr int kFloatsPerWarp = MT * NT * 128;
    const int m0 = tile * tile_rows;
    for (int o = static_cast<int>(threadIdx.x); o < tile_rows * NT * 8; o += consumer_threads) {
      const int m_local = o % tile_rows, r = o / tile_rows;
      if (m0 + m_local >= p.n || r >= p.rows)
        continue;
      const int offset =
          (m_local / (MT * 16)) * kFloatsPerWarp + mma_partial_offset<NT>(m_local % (MT * 16), r);
      float sum = 0.0f;
      for (int s = 0; s < p.warps_k; ++s)
        sum += pf[s * p.warps_n * kFloatsPerWarp + offset];
      p.y[static_cast<size_t>(r) * p.n + m0 + m_local] =
          __bfloat16_as_ushort(__float2bfloat16_rn(sum));
    }
    named_barrier(1, consumer_threads);
  }
#endif
}

} // namespace hone::cuda::qmv_affine_detail
