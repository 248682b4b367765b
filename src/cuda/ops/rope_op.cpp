#include "cuda/ops/rope_op.h"

#include <cmath>
#include <optional>
#include <random>

#include "cuda/backend/bf16.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/random_fill.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr int64_t kMaxRows = 65536;
constexpr int64_t kMaxHeads = 1024;

size_t bf16_bytes(int64_t elements) { return static_cast<size_t>(elements) * sizeof(uint16_t); }
std::string str(int64_t v) { return std::to_string(v); }

} // namespace

std::vector<double> rope_reference(std::span<const uint16_t> x, std::span<const int32_t> positions,
                                   std::span<const double> inv_freq, int rows, int heads,
                                   int head_dim) {
  const int half = head_dim / 2;
  std::vector<double> out(static_cast<size_t>(rows) * heads * head_dim);
  for (int r = 0; r < rows; ++r)
    for (int h = 0; h < heads; ++h) {
      const size_t base = (static_cast<size_t>(r) * heads + h) * head_dim;
      for (int i = 0; i < half; ++i) {
        const double a = positions[static_cast<size_t>(r)] * inv_freq[static_cast<size_t>(i)];
        const double x1 = bf16_to_float(x[base + i]), x2 = bf16_to_float(x[base + half + i]);
        out[base + i] = x1 * std::cos(a) - x2 * std::sin(a);
        out[base + half + i] = x2 * std::cos(a) + x1 * std::sin(a);
      }
    }
  return out;
}

// --- workload -------------------------------------------------------------------------------

RopeWorkload::RopeWorkload(CudaBackend &backend, int rows, int hq, int hkv, int head_dim)
    : CudaWorkloadOf(backend, rows, int64_t{hq + hkv} * head_dim, kRopeRelativeL2Bound),
      rows_(rows), hq_(hq), hkv_(hkv), head_dim_(head_dim),
      inv_freq_(rope_inv_freq(RopeFrequencies{kRopeWorkloadTheta}, head_dim)),
      positions_(static_cast<size_t>(rows) * sizeof(int32_t)) {
  std::mt19937_64 random(next_random_seed());
  std::uniform_int_distribution<int32_t> position(0, kRopeWorkloadMaxPosition - 1);
  for (int r = 0; r < rows; ++r)
    positions_host_.push_back(position(random));
  HONE_CUDA_CHECK(cudaMemcpyAsync(positions_.data(), positions_host_.data(), positions_.size(),
                                  cudaMemcpyHostToDevice, stream()));
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

size_t RopeWorkload::bytes_per_launch() const {
  return 2 * bf16_bytes(int64_t{rows_} * (hq_ + hkv_) * head_dim_) +
         static_cast<size_t>(rows_) * sizeof(int32_t);
}

RopeInputs RopeWorkload::make_copy() const {
  return {DeviceBuffer(bf16_bytes(int64_t{rows_} * hq_ * head_dim_)),
          DeviceBuffer(bf16_bytes(int64_t{rows_} * hkv_ * head_dim_))};
}

void RopeWorkload::fill_copy(size_t copy) {
  const RopeInputs &in = copies_.at(copy);
  fill_random_bf16(in.q.data(), in.q.size() / 2, next_random_seed(), stream());
  fill_random_bf16(in.k.data(), in.k.size() / 2, next_random_seed(), stream());
}

std::optional<std::string> RopeWorkload::cannot_implement(const Tactic &tactic) const {
  RopeConfig config;
  try {
    config = RopeConfig::from_tactic(tactic);
  } catch (const Error &e) {
    return e.what();
  }
  if (std::string why; !rope_can_implement(config, rows_, hq_, hkv_, head_dim_, &why))
    return why;
  return std::nullopt;
}

std::optional<KernelResources> RopeWorkload::resources(const Tactic &tactic) const {
  return rope_resources(RopeConfig::from_tactic(tactic));
}

LaunchStatus RopeWorkload::launch(const RopeConfig &config, int copy, int row0, int rows,
                                  void *y_rows) {
  const RopeInputs &in = copy_at(copy);
  const int64_t y_stride = int64_t{hq_ + hkv_} * head_dim_;
  RopeArgs a;
  a.q = static_cast<const uint16_t *>(in.q.data()) + int64_t{row0} * hq_ * head_dim_;
  a.k = static_cast<const uint16_t *>(in.k.data()) + int64_t{row0} * hkv_ * head_dim_;
  a.q_out = y_rows;
  a.k_out = static_cast<uint16_t *>(y_rows) + int64_t{hq_} * head_dim_;
  a.q_out_stride = a.k_out_stride = y_stride;
  a.positions = positions_.as<const int32_t>() + row0;
  a.rows = rows;
  a.hq = hq_;
  a.hkv = hkv_;
  a.head_dim = head_dim_;
  a.inv_freq = inv_freq_.data();
  return rope_launch(config, a, stream());
}

LaunchStatus RopeWorkload::launch(const Tactic &tactic, int copy) {
  return launch(last_config_.of(tactic), copy, 0, rows_, y());
}

std::optional<SummationOrder> RopeWorkload::summation_order(const Tactic &) const {
  return SummationOrder{KernelPath::fma, 1}; // no reduction: one order for every config
}

Tactic RopeWorkload::single_row_default() const {
  return rope_default(1, hq_, hkv_, head_dim_).to_tactic();
}

LaunchStatus RopeWorkload::launch_single_row(int row, void *y_row) {
  return launch(rope_default(1, hq_, hkv_, head_dim_), 0, row, 1, y_row);
}

std::vector<int64_t> RopeWorkload::reference_rows() const {
  return sampled_rows(rows_, elementwise_reference_row_count(output_cols()));
}

std::vector<double> RopeWorkload::reference() const {
  const RopeInputs &in = copy_at(0);
  const std::vector<int64_t> sampled = reference_rows();
  const int rows = sampled.empty() ? rows_ : static_cast<int>(sampled.size());
  const int64_t q_row = int64_t{hq_} * head_dim_, k_row = int64_t{hkv_} * head_dim_;
  const std::vector<uint16_t> q =
      download_rows<uint16_t>(in.q.data(), rows_, q_row, sampled, stream());
  const std::vector<uint16_t> k =
      download_rows<uint16_t>(in.k.data(), rows_, k_row, sampled, stream());
  std::vector<int32_t> positions = positions_host_;
  if (!sampled.empty()) {
    positions.clear();
    for (int64_t r : sampled)
      positions.push_back(positions_host_[static_cast<size_t>(r)]);
  }
  // Frequencies of the reference's own: theta^(-2i / D) in float64.
  std::vector<double> inv(static_cast<size_t>(head_dim_ / 2));
  for (int i = 0; i < head_dim_ / 2; ++i)
    inv[static_cast<size_t>(i)] = std::pow(kRopeWorkloadTheta, -2.0 * i / head_dim_);
  const std::vector<double> rq = rope_reference(q, positions, inv, rows, hq_, head_dim_);
  const std::vector<double> rk = rope_reference(k, positions, inv, rows, hkv_, head_dim_);
  // y's row layout: each token's q heads, then its k heads.
  std::vector<double> out;
  out.reserve(rq.size() + rk.size());
  for (int64_t r = 0; r < rows; ++r) {
    out.insert(out.end(), rq.begin() + static_cast<std::ptrdiff_t>(r * q_row),
               rq.begin() + static_cast<std::ptrdiff_t>((r + 1) * q_row));
    out.insert(out.end(), rk.begin() + static_cast<std::ptrdiff_t>(r * k_row),
               rk.begin() + static_cast<std::ptrdiff_t>((r + 1) * k_row));
  }
  return out;
}

// --- op ---------------------------------------------------------------------------------------

RopeOp::RopeOp()
    : CudaOp("rope",
             BucketSpec{{DimSpec::exact_then_pow2_up("rows", 1, kMaxRows, 8),
                         DimSpec::exact("hq", 1, kMaxHeads), DimSpec::exact("hkv", 1, kMaxHeads),
                         DimSpec::exact("head_dim", 8, kRopeMaxHeadDim)}},
             Numerics::batch_invariant) {}

std::vector<Tactic> RopeOp::candidates(const Shape &bucket) const {
  const int rows = static_cast<int>(bucket[0]), hq = static_cast<int>(bucket[1]),
            hkv = static_cast<int>(bucket[2]), head_dim = static_cast<int>(bucket[3]);
  return default_first(
      rope_default(rows, hq, hkv, head_dim), rope_configs(),
      [&](const RopeConfig &c) { return rope_can_implement(c, rows, hq, hkv, head_dim, nullptr); });
}

Tactic RopeOp::default_tactic(const Shape &bucket) const {
  return rope_default(static_cast<int>(bucket[0]), static_cast<int>(bucket[1]),
                      static_cast<int>(bucket[2]), static_cast<int>(bucket[3]))
      .to_tactic();
}

void RopeOp::validate(const Shape &shape) const {
  if (shape.rank != 4)
    HONE_INVALID_ARGUMENT("rope takes 4 dimensions (rows, hq, hkv, head_dim), got " +
                          str(shape.rank));
  if (shape.dtype != DType::bf16)
    HONE_INVALID_ARGUMENT("rope takes dtype bf16, got " + std::string(to_string(shape.dtype)));
  const int64_t rows = shape[0], hq = shape[1], hkv = shape[2], head_dim = shape[3];
  if (rows < 1 || rows > kMaxRows)
    HONE_INVALID_ARGUMENT("rope: rows=" + str(rows) + " outside 1.." + str(kMaxRows));
  if (hq < 1 || hq > kMaxHeads)
    HONE_INVALID_ARGUMENT("rope: hq=" + str(hq) + " outside 1.." + str(kMaxHeads));
  if (hkv < 1 || hkv > kMaxHeads)
    HONE_INVALID_ARGUMENT("rope: hkv=" + str(hkv) + " outside 1.." + str(kMaxHeads));
  if (head_dim < 8 || head_dim > kRopeMaxHeadDim || head_dim % 8 != 0)
    HONE_INVALID_ARGUMENT("rope: head_dim=" + str(head_dim) + " is not a multiple of 8 in 8.." +
                          str(kRopeMaxHeadDim));
}

CompiledTactic RopeOp::compile(const Tactic &tactic) const {
  return compile_config<RopeConfig>(name(), tactic, {&rope_configs()});
}

std::optional<WorkloadBytes> RopeOp::workload_bytes(const Shape &shape) const {
  const int64_t rows = shape[0], hq = shape[1], hkv = shape[2], head_dim = shape[3];
  WorkloadBytes b;
  b.per_copy = bf16_bytes(rows * (hq + hkv) * head_dim);
  b.fixed = CudaWorkload::output_bytes(rows, (hq + hkv) * head_dim) +
            static_cast<size_t>(rows) * sizeof(int32_t);
  return b;
}

std::unique_ptr<Workload> RopeOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<RopeWorkload>(cuda_backend(), static_cast<int>(shape[0]),
                                        static_cast<int>(shape[1]), static_cast<int>(shape[2]),
                                        static_cast<int>(shape[3]));
}

} // namespace hone::cuda
