#include "cuda/gemv_bf16_op.h"

#include <algorithm>
#include <optional>

#include "cuda/bf16.h"
#include "cuda/cuda_backend_impl.h"
#include "cuda/cuda_check.h"
#include "cuda/gemv_bf16_reference.h"
#include "cuda/gemv_workload.h"
#include "cuda/random_fill.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

size_t elements(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

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
  // Random bf16: never zeros.
  resize_rotation(copies_, copies, stream(), [&] {
    Inputs in{DeviceBuffer(elements(rows_, k_) * sizeof(uint16_t)),
              DeviceBuffer(elements(n_, k_) * sizeof(uint16_t))};
    fill_random_bf16(in.x.data(), elements(rows_, k_), next_random_seed(), stream());
    fill_random_bf16(in.w.data(), elements(n_, k_), next_random_seed(), stream());
    return in;
  });
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
  if (std::optional<std::string> spills = spill_reason(gemv_bf16_resources(config))) {
    if (reason)
      *reason = std::move(*spills);
    return Status::rejected;
  }
  return Status::ok;
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
  const GemvBf16Config &config = last_config_.of(tactic);
  const int status = launch(config, x(copy), w(copy), y_.data(), rows_);
  if (status != 0)
    HONE_RUNTIME_ERROR("gemv_bf16_launch(" + tactic.str() + "): " + launch_error(status));
}

void GemvBf16Workload::randomize_inputs() {
  fill_random_bf16(copies_.at(0).x.data(), elements(rows_, k_), next_random_seed(), stream());
  fill_random_bf16(copies_.at(0).w.data(), elements(n_, k_), next_random_seed(), stream());
}

void GemvBf16Workload::poison_output() { poison_bf16(y_, stream()); }

std::vector<uint16_t> GemvBf16Workload::download_x(int copy) const {
  return download<uint16_t>(x(copy), elements(rows_, k_), stream());
}
std::vector<uint16_t> GemvBf16Workload::download_w(int copy) const {
  return download<uint16_t>(w(copy), elements(n_, k_), stream());
}
std::vector<uint16_t> GemvBf16Workload::download_y() const {
  return download<uint16_t>(y_.data(), elements(rows_, n_), stream());
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
  const GemvBf16Config config = last_config_.of(tactic);
  const GemvBf16Config single = gemv_bf16_default(1, n_, k_);
  const std::string single_tactic = single.to_tactic().str();
  if (numerics == Numerics::batch_invariant &&
      !same_summation_order({config.path, config.warps_k * config.split_k},
                            {single.path, single.warps_k * single.split_k}, single_tactic, result))
    return result;

  randomize_inputs();
  poison_output();
  Bf16OutputGate gate;
  gate.stream = stream();
  gate.rows = rows_;
  gate.n = n_;
  gate.y = &y_;
  gate.y_reference = &y_reference_;
  gate.launch = [&] { return launch(config, x(0), w(0), y_.data(), rows_); };
  gate.reference = [&] { return reference(); };
  gate.launch_single = [&](int r, void *yr) {
    const auto *xr = static_cast<const uint16_t *>(x(0)) + elements(r, k_);
    return launch(single, xr, w(0), yr, 1);
  };
  gate.single_tactic = single_tactic;
  return gate_bf16_output(gate, numerics, std::move(result));
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
