// gemv.bf16's ring path device code: the op's chunk policy for the weights-once ring kernel of
// the GEMV family (../common/weight_ring.cuh). Each 32-element chunk goes through mma_chunk, the
// mma path's own chunk arithmetic, so a ring config is bit-identical to the mma configs of
// equal k_slices. Included only by gemv_bf16_ring.cu.
#pragma once

#include <cstdint>

#include "cuda/kernels/common/weight_ring.cuh"
#include "cuda/kernels/gemv_bf16/gemv_bf16.cuh"

namespace hone::cuda::gemv_bf16_detail {

struct RingExtra {}; // gemv.bf16 has no parameters of its own

template <int NT, int MT> struct RingChunk {
  static constexpr int kChunkK = kGemvBf16RingChunkK; // 64 bytes of a weight row
  static constexpr int kLaneK = 8;   // lane t: elements 8t..8t+7 of a chunk
  static constexpr int kRuns = 1;    // in one run (weight_ring.cuh)
  static constexpr int kXVectors = 1;
  using Extra = RingExtra;
  struct Tile {};
  struct Loads {};

  __device__ __forceinline__ static Tile tile(const Extra &, const kernel_detail::RingParams &, int,
                                              int) {
    return {};
  }
  __device__ __forceinline__ static void issue(const Extra &, const Tile &, int, int, Loads &) {}
  __device__ __forceinline__ static void prefetch(const Extra &, const Tile &, int, int, int) {}
  __device__ __forceinline__ static void multiply(float (&acc)[MT][NT][4], const uint4 (&w)[MT][2],
                                                  const Loads &, const uint4 (&x)[NT][kXVectors]) {
    uint4 xv[NT];
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
      xv[nt] = x[nt][0];
    mma_chunk(acc, w, xv);
  }
};

} // namespace hone::cuda::gemv_bf16_detail
