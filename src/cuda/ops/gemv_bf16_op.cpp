#include "cuda/ops/gemv_bf16_op.h"

#include <algorithm>
#include <optional>

#include "cuda/backend/bf16.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/random_fill.h"
#include "cuda/kernels/common/split_k_family.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16_shape.h"
#include "cuda/ops/gemv_bf16_reference.h"
#include "cuda/peers/cublaslt_bf16_gemm.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

size_t elements(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

// [bytes] the largest split-K workspace of any config that can implement the shape.
size_t max_workspace_bytes(int rows, int n, int k) {
  size_t workspace = gemv_bf16_workspace_bytes(gemv_bf16_default(1, n, k), 1, n, k);
  for (const GemvBf16Config &c : gemv_bf16_configs())
    if (std::string why; gemv_bf16_can_implement(c, rows, n, k, &why))
      workspace = std::max(workspace, gemv_bf16_workspace_bytes(c, rows, n, k));
  return workspace;
}

} // namespace

// --- workload ---------------------------------------------------------------------------

GemvBf16Workload::GemvBf16Workload(CudaBackend &backend, int rows, int n, int k)
    : CudaWorkloadOf(backend, rows, n, kGemvBf16RelativeL2Bound), rows_(rows), n_(n), k_(k) {
  workspace_ = DeviceBuffer(max_workspace_bytes(rows_, n_, k_));
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

size_t GemvBf16Workload::bytes_per_launch() const {
  return (elements(n_, k_) + elements(rows_, k_) + elements(rows_, n_)) * sizeof(uint16_t);
}

GemvBf16Inputs GemvBf16Workload::make_copy() const {
  return {DeviceBuffer(elements(rows_, k_) * sizeof(uint16_t)),
          DeviceBuffer(elements(n_, k_) * sizeof(uint16_t))};
}

void GemvBf16Workload::fill_copy(size_t copy) {
  // Random bf16: never zeros.
  const GemvBf16Inputs &in = copies_.at(copy);
  fill_random_bf16(in.x.data(), elements(rows_, k_), next_random_seed(), stream());
  fill_random_bf16(in.w.data(), elements(n_, k_), next_random_seed(), stream());
}

std::optional<std::string> GemvBf16Workload::cannot_implement(const Tactic &tactic) const {
  if (is_gemv_bf16_vendor(tactic)) {
    GemvBf16VendorConfig vendor;
    try {
      vendor = GemvBf16VendorConfig::from_tactic(tactic);
    } catch (const Error &e) {
      return e.what();
    }
    std::string why;
    const std::optional<CublasLtAlgoId> algo =
        gemv_bf16_vendor_algo_for(vendor, rows_, n_, k_, &why);
    if (!algo || !gemv_bf16_vendor_plan(rows_, n_, k_, *algo, &why))
      return why;
    return std::nullopt;
  }
  GemvBf16Config config;
  try {
    config = GemvBf16Config::from_tactic(tactic);
  } catch (const Error &e) {
    return e.what();
  }
  if (std::string why; !gemv_bf16_can_implement(config, rows_, n_, k_, &why))
    return why;
  if (gemv_bf16_workspace_bytes(config, rows_, n_, k_) > workspace_.size())
    return "needs " + std::to_string(gemv_bf16_workspace_bytes(config, rows_, n_, k_)) +
           " bytes of workspace, " + std::to_string(workspace_.size()) + " allocated";
  return std::nullopt;
}

std::optional<KernelResources> GemvBf16Workload::resources(const Tactic &tactic) const {
  if (is_gemv_bf16_vendor(tactic))
    return std::nullopt; // cuBLASLt's own kernels: nothing of hone's spill rule applies
  return gemv_bf16_resources(GemvBf16Config::from_tactic(tactic));
}

LaunchStatus GemvBf16Workload::launch(const GemvBf16Config &config, const void *x, const void *w,
                                      void *y, int rows) {
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

const CublasLtBf16Gemm *GemvBf16Workload::vendor_plan(const GemvBf16VendorConfig &config) {
  std::string why;
  const std::optional<CublasLtAlgoId> algo = gemv_bf16_vendor_algo_for(config, rows_, n_, k_, &why);
  if (!algo)
    return nullptr;
  auto it = vendor_plans_.find(*algo);
  if (it == vendor_plans_.end()) {
    std::shared_ptr<const CublasLtBf16Gemm> plan =
        gemv_bf16_vendor_plan(rows_, n_, k_, *algo, &why);
    if (!plan)
      return nullptr;
    if (vendor_workspace_.size() < plan->workspace_bytes())
      vendor_workspace_ = DeviceBuffer(kCublasLtWorkspaceBytes);
    it = vendor_plans_.emplace(*algo, std::move(plan)).first;
  }
  return it->second.get();
}

LaunchStatus GemvBf16Workload::launch_vendor(const CublasLtBf16Gemm *plan, int copy) {
  if (!plan)
    return LaunchStatus::invalid_value();
  const cublasStatus_t s = plan->enqueue(x(copy), w(copy), y(), vendor_workspace_.data(),
                                         vendor_workspace_.size(), stream());
  return s == CUBLAS_STATUS_SUCCESS ? LaunchStatus() : LaunchStatus::invalid_value();
}

LaunchStatus GemvBf16Workload::launch(const Tactic &tactic, int copy) {
  if (is_gemv_bf16_vendor(tactic)) {
    // Parsed and planned once per change of tactic (as last_config_ does), not per timed launch.
    if (!(tactic == last_vendor_tactic_)) {
      last_vendor_plan_ = vendor_plan(GemvBf16VendorConfig::from_tactic(tactic));
      last_vendor_tactic_ = tactic;
    }
    return launch_vendor(last_vendor_plan_, copy);
  }
  return launch(last_config_.of(tactic), x(copy), w(copy), y(), rows_);
}

std::optional<SummationOrder> GemvBf16Workload::summation_order(const Tactic &tactic) const {
  if (is_gemv_bf16_vendor(tactic))
    return std::nullopt; // cuBLASLt promises no order across row counts
  const GemvBf16Config c = GemvBf16Config::from_tactic(tactic);
  // The ring path computes the mma path's order (gemv_bf16_ring.cuh): one family for the gate.
  const KernelPath path = c.path == KernelPath::ring ? KernelPath::mma : c.path;
  return SummationOrder{path, gemv_bf16_k_slices(c)};
}

Tactic GemvBf16Workload::single_row_default() const {
  return gemv_bf16_default(1, n_, k_).to_tactic();
}

LaunchStatus GemvBf16Workload::launch_single_row(int row, void *y_row) {
  const auto *xr = static_cast<const uint16_t *>(x(0)) + elements(row, k_);
  return launch(gemv_bf16_default(1, n_, k_), xr, w(0), y_row, 1);
}

std::vector<uint16_t> GemvBf16Workload::download_x(int copy) const {
  return download<uint16_t>(x(copy), elements(rows_, k_), stream());
}
std::vector<uint16_t> GemvBf16Workload::download_w(int copy) const {
  return download<uint16_t>(w(copy), elements(n_, k_), stream());
}

std::vector<double> GemvBf16Workload::reference() const {
  return gemv_bf16_reference(download_x(0), download_w(0), rows_, n_, k_);
}

// --- op -----------------------------------------------------------------------------------

GemvBf16Op::GemvBf16Op(GemvBf16VendorHeuristic vendor_heuristic)
    : CudaOp("gemv.bf16",
             BucketSpec{{DimSpec::exact_then_pow2_up("rows", 1, 32, 8),
                         DimSpec::exact("n", 1, 1 << 24), DimSpec::exact("k", 8, 1 << 24)}},
             Numerics::batch_invariant),
      vendor_heuristic_(std::move(vendor_heuristic)) {}

std::vector<Tactic> GemvBf16Op::candidates(const Shape &bucket) const {
  return tune_candidates(bucket, Numerics::tolerance);
}

std::vector<Tactic> GemvBf16Op::tune_candidates(const Shape &bucket, Numerics numerics) const {
  const int rows = static_cast<int>(bucket[0]);
  const int n = static_cast<int>(bucket[1]);
  const int k = static_cast<int>(bucket[2]);
  std::vector<Tactic> out = default_first(gemv_bf16_default(rows, n, k), gemv_bf16_configs(),
                                          [&](const GemvBf16Config &c) {
                                            std::string why;
                                            return gemv_bf16_can_implement(c, rows, n, k, &why);
                                          });
  if (numerics != Numerics::tolerance || !vendor_heuristic_)
    return out;
  const std::vector<CublasLtAlgoId> algos = vendor_heuristic_(rows, n, k);
  // The heuristic tactic in place of the first algorithm: at the bucket's row count it runs
  // that algorithm, and at the bucket's other row counts cuBLASLt's own choice
  // (gemv_bf16_vendor.h). The others by name.
  if (!algos.empty())
    out.push_back(gemv_bf16_vendor_heuristic().to_tactic());
  for (size_t i = 1; i < algos.size(); ++i) {
    const CublasLtAlgoId &algo = algos[i];
    Tactic t = GemvBf16VendorConfig{algo}.to_tactic();
    if (std::find(out.begin(), out.end(), t) == out.end())
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

CompiledTactic GemvBf16Op::compile(const Tactic &tactic) const {
  if (is_gemv_bf16_vendor(tactic))
    return CompiledTactic::of(GemvBf16VendorConfig::from_tactic(tactic));
  return compile_config<GemvBf16Config>(name(), tactic, {&gemv_bf16_configs()});
}

std::optional<WorkloadBytes> GemvBf16Op::workload_bytes(const Shape &shape) const {
  const int rows = static_cast<int>(shape[0]), n = static_cast<int>(shape[1]),
            k = static_cast<int>(shape[2]);
  WorkloadBytes b;
  b.per_copy = (elements(n, k) + elements(rows, k)) * sizeof(uint16_t);
  b.fixed = CudaWorkload::output_bytes(rows, n) + max_workspace_bytes(rows, n, k);
  return b;
}

std::unique_ptr<Workload> GemvBf16Op::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<GemvBf16Workload>(cuda_backend(), static_cast<int>(shape[0]),
                                            static_cast<int>(shape[1]), static_cast<int>(shape[2]));
}

} // namespace hone::cuda
