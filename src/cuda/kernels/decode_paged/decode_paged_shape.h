// decode.paged sizes shared by the host logic and the launcher (host only): the per-warp
// shared-memory ring and the workspace layout of the partial states.
#pragma once

#include <cstddef>

#include "cuda/kernels/decode_paged/decode_paged.h"

namespace hone::cuda {

// Stages of a warp's cp.async ring (K + V tiles of 16 tokens in flight per warp): 16 KB, 24 KB
// and 32 KB per warp at head_dim 64, 128 and 256.
constexpr int decode_paged_stages(int head_dim) {
  return head_dim <= 64 ? 4 : head_dim <= 128 ? 3 : 2;
}
// [bytes] one warp's ring: stages x (K tile + V tile), a tile 16 tokens x head_dim bf16.
constexpr int decode_paged_warp_ring_bytes(int head_dim) {
  return decode_paged_stages(head_dim) * 2 * kDecodePagedTileTokens * head_dim * 2;
}
// Dynamic shared memory a CTA may opt into on sm_90 (227 KB).
inline constexpr size_t kDecodePagedMaxSharedBytes = 227 * 1024;

// Workspace: partial lse float [chunks, hq] (log2 units, see decode_paged.cuh) from byte 0,
// then partial o float [chunks, hq, head_dim] from this 256-byte aligned offset.
inline size_t decode_paged_partial_o_offset(const DecodePagedSplit &split, int hq) {
  const size_t lse_bytes =
      static_cast<size_t>(split.chunks) * static_cast<size_t>(hq) * sizeof(float);
  return (lse_bytes + 255) / 256 * 256;
}

} // namespace hone::cuda
