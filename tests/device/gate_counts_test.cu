// The gate's device-side counts (count_bf16.h) and the gate that uses them
// (CudaWorkload::check): NaNs and bitwise differences are counted exactly across a grid-stride
// of several passes, and a workload whose "kernel" leaves outputs unwritten or changes a few
// bits fails the gate with those counts, in both numerics modes, while the sampled reference
// rows still catch a wrong value.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/backend/random_fill.h"
#include "cuda/gate/count_bf16.h"
#include "cuda/gate/cuda_workload.h"
#include "device_test.h"
#include "hone/bf16.h"

namespace hone::cuda {
namespace {

using testing::DeviceTest;

class GateCountsTest : public DeviceTest {};

void upload(void *dst, const std::vector<uint16_t> &src, cudaStream_t stream) {
  HONE_CUDA_CHECK(cudaMemcpyAsync(dst, src.data(), src.size() * sizeof(uint16_t),
                                  cudaMemcpyHostToDevice, stream));
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

TEST_F(GateCountsTest, CountsNansAndBitwiseDifferencesExactly) {
  cudaStream_t stream = cuda_backend().stream();
  // More elements than one pass of the grid (4096 CTAs of 256 threads), and not a multiple.
  const size_t n = (size_t{3} << 20) + 5;
  DeviceBuffer a(n * 2), b(n * 2), counter(8);
  fill_random_bf16(a.data(), n, next_random_seed(), stream);
  std::vector<uint16_t> host = download<uint16_t>(a.data(), n, stream);
  EXPECT_EQ(count_bf16(a.as<uint16_t>(), nullptr, n, counter, stream), 0u);

  // NaNs of either sign and any mantissa (the poison 0xFFFF among them), first and last
  // element included; infinities are not NaN.
  const std::vector<size_t> nan_at{0, 1, 777, (size_t{1} << 20) + 3, n - 2, n - 1};
  const uint16_t nans[] = {0xffff, 0x7fc0, 0x7f81, 0xff81, 0x7fff, 0xffc0};
  for (size_t i = 0; i < nan_at.size(); ++i)
    host[nan_at[i]] = nans[i];
  host[5] = 0x7f80; // +inf
  host[6] = 0xff80; // -inf
  upload(a.data(), host, stream);
  EXPECT_EQ(count_bf16(a.as<uint16_t>(), nullptr, n, counter, stream), nan_at.size());
  // Only the first elements: the count is of `count` elements, not of the buffer.
  EXPECT_EQ(count_bf16(a.as<uint16_t>(), nullptr, 778, counter, stream), 3u);
  EXPECT_EQ(count_bf16(a.as<uint16_t>(), nullptr, 0, counter, stream), 0u);

  // Bitwise: b equal to a, then one low bit flipped at a few places (the last element too).
  upload(b.data(), host, stream);
  EXPECT_EQ(count_bf16(a.as<uint16_t>(), b.as<uint16_t>(), n, counter, stream), 0u);
  for (size_t at : {size_t{9}, size_t{4096 * 256}, n / 2, n - 1})
    host[at] ^= 1;
  upload(b.data(), host, stream);
  EXPECT_EQ(count_bf16(a.as<uint16_t>(), b.as<uint16_t>(), n, counter, stream), 4u);

  DeviceBuffer small(4);
  EXPECT_THROW(count_bf16(a.as<uint16_t>(), nullptr, n, small, stream), Error);
}

// A workload whose kernel copies X ([rows, cols] bf16) to Y. Tactic
// `gate_test.copy:skip=S,flip=F,set=V` leaves Y's last S elements unwritten, flips the low bit
// of every F-th element (0: none) and sets the element of sampled row 1 and column 0 to V (0:
// none; X is never above 1 in magnitude). Its rows=1 default is the plain copy, of the same
// summation order.
struct CopyInputs {
  DeviceBuffer x;
};

__global__ void copy_kernel(const uint16_t *x, uint16_t *y, size_t n, size_t skip, size_t flip) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i + skip < n;
       i += stride)
    y[i] = flip != 0 && i % flip == 0 ? static_cast<uint16_t>(x[i] ^ 1u) : x[i];
}

class CopyWorkload final : public CudaWorkloadOf<CopyInputs> {
public:
  CopyWorkload(CudaBackend &backend, int64_t rows, int64_t cols)
      : CudaWorkloadOf(backend, rows, cols, 8e-3), rows_(rows), cols_(cols) {
    set_rotation(1);
  }
  size_t bytes_per_launch() const override { return 4 * elements(); }
  // Sampled rows past 16 rows: Y's rows 0, (rows - 1) / 15, ... as the big ops do.
  std::vector<int64_t> reference_rows() const override { return sampled_rows(rows_, 16); }
  std::vector<double> reference() const override {
    const std::vector<uint16_t> x =
        download_rows<uint16_t>(copy_at(0).x.data(), rows_, cols_, reference_rows(), stream());
    std::vector<double> out;
    for (uint16_t v : x)
      out.push_back(bf16_to_float(v));
    return out;
  }

private:
  size_t elements() const { return static_cast<size_t>(rows_ * cols_); }
  std::optional<std::string> cannot_implement(const Tactic &t) const override {
    if (t.kernel != "gate_test.copy")
      return "not a copy";
    return std::nullopt;
  }
  std::optional<KernelResources> resources(const Tactic &) const override { return std::nullopt; }
  CopyInputs make_copy() const override { return {DeviceBuffer(elements() * 2)}; }
  void fill_copy(size_t copy) override {
    fill_random_bf16(copies_[copy].x.data(), elements(), next_random_seed(), stream());
  }
  LaunchStatus launch(const Tactic &t, int copy) override {
    auto *y16 = static_cast<uint16_t *>(y());
    copy_kernel<<<64, 256, 0, stream()>>>(copy_at(copy).x.as<const uint16_t>(), y16, elements(),
                                          static_cast<size_t>(t.param("skip")),
                                          static_cast<size_t>(t.param("flip")));
    if (const int64_t set = t.param("set"); set != 0) {
      const size_t at = static_cast<size_t>(reference_rows().at(1) * cols_);
      const uint16_t v = float_to_bf16(static_cast<float>(set));
      HONE_CUDA_CHECK(cudaMemcpyAsync(y16 + at, &v, 2, cudaMemcpyHostToDevice, stream()));
      HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
    }
    return LaunchStatus::from_cuda(cudaGetLastError());
  }
  std::optional<SummationOrder> summation_order(const Tactic &) const override {
    return SummationOrder{KernelPath::fma, 1};
  }
  Tactic single_row_default() const override {
    return Tactic::parse("gate_test.copy:skip=0,flip=0,set=0");
  }
  LaunchStatus launch_single_row(int row, void *y_row) override {
    copy_kernel<<<4, 256, 0, stream()>>>(
        copy_at(0).x.as<const uint16_t>() + static_cast<size_t>(row * cols_),
        static_cast<uint16_t *>(y_row), static_cast<size_t>(cols_), 0, 0);
    return LaunchStatus::from_cuda(cudaGetLastError());
  }

  int64_t rows_, cols_;
};

TEST_F(GateCountsTest, TheGateFailsUnwrittenAndChangedOutputsByCount) {
  // 600 rows of 1000: the reference samples 16 rows; the counts cover all 600 000 outputs.
  CopyWorkload w(cuda_backend(), 600, 1000);
  const auto check = [&](const std::string &params, Numerics numerics) {
    return w.check(Tactic::parse("gate_test.copy:" + params), numerics);
  };
  for (Numerics numerics : {Numerics::tolerance, Numerics::batch_invariant}) {
    const CheckResult ok = check("skip=0,flip=0,set=0", numerics);
    EXPECT_TRUE(ok.pass()) << ok.reason;
    EXPECT_EQ(ok.error, 0);
    // Y's last three elements unwritten: the poison is counted over all of Y.
    const CheckResult unwritten = check("skip=3,flip=0,set=0", numerics);
    EXPECT_EQ(unwritten.status, Status::gate_failed);
    EXPECT_NE(unwritten.reason.find("3 of 600000 outputs NaN"), std::string::npos)
        << unwritten.reason;
    // One wrong value in a sampled row (100 where |x| <= 1) fails the relative L2 check.
    const CheckResult wrong = check("skip=0,flip=0,set=100", numerics);
    EXPECT_EQ(wrong.status, Status::gate_failed);
    EXPECT_NE(wrong.reason.find("relative L2 error"), std::string::npos) << wrong.reason;
  }
  // One low bit in every 1000th element: inside the L2 bound, so tolerance passes; batch
  // invariance counts all 600 of them against the rows=1 default.
  EXPECT_TRUE(check("skip=0,flip=1000,set=0", Numerics::tolerance).pass());
  const CheckResult flipped = check("skip=0,flip=1000,set=0", Numerics::batch_invariant);
  EXPECT_EQ(flipped.status, Status::gate_failed);
  EXPECT_EQ(flipped.error, 600);
  EXPECT_NE(flipped.reason.find("600 of 600000 outputs differ bitwise"), std::string::npos)
      << flipped.reason;
}

} // namespace
} // namespace hone::cuda
