// The TMA engine's weight-chunk offsets (src/cuda/kernels/qmm_affine/qmm_tma_swizzle.h) against
// the swizzle as the tensor-memory-access copy applies it, written out bit by bit: in a
// 1024-byte-aligned tile, 16-byte chunk bits 4..6 (SWIZZLE_128B) or 4..5 (SWIZZLE_64B) of each
// byte address are XORed with bits 7..9 or 7..8. No device.
#include <cstdint>
#include <set>

#include <gtest/gtest.h>

#include "cuda/kernels/qmm_affine/qmm_tma_swizzle.h"

namespace hone::cuda {
namespace {

// Where the copy puts the byte at `linear` (row-major, rows of `row_bytes`) of its box.
uint32_t swizzled(uint32_t linear, int row_bytes) {
  const uint32_t bits = row_bytes == 128 ? 3 : 2; // chunk bits XORed
  const uint32_t mask = ((1u << bits) - 1) << 7;  // the row bits that select the XOR
  return linear ^ ((linear & mask) >> 3);
}

template <int BK> void check_every_chunk() {
  constexpr int kRowBytes = BK / 2, kChunks = kRowBytes / 16;
  std::set<uint32_t> seen;
  for (uint32_t row = 0; row < 256; ++row)
    for (uint32_t c = 0; c < kChunks; ++c) {
      const uint32_t want = swizzled(row * kRowBytes + c * 16, kRowBytes);
      EXPECT_EQ(tma_word_offset<BK>(row, row % 8, c), want)
          << "BK " << BK << " row " << row << " chunk " << c;
      seen.insert(want);
    }
  EXPECT_EQ(seen.size(), 256u * kChunks) << "BK " << BK << ": two chunks on one address";
}

TEST(QmmTmaSwizzle, ChunkOffsetsAreWhereTheCopyPutsThem) {
  check_every_chunk<256>();
  check_every_chunk<128>();
}

// A warp's 16-byte loads of one chunk column over its 8 rows (lanes g = 0..7 of a quarter)
// fall in 8 different 16-byte bank groups: no bank conflicts.
TEST(QmmTmaSwizzle, EightRowsOfOneChunkHitEightBankGroups) {
  for (uint32_t c = 0; c < 8; ++c) {
    std::set<uint32_t> groups256, groups128;
    for (uint32_t g = 0; g < 8; ++g) {
      groups256.insert((tma_word_offset<256>(16 + g, g, c) / 16) % 8);
      if (c < 4)
        groups128.insert((tma_word_offset<128>(16 + g, g, c) / 16) % 8);
    }
    EXPECT_EQ(groups256.size(), 8u) << "chunk " << c;
    if (c < 4) {
      EXPECT_EQ(groups128.size(), 8u) << "chunk " << c;
    }
  }
}

} // namespace
} // namespace hone::cuda
