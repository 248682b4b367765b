// download_blocks (cuda_workload.h, gather_blocks.h): strided blocks of a device tensor reach
// the host dense and in their order, the same elements as a host copy of the whole tensor,
// across more than one staging load and with one-row blocks; misaligned blocks are refused.
#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/backend/random_fill.h"
#include "cuda/gate/cuda_workload.h"
#include "device_test.h"
#include "hone/error.h"

namespace hone::cuda {
namespace {

using testing::DeviceTest;

class DownloadBlocksTest : public DeviceTest {};

// Elements of `got` (download_blocks() of `blocks`) other than the host copy's: element i is
// element i % row of row (i / row) % rows of block i / (rows x row).
size_t mismatches(const std::vector<uint16_t> &got, const std::vector<uint16_t> &host,
                  const BlockLayout &blocks) {
  const auto row = static_cast<size_t>(blocks.row), rows = static_cast<size_t>(blocks.rows);
  if (got.size() != blocks.offsets.size() * rows * row)
    return got.size() + 1;
  size_t wrong = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const size_t at = static_cast<size_t>(blocks.offsets[i / (rows * row)]) +
                      (i / row) % rows * static_cast<size_t>(blocks.pitch) + i % row;
    wrong += got[i] != host[at] ? 1 : 0;
  }
  return wrong;
}

TEST_F(DownloadBlocksTest, BlocksArriveDenseInTheirOrder) {
  cudaStream_t stream = cuda_backend().stream();
  const size_t count = size_t{64} << 20; // 128 MiB of bf16
  DeviceBuffer src(count * sizeof(uint16_t));
  fill_random_bf16(src.data(), count, next_random_seed(), stream);
  const std::vector<uint16_t> host = download<uint16_t>(src.data(), count, stream);
  std::mt19937_64 rng(3);
  // Blocks of 512 rows of 256 elements, 1024 apart (256 KiB): 300 of them are two staging
  // loads. Offsets in any order, some repeated, each a multiple of 8 elements (16 bytes).
  BlockLayout pages{{}, 512, 256, 1024};
  std::uniform_int_distribution<int64_t> at(0, static_cast<int64_t>(count - 512 * 1024) / 8);
  for (int i = 0; i < 300; ++i)
    pages.offsets.push_back(i % 50 == 7 ? pages.offsets.front() : 8 * at(rng));
  EXPECT_EQ(mismatches(download_blocks<uint16_t>(src.data(), pages, stream), host, pages), 0u);
  // One-row blocks (the sampled rows of q).
  BlockLayout rows{{0, 128 * 5, 128 * 2, static_cast<int64_t>(count) - 128}, 1, 128, 128};
  EXPECT_EQ(mismatches(download_blocks<uint16_t>(src.data(), rows, stream), host, rows), 0u);
  EXPECT_TRUE(download_blocks<uint16_t>(src.data(), BlockLayout{{}, 1, 128, 128}, stream).empty());
  // 4 elements: 8 bytes, not a multiple of 16.
  EXPECT_THROW(download_blocks<uint16_t>(src.data(), BlockLayout{{4}, 1, 128, 128}, stream), Error);
}

} // namespace
} // namespace hone::cuda
