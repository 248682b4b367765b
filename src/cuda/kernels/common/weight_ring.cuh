// The weights-once "ring" kernel of the GEMV family (qmv.affine, gemv.bf16): an mma path's
// arithmetic and K order over weights streamed once through a shared-memory ring by a producer
// warp, on a persistent grid. Device code; included by the ops' ring units.
//
// Work split. CTA c owns the contiguous weight rows of the m16 tiles [c U / C, (c + 1) U / C)
// of U = ceil(n / 16), over all of K and every activation row (rows <= NT x 8), so each weight
// byte is read from DRAM once per call at every row count 1-32; it walks them in tiles of
// tile_rows = warps_n x MT x 16 rows, the last one short where its range ends. Ranges in m16
// units keep the grid balanced to 16 rows whatever the tile (whole tiles of 128-256 rows left
// up to a seventh of the SMs idle on 28672 rows). Consumer warp
// (warp_n, warp_k), warp_n fastest, takes the MT m16 tiles from row warp_n x MT x 16 of the
// tile and K slice warp_k: chunks [warp_k x slice_chunks, (warp_k + 1) x slice_chunks), as the
// mma path's warp of slice warp_k does. Warp warps_n x warps_k is the producer.
//
// Chunks. Every op's mma path walks K in chunks of 64 bytes of a weight row (32 bf16, 64 int8
// or 128 int4 values); lane (g, t) takes bytes 16t..16t+15 of rows g and g + 8 of each m16
// tile, and kXVectors 16-byte activation vectors from K offset kLaneK x t of activation row g
// of each n8 tile. The policy `Chunk` (the op's) multiplies one chunk exactly as its mma path
// does:
//   Chunk::kChunkK, kLaneK, kXVectors            values per chunk and lane, activation vectors
//   Chunk::kRuns                                  1, or 2: the lane's 16 bytes of a row are two
//                                                 8-byte runs, at 8t and 32 + 8t, and its
//                                                 activations the matching K values
//                                                 (qmv.affine's chunks of two groups)
//   Chunk::Extra                                  the op's own kernel parameters
//   Chunk::Tile    Chunk::tile(extra, p, m_warp, g)           per tile and lane (e.g. group
//                                                             parameter offsets)
//   Chunk::Loads   Chunk::issue(extra, tile, chunk, t, loads) the chunk's loads other than the
//                                                             weights and activations, issued
//                                                             a chunk ahead
//                  Chunk::prefetch(extra, tile, t, c0, c1)    a tile ahead: asks L2 for what
//                                                             those loads will read over the
//                                                             slice's chunks [c0, c1)
//   Chunk::multiply(acc, w[MT][2], loads, x[NT][kXVectors])  the mma path's chunk arithmetic
//
// The ring. Step j of a tile holds, for every slice s, its chunks
// [s x slice_chunks + j x step_chunks, + step_chunks) of every row of the tile: one plane per
// slice of tile_rows rows of step_chunks x 64 bytes (the row stride), at stages_base + stage x
// stage_bytes + s x tile_rows x row stride, filled by one TMA box of the weights' 2-D tensor map
// (16 x step_chunks words x tile_rows; a short tile takes boxes of 16 rows, so that no row of
// the next CTA's range is read). Chunk i of the step sits at byte 64 i of its row. A slice's last
// step may be short: its box still loads step_chunks chunks (the next slice's, or zeros past K,
// which the consumers skip), and counts them all, as TMA does. (One bulk copy per row and chunk
// measured 70-90 cycles of the producer per copy on the H200, and boxes of one chunk, 64-byte
// rows, 0.26-0.38 of the read ceiling: docs/notes/qmv_affine.md, v8.) Rows 128 or 256 bytes
// apart put a quarter warp's 16-byte loads of rows 2i and 2i + 1 on the same banks, twice the
// wavefronts of conflict-free loads; shared memory is not what bounds these kernels. After the
// slices' planes, a stage holds the activations of the same chunks: per slice and chunk of the
// step one block with room for NT x 8 rows of chunk_k bf16, of which one TMA box of the
// activations' tensor map fills the min(rows, NT x 8) there are (lanes of later rows read the
// last one; their outputs are never stored). So a consumer reads both operands from shared
// memory: with activations read from global memory per chunk, the ring's consumers waited on
// them (long-scoreboard stalls), at 17-32 rows most. K is a multiple of the chunk (the launchers
// refuse other shapes), so no lane needs a K guard. Full / empty mbarriers as in
// weight_stream.cuh.
//
// Numerics. Each consumer feeds its slice's chunks, in increasing K, through Chunk::multiply
// into one accumulator per m16n8 tile, and at the end of a tile the warps_k partials of an
// output are added in slice order from 0.0f, as reduce_and_store does. So a ring config is
// bit-identical to every mma-path config of the same k_slices, at every row count.
#pragma once

#include <algorithm>
#include <cstdint>

#include <cuda_bf16.h>

#include "cuda/kernels/common/pdl.cuh"
#include "cuda/kernels/common/ptx.cuh"
#include "cuda/kernels/common/split_k_reduce.cuh"
#include "cuda/kernels/common/tensor_map.h"
#include "cuda/kernels/common/weight_ring.h"
#include "cuda/kernels/common/weight_stream.cuh"

namespace hone::cuda::kernel_detail {

// What every ring kernel's parameters hold (the op's own follow in RingArgs::extra).
struct RingParams {
  CUtensorMap tile_map;  // uint32 words [n][k / chunk_k x 16], box {16 x step_chunks, tile_rows}
  CUtensorMap row16_map; // the same, box {16 x step_chunks, 16}: a short tile's rows
  CUtensorMap x_map;     // bf16 [rows][k], box {chunk_k, x_rows}: one chunk's activations
  uint16_t *y;           // bf16 [rows, n]
  int rows, n, k;
  int x_rows; // activation rows an activation box copies: min(rows, NT x 8)
  int warps_n, warps_k;
  int total_chunks; // k / chunk_k
  int slice_chunks; // chunks per K slice (the mma path's)
  int step_chunks;  // chunks per slice and ring step
  int steps;        // ring steps per tile: ceil(slice_chunks / step_chunks)
  int stages;       // ring depth, <= 16
  int units;        // m16 tiles of the weight rows: ceil(n / 16)
};

template <class Extra> struct RingArgs {
  RingParams p;
  Extra extra;
};

template <class Chunk, int NT, int MT, int MAX_THREADS>
__global__ void __launch_bounds__(MAX_THREADS, 1)
    weight_ring_kernel(const __grid_constant__ RingArgs<typename Chunk::Extra> args) {
#if __CUDA_ARCH__ >= 900
  const RingParams &p = args.p;
  extern __shared__ __align__(128) uint8_t ring_shared[];
  const int consumers = p.warps_n * p.warps_k;
  const int tile_rows = p.warps_n * MT * 16;
  const int row_stride = p.step_chunks * 64; // [bytes] between a plane's rows
  const int plane_stride = tile_rows * row_stride;
  // The activations of one chunk: room for NT x 8 rows of kChunkK bf16, of which the box fills
  // x_rows (rows past `rows` are never written, nor read: a lane of such a row reads row
  // rows - 1, whose outputs are not stored).
  constexpr int kXRowBytes = Chunk::kChunkK * 2;
  constexpr int kXBlockBytes = NT * 8 * kXRowBytes;
  const int x_blocks = p.warps_k * plane_stride; // [bytes] from a stage's start
  const int stage_bytes = x_blocks + p.warps_k * p.step_chunks * kXBlockBytes;
  uint64_t *barriers = reinterpret_cast<uint64_t *>(ring_shared);
  const StageRing ring{barriers, barriers + p.stages, p.stages};
  float4 *partials = reinterpret_cast<float4 *>(ring_shared + kStreamBarrierBytes);
  uint8_t *stages_base = ring_shared + kStreamBarrierBytes + consumers * MT * NT * 512;
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int warp = static_cast<int>(threadIdx.x) >> 5;
  const int ctas = static_cast<int>(gridDim.x), cta = static_cast<int>(blockIdx.x);
  // This CTA's weight rows [row_begin, row_end).
  const int row_begin = static_cast<int>(static_cast<long long>(cta) * p.units / ctas) * 16;
  const int row_end =
      min(static_cast<int>(static_cast<long long>(cta + 1) * p.units / ctas) * 16, p.n);
  if (threadIdx.x == 0)
    ring.init(consumers, /*arrivals_per_warp=*/1);
  __syncthreads();

  if (warp == consumers) {
    // Producer (one lane). The weights of its first step go out before the wait for the kernel
    // before it in a chain (they do not depend on it); the activations only after it.
    if (lane == 0) {
      prefetch_tensor_map(&p.tile_map);
      prefetch_tensor_map(&p.row16_map);
      prefetch_tensor_map(&p.x_map);
      bool waited = false;
      const uint32_t stages_shared = shared_address(stages_base);
      StageCursor q;
      for (int m0 = row_begin; m0 < row_end; m0 += tile_rows) {
        const int valid_rows = min(tile_rows, row_end - m0);
        const bool whole = valid_rows == tile_rows;
        const int boxes = (valid_rows + 15) / 16; // of 16 rows, for a short tile
        const uint32_t plane_bytes = (whole ? tile_rows : boxes * 16) * row_stride; // as TMA counts
        for (int j = 0; j < p.steps; ++j, q.advance(p.stages)) {
          // Slice s's chunks of this step: [first(s), first(s) + count(s)).
          auto first = [&](int s) { return s * p.slice_chunks + j * p.step_chunks; };
          auto count = [&](int s) {
            const int c0 = first(s);
            return max(0,
                       min(min(c0 + p.step_chunks, (s + 1) * p.slice_chunks), p.total_chunks) - c0);
          };
          ring.acquire_empty(q);
          int planes = 0, chunks = 0; // > 0: slice 0 has a chunk in every step
          for (int s = 0; s < p.warps_k; ++s) {
            planes += count(s) > 0;
            chunks += count(s);
          }
          ring.expect(q, static_cast<uint32_t>(planes) * plane_bytes +
                             static_cast<uint32_t>(chunks * p.x_rows * kXRowBytes));
          const uint32_t stage = stages_shared + q.stage * stage_bytes;
          for (int s = 0; s < p.warps_k; ++s) {
            if (count(s) == 0)
              continue;
            const uint32_t plane = stage + s * plane_stride;
            const int word = first(s) * 16;
            if (whole)
              tma_load_2d(plane, &p.tile_map, word, m0, ring.full_at(q));
            else
              for (int b = 0; b < boxes; ++b)
                tma_load_2d(plane + b * 16 * row_stride, &p.row16_map, word, m0 + b * 16,
                            ring.full_at(q));
          }
          if (!waited) {
            pdl_wait();
            waited = true;
          }
          for (int s = 0; s < p.warps_k; ++s)
            for (int c = 0; c < count(s); ++c)
              tma_load_2d(stage + x_blocks + (s * p.step_chunks + c) * kXBlockBytes, &p.x_map,
                          (first(s) + c) * Chunk::kChunkK, 0, ring.full_at(q));
        }
      }
    }
    return;
  }

  // Consumers read the activations only from the stages, which the producer fills after its
  // wait, and the group parameters, which no kernel writes: they set up, ask L2 for the first
  // tile's parameters and issue their first loads while the previous kernel of a dependent
  // launch finishes, and wait for it only before they write y (below).
  pdl_launch_dependents();
  constexpr int kXVectors = Chunk::kXVectors;
  constexpr int kRuns = Chunk::kRuns;
  static_assert(kRuns == 1 || kRuns == 2, "a lane's chunk is one run or two");
  constexpr int kRunXVectors = kXVectors / kRuns;
  const int warp_n = warp % p.warps_n, slice = warp / p.warps_n;
  const int g = lane >> 2, t = lane & 3;
  const int c_begin = slice * p.slice_chunks;
  const int c_end = min(c_begin + p.slice_chunks, p.total_chunks);
  // This lane's 16 bytes of row g of its first m16 tile, in the plane of slice `slice`, and of
  // activation row g at its K offset in a chunk's activation block.
  const int fragment = slice * plane_stride + (warp_n * MT * 16 + g) * row_stride + 16 / kRuns * t;
  const int x_fragment =
      x_blocks + slice * p.step_chunks * kXBlockBytes + Chunk::kLaneK / kRuns * 2 * t;
  // Activation row nt x 8 + g, clamped to the last row: at one row every lane of a quarter warp
  // reads the same bytes (one broadcast), where distinct rows of zeros took 8 x the wavefronts.
  int x_row[NT];
#pragma unroll
  for (int nt = 0; nt < NT; ++nt)
    x_row[nt] = min(nt * 8 + g, p.rows - 1) * kXRowBytes;
  const uint32_t stages_shared = shared_address(stages_base);
  // A chunk's loads besides its weights and activations (the op's, e.g. group parameters).
  struct Ahead {
    typename Chunk::Loads loads;
  };

  StageCursor q;
  // The tile's own loads come one chunk ahead, each a round trip; from DRAM that is longer
  // than a chunk's work (the ring's long-scoreboard stalls, docs/notes/qmv_affine.md, v8). So
  // L2 is asked for them a tile ahead: the first tile's before its loop, each next tile's at
  // the start of the one before, so that only the first tile's first chunk waits on DRAM.
  if (row_begin < row_end)
    Chunk::prefetch(args.extra, Chunk::tile(args.extra, p, row_begin + warp_n * MT * 16, g), t,
                    c_begin, c_end);
  for (int m0 = row_begin; m0 < row_end; m0 += tile_rows) {
    const int valid_rows = min(tile_rows, row_end - m0);
    const typename Chunk::Tile tl = Chunk::tile(args.extra, p, m0 + warp_n * MT * 16, g);
    if (m0 + tile_rows < row_end)
      Chunk::prefetch(args.extra, Chunk::tile(args.extra, p, m0 + tile_rows + warp_n * MT * 16, g),
                      t, c_begin, c_end);
    auto issue = [&](int chunk, Ahead &a) { Chunk::issue(args.extra, tl, chunk, t, a.loads); };
    float acc[MT][NT][4];
    zero_accumulators(acc);
    // Chunk c multiplies with the loads in `use` while chunk c + 1's go into `fill`. Two
    // buffers taken in turn (ping-pong), so that no copy of a register waits on a load still in
    // flight: with one buffer and a copy, nvcc moved the next chunk's registers right after
    // issuing their loads, and the consumers waited a load latency every chunk (long-scoreboard
    // stalls, docs/notes/qmv_affine.md, v8).
    auto multiply_chunk = [&](int c, uint32_t words, uint32_t xs, Ahead &use, Ahead &fill) {
      if (c + 1 < c_end)
        issue(c + 1, fill);
      uint4 w[MT][2];
#pragma unroll
      for (int mt = 0; mt < MT; ++mt)
#pragma unroll
        for (int h = 0; h < 2; ++h)
          if constexpr (kRuns == 1) {
            w[mt][h] = lds128(words + (mt * 16 + h * 8) * row_stride);
          } else {
            const uint2 a = lds64(words + (mt * 16 + h * 8) * row_stride);
            const uint2 b = lds64(words + (mt * 16 + h * 8) * row_stride + 32);
            w[mt][h] = make_uint4(a.x, a.y, b.x, b.y);
          }
      uint4 x[NT][kXVectors];
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int v = 0; v < kXVectors; ++v) // run v / kRunXVectors, half a chunk apart
          x[nt][v] = lds128(xs + x_row[nt] + (v / kRunXVectors) * Chunk::kChunkK +
                            (v % kRunXVectors) * 16);
      Chunk::multiply(acc, w, use.loads, x);
    };
    // A warp whose rows all lie past a short tile's end (the last tile of a CTA's range, up to
    // warps_n - 1 warps) only keeps the ring's phases: it waits for each step and releases it,
    // so that it never arrives twice in one phase, but loads and multiplies nothing (its
    // outputs are never stored), leaving the issue slots to the warps that have rows.
    const bool has_rows = warp_n * MT * 16 < valid_rows;
    Ahead even, odd; // the loads of chunks c_begin + 2i and c_begin + 2i + 1
    if (has_rows && c_begin < c_end)
      issue(c_begin, even);
    int chunk = has_rows ? c_begin : c_end;
    for (int j = 0; j < p.steps; ++j, q.advance(p.stages)) {
      const int step_first = c_begin + j * p.step_chunks;
      const int step_end = min(step_first + p.step_chunks, c_end);
      ring.wait_full(q);
      const uint32_t stage = stages_shared + q.stage * stage_bytes;
      for (; chunk < step_end; ++chunk) {
        const uint32_t words = stage + fragment + (chunk - step_first) * 64;
        const uint32_t xs = stage + x_fragment + (chunk - step_first) * kXBlockBytes;
        if (((chunk - c_begin) & 1) == 0)
          multiply_chunk(chunk, words, xs, even, odd);
        else
          multiply_chunk(chunk, words, xs, odd, even);
      }
      ring.release_warp(q, lane);
    }

    // The tile's outputs: the warps_k partials of each added in slice order from 0.0f (the
    // mma path's reduce_and_store at split_k = 1), by the consumer warps only.
    store_mma_partials(partials, acc, warp, lane);
    const int consumer_threads = consumers * 32;
    named_barrier(1, consumer_threads);
    // y may still be read by the kernel before (a buffer of a chain's ping-pong): written only
    // once that kernel has completed (at once after the first tile, and without PDL).
    pdl_wait();
    const float *pf = reinterpret_cast<const float *>(partials);
    constexpr int kFloatsPerWarp = MT * NT * 128;
    for (int o = static_cast<int>(threadIdx.x); o < tile_rows * NT * 8; o += consumer_threads) {
      const int m_local = o % tile_rows, r = o / tile_rows;
      // Rows past the CTA's range belong to the next CTA (or past n): never stored here.
      if (m_local >= valid_rows || r >= p.rows)
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

// Host: enqueues the ring kernel `fn` (a weight_ring_kernel with `max_consumers` consumer warps
// at most) for `cta` and `ring` over the weights `w` (rows of k / chunk_k x 64 bytes) and the
// activations `x` (bf16 [rows, k]), the tensor maps' sources. `args.p` comes with y, rows, n and
// k set by the op and `args.extra` with the op's own; `slice_chunks` is the op's mma-path slice
// length at cta.warps_k slices, so that the ring keeps that path's K order. Invalid value for a
// shape the kernel cannot take (K not a multiple of `chunk_k`, weights or activations not
// 16-byte aligned, a config that does not fit); invalid configuration where not one CTA fits
// the device. Never synchronises.
template <class Extra>
LaunchStatus launch_weight_ring(const void *fn, const SplitKCta &cta, const StreamRingFields &ring,
                                const void *w, const void *x, RingArgs<Extra> args, int chunk_k,
                                int slice_chunks, int max_consumers, void *stream, bool dependent) {
  RingParams &p = args.p;
  if (!fn || p.k < chunk_k || p.k % chunk_k != 0 || p.n < 1 ||
      reinterpret_cast<uintptr_t>(w) % 16 != 0 || reinterpret_cast<uintptr_t>(x) % 16 != 0)
    return LaunchStatus::invalid_value();
  p.total_chunks = p.k / chunk_k;
  if (!ring_launch_fits(cta, ring, p.rows, p.total_chunks, max_consumers) || slice_chunks < 1)
    return LaunchStatus::invalid_value();
  const uint64_t row_bytes = static_cast<uint64_t>(p.total_chunks) * kRingChunkBytes;
  p.warps_k = cta.warps_k;
  p.warps_n = cta.warps / cta.warps_k;
  p.slice_chunks = slice_chunks;
  p.step_chunks = ring_launch_step_chunks(cta, ring, chunk_k, slice_chunks);
  p.x_rows = std::min(p.rows, cta.rows_per_cta);
  p.steps = (slice_chunks + p.step_chunks - 1) / p.step_chunks;
  p.stages = ring.stages;
  p.units = (p.n + 15) / 16;
  const int tile_rows = ring_tile_rows(cta);
  const uint64_t words = row_bytes / 4;
  const auto box_words = static_cast<uint32_t>(16 * p.step_chunks);
  // ring_launch_fits held the tile to one TMA box's 256 rows.
  if (!encode_2d(&p.tile_map, CU_TENSOR_MAP_DATA_TYPE_UINT32, w, words, p.n, row_bytes, box_words,
                 static_cast<uint32_t>(tile_rows), CU_TENSOR_MAP_SWIZZLE_NONE) ||
      !encode_2d(&p.row16_map, CU_TENSOR_MAP_DATA_TYPE_UINT32, w, words, p.n, row_bytes, box_words,
                 16, CU_TENSOR_MAP_SWIZZLE_NONE) ||
      !encode_2d(&p.x_map, CU_TENSOR_MAP_DATA_TYPE_UINT16, x, static_cast<uint64_t>(p.k),
                 static_cast<uint64_t>(p.rows), static_cast<uint64_t>(p.k) * 2,
                 static_cast<uint32_t>(chunk_k), static_cast<uint32_t>(p.x_rows),
                 CU_TENSOR_MAP_SWIZZLE_NONE))
    return LaunchStatus::invalid_value();
  return launch_stream_kernel(fn, cta.warps,
                              static_cast<size_t>(ring_shared_bytes(cta, ring, chunk_k)), p.units,
                              ring.ctas_per_sm, &args, stream, dependent);
}

} // namespace hone::cuda::kernel_detail
