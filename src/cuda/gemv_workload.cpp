#include "cuda/gemv_workload.h"

#include <cstdint>
#include <cstdio>
#include <limits>

#include "cuda/gemv_bf16_reference.h"

namespace hone::cuda {

namespace {

std::string text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

} // namespace

void poison_bf16(const DeviceBuffer &buffer, cudaStream_t stream) {
  HONE_CUDA_CHECK(cudaMemsetAsync(buffer.data(), 0xff, buffer.size(), stream));
}

void download_bytes(void *dst, const void *src, size_t bytes, cudaStream_t stream) {
  HONE_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToHost, stream));
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

std::string launch_error(int status) {
  const auto err = static_cast<cudaError_t>(status);
  (void)cudaGetLastError();
  return std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
}

std::optional<std::string> spill_reason(const KernelResources &res) {
  if (res.local_bytes == 0)
    return std::nullopt;
  return "spills: " + std::to_string(res.local_bytes) + " bytes local memory, " +
         std::to_string(res.registers) + " registers";
}

bool same_summation_order(SummationOrder config, SummationOrder single,
                          const std::string &single_tactic, CheckResult &result) {
  if (config.path == single.path && config.k_slices == single.k_slices)
    return true;
  result.status = Status::gate_failed;
  result.error = std::numeric_limits<double>::infinity();
  result.reason = "summation order (path " + std::to_string(config.path) + ", k_slices " +
                  std::to_string(config.k_slices) + ") differs from the rows=1 default " +
                  single_tactic;
  return false;
}

CheckResult gate_bf16_output(const Bf16OutputGate &gate, Numerics numerics, CheckResult result) {
  const int status = gate.launch();
  if (status != 0) {
    result.status = Status::launch_failed;
    result.reason = "launch: " + launch_error(status);
    return result;
  }
  // A fault inside the kernel is sticky (the context is lost): that throws here.
  HONE_CUDA_CHECK(cudaStreamSynchronize(gate.stream));

  const size_t outputs = static_cast<size_t>(gate.rows) * static_cast<size_t>(gate.n);
  const std::vector<uint16_t> y = download<uint16_t>(gate.y->data(), outputs, gate.stream);
  const GemvBf16Comparison cmp = compare_gemv_bf16(y, gate.reference());
  result.error = cmp.relative_l2;
  if (cmp.nan_count > 0) {
    result.status = Status::gate_failed;
    result.error = std::numeric_limits<double>::infinity();
    result.reason = std::to_string(cmp.nan_count) + " of " + std::to_string(y.size()) +
                    " outputs NaN (unwritten or invalid)";
    return result;
  }
  if (!(cmp.relative_l2 <= result.bound)) {
    result.status = Status::gate_failed;
    result.reason = "relative L2 error " + text(cmp.relative_l2) + " > bound " + text(result.bound);
    return result;
  }
  if (numerics == Numerics::tolerance)
    return result;

  // Batch invariance: row r must equal, bit for bit, the rows=1 default run on X[r].
  poison_bf16(*gate.y_reference, gate.stream);
  for (int r = 0; r < gate.rows; ++r) {
    void *yr = static_cast<uint16_t *>(gate.y_reference->data()) + static_cast<size_t>(r) * gate.n;
    const int s = gate.launch_single(r, yr);
    if (s != 0) {
      (void)cudaGetLastError();
      HONE_RUNTIME_ERROR("rows=1 default " + gate.single_tactic +
                         " failed to launch: " + cudaGetErrorString(static_cast<cudaError_t>(s)));
    }
  }
  HONE_CUDA_CHECK(cudaStreamSynchronize(gate.stream));
  const std::vector<uint16_t> expected =
      download<uint16_t>(gate.y_reference->data(), outputs, gate.stream);
  size_t mismatches = 0;
  for (size_t i = 0; i < y.size(); ++i)
    mismatches += y[i] != expected[i] ? 1 : 0;
  result.error = static_cast<double>(mismatches);
  result.bound = 0;
  if (mismatches > 0) {
    result.status = Status::gate_failed;
    result.reason = std::to_string(mismatches) + " of " + std::to_string(y.size()) +
                    " outputs differ bitwise from the rows=1 default " + gate.single_tactic;
  }
  return result;
}

} // namespace hone::cuda
