#include "cuda/ops/qmv_affine_op.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "cuda/backend/bf16.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/random_fill.h"
#include "cuda/kernels/common/split_k_family.h"
#include "cuda/ops/entry_point.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr int64_t kMaxRows = 32;
constexpr int64_t kMaxDim = int64_t{1} << 24; // n and k, as for gemv.bf16

size_t elements(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

size_t q_words(const QmvAffineProblem &p) { return elements(p.n, p.k) * p.bits / 32; }
size_t group_params(const QmvAffineProblem &p) { return elements(p.n, p.k / p.group); }
// [bytes] packed q + scales + biases.
size_t quantized_weight_bytes(const QmvAffineProblem &p) {
  return q_words(p) * sizeof(uint32_t) + 2 * group_params(p) * sizeof(uint16_t);
}

std::string describe(const QmvAffineProblem &p) {
  return "rows=" + std::to_string(p.rows) + ",n=" + std::to_string(p.n) +
         ",k=" + std::to_string(p.k) + ",bits=" + std::to_string(p.bits) +
         ",group=" + std::to_string(p.group);
}

// What qmv.affine and qmv.affine.silu_mul share for the linear `p` (with `silu`, the gate/up
// linear of n = 2 inter rows, whose configs must have the SiLU x up epilogue and whose output is
// [rows, inter]): the candidates (default first), the default, the compiled configs and the bytes.
std::vector<Tactic> linear_candidates(const QmvAffineProblem &p, bool silu) {
  return default_first(
      qmv_affine_default(p.rows, p.n, p.k, p.bits, p.group), qmv_affine_configs(p.bits),
      [&](const QmvAffineConfig &c) {
        return qmv_affine_can_implement(c, p.rows, p.n, p.k, p.bits, p.group, nullptr) &&
               (!silu || qmv_affine_silu_epilogue_compiled(c, p.bits, p.group, p.k, p.n / 2));
      });
}

Tactic linear_default_tactic(const QmvAffineProblem &p) {
  return qmv_affine_default(p.rows, p.n, p.k, p.bits, p.group).to_tactic();
}

CompiledTactic compile_linear(std::string_view op, const Tactic &tactic) {
  return compile_config<QmvAffineConfig>(op, tactic,
                                         {&qmv_affine_configs(4), &qmv_affine_configs(8)});
}

WorkloadBytes linear_workload_bytes(const QmvAffineProblem &p, int64_t out_cols) {
  WorkloadBytes b;
  b.per_copy = quantized_weight_bytes(p) + elements(p.rows, p.k) * sizeof(uint16_t);
  b.fixed = CudaWorkload::output_bytes(p.rows, out_cols);
  return b;
}

} // namespace

QmvAffineProblem qmv_affine_silu_mul_problem(const Shape &shape) {
  QmvAffineProblem p = qmv_affine_problem(shape);
  p.n = 2 * static_cast<int>(shape[1]);
  return p;
}

QmvAffineProblem qmv_affine_problem(const Shape &shape) {
  QmvAffineProblem p;
  p.rows = static_cast<int>(shape[0]);
  p.n = static_cast<int>(shape[1]);
  p.k = static_cast<int>(shape[2]);
  p.bits = static_cast<int>(shape[3]);
  p.group = static_cast<int>(shape[4]);
  return p;
}

// --- workload ---------------------------------------------------------------------------

QmvAffineWorkload::QmvAffineWorkload(CudaBackend &backend, const QmvAffineProblem &problem,
                                     bool silu)
    : AffineLinearWorkload(backend, problem, silu ? problem.n / 2 : 0), silu_(silu) {
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

std::optional<std::string> QmvAffineWorkload::cannot_implement(const Tactic &tactic) const {
  QmvAffineConfig config;
  try {
    config = QmvAffineConfig::from_tactic(tactic);
  } catch (const Error &e) {
    return e.what();
  }
  if (std::string why; !qmv_affine_can_implement(config, problem().rows, problem().n, problem().k,
                                                 problem().bits, problem().group, &why))
    return why;
  if (silu_ && !qmv_affine_silu_epilogue_fits(config, problem().bits, problem().group, problem().k,
                                              problem().n / 2))
    return "no SiLU x up epilogue for " + tactic.str() + " at this shape (or its kernel spills)";
  return std::nullopt;
}

std::optional<KernelResources> QmvAffineWorkload::resources(const Tactic &tactic) const {
  return qmv_affine_resources(QmvAffineConfig::from_tactic(tactic), problem().bits);
}

LaunchStatus QmvAffineWorkload::launch(const QmvAffineConfig &config, int copy, const void *x,
                                       void *y, int rows) {
  const AffineLinearInputs &in = copy_at(copy);
  QmvAffineArgs args;
  args.x = x;
  args.q = in.q.as<const uint32_t>();
  args.scales = in.scales.data();
  args.biases = in.biases.data();
  args.y = y;
  args.rows = rows;
  args.n = problem().n;
  args.k = problem().k;
  args.bits = problem().bits;
  args.group = problem().group;
  args.silu_inter = silu_ ? problem().n / 2 : 0;
  return qmv_affine_launch(config, args, stream());
}

LaunchStatus QmvAffineWorkload::launch(const Tactic &tactic, int copy) {
  return launch(last_config_.of(tactic), copy, x(copy), y(), problem().rows);
}

std::optional<SummationOrder> QmvAffineWorkload::summation_order(const Tactic &tactic) const {
  const QmvAffineConfig c = QmvAffineConfig::from_tactic(tactic);
  // The ring path computes the mma path's order (qmv_affine_ring.cuh): one family for the gate.
  const KernelPath path = c.path == KernelPath::ring ? KernelPath::mma : c.path;
  return SummationOrder{path, qmv_affine_k_slices(c)};
}

Tactic QmvAffineWorkload::single_row_default() const {
  return qmv_affine_default(1, problem().n, problem().k, problem().bits, problem().group)
      .to_tactic();
}

LaunchStatus QmvAffineWorkload::launch_single_row(int row, void *y_row) {
  const auto *xr = static_cast<const uint16_t *>(x(0)) + elements(row, problem().k);
  return launch(qmv_affine_default(1, problem().n, problem().k, problem().bits, problem().group), 0,
                xr, y_row, 1);
}

std::vector<double> QmvAffineWorkload::reference(int copy) const {
  std::vector<double> y = qmv_affine_reference(
      download_x(copy), download_q(copy), download_scales(copy), download_biases(copy), problem());
  if (!silu_)
    return y;
  // Row r of the linear holds gate[r, 0..inter) then up[r, 0..inter).
  const size_t n = static_cast<size_t>(problem().n), inter = n / 2;
  std::vector<double> act(static_cast<size_t>(problem().rows) * inter);
  for (size_t r = 0; r < static_cast<size_t>(problem().rows); ++r)
    for (size_t i = 0; i < inter; ++i) {
      const double g = y[r * n + i], u = y[r * n + inter + i];
      act[r * inter + i] = g / (1.0 + std::exp(-g)) * u;
    }
  return act;
}

// --- op -----------------------------------------------------------------------------------

QmvAffineOp::QmvAffineOp()
    : CudaOp("qmv.affine",
             BucketSpec{{DimSpec::exact_then_pow2_up("rows", 1, kMaxRows, 8),
                         DimSpec::exact("n", 1, kMaxDim), DimSpec::exact("k", 1, kMaxDim),
                         DimSpec::one_of("bits", {4, 8}), DimSpec::one_of("group", {32, 64, 128})}},
             Numerics::batch_invariant) {}

std::vector<Tactic> QmvAffineOp::candidates(const Shape &bucket) const {
  return linear_candidates(qmv_affine_problem(bucket), false);
}

Tactic QmvAffineOp::default_tactic(const Shape &bucket) const {
  return linear_default_tactic(qmv_affine_problem(bucket));
}

void QmvAffineOp::validate(const Shape &shape) const {
  if (shape.rank != 5)
    HONE_INVALID_ARGUMENT("qmv.affine takes 5 dimensions (rows, n, k, bits, group), got " +
                          std::to_string(shape.rank));
  if (shape.dtype != DType::bf16)
    HONE_INVALID_ARGUMENT("qmv.affine takes dtype bf16, got " +
                          std::string(to_string(shape.dtype)));
  const int64_t rows = shape[0], n = shape[1], k = shape[2], bits = shape[3], group = shape[4];
  if (rows < 1 || rows > kMaxRows)
    HONE_INVALID_ARGUMENT("qmv.affine: rows=" + std::to_string(rows) + " outside 1..32");
  if (n < 1 || n > kMaxDim)
    HONE_INVALID_ARGUMENT("qmv.affine: n=" + std::to_string(n) + " outside 1..2^24");
  if (bits != 4 && bits != 8)
    HONE_INVALID_ARGUMENT("qmv.affine: bits=" + std::to_string(bits) + " is not 4 or 8");
  if (group != 32 && group != 64 && group != 128)
    HONE_INVALID_ARGUMENT("qmv.affine: group=" + std::to_string(group) + " is not 32, 64 or 128");
  if (k < group || k > kMaxDim)
    HONE_INVALID_ARGUMENT("qmv.affine: k=" + std::to_string(k) +
                          " outside group=" + std::to_string(group) + "..2^24");
  if (k % group != 0)
    HONE_INVALID_ARGUMENT("qmv.affine: k=" + std::to_string(k) +
                          " is not a multiple of group=" + std::to_string(group));
  const QmvAffineProblem p = qmv_affine_problem(shape);
  const QmvAffineConfig def = qmv_affine_default(p.rows, p.n, p.k, p.bits, p.group);
  if (std::string reason;
      !qmv_affine_can_implement(def, p.rows, p.n, p.k, p.bits, p.group, &reason))
    HONE_INVALID_ARGUMENT("qmv.affine: " + describe(p) + " not supported by the default " +
                          def.to_tactic().str() + ": " + reason);
}

CompiledTactic QmvAffineOp::compile(const Tactic &tactic) const {
  return compile_linear(name(), tactic);
}

std::optional<WorkloadBytes> QmvAffineOp::workload_bytes(const Shape &shape) const {
  const QmvAffineProblem p = qmv_affine_problem(shape);
  return linear_workload_bytes(p, p.n);
}

std::unique_ptr<Workload> QmvAffineOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<QmvAffineWorkload>(cuda_backend(), qmv_affine_problem(shape));
}

// --- qmv.affine.silu_mul ------------------------------------------------------------------

namespace {
constexpr int64_t kMaxSiluRows = 8; // one n8 activation tile: the epilogue's configs
} // namespace

QmvAffineSiluMulOp::QmvAffineSiluMulOp()
    : CudaOp("qmv.affine.silu_mul",
             BucketSpec{{DimSpec::exact("rows", 1, kMaxSiluRows),
                         DimSpec::exact("inter", 8, kMaxDim / 2), DimSpec::exact("k", 1, kMaxDim),
                         DimSpec::one_of("bits", {4, 8}), DimSpec::one_of("group", {32, 64, 128})}},
             Numerics::batch_invariant) {}

std::vector<Tactic> QmvAffineSiluMulOp::candidates(const Shape &bucket) const {
  return linear_candidates(qmv_affine_silu_mul_problem(bucket), true);
}

Tactic QmvAffineSiluMulOp::default_tactic(const Shape &bucket) const {
  return linear_default_tactic(qmv_affine_silu_mul_problem(bucket));
}

void QmvAffineSiluMulOp::validate(const Shape &shape) const {
  if (shape.rank != 5)
    HONE_INVALID_ARGUMENT("qmv.affine.silu_mul takes 5 dimensions (rows, inter, k, bits, group), "
                          "got " +
                          std::to_string(shape.rank));
  if (shape.dtype != DType::bf16)
    HONE_INVALID_ARGUMENT("qmv.affine.silu_mul takes dtype bf16, got " +
                          std::string(to_string(shape.dtype)));
  const int64_t rows = shape[0], inter = shape[1], k = shape[2], bits = shape[3], group = shape[4];
  if (rows < 1 || rows > kMaxSiluRows)
    HONE_INVALID_ARGUMENT("qmv.affine.silu_mul: rows=" + std::to_string(rows) +
                          " outside 1..8 (the epilogue's configs take one 8-row tile)");
  if (inter < 8 || inter % 8 != 0 || inter > kMaxDim / 2)
    HONE_INVALID_ARGUMENT("qmv.affine.silu_mul: inter=" + std::to_string(inter) +
                          " is not a multiple of 8 in 8..2^23");
  if (bits != 4)
    HONE_INVALID_ARGUMENT("qmv.affine.silu_mul: bits=" + std::to_string(bits) +
                          " has no SiLU epilogue (4 bits only)");
  // The rest as qmv.affine's gate/up linear (k, group, the default's shape).
  const int64_t gate_up[] = {rows, 2 * inter, k, bits, group};
  entry_op<QmvAffineOp>().validate(Shape(std::span<const int64_t>(gate_up), shape.dtype));
  const QmvAffineProblem p = qmv_affine_silu_mul_problem(shape);
  const QmvAffineConfig def = qmv_affine_default(p.rows, p.n, p.k, p.bits, p.group);
  if (!qmv_affine_silu_epilogue_compiled(def, p.bits, p.group, p.k, p.n / 2))
    HONE_INVALID_ARGUMENT("qmv.affine.silu_mul: rows=" + std::to_string(rows) +
                          ",inter=" + std::to_string(inter) + ",k=" + std::to_string(k) +
                          ",group=" + std::to_string(group) + ": the default " +
                          def.to_tactic().str() + " has no SiLU epilogue");
}

bool QmvAffineSiluMulOp::owns_kernel(std::string_view kernel) const {
  return entry_op<QmvAffineOp>().owns_kernel(kernel);
}

CompiledTactic QmvAffineSiluMulOp::compile(const Tactic &tactic) const {
  return compile_linear(name(), tactic);
}

std::optional<WorkloadBytes> QmvAffineSiluMulOp::workload_bytes(const Shape &shape) const {
  const QmvAffineProblem p = qmv_affine_silu_mul_problem(shape);
  return linear_workload_bytes(p, p.n / 2);
}

std::unique_ptr<Workload> QmvAffineSiluMulOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<QmvAffineWorkload>(cuda_backend(), qmv_affine_silu_mul_problem(shape),
                                             true);
}

} // namespace hone::cuda
