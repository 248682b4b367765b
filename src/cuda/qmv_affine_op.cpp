#include "cuda/qmv_affine_op.h"

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

constexpr int64_t kMaxRows = 32;
constexpr int64_t kMaxDim = int64_t{1} << 24; // n and k, as for gemv.bf16

size_t elements(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

size_t q_words(const QmvAffineProblem &p) { return elements(p.n, p.k) * p.bits / 32; }
size_t group_params(const QmvAffineProblem &p) { return elements(p.n, p.k / p.group); }

std::string text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

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
  HONE_CHECK(copies >= 1, "set_rotation needs at least one copy");
  const auto count = static_cast<size_t>(copies);
  if (copies_.size() > count)
    copies_.resize(count);
  // Every copy holds its own random data: no two copies alike.
  while (copies_.size() < count) {
    Inputs in;
    in.x = DeviceBuffer(elements(p_.rows, p_.k) * sizeof(uint16_t));
    in.q = DeviceBuffer(q_words(p_) * sizeof(uint32_t));
    in.scales = DeviceBuffer(group_params(p_) * sizeof(uint16_t));
    in.biases = DeviceBuffer(group_params(p_) * sizeof(uint16_t));
    fill(in);
    copies_.push_back(std::move(in));
  }
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
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
  // Automatic spill rule: a config whose kernel uses local memory is refused, whatever its
  // speed today, because spills make its time depend on the L1/L2 state around it.
  const KernelResources res = qmv_affine_resources(config, p_.bits);
  if (res.local_bytes > 0)
    return refuse(Status::rejected, "spills: " + std::to_string(res.local_bytes) +
                                        " bytes local memory, " + std::to_string(res.registers) +
                                        " registers");
  return Status::ok;
}

const QmvAffineConfig &QmvAffineWorkload::config_of(const Tactic &tactic) {
  if (!(tactic == last_tactic_)) {
    last_config_ = QmvAffineConfig::from_tactic(tactic);
    last_tactic_ = tactic;
  }
  return last_config_;
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
  const QmvAffineConfig &config = config_of(tactic);
  const int status = launch(config, copy, x(copy), y_.data(), p_.rows);
  if (status != 0) {
    const auto err = static_cast<cudaError_t>(status);
    (void)cudaGetLastError();
    HONE_RUNTIME_ERROR("qmv_affine_launch(" + tactic.str() + "): " + cudaGetErrorName(err) + ": " +
                       cudaGetErrorString(err));
  }
}

void QmvAffineWorkload::randomize_inputs() { fill(copies_.at(0)); }

void QmvAffineWorkload::poison_output() {
  // 0xFF bytes make every bf16 element 0xFFFF, a NaN.
  HONE_CUDA_CHECK(cudaMemsetAsync(y_.data(), 0xff, y_.size(), stream()));
}

template <class T> std::vector<T> QmvAffineWorkload::download(const void *src, size_t count) const {
  std::vector<T> out(count);
  HONE_CUDA_CHECK(
      cudaMemcpyAsync(out.data(), src, count * sizeof(T), cudaMemcpyDeviceToHost, stream()));
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
  return out;
}

std::vector<uint16_t> QmvAffineWorkload::download_x(int copy) const {
  return download<uint16_t>(x(copy), elements(p_.rows, p_.k));
}
std::vector<uint32_t> QmvAffineWorkload::download_q(int copy) const {
  return download<uint32_t>(q(copy), q_words(p_));
}
std::vector<uint16_t> QmvAffineWorkload::download_scales(int copy) const {
  return download<uint16_t>(scales(copy), group_params(p_));
}
std::vector<uint16_t> QmvAffineWorkload::download_biases(int copy) const {
  return download<uint16_t>(biases(copy), group_params(p_));
}
std::vector<uint16_t> QmvAffineWorkload::download_y() const {
  return download<uint16_t>(y_.data(), elements(p_.rows, p_.n));
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
  const QmvAffineConfig config = config_of(tactic);
  // Batch invariance is a property of the summation order, which a random input can fail to
  // expose after bf16 rounding: a config must share the rows=1 default's order (its path and
  // its K slicing, warps_k x split_k) before the bitwise comparison below even runs.
  const QmvAffineConfig single = qmv_affine_default(1, p_.n, p_.k, p_.bits, p_.group);
  if (numerics == Numerics::batch_invariant &&
      (config.path != single.path || qmv_affine_k_slices(config) != qmv_affine_k_slices(single))) {
    result.status = Status::gate_failed;
    result.error = std::numeric_limits<double>::infinity();
    result.reason = "summation order (path " + std::to_string(config.path) + ", k_slices " +
                    std::to_string(qmv_affine_k_slices(config)) +
                    ") differs from the rows=1 default " + single.to_tactic().str();
    return result;
  }

  randomize_inputs();
  poison_output();
  const int status = launch(config, 0, x(0), y_.data(), p_.rows);
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
  const GemvBf16Comparison cmp = compare_gemv_bf16(y, reference(0));
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
  for (int r = 0; r < p_.rows; ++r) {
    const auto *xr = static_cast<const uint16_t *>(x(0)) + elements(r, p_.k);
    auto *yr = static_cast<uint16_t *>(y_reference_.data()) + elements(r, p_.n);
    const int s = launch(single, 0, xr, yr, 1);
    if (s != 0) {
      (void)cudaGetLastError();
      HONE_RUNTIME_ERROR("rows=1 default " + single.to_tactic().str() +
                         " failed to launch: " + cudaGetErrorString(static_cast<cudaError_t>(s)));
    }
  }
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
  const std::vector<uint16_t> expected =
      download<uint16_t>(y_reference_.data(), elements(p_.rows, p_.n));
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
