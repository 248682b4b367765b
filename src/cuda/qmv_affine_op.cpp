#include "cuda/qmv_affine_op.h"

#include <algorithm>
#include <optional>

#include "cuda/bf16.h"
#include "cuda/cuda_backend_impl.h"
#include "cuda/cuda_check.h"
#include "cuda/gemv_workload.h"
#include "cuda/random_fill.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

constexpr int64_t kMaxRows = 32;
constexpr int64_t kMaxDim = int64_t{1} << 24; // n and k, as for gemv.bf16

size_t elements(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

size_t q_words(const QmvAffineProblem &p) { return elements(p.n, p.k) * p.bits / 32; }
size_t group_params(const QmvAffineProblem &p) { return elements(p.n, p.k / p.group); }

std::string describe(const QmvAffineProblem &p) {
  return "rows=" + std::to_string(p.rows) + ",n=" + std::to_string(p.n) +
         ",k=" + std::to_string(p.k) + ",bits=" + std::to_string(p.bits) +
         ",group=" + std::to_string(p.group);
}

bool is_compiled(const QmvAffineConfig &config, int bits) {
  const std::vector<QmvAffineConfig> &all = qmv_affine_configs(bits);
  return std::find(all.begin(), all.end(), config) != all.end();
}

} // namespace

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

QmvAffineWorkload::QmvAffineWorkload(CudaBackend &backend, const QmvAffineProblem &problem)
    : backend_(backend), p_(problem) {
  y_ = DeviceBuffer(elements(p_.rows, p_.n) * sizeof(uint16_t));
  y_reference_ = DeviceBuffer(elements(p_.rows, p_.n) * sizeof(uint16_t));
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

cudaStream_t QmvAffineWorkload::stream() const { return backend_.stream(); }

size_t QmvAffineWorkload::weight_bytes() const {
  return q_words(p_) * sizeof(uint32_t) + 2 * group_params(p_) * sizeof(uint16_t);
}

size_t QmvAffineWorkload::bytes_per_launch() const {
  return weight_bytes() + (elements(p_.rows, p_.k) + elements(p_.rows, p_.n)) * sizeof(uint16_t);
}

void QmvAffineWorkload::fill(Inputs &in) {
  fill_random_bf16(in.x.data(), elements(p_.rows, p_.k), next_random_seed(), stream());
  fill_random_u32(in.q.data(), q_words(p_), next_random_seed(), stream());
  fill_random_affine_params(in.scales.data(), in.biases.data(), group_params(p_), p_.bits,
                            next_random_seed(), stream());
}

void QmvAffineWorkload::set_rotation(int copies) {
  resize_rotation(copies_, copies, stream(), [&] {
    Inputs in;
    in.x = DeviceBuffer(elements(p_.rows, p_.k) * sizeof(uint16_t));
    in.q = DeviceBuffer(q_words(p_) * sizeof(uint32_t));
    in.scales = DeviceBuffer(group_params(p_) * sizeof(uint16_t));
    in.biases = DeviceBuffer(group_params(p_) * sizeof(uint16_t));
    fill(in);
    return in;
  });
}

Status QmvAffineWorkload::can_run(const Tactic &tactic, std::string *reason) const {
  const auto refuse = [&](Status status, std::string why) {
    if (reason)
      *reason = std::move(why);
    return status;
  };
  QmvAffineConfig config;
  try {
    config = QmvAffineConfig::from_tactic(tactic);
  } catch (const Error &e) {
    return refuse(Status::cannot_implement, e.what());
  }
  // Checked before anything asks for the config's kernel (resources, launch).
  if (!is_compiled(config, p_.bits))
    return refuse(Status::cannot_implement,
                  "not a compiled qmv.affine config for bits=" + std::to_string(p_.bits));
  if (std::string why;
      !qmv_affine_can_implement(config, p_.rows, p_.n, p_.k, p_.bits, p_.group, &why))
    return refuse(Status::cannot_implement, why);
  if (std::optional<std::string> spills = spill_reason(qmv_affine_resources(config, p_.bits)))
    return refuse(Status::rejected, std::move(*spills));
  return Status::ok;
}

int QmvAffineWorkload::launch(const QmvAffineConfig &config, int copy, const void *x, void *y,
                              int rows) {
  const Inputs &in = inputs(copy);
  QmvAffineArgs args;
  args.x = x;
  args.q = in.q.as<const uint32_t>();
  args.scales = in.scales.data();
  args.biases = in.biases.data();
  args.y = y;
  args.rows = rows;
  args.n = p_.n;
  args.k = p_.k;
  args.bits = p_.bits;
  args.group = p_.group;
  return qmv_affine_launch(config, args, stream());
}

void QmvAffineWorkload::run(const Tactic &tactic, int copy) {
  HONE_CHECK(copy >= 0 && copy < rotation(), "copy index outside the rotation");
  const QmvAffineConfig &config = last_config_.of(tactic);
  const int status = launch(config, copy, x(copy), y_.data(), p_.rows);
  if (status != 0)
    HONE_RUNTIME_ERROR("qmv_affine_launch(" + tactic.str() + "): " + launch_error(status));
}

void QmvAffineWorkload::randomize_inputs() { fill(copies_.at(0)); }

void QmvAffineWorkload::poison_output() { poison_bf16(y_, stream()); }

std::vector<uint16_t> QmvAffineWorkload::download_x(int copy) const {
  return download<uint16_t>(x(copy), elements(p_.rows, p_.k), stream());
}
std::vector<uint32_t> QmvAffineWorkload::download_q(int copy) const {
  return download<uint32_t>(q(copy), q_words(p_), stream());
}
std::vector<uint16_t> QmvAffineWorkload::download_scales(int copy) const {
  return download<uint16_t>(scales(copy), group_params(p_), stream());
}
std::vector<uint16_t> QmvAffineWorkload::download_biases(int copy) const {
  return download<uint16_t>(biases(copy), group_params(p_), stream());
}
std::vector<uint16_t> QmvAffineWorkload::download_y() const {
  return download<uint16_t>(y_.data(), elements(p_.rows, p_.n), stream());
}

std::vector<double> QmvAffineWorkload::reference(int copy) const {
  return qmv_affine_reference(download_x(copy), download_q(copy), download_scales(copy),
                              download_biases(copy), p_);
}

CheckResult QmvAffineWorkload::check(const Tactic &tactic, Numerics numerics) {
  CheckResult result;
  result.bound = kQmvAffineRelativeL2Bound;
  result.status = can_run(tactic, &result.reason);
  if (!result.pass())
    return result;
  const QmvAffineConfig config = last_config_.of(tactic);
  const QmvAffineConfig single = qmv_affine_default(1, p_.n, p_.k, p_.bits, p_.group);
  const std::string single_tactic = single.to_tactic().str();
  if (numerics == Numerics::batch_invariant &&
      !same_summation_order({config.path, qmv_affine_k_slices(config)},
                            {single.path, qmv_affine_k_slices(single)}, single_tactic, result))
    return result;

  randomize_inputs();
  poison_output();
  Bf16OutputGate gate;
  gate.stream = stream();
  gate.rows = p_.rows;
  gate.n = p_.n;
  gate.y = &y_;
  gate.y_reference = &y_reference_;
  gate.launch = [&] { return launch(config, 0, x(0), y_.data(), p_.rows); };
  gate.reference = [&] { return reference(0); };
  gate.launch_single = [&](int r, void *yr) {
    const auto *xr = static_cast<const uint16_t *>(x(0)) + elements(r, p_.k);
    return launch(single, 0, xr, yr, 1);
  };
  gate.single_tactic = single_tactic;
  return gate_bf16_output(gate, numerics, std::move(result));
}

// --- op -----------------------------------------------------------------------------------

QmvAffineOp::QmvAffineOp()
    : buckets_{{DimSpec::exact_then_pow2("rows", 1, kMaxRows, 8), DimSpec::exact("n", 1, kMaxDim),
                DimSpec::exact("k", 1, kMaxDim), DimSpec::one_of("bits", {4, 8}),
                DimSpec::one_of("group", {32, 64, 128})}} {}

std::vector<Tactic> QmvAffineOp::candidates(const Shape &bucket) const {
  const QmvAffineProblem p = qmv_affine_problem(bucket);
  const Tactic first = qmv_affine_default(p.rows, p.n, p.k, p.bits, p.group).to_tactic();
  std::vector<Tactic> out{first};
  for (const QmvAffineConfig &c : qmv_affine_configs(p.bits)) {
    if (std::string why; !qmv_affine_can_implement(c, p.rows, p.n, p.k, p.bits, p.group, &why))
      continue;
    Tactic t = c.to_tactic();
    if (!(t == first))
      out.push_back(std::move(t));
  }
  return out;
}

Tactic QmvAffineOp::default_tactic(const Shape &bucket) const {
  const QmvAffineProblem p = qmv_affine_problem(bucket);
  return qmv_affine_default(p.rows, p.n, p.k, p.bits, p.group).to_tactic();
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

std::unique_ptr<Workload> QmvAffineOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<QmvAffineWorkload>(cuda_backend(), qmv_affine_problem(shape));
}

} // namespace hone::cuda
