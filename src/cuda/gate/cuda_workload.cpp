#include "cuda/gate/cuda_workload.h"

#include <algorithm>
#include <cstdint>
#include <limits>

#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/gate/bf16_compare.h"
#include "cuda/gate/count_bf16.h"
#include "cuda/gate/gather_blocks.h"
#include "hone/error.h"
#include "hone/number_format.h"

namespace hone::cuda {

namespace {

// [bytes] download_block_bytes() gathers on the device per copy to the host.
constexpr size_t kBlockStagingBytes = size_t{64} << 20;

size_t elements(int64_t a, int64_t b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

CheckResult fail(CheckResult result, Status status, std::string reason, double error) {
  result.status = status;
  result.reason = std::move(reason);
  result.error = error;
  return result;
}

} // namespace

CudaWorkload::CudaWorkload(CudaBackend &backend, int64_t out_rows, int64_t out_cols, double bound)
    : backend_(backend), out_rows_(out_rows), out_cols_(out_cols), bound_(bound),
      y_(elements(out_rows, out_cols) * sizeof(uint16_t)), counter_(sizeof(unsigned long long)) {}

cudaStream_t CudaWorkload::stream() const { return backend_.stream(); }

void CudaWorkload::set_rotation(int copies) {
  HONE_CHECK(copies >= 1, "set_rotation needs at least one copy");
  const auto count = static_cast<size_t>(copies);
  const size_t filled = std::min(rotation_, count);
  resize_copies(count);
  // Every copy holds its own random data: no two copies alike.
  for (size_t c = filled; c < count; ++c)
    fill_copy(c);
  rotation_ = count;
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

Status CudaWorkload::can_run(const Tactic &tactic, std::string *reason) const {
  const auto refuse = [&](Status status, std::string why) {
    if (reason)
      *reason = std::move(why);
    return status;
  };
  if (std::optional<std::string> why = cannot_implement(tactic))
    return refuse(Status::cannot_implement, std::move(*why));
  if (std::optional<KernelResources> res = resources(tactic))
    if (std::optional<std::string> spills = spill_reason(*res))
      return refuse(Status::rejected, std::move(*spills));
  return Status::ok;
}

void CudaWorkload::run(const Tactic &tactic, int copy) {
  HONE_CHECK(copy >= 0 && copy < rotation(), "copy index outside the rotation");
  const LaunchStatus s = launch(tactic, copy);
  if (!s.ok())
    HONE_RUNTIME_ERROR("launch of " + tactic.str() + ": " + s.message());
}

void CudaWorkload::poison_output() {
  HONE_CUDA_CHECK(cudaMemsetAsync(y_.data(), 0xff, y_.size(), stream()));
}

std::vector<uint16_t> CudaWorkload::download_y() const {
  return download<uint16_t>(y_.data(), elements(out_rows_, out_cols_), stream());
}

std::vector<uint16_t> CudaWorkload::checked_rows(const std::vector<uint16_t> &y) const {
  const std::vector<int64_t> rows = reference_rows();
  if (rows.empty())
    return y;
  std::vector<uint16_t> sampled;
  sampled.reserve(elements(static_cast<int64_t>(rows.size()), out_cols_));
  for (int64_t r : rows)
    sampled.insert(sampled.end(), y.begin() + static_cast<std::ptrdiff_t>(elements(r, out_cols_)),
                   y.begin() + static_cast<std::ptrdiff_t>(elements(r + 1, out_cols_)));
  return sampled;
}

std::optional<SummationOrder> CudaWorkload::summation_order(const Tactic &) const {
  return std::nullopt;
}

Tactic CudaWorkload::single_row_default() const {
  HONE_RUNTIME_ERROR("this op has no batch-invariant mode");
}

LaunchStatus CudaWorkload::launch_single_row(int, void *) {
  HONE_RUNTIME_ERROR("this op has no batch-invariant mode");
}

CheckResult CudaWorkload::check(const Tactic &tactic, Numerics numerics) {
  CheckResult result;
  result.bound = bound_;
  result.status = can_run(tactic, &result.reason);
  if (!result.pass())
    return result;
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (numerics == Numerics::batch_invariant) {
    // Batch invariance is a property of the summation order, which a random input can fail to
    // expose after bf16 rounding: the order must match before the bitwise comparison runs.
    const std::optional<SummationOrder> order = summation_order(tactic);
    if (!order)
      return fail(result, Status::gate_failed, "the op has no batch-invariant mode", kInf);
    const Tactic single = single_row_default();
    const std::optional<SummationOrder> single_order = summation_order(single);
    if (!(order == single_order))
      return fail(result, Status::gate_failed,
                  "summation order (path " + std::string(to_string(order->path)) + ", k_slices " +
                      std::to_string(order->k_slices) + ") differs from the rows=1 default " +
                      single.str(),
                  kInf);
  }

  randomize_inputs();
  poison_output();
  const LaunchStatus s = launch(tactic, 0);
  if (!s.ok())
    return fail(result, Status::launch_failed, "launch: " + s.message(), result.error);
  // A fault inside the kernel is sticky (the context is lost): that throws here.
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));

  // NaN over every output, sampled or not, counted on the device; only the rows the reference
  // covers cross to the host.
  const size_t outputs = elements(out_rows_, out_cols_);
  const uint64_t nans = count_bf16(y_.as<const uint16_t>(), nullptr, outputs, counter_, stream());
  Bf16Comparison cmp = compare_bf16(
      download_rows<uint16_t>(y_.data(), out_rows_, out_cols_, reference_rows(), stream()),
      reference());
  cmp.nan_count = static_cast<size_t>(nans);
  result.error = cmp.relative_l2;
  if (cmp.nan_count > 0)
    return fail(result, Status::gate_failed,
                std::to_string(cmp.nan_count) + " of " + std::to_string(outputs) +
                    " outputs NaN (unwritten or invalid)",
                kInf);
  if (!(cmp.relative_l2 <= result.bound))
    return fail(result, Status::gate_failed,
                "relative L2 error " + format_g(cmp.relative_l2) + " > bound " +
                    format_g(result.bound),
                cmp.relative_l2);
  if (numerics == Numerics::tolerance)
    return result;
  return gate_batch_invariant(std::move(result));
}

CheckResult CudaWorkload::gate_batch_invariant(CheckResult result) {
  // Row r must equal, bit for bit, the rows=1 default run on X[r].
  if (y_reference_.size() != y_.size())
    y_reference_ = DeviceBuffer(y_.size());
  HONE_CUDA_CHECK(cudaMemsetAsync(y_reference_.data(), 0xff, y_reference_.size(), stream()));
  for (int64_t r = 0; r < out_rows_; ++r) {
    void *yr = static_cast<uint16_t *>(y_reference_.data()) + elements(r, out_cols_);
    const LaunchStatus s = launch_single_row(static_cast<int>(r), yr);
    if (!s.ok())
      HONE_RUNTIME_ERROR("rows=1 default " + single_row_default().str() +
                         " failed to launch: " + s.message());
  }
  // Counted on the device, after the row launches (same stream).
  const size_t outputs = elements(out_rows_, out_cols_);
  const uint64_t mismatches = count_bf16(y_.as<const uint16_t>(), y_reference_.as<const uint16_t>(),
                                         outputs, counter_, stream());
  result.error = static_cast<double>(mismatches);
  result.bound = 0;
  if (mismatches > 0)
    return fail(result, Status::gate_failed,
                std::to_string(mismatches) + " of " + std::to_string(outputs) +
                    " outputs differ bitwise from the rows=1 default " + single_row_default().str(),
                static_cast<double>(mismatches));
  return result;
}

std::optional<std::string> spill_reason(const KernelResources &res) {
  if (res.local_bytes == 0)
    return std::nullopt;
  return "spills: " + std::to_string(res.local_bytes) + " bytes local memory, " +
         std::to_string(res.registers) + " registers";
}

std::vector<int64_t> sampled_rows(int64_t rows, int count) {
  HONE_CHECK(count >= 2, "sampled_rows needs at least two rows: the first and the last");
  if (rows <= count)
    return {};
  // i x last / (count - 1) grows by at least one a step since last >= count - 1: distinct.
  std::vector<int64_t> sampled;
  sampled.reserve(static_cast<size_t>(count));
  const int64_t last = rows - 1;
  for (int64_t i = 0; i < count; ++i)
    sampled.push_back(i * last / (count - 1));
  return sampled;
}

int elementwise_reference_row_count(int64_t row_outputs) {
  HONE_CHECK(row_outputs >= 1, "elementwise_reference_row_count needs a row of outputs");
  return static_cast<int>(
      std::max<int64_t>(kElementwiseReferenceOutputs / row_outputs, kElementwiseMinReferenceRows));
}

void download_bytes(void *dst, const void *src, size_t bytes, cudaStream_t stream) {
  HONE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void download_row_bytes(void *dst, const void *src, size_t row_bytes,
                        const std::vector<int64_t> &rows, cudaStream_t stream) {
  for (size_t i = 0; i < rows.size(); ++i)
    HONE_CUDA_CHECK(
        cudaMemcpyAsync(static_cast<char *>(dst) + i * row_bytes,
                        static_cast<const char *>(src) + static_cast<size_t>(rows[i]) * row_bytes,
                        row_bytes, cudaMemcpyDeviceToHost, stream));
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

void download_block_bytes(void *dst, const void *src, size_t element_bytes,
                          const BlockLayout &blocks, cudaStream_t stream) {
  const size_t count = blocks.offsets.size();
  const size_t row_bytes = static_cast<size_t>(blocks.row) * element_bytes;
  const size_t pitch = static_cast<size_t>(blocks.pitch) * element_bytes;
  const size_t block_bytes = static_cast<size_t>(blocks.rows) * row_bytes;
  if (count == 0 || block_bytes == 0)
    return;
  uint64_t offset_bits = 0;
  for (int64_t offset : blocks.offsets)
    offset_bits |= static_cast<uint64_t>(offset) * element_bytes;
  HONE_CHECK((reinterpret_cast<uintptr_t>(src) | row_bytes | pitch | offset_bits) % 16 == 0,
             "download_block_bytes needs 16-byte aligned blocks, rows and pitch");
  const size_t per_load = std::max<size_t>(1, kBlockStagingBytes / block_bytes);
  const size_t first_load = std::min(count, per_load);
  DeviceBuffer staging(first_load * block_bytes), offsets(first_load * sizeof(int64_t));
  std::vector<int64_t> load_offsets(first_load);
  for (size_t first = 0; first < count; first += per_load) {
    const size_t n = std::min(per_load, count - first);
    for (size_t i = 0; i < n; ++i)
      load_offsets[i] = blocks.offsets[first + i] * static_cast<int64_t>(element_bytes);
    // NOTE: a copy from pageable memory returns once the host buffer is staged, and the copy
    // to pageable memory below once it is done, so load_offsets is free again each load.
    HONE_CUDA_CHECK(cudaMemcpyAsync(offsets.data(), load_offsets.data(), n * sizeof(int64_t),
                                    cudaMemcpyHostToDevice, stream));
    gather_blocks(staging.data(), src, offsets.as<const int64_t>(), n,
                  static_cast<size_t>(blocks.rows), row_bytes, pitch, stream);
    HONE_CUDA_CHECK(cudaMemcpyAsync(static_cast<char *>(dst) + first * block_bytes, staging.data(),
                                    n * block_bytes, cudaMemcpyDeviceToHost, stream));
  }
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

} // namespace hone::cuda
