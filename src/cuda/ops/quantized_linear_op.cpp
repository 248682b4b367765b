#include "cuda/ops/quantized_linear_op.h"

#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/ops/entry_point.h"
#include "cuda/ops/qmm_affine_op.h"
#include "cuda/ops/qmv_affine_op.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/settings.h"

namespace hone::cuda {

namespace {

constexpr const char *kQmvKernel = "quantized_linear.qmv";
constexpr const char *kQmmKernel = "quantized_linear.qmm";

Shape inner_shape(const QmvAffineProblem &p) {
  return Shape{{p.rows, p.n, p.k, p.bits, p.group}, DType::bf16};
}

QuantizedLinearSide side_of(const Tactic &tactic) {
  if (tactic.kernel == kQmvKernel && tactic.params.empty())
    return QuantizedLinearSide::qmv;
  if (tactic.kernel == kQmmKernel && tactic.params.empty())
    return QuantizedLinearSide::qmm;
  HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "' is not a quantized_linear side (" +
                        kQmvKernel + " or " + kQmmKernel + ")");
}

} // namespace

Tactic quantized_linear_tactic(QuantizedLinearSide side) {
  return Tactic{side == QuantizedLinearSide::qmv ? kQmvKernel : kQmmKernel, {}};
}

QuantizedLinearSide quantized_linear_side(int64_t rows, int64_t qmv_max_rows) {
  return rows <= qmv_max_rows && rows <= kQmvMaxRows ? QuantizedLinearSide::qmv
                                                     : QuantizedLinearSide::qmm;
}

// --- workload ---------------------------------------------------------------------------

QuantizedLinearWorkload::QuantizedLinearWorkload(CudaBackend &backend,
                                                 const QmvAffineProblem &problem)
    : AffineLinearWorkload(backend, problem) {
  const QmvAffineProblem &p = this->problem();
  Dispatcher d(backend, DispatcherOptions::from_env());
  const Shape shape = inner_shape(p);
  if (p.rows <= kQmvMaxRows) {
    const Resolution &r = d.resolve(entry_op<QmvAffineOp>(), shape);
    qmv_tactic_ = r.tactic;
    qmv_ = r.compiled.as<QmvAffineConfig>();
  }
  if (qmm_affine_built()) {
    const Resolution &r = d.resolve(entry_op<QmmAffineOp>(), shape);
    qmm_tactic_ = r.tactic;
    qmm_ = r.compiled.as<QmmAffineConfig>();
    workspace_ = DeviceBuffer(qmm_affine_workspace_bytes(*qmm_, p.rows, p.n, p.k, p.bits, p.group));
  }
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

std::optional<std::string> QuantizedLinearWorkload::cannot_implement(const Tactic &tactic) const {
  QuantizedLinearSide side;
  try {
    side = side_of(tactic);
  } catch (const Error &e) {
    return e.what();
  }
  const QmvAffineProblem &p = problem();
  std::string why;
  if (side == QuantizedLinearSide::qmv) {
    if (!qmv_)
      return "qmv.affine runs at most " + std::to_string(kQmvMaxRows) + " rows, not " +
             std::to_string(p.rows);
    if (!qmv_affine_can_implement(*qmv_, p.rows, p.n, p.k, p.bits, p.group, &why))
      return "qmv.affine " + qmv_tactic_.str() + ": " + why;
    return std::nullopt;
  }
  if (!qmm_)
    return "qmm.affine is not built into this hone";
  if (!qmm_affine_can_implement(*qmm_, p.rows, p.n, p.k, p.bits, p.group, &why))
    return "qmm.affine " + qmm_tactic_.str() + ": " + why;
  if (qmm_affine_resources(*qmm_, p.bits).registers == 0)
    return "qmm.affine " + qmm_tactic_.str() + ": the kernel cannot load on this device";
  return std::nullopt;
}

std::optional<KernelResources> QuantizedLinearWorkload::resources(const Tactic &tactic) const {
  if (side_of(tactic) == QuantizedLinearSide::qmv)
    return qmv_affine_resources(*qmv_, problem().bits);
  return qmm_affine_resources(*qmm_, problem().bits);
}

LaunchStatus QuantizedLinearWorkload::launch(QuantizedLinearSide side, int copy) {
  const QmvAffineProblem &p = problem();
  if (side == QuantizedLinearSide::qmv) {
    if (!qmv_)
      return LaunchStatus::invalid_value();
    QmvAffineArgs args;
    args.x = x(copy);
    args.q = q(copy);
    args.scales = scales(copy);
    args.biases = biases(copy);
    args.y = y();
    args.rows = p.rows;
    args.n = p.n;
    args.k = p.k;
    args.bits = p.bits;
    args.group = p.group;
    return qmv_affine_launch(*qmv_, args, stream());
  }
  if (!qmm_)
    return LaunchStatus::invalid_value();
  QmmAffineArgs args;
  args.x = x(copy);
  args.q = q(copy);
  args.scales = scales(copy);
  args.biases = biases(copy);
  args.y = y();
  args.m = p.rows;
  args.n = p.n;
  args.k = p.k;
  args.bits = p.bits;
  args.group = p.group;
  args.workspace = workspace_.data();
  args.workspace_bytes = workspace_.size();
  return qmm_affine_launch(*qmm_, args, stream());
}

LaunchStatus QuantizedLinearWorkload::launch(const Tactic &tactic, int copy) {
  return launch(side_of(tactic), copy);
}

// --- op -----------------------------------------------------------------------------------

QuantizedLinearOp::QuantizedLinearOp()
    : CudaOp("quantized_linear", QmmAffineOp().buckets(), Numerics::tolerance) {}

std::vector<Tactic> QuantizedLinearOp::candidates(const Shape &bucket) const {
  const Tactic first = default_tactic(bucket);
  std::vector<Tactic> out{first};
  for (QuantizedLinearSide side : {QuantizedLinearSide::qmv, QuantizedLinearSide::qmm}) {
    Tactic t = quantized_linear_tactic(side);
    if (t == first || (side == QuantizedLinearSide::qmv && bucket[0] > kQmvMaxRows) ||
        (side == QuantizedLinearSide::qmm && !qmm_affine_built()))
      continue;
    out.push_back(std::move(t));
  }
  return out;
}

Tactic QuantizedLinearOp::default_tactic(const Shape &bucket) const {
  return quantized_linear_tactic(quantized_linear_side(bucket[0], kDefaultQmvMaxRows));
}

void QuantizedLinearOp::validate(const Shape &shape) const {
  if (shape.rank != 5)
    HONE_INVALID_ARGUMENT("quantized_linear takes 5 dimensions (rows, n, k, bits, group), got " +
                          std::to_string(shape.rank));
  // qmm.affine's rules name the bad value; they hold for every row count, so that one weight
  // layout serves the whole range.
  try {
    entry_op<QmmAffineOp>().validate(shape);
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::invalid_argument)
      throw;
    std::string text = e.what();
    if (text.starts_with("qmm.affine"))
      text = "quantized_linear" + text.substr(std::string("qmm.affine").size());
    HONE_INVALID_ARGUMENT(text);
  }
}

std::unique_ptr<Workload> QuantizedLinearOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<QuantizedLinearWorkload>(cuda_backend(), qmv_affine_problem(shape));
}

std::optional<Tactic> QuantizedLinearOp::env_override(const Shape &bucket,
                                                      const Settings &settings) const {
  if (std::optional<Tactic> t = TunableOp::env_override(bucket, settings))
    return t;
  if (!settings.qmv_max_rows)
    return std::nullopt;
  return quantized_linear_tactic(quantized_linear_side(bucket[0], *settings.qmv_max_rows));
}

CompiledTactic QuantizedLinearOp::compile(const Tactic &tactic) const {
  return CompiledTactic::of(side_of(tactic));
}

} // namespace hone::cuda
