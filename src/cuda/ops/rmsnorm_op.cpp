#include "cuda/ops/rmsnorm_op.h"

#include <cmath>
#include <optional>

#include "cuda/backend/bf16.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/random_fill.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr int64_t kMaxRows = 65536;
constexpr int64_t kMaxHidden = 32768; // 512 threads x 8 vectors of 8

size_t bf16_bytes(int64_t a, int64_t b = 1) {
  return static_cast<size_t>(a) * static_cast<size_t>(b) * sizeof(uint16_t);
}
std::string str(int64_t v) { return std::to_string(v); }

} // namespace

std::vector<double> rmsnorm_reference(std::span<const uint16_t> x,
                                      std::span<const uint16_t> residual,
                                      std::span<const uint16_t> w, int rows, int hidden,
                                      double eps) {
  std::vector<double> out(static_cast<size_t>(rows) * hidden);
  std::vector<double> h(static_cast<size_t>(hidden));
  for (int r = 0; r < rows; ++r) {
    double squares = 0;
    for (int i = 0; i < hidden; ++i) {
      const size_t at = static_cast<size_t>(r) * hidden + i;
      h[i] = bf16_to_float(x[at]) + (residual.empty() ? 0.0 : bf16_to_float(residual[at]));
      squares += h[i] * h[i];
    }
    const double rstd = 1.0 / std::sqrt(squares / hidden + eps);
    for (int i = 0; i < hidden; ++i)
      out[static_cast<size_t>(r) * hidden + i] = h[i] * rstd * bf16_to_float(w[i]);
  }
  return out;
}

// --- workload -------------------------------------------------------------------------------

RmsnormWorkload::RmsnormWorkload(CudaBackend &backend, int rows, int hidden, bool residual)
    : CudaWorkloadOf(backend, residual ? 2 * int64_t{rows} : rows, hidden, kRmsnormRelativeL2Bound),
      rows_(rows), hidden_(hidden), residual_(residual), scratch_row_(bf16_bytes(hidden)) {
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

size_t RmsnormWorkload::bytes_per_launch() const {
  const size_t row_tensors = residual_ ? 4 : 2; // x, out (+ residual, residual_out)
  return row_tensors * bf16_bytes(rows_, hidden_) + bf16_bytes(hidden_);
}

RmsnormInputs RmsnormWorkload::make_copy() const {
  return {DeviceBuffer(bf16_bytes(rows_, hidden_)),
          residual_ ? DeviceBuffer(bf16_bytes(rows_, hidden_)) : DeviceBuffer(),
          DeviceBuffer(bf16_bytes(hidden_))};
}

void RmsnormWorkload::fill_copy(size_t copy) {
  const RmsnormInputs &in = copies_.at(copy);
  fill_random_bf16(in.x.data(), static_cast<size_t>(rows_) * hidden_, next_random_seed(), stream());
  if (residual_)
    fill_random_bf16(in.residual.data(), static_cast<size_t>(rows_) * hidden_, next_random_seed(),
                     stream());
  fill_random_bf16(in.w.data(), static_cast<size_t>(hidden_), next_random_seed(), stream());
}

std::optional<std::string> RmsnormWorkload::cannot_implement(const Tactic &tactic) const {
  RmsnormConfig config;
  try {
    config = RmsnormConfig::from_tactic(tactic);
  } catch (const Error &e) {
    return e.what();
  }
  if (std::string why; !rmsnorm_can_implement(config, rows_, hidden_, &why))
    return why;
  return std::nullopt;
}

std::optional<KernelResources> RmsnormWorkload::resources(const Tactic &tactic) const {
  return rmsnorm_resources(RmsnormConfig::from_tactic(tactic), residual_);
}

LaunchStatus RmsnormWorkload::launch(const RmsnormConfig &config, int copy, int row0, int rows,
                                     void *out, void *residual_out) {
  const RmsnormInputs &in = copy_at(copy);
  const size_t offset = bf16_bytes(row0, hidden_);
  RmsnormArgs a;
  a.x = static_cast<const char *>(in.x.data()) + offset;
  if (residual_) {
    a.residual = static_cast<const char *>(in.residual.data()) + offset;
    a.residual_out = residual_out;
  }
  a.w = in.w.data();
  a.out = out;
  a.rows = rows;
  a.hidden = hidden_;
  a.eps = static_cast<float>(kRmsnormWorkloadEps);
  return rmsnorm_launch(config, a, stream());
}

LaunchStatus RmsnormWorkload::launch(const Tactic &tactic, int copy) {
  return launch(last_config_.of(tactic), copy, 0, rows_, y(),
                residual_ ? static_cast<char *>(y()) + bf16_bytes(rows_, hidden_) : nullptr);
}

std::optional<SummationOrder> RmsnormWorkload::summation_order(const Tactic &tactic) const {
  return SummationOrder{KernelPath::fma, RmsnormConfig::from_tactic(tactic).lanes()};
}

Tactic RmsnormWorkload::single_row_default() const {
  return rmsnorm_default(1, hidden_).to_tactic();
}

LaunchStatus RmsnormWorkload::launch_single_row(int row, void *y_row) {
  // Rows 0 .. rows-1 of y are out, rows .. 2 rows - 1 residual_out of the same input rows.
  const bool second = row >= rows_;
  const int input_row = second ? row - rows_ : row;
  void *out = second ? scratch_row_.data() : y_row;
  void *residual_out = second ? y_row : scratch_row_.data();
  return launch(rmsnorm_default(1, hidden_), 0, input_row, 1, out, residual_out);
}

std::vector<int64_t> RmsnormWorkload::sampled_input_rows() const {
  const int64_t outputs_per_row = int64_t{hidden_} * (residual_ ? 2 : 1);
  return sampled_rows(rows_, elementwise_reference_row_count(outputs_per_row));
}

std::vector<int64_t> RmsnormWorkload::reference_rows() const {
  std::vector<int64_t> rows = sampled_input_rows();
  // y rows rows .. 2 rows - 1 are residual_out: both outputs of every sampled input row, so
  // that each tensor's first and last rows are checked.
  const size_t inputs = rows.size();
  if (residual_)
    for (size_t i = 0; i < inputs; ++i)
      rows.push_back(rows[i] + rows_);
  return rows;
}

std::vector<double> RmsnormWorkload::reference() const {
  const RmsnormInputs &in = copy_at(0);
  const std::vector<int64_t> sampled = sampled_input_rows();
  const int rows = sampled.empty() ? rows_ : static_cast<int>(sampled.size());
  const std::vector<uint16_t> x =
      download_rows<uint16_t>(in.x.data(), rows_, hidden_, sampled, stream());
  const std::vector<uint16_t> r =
      residual_ ? download_rows<uint16_t>(in.residual.data(), rows_, hidden_, sampled, stream())
                : std::vector<uint16_t>();
  const std::vector<uint16_t> w =
      download<uint16_t>(in.w.data(), static_cast<size_t>(hidden_), stream());
  std::vector<double> out = rmsnorm_reference(x, r, w, rows, hidden_, kRmsnormWorkloadEps);
  for (size_t i = 0; i < r.size(); ++i) // residual_out = x + residual, exact
    out.push_back(static_cast<double>(bf16_to_float(x[i])) + bf16_to_float(r[i]));
  return out;
}

// --- op ---------------------------------------------------------------------------------------

RmsnormOp::RmsnormOp()
    : CudaOp("rmsnorm",
             BucketSpec{{DimSpec::exact_then_pow2_up("rows", 1, kMaxRows, 8),
                         DimSpec::exact("hidden", 8, kMaxHidden),
                         DimSpec::one_of("residual", {0, 1})}},
             Numerics::batch_invariant) {}

std::vector<Tactic> RmsnormOp::candidates(const Shape &bucket) const {
  const int rows = static_cast<int>(bucket[0]), hidden = static_cast<int>(bucket[1]);
  return default_first(
      rmsnorm_default(rows, hidden), rmsnorm_configs(),
      [&](const RmsnormConfig &c) { return rmsnorm_can_implement(c, rows, hidden, nullptr); });
}

Tactic RmsnormOp::default_tactic(const Shape &bucket) const {
  return rmsnorm_default(static_cast<int>(bucket[0]), static_cast<int>(bucket[1])).to_tactic();
}

void RmsnormOp::validate(const Shape &shape) const {
  if (shape.rank != 3)
    HONE_INVALID_ARGUMENT("rmsnorm takes 3 dimensions (rows, hidden, residual), got " +
                          str(shape.rank));
  if (shape.dtype != DType::bf16)
    HONE_INVALID_ARGUMENT("rmsnorm takes dtype bf16, got " + std::string(to_string(shape.dtype)));
  const int64_t rows = shape[0], hidden = shape[1], residual = shape[2];
  if (rows < 1 || rows > kMaxRows)
    HONE_INVALID_ARGUMENT("rmsnorm: rows=" + str(rows) + " outside 1.." + str(kMaxRows));
  if (hidden < 8 || hidden > kMaxHidden || hidden % 8 != 0)
    HONE_INVALID_ARGUMENT("rmsnorm: hidden=" + str(hidden) + " is not a multiple of 8 in 8.." +
                          str(kMaxHidden) + " (rows must be 16-byte aligned)");
  if (residual != 0 && residual != 1)
    HONE_INVALID_ARGUMENT("rmsnorm: residual=" + str(residual) + " is not 0 or 1");
}

CompiledTactic RmsnormOp::compile(const Tactic &tactic) const {
  return compile_config<RmsnormConfig>(name(), tactic, {&rmsnorm_configs()});
}

std::optional<WorkloadBytes> RmsnormOp::workload_bytes(const Shape &shape) const {
  const int64_t rows = shape[0], hidden = shape[1];
  const bool residual = shape[2] != 0;
  WorkloadBytes b;
  b.per_copy = bf16_bytes(rows, hidden) * (residual ? 2 : 1) + bf16_bytes(hidden);
  b.fixed = CudaWorkload::output_bytes(residual ? 2 * rows : rows, hidden) + bf16_bytes(hidden);
  return b;
}

std::unique_ptr<Workload> RmsnormOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<RmsnormWorkload>(cuda_backend(), static_cast<int>(shape[0]),
                                           static_cast<int>(shape[1]), shape[2] != 0);
}

} // namespace hone::cuda
