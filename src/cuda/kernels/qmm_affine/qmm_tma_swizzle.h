// Where a tensor-memory-access copy with 128- or 64-byte swizzling puts each 16-byte chunk of
// qmm.affine's TMA engine's weight rows in shared memory, shared by the kernel
// (qmm_affine_tma.cuh) and a host test. No CUDA header needed by includers.
//
// A stage holds BN rows of BK / 2 bytes (BK = 256: 128 bytes, SWIZZLE_128B; BK = 128: 64
// bytes, SWIZZLE_64B), starting on a 1024-byte boundary. The swizzle XORs the chunk bits of the
// byte address (4..6 at 128B, 4..5 at 64B) with bits 7..9 (7..8) of it.
#pragma once

#include <cstdint>

#if defined(__CUDACC__)
#define HONE_TMA_SWIZZLE_FN __host__ __device__ __forceinline__
#else
#define HONE_TMA_SWIZZLE_FN inline
#endif

namespace hone::cuda {

// Byte offset of 16-byte chunk c of weight row `row` (g = row % 8) in a stage of BK-deep rows.
template <int BK>
HONE_TMA_SWIZZLE_FN uint32_t tma_word_offset(uint32_t row, uint32_t g, uint32_t c) {
  static_assert(BK == 128 || BK == 256, "K blocks of 128 or 256");
  if constexpr (BK == 256)
    return row * 128 + ((c ^ g) << 4); // bits 7..9 of row * 128 are row % 8
  else
    return row * 64 + ((c ^ (g >> 1)) << 4); // bits 7..8 of row * 64 are (row / 2) % 4
}

} // namespace hone::cuda
