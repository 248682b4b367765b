// The gemv.bf16 op (backend "cuda"): Y[rows, n] = X[rows, k] . W[n, k]^T in bf16 with fp32
// accumulation, rows 1..32. Its candidates are the compiled gemv_bf16 kernel configs and, in
// a tune in tolerance mode only, cuBLASLt with each of its heuristic's first algorithms
// (gemv_bf16_vendor.h); its workload owns device inputs with cold-L2 rotation copies and gates
// a candidate against a float64 host reference and, in batch-invariant mode, bitwise against
// the rows=1 default.
//
//   hone::cuda::GemvBf16Op op;
//   auto w = op.prepare(hone::Shape{{8, 4096, 4096}, hone::DType::bf16});
//   if (w->check(op.default_tactic(bucket), hone::Numerics::batch_invariant).pass()) ...
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cuda/kernels/gemv_bf16/gemv_bf16.h"
#include "cuda/ops/cuda_op.h"
#include "cuda/ops/gemv_bf16_vendor.h"

namespace hone::cuda {

// Relative L2 bound of the tolerance gate. The exact result rounded once to bf16 is off
// by at most 2^-9 (~1.95e-3) relative per element, hence in L2; fp32 accumulation adds
// ~sqrt(k) x 2^-24, negligible for k <= 2^20. 8e-3 (4x one bf16 rounding) leaves room for
// a kernel that rounds a partial sum once more (split-K through bf16) while any indexing or
// reduction bug, which gives O(1) errors, still fails.
inline constexpr double kGemvBf16RelativeL2Bound = 8e-3;

// The workload of gemv.bf16: inputs X and W per rotation copy, and a workspace for the
// largest admissible config; rotation, poison and the gate come from CudaWorkload.
struct GemvBf16Inputs {
  DeviceBuffer x; // bf16 [rows, k]
  DeviceBuffer w; // bf16 [n, k]
};

class GemvBf16Workload final : public CudaWorkloadOf<GemvBf16Inputs> {
public:
  // REQUIRES: GemvBf16Op::validate() accepted {rows, n, k}.
  GemvBf16Workload(CudaBackend &backend, int rows, int n, int k);

  size_t bytes_per_launch() const override; // [bytes] W + X + Y

  // Problem and buffers, for peers (cuBLASLt) and tests.
  int rows() const { return rows_; }
  int n() const { return n_; }
  int k() const { return k_; }
  const void *x(int copy) const { return copy_at(copy).x.data(); }
  const void *w(int copy) const { return copy_at(copy).w.data(); }

  // Synchronous copies to the host (bf16 bits).
  std::vector<uint16_t> download_x(int copy) const;
  std::vector<uint16_t> download_w(int copy) const;
  // Float64 reference of copy 0's current inputs, [rows, n] row-major.
  std::vector<double> reference() const override;
  // Enqueues `config` over explicit buffers.
  LaunchStatus launch(const GemvBf16Config &config, const void *x, const void *w, void *y,
                      int rows);

private:
  HONE_CUDA_WORKLOAD_HOOKS(GemvBf16Inputs);
  // The plan of `config` for this problem (kept in vendor_plans_, its workspace allocated), or
  // null when this cuBLASLt cannot run it.
  const CublasLtBf16Gemm *vendor_plan(const GemvBf16VendorConfig &config);
  LaunchStatus launch_vendor(const CublasLtBf16Gemm *plan, int copy);
  HONE_CUDA_BATCH_INVARIANCE_HOOKS;

  int rows_, n_, k_;
  DeviceBuffer workspace_; // largest gemv_bf16_workspace_bytes of any admissible config
  LastConfig<GemvBf16Config> last_config_;
  // The cuBLASLt plans of the vendor tactics gated so far, by algorithm, and their shared
  // workspace (kCublasLtWorkspaceBytes), allocated at the first vendor tactic's gate: outside
  // any timed region, and never for a batch-invariant tune.
  std::map<CublasLtAlgoId, std::shared_ptr<const CublasLtBf16Gemm>> vendor_plans_;
  DeviceBuffer vendor_workspace_;
  Tactic last_vendor_tactic_;
  const CublasLtBf16Gemm *last_vendor_plan_ = nullptr; // null: cuBLASLt cannot run it
};

// cuBLASLt's candidate algorithms for rows, n, k (gemv_bf16_vendor_algos unless a test
// supplies its own).
using GemvBf16VendorHeuristic = std::function<std::vector<CublasLtAlgoId>(int rows, int n, int k)>;

// Buckets: rows exact 1..8, then the power of two at or above (16, 32); n and k exact.
class GemvBf16Op final : public CudaOp {
public:
  explicit GemvBf16Op(GemvBf16VendorHeuristic vendor_heuristic = gemv_bf16_vendor_algos);

  // candidates(): tune_candidates(bucket, Numerics::tolerance): every tactic a tune could pick.
  // compile(): A GemvBf16Config, or a GemvBf16VendorConfig for a vendor tactic (its fields parsed
  // only: whether this cuBLASLt has the algorithm is a question of the bucket's candidates). Throws
  // Error(invalid_argument) for a tactic that is neither, or names a config not compiled into this
  // build (its launch would fail). workload_bytes(): One copy: W [n, k] and X [rows, k]; fixed: the
  // output, its reference and the split-K workspace. Not counted: the cuBLASLt workspace
  // (kCublasLtWorkspaceBytes), allocated at the first vendor tactic's gate.
  HONE_CUDA_OP_INTERFACE;
  // gemv_bf16_configs() that can implement the bucket, default first; then, under
  // Numerics::tolerance only, one vendor tactic per algorithm of the vendor heuristic for the
  // bucket (none when it has none).
  std::vector<Tactic> tune_candidates(const Shape &bucket, Numerics numerics) const override;
  bool is_vendor_tactic(const Tactic &tactic) const override { return is_gemv_bf16_vendor(tactic); }
  // 2: the default splits K further on small matrices (the fill floor of gemv_bf16_config.cpp),
  // which changes its summation order there, so picks of the old order are not served beside the
  // new default.
  int version() const override { return 2; }

private:
  GemvBf16VendorHeuristic vendor_heuristic_;
};

} // namespace hone::cuda
