#include "cuda/gemv_bf16_op.h"

#include <algorithm>
#include <cstdio>
#include <limits>

#include "cuda/bf16.h"
#include "cuda/cuda_backend_impl.h"
#include "cuda/cuda_check.h"
#include "cuda/gemv_bf16_reference.h"
#include "cuda/random_fill.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

size_t elements(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

std::string text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

} // namespace

// --- workload ---------------------------------------------------------------------------

GemvBf16Workload::GemvBf16Workload(CudaBackend &backend, int rows, int n, int k)
    : backend_(backend), rows_(rows), n_(n), k_(k) {
  y_ = DeviceBuffer(elements(rows_, n_) * sizeof(uint16_t));
  y_reference_ = DeviceBuffer(elements(rows_, n_) * sizeof(uint16_t));
  size_t workspace = gemv_bf16_workspace_bytes(gemv_bf16_default(1, n_, k_), 1, n_, k_);
  for (const GemvBf16Config &c : gemv_bf16_configs())
    if (std::string why; gemv_bf16_can_implement(c, rows_, n_, k_, &why))
      workspace = std::max(workspace, gemv_bf16_workspace_bytes(c, rows_, n_, k_));
  workspace_ = DeviceBuffer(workspace);
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

cudaStream_t GemvBf16Workload::stream() const { return backend_.stream(); }

size_t GemvBf16Workload::bytes_per_launch() const {
  return (elements(n_, k_) + elements(rows_, k_) + elements(rows_, n_)) * sizeof(uint16_t);
}

void GemvBf16Workload::set_rotation(int copies) {
  HONE_CHECK(copies >= 1, "set_rotation needs at least one copy");
  const auto count = static_cast<size_t>(copies);
  if (x_.size() > count) {
    x_.resize(count);
    w_.resize(count);
  }
  // Every copy holds its own random data: never zeros, and no two copies alike.
  while (x_.size() < count) {
    x_.emplace_back(elements(rows_, k_) * sizeof(uint16_t));
    w_.emplace_back(elements(n_, k_) * sizeof(uint16_t));
    fill_random_bf16(x_.back().data(), elements(rows_, k_), next_random_seed(), stream());
    fill_random_bf16(w_.back().data(), elements(n_, k_), next_random_seed(), stream());
  }
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

Status GemvBf16Workload::can_run(const Tactic &tactic, std::string *reason) const {
  GemvBf16Config config;
  try {
    config = GemvBf16Config::from_tactic(tactic);
  } catch (const Error &e) {
    if (reason)
      *reason = e.what();
    return Status::cannot_implement;
  }
  if (std::string why; !gemv_bf16_can_implement(config, rows_, n_, k_, &why)) {
    if (reason)
      *reason = why;
    return Status::cannot_implement;
  }
  if (gemv_bf16_workspace_bytes(config, rows_, n_, k_) > workspace_.size()) {
    if (reason)
      *reason = "needs " + std::to_string(gemv_bf16_workspace_bytes(config, rows_, n_, k_)) +
                " bytes of workspace, " + std::to_string(workspace_.size()) + " allocated";
    return Status::cannot_implement;
  }
  // Automatic spill rule: a config whose kernel uses local memory is refused, whatever its
  // speed today, because spills make its time depend on the L1/L2 state around it.
  const KernelResources res = gemv_bf16_resources(config);
  if (res.local_bytes > 0) {
    if (reason)
      *reason = "spills: " + std::to_string(res.local_bytes) + " bytes local memory, " +
                std::to_string(res.registers) + " registers";
    return Status::rejected;
  }
  return Status::ok;
}

const GemvBf16Config &GemvBf16Workload::config_of(const Tactic &tactic) {
  if (!(tactic == last_tactic_)) {
    last_config_ = GemvBf16Config::from_tactic(tactic);
    last_tactic_ = tactic;
  }
  return last_config_;
}

int GemvBf16Workload::launch(const GemvBf16Config &config, const void *x, const void *w, void *y,
                             int rows) {
  GemvBf16Args args;
  args.x = x;
  args.w = w;
  args.y = y;
  args.rows = rows;
  args.n = n_;
  args.k = k_;
  args.workspace = workspace_.data();
  args.workspace_bytes = workspace_.size();
  return gemv_bf16_launch(config, args, stream());
}

void GemvBf16Workload::run(const Tactic &tactic, int copy) {
  HONE_CHECK(copy >= 0 && copy < rotation(), "copy index outside the rotation");
  const GemvBf16Config &config = config_of(tactic);
  const auto c = static_cast<size_t>(copy);
  const int status = launch(config, x_[c].data(), w_[c].data(), y_.data(), rows_);
  if (status != 0) {
    const auto err = static_cast<cudaError_t>(status);
    (void)cudaGetLastError();
    HONE_RUNTIME_ERROR("gemv_bf16_launch(" + tactic.str() + "): " + cudaGetErrorName(err) + ": " +
                       cudaGetErrorString(err));
  }
}

void GemvBf16Workload::randomize_inputs() {
  fill_random_bf16(x_.at(0).data(), elements(rows_, k_), next_random_seed(), stream());
  fill_random_bf16(w_.at(0).data(), elements(n_, k_), next_random_seed(), stream());
}

void GemvBf16Workload::poison_output() {
  // 0xFF bytes make every bf16 element 0xFFFF, a NaN.
  HONE_CUDA_CHECK(cudaMemsetAsync(y_.data(), 0xff, y_.size(), stream()));
}

std::vector<uint16_t> GemvBf16Workload::download(const void *src, size_t count) const {
  std::vector<uint16_t> out(count);
  HONE_CUDA_CHECK(
      cudaMemcpyAsync(out.data(), src, count * sizeof(uint16_t), cudaMemcpyDeviceToHost, stream()));
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return out;
}

std::vector<uint16_t> GemvBf16Workload::download_x(int copy) const {
  return download(x(copy), elements(rows_, k_));
}
std::vector<uint16_t> GemvBf16Workload::download_w(int copy) const {
  return download(w(copy), elements(n_, k_));
}
std::vector<uint16_t> GemvBf16Workload::download_y() const {
  return download(y_.data(), elements(rows_, n_));
}

std::vector<double> GemvBf16Workload::reference() const {
  return gemv_bf16_reference(download_x(0), download_w(0), rows_, n_, k_);
}

CheckResult GemvBf16Workload::check(const Tactic &tactic, Numerics numerics) {
  CheckResult result;
  result.bound = kGemvBf16RelativeL2Bound;
  result.status = can_run(tactic, &result.reason);
  if (!result.pass())
    return result;
  const GemvBf16Config config = config_of(tactic);
  // Batch invariance is a property of the summation order, which a random input can fail to
  // expose after bf16 rounding: a config must share the rows=1 default's order (its path and
  // its K slicing, warps_k x split_k) before the bitwise comparison below even runs.
  const GemvBf16Config single = gemv_bf16_default(1, n_, k_);
  if (numerics == Numerics::batch_invariant &&
      (config.path != single.path ||
       config.warps_k * config.split_k != single.warps_k * single.split_k)) {
    result.status = Status::gate_failed;
    result.error = std::numeric_limits<double>::infinity();
    result.reason = "summation order (path " + std::to_string(config.path) + ", k_slices " +
                    std::to_string(config.warps_k * config.split_k) +
                    ") differs from the rows=1 default " + single.to_tactic().str();
    return result;
  }

  randomize_inputs();
  poison_output();
  const int status = launch(config, x_[0].data(), w_[0].data(), y_.data(), rows_);
  if (status != 0) {
    const auto err = static_cast<cudaError_t>(status);
    (void)cudaGetLastError();
    result.status = Status::launch_failed;
    result.reason =
        std::string("launch: ") + cudaGetErrorName(err) + ": " + cudaGetErrorString(err);
    return result;
  }
  // A fault inside the kernel is sticky (the context is lost): that throws here.
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));

  const std::vector<uint16_t> y = download_y();
  const GemvBf16Comparison cmp = compare_gemv_bf16(y, reference());
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
  HONE_CUDA_CHECK(cudaMemsetAsync(y_reference_.data(), 0xff, y_reference_.size(), stream()));
  for (int r = 0; r < rows_; ++r) {
    const auto *xr = static_cast<const uint16_t *>(x_[0].data()) + elements(r, k_);
    auto *yr = static_cast<uint16_t *>(y_reference_.data()) + elements(r, n_);
    const int s = launch(single, xr, w_[0].data(), yr, 1);
    if (s != 0) {
      (void)cudaGetLastError();
      HONE_RUNTIME_ERROR("rows=1 default " + single.to_tactic().str() +
                         " failed to launch: " + cudaGetErrorString(static_cast<cudaError_t>(s)));
    }
  }
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
  const std::vector<uint16_t> expected = download(y_reference_.data(), elements(rows_, n_));
  size_t mismatches = 0;
  for (size_t i = 0; i < y.size(); ++i)
    mismatches += y[i] != expected[i] ? 1 : 0;
  result.error = static_cast<double>(mismatches);
  result.bound = 0;
  if (mismatches > 0) {
    result.status = Status::gate_failed;
    result.reason = std::to_string(mismatches) + " of " + std::to_string(y.size()) +
                    " outputs differ bitwise from the rows=1 default " + single.to_tactic().str();
  }
  return result;
}

// --- op -----------------------------------------------------------------------------------

GemvBf16Op::GemvBf16Op()
    : buckets_{{DimSpec::exact_then_pow2("rows", 1, 32, 8), DimSpec::exact("n", 1, 1 << 24),
                DimSpec::exact("k", 8, 1 << 24)}} {}

std::vector<Tactic> GemvBf16Op::candidates(const Shape &bucket) const {
  const int rows = static_cast<int>(bucket[0]);
  const int n = static_cast<int>(bucket[1]);
  const int k = static_cast<int>(bucket[2]);
  const Tactic first = gemv_bf16_default(rows, n, k).to_tactic();
  std::vector<Tactic> out{first};
  for (const GemvBf16Config &c : gemv_bf16_configs()) {
    if (std::string why; !gemv_bf16_can_implement(c, rows, n, k, &why))
      continue;
    Tactic t = c.to_tactic();
    if (!(t == first))
      out.push_back(std::move(t));
  }
  return out;
}

Tactic GemvBf16Op::default_tactic(const Shape &bucket) const {
  return gemv_bf16_default(static_cast<int>(bucket[0]), static_cast<int>(bucket[1]),
                           static_cast<int>(bucket[2]))
      .to_tactic();
}

void GemvBf16Op::validate(const Shape &shape) const {
  if (shape.rank != 3)
    HONE_INVALID_ARGUMENT("gemv.bf16 takes 3 dimensions (rows, n, k), got " +
                          std::to_string(shape.rank));
  if (shape.dtype != DType::bf16)
    HONE_INVALID_ARGUMENT("gemv.bf16 takes dtype bf16, got " + std::string(to_string(shape.dtype)));
  const int64_t rows = shape[0], n = shape[1], k = shape[2];
  if (rows < 1 || rows > 32)
    HONE_INVALID_ARGUMENT("gemv.bf16: rows=" + std::to_string(rows) + " outside 1..32");
  if (n < 1 || n > (int64_t{1} << 24))
    HONE_INVALID_ARGUMENT("gemv.bf16: n=" + std::to_string(n) + " outside 1..2^24");
  if (k < 8 || k > (int64_t{1} << 24))
    HONE_INVALID_ARGUMENT("gemv.bf16: k=" + std::to_string(k) + " outside 8..2^24");
  if (k % 8 != 0)
    HONE_INVALID_ARGUMENT("gemv.bf16: k=" + std::to_string(k) +
                          " is not a multiple of 8 (rows of X and W must be 16-byte aligned)");
  std::string reason;
  const GemvBf16Config def =
      gemv_bf16_default(static_cast<int>(rows), static_cast<int>(n), static_cast<int>(k));
  if (!gemv_bf16_can_implement(def, static_cast<int>(rows), static_cast<int>(n),
                               static_cast<int>(k), &reason))
    HONE_INVALID_ARGUMENT("gemv.bf16: rows=" + std::to_string(rows) + ",n=" + std::to_string(n) +
                          ",k=" + std::to_string(k) + " not supported by the default: " + reason);
}

std::unique_ptr<Workload> GemvBf16Op::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<GemvBf16Workload>(cuda_backend(), static_cast<int>(shape[0]),
                                            static_cast<int>(shape[1]), static_cast<int>(shape[2]));
}

} // namespace hone::cuda
