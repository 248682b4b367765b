// rmsnorm_row.cuh: one row normalised by a whole CTA of 32-512 threads (grid_norm_rows, as the
// grid's last CTA: here the only one) gives rmsnorm's own bits (out, and h = x + residual where
// there is one), against rmsnorm_launch with the default and, where one takes the row, with
// another config of the same lanes, on fresh random rows of every hidden size a decode step has,
// with and without the residual. This is what a linear that normalises its own output must
// reproduce (quantized_linear_rmsnorm; docs/notes/decode_step.md).
#include <cstdint>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/backend/random_fill.h"
#include "cuda/gate/cuda_workload.h"
#include "cuda/kernels/rmsnorm/rmsnorm.h"
#include "cuda/kernels/rmsnorm/rmsnorm_row.cuh"
#include "device_test.h"

namespace hone::cuda {
namespace {

using testing::DeviceTest;

class RmsnormRowTest : public DeviceTest {};

constexpr float kEps = 1e-6f;

__global__ void __launch_bounds__(512) row_kernel(rmsnorm_row::GridRowsNorm a) {
  __shared__ float shared[rmsnorm_row::kMaxWarps + 4];
  rmsnorm_row::grid_norm_rows(a, shared);
}

size_t differing(const std::vector<uint16_t> &a, const std::vector<uint16_t> &b) {
  size_t n = a.size() == b.size() ? 0 : a.size() + b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    n += a[i] != b[i] ? 1 : 0;
  return n;
}

TEST_F(RmsnormRowTest, ACtaOfAnySizeGivesRmsnormsBits) {
  cudaStream_t stream = cuda_backend().stream();
  int checked = 0;
  for (int hidden : {64, 896, 1536, 2048, 3584, 4096, 5120, 8192}) {
    const RmsnormConfig def = rmsnorm_default(1, hidden);
    // The same lanes at twice the threads and half the vector, where that config exists.
    RmsnormConfig twin = def;
    if (def.vec == 8 && def.threads * 2 <= kRmsnormMaxThreadsPerCta)
      twin = {4, def.threads * 2, 1};
    else if (def.vec == 4)
      twin = {8, def.threads / 2, def.threads / 2 >= 128 ? 1 : 128 / (def.threads / 2)};
    ASSERT_EQ(twin.lanes(), def.lanes());
    // A narrow row's twin would leave threads idle, which only a default may (can_implement).
    if (!rmsnorm_can_implement(twin, 1, hidden, nullptr))
      twin = def;
    const int lanes = def.lanes();
    DeviceBuffer x(hidden * 2), r(hidden * 2), w(hidden * 2), out(hidden * 2), ro(hidden * 2);
    DeviceBuffer counter(sizeof(unsigned)); // 0, and 0 again after each launch
    HONE_CUDA_CHECK(cudaMemsetAsync(counter.data(), 0, counter.size(), stream));
    for (bool residual : {false, true})
      for (int round = 0; round < 3; ++round) { // fresh rows each round
        for (const DeviceBuffer *b : {&x, &r, &w})
          fill_random_bf16(b->data(), static_cast<size_t>(hidden), next_random_seed(), stream);
        std::vector<std::vector<uint16_t>> expected; // out, then residual_out, per config
        for (const RmsnormConfig &c : {def, twin}) {
          RmsnormArgs a;
          a.x = x.data();
          a.residual = residual ? r.data() : nullptr;
          a.residual_out = residual ? ro.data() : nullptr;
          a.w = w.data();
          a.out = out.data();
          a.rows = 1;
          a.hidden = hidden;
          a.eps = kEps;
          std::string why;
          ASSERT_TRUE(rmsnorm_can_implement(c, 1, hidden, &why)) << why;
          HONE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xff, out.size(), stream));
          ASSERT_TRUE(rmsnorm_launch(c, a, stream).ok());
          expected.push_back(download<uint16_t>(out.data(), static_cast<size_t>(hidden), stream));
          if (residual)
            expected.push_back(download<uint16_t>(ro.data(), static_cast<size_t>(hidden), stream));
        }
        // The two configs of one order agree, as the gate relies on.
        ASSERT_EQ(differing(expected[0], expected[residual ? 2 : 1]), 0u) << hidden;
        for (int threads = 32; threads <= 512; threads *= 2) {
          if (!rmsnorm_row::grid_norm_fits(threads, hidden, lanes))
            continue;
          HONE_CUDA_CHECK(cudaMemsetAsync(out.data(), 0xff, out.size(), stream));
          HONE_CUDA_CHECK(cudaMemsetAsync(ro.data(), 0xff, ro.size(), stream));
          rmsnorm_row::GridRowsNorm a;
          a.x = x.as<const uint16_t>();
          a.residual = residual ? r.as<const uint16_t>() : nullptr;
          a.residual_out = ro.as<uint16_t>();
          a.w = w.as<const uint16_t>();
          a.out = out.as<uint16_t>();
          a.counter = counter.as<unsigned>();
          a.rows = 1;
          a.hidden = hidden;
          a.lanes = lanes;
          a.eps = kEps;
          row_kernel<<<1, threads, 0, stream>>>(a);
          HONE_CUDA_CHECK(cudaGetLastError());
          const std::vector<uint16_t> got =
              download<uint16_t>(out.data(), static_cast<size_t>(hidden), stream);
          EXPECT_EQ(differing(got, expected[0]), 0u)
              << "hidden " << hidden << " lanes " << lanes << " threads " << threads
              << (residual ? " with the residual" : "");
          if (residual)
            EXPECT_EQ(differing(download<uint16_t>(ro.data(), static_cast<size_t>(hidden), stream),
                                expected[1]),
                      0u)
                << "residual_out, hidden " << hidden << " threads " << threads;
          ++checked;
        }
      }
  }
  EXPECT_GE(checked, 100);
}

} // namespace
} // namespace hone::cuda
