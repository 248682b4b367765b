#include "cuda/ops/silu_mul_op.h"

#include <cmath>
#include <optional>

#include "cuda/backend/bf16.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/random_fill.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr int64_t kMaxRows = 32768;
constexpr int64_t kMaxInter = int64_t{1} << 20;

size_t bf16_bytes(int64_t a, int64_t b = 1) {
  return static_cast<size_t>(a) * static_cast<size_t>(b) * sizeof(uint16_t);
}
std::string str(int64_t v) { return std::to_string(v); }

} // namespace

std::vector<double> silu_mul_reference(std::span<const uint16_t> gate_up, int rows, int inter) {
  std::vector<double> out(static_cast<size_t>(rows) * inter);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < inter; ++i) {
      const size_t row = static_cast<size_t>(r) * 2 * inter;
      const double g = bf16_to_float(gate_up[row + i]);
      const double u = bf16_to_float(gate_up[row + inter + i]);
      out[static_cast<size_t>(r) * inter + i] = g / (1.0 + std::exp(-g)) * u;
    }
  return out;
}

// --- workload -------------------------------------------------------------------------------

SiluMulWorkload::SiluMulWorkload(CudaBackend &backend, int rows, int inter)
    : CudaWorkloadOf(backend, rows, inter, kSiluMulRelativeL2Bound), rows_(rows), inter_(inter) {
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

size_t SiluMulWorkload::bytes_per_launch() const { return 3 * bf16_bytes(rows_, inter_); }

SiluMulInputs SiluMulWorkload::make_copy() const {
  return {DeviceBuffer(2 * bf16_bytes(rows_, inter_))};
}

void SiluMulWorkload::fill_copy(size_t copy) {
  // Uniform [-1, 1): both signs of silu's curve.
  fill_random_bf16(copies_.at(copy).gate_up.data(), 2 * static_cast<size_t>(rows_) * inter_,
                   next_random_seed(), stream());
}

std::optional<std::string> SiluMulWorkload::cannot_implement(const Tactic &tactic) const {
  SiluMulConfig config;
  try {
    config = SiluMulConfig::from_tactic(tactic);
  } catch (const Error &e) {
    return e.what();
  }
  if (std::string why; !silu_mul_can_implement(config, rows_, inter_, &why))
    return why;
  return std::nullopt;
}

std::optional<KernelResources> SiluMulWorkload::resources(const Tactic &tactic) const {
  return silu_mul_resources(SiluMulConfig::from_tactic(tactic));
}

LaunchStatus SiluMulWorkload::launch(const SiluMulConfig &config, int copy, int row0, int rows,
                                     void *out) {
  const auto *gate_up =
      static_cast<const uint16_t *>(copy_at(copy).gate_up.data()) + int64_t{row0} * 2 * inter_;
  SiluMulArgs a;
  a.gate = gate_up;
  a.up = gate_up + inter_;
  a.gate_stride = a.up_stride = 2 * int64_t{inter_};
  a.out = out;
  a.rows = rows;
  a.inter = inter_;
  return silu_mul_launch(config, a, stream());
}

LaunchStatus SiluMulWorkload::launch(const Tactic &tactic, int copy) {
  return launch(last_config_.of(tactic), copy, 0, rows_, y());
}

std::optional<SummationOrder> SiluMulWorkload::summation_order(const Tactic &) const {
  return SummationOrder{KernelPath::fma, 1}; // no reduction: one order for every config
}

Tactic SiluMulWorkload::single_row_default() const {
  return silu_mul_default(1, inter_).to_tactic();
}

LaunchStatus SiluMulWorkload::launch_single_row(int row, void *y_row) {
  return launch(silu_mul_default(1, inter_), 0, row, 1, y_row);
}

std::vector<int64_t> SiluMulWorkload::reference_rows() const {
  return sampled_rows(rows_, elementwise_reference_row_count(inter_));
}

std::vector<double> SiluMulWorkload::reference() const {
  const std::vector<int64_t> rows = reference_rows();
  const std::vector<uint16_t> gate_up = download_rows<uint16_t>(
      copy_at(0).gate_up.data(), rows_, 2 * int64_t{inter_}, rows, stream());
  return silu_mul_reference(gate_up, rows.empty() ? rows_ : static_cast<int>(rows.size()), inter_);
}

// --- op ---------------------------------------------------------------------------------------

SiluMulOp::SiluMulOp()
    : CudaOp("silu_mul",
             BucketSpec{{DimSpec::exact_then_pow2_up("rows", 1, kMaxRows, 8),
                         DimSpec::exact("inter", 8, kMaxInter)}},
             Numerics::batch_invariant) {}

std::vector<Tactic> SiluMulOp::candidates(const Shape &bucket) const {
  const int rows = static_cast<int>(bucket[0]), inter = static_cast<int>(bucket[1]);
  return default_first(
      silu_mul_default(rows, inter), silu_mul_configs(),
      [&](const SiluMulConfig &c) { return silu_mul_can_implement(c, rows, inter, nullptr); });
}

Tactic SiluMulOp::default_tactic(const Shape &bucket) const {
  return silu_mul_default(static_cast<int>(bucket[0]), static_cast<int>(bucket[1])).to_tactic();
}

void SiluMulOp::validate(const Shape &shape) const {
  if (shape.rank != 2)
    HONE_INVALID_ARGUMENT("silu_mul takes 2 dimensions (rows, inter), got " + str(shape.rank));
  if (shape.dtype != DType::bf16)
    HONE_INVALID_ARGUMENT("silu_mul takes dtype bf16, got " + std::string(to_string(shape.dtype)));
  const int64_t rows = shape[0], inter = shape[1];
  if (rows < 1 || rows > kMaxRows)
    HONE_INVALID_ARGUMENT("silu_mul: rows=" + str(rows) + " outside 1.." + str(kMaxRows));
  if (inter < 8 || inter > kMaxInter || inter % 8 != 0)
    HONE_INVALID_ARGUMENT("silu_mul: inter=" + str(inter) + " is not a multiple of 8 in 8..2^20" +
                          " (rows must be 16-byte aligned)");
}

CompiledTactic SiluMulOp::compile(const Tactic &tactic) const {
  return compile_config<SiluMulConfig>(name(), tactic, {&silu_mul_configs()});
}

std::optional<WorkloadBytes> SiluMulOp::workload_bytes(const Shape &shape) const {
  WorkloadBytes b;
  b.per_copy = 2 * bf16_bytes(shape[0], shape[1]);
  b.fixed = CudaWorkload::output_bytes(shape[0], shape[1]);
  return b;
}

std::unique_ptr<Workload> SiluMulOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<SiluMulWorkload>(cuda_backend(), static_cast<int>(shape[0]),
                                           static_cast<int>(shape[1]));
}

} // namespace hone::cuda
