// The gemv.bf16 op (backend "cuda"): Y[rows, n] = X[rows, k] . W[n, k]^T in bf16 with fp32
// accumulation, rows 1..32. Its candidates are the compiled gemv_bf16 kernel configs; its
// workload owns device inputs with cold-L2 rotation copies and gates a candidate against a
// float64 host reference and, in batch-invariant mode, bitwise against the rows=1 default.
//
//   hone::cuda::GemvBf16Op op;
//   auto w = op.prepare(hone::Shape{{8, 4096, 4096}, hone::DType::bf16});
//   if (w->check(op.default_tactic(bucket), hone::Numerics::batch_invariant).pass()) ...
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/kernels/gemv_bf16/gemv_bf16.h"
#include "cuda/ops/cuda_op.h"

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
  std::optional<std::string> cannot_implement(const Tactic &tactic) const override;
  std::optional<KernelResources> resources(const Tactic &tactic) const override;
  GemvBf16Inputs make_copy() const override;
  void fill_copy(size_t copy) override;
  LaunchStatus launch(const Tactic &tactic, int copy) override;
  std::optional<SummationOrder> summation_order(const Tactic &tactic) const override;
  Tactic single_row_default() const override;
  LaunchStatus launch_single_row(int row, void *y_row) override;

  int rows_, n_, k_;
  DeviceBuffer workspace_; // largest gemv_bf16_workspace_bytes of any admissible config
  LastConfig<GemvBf16Config> last_config_;
};

// Buckets: rows exact 1..8, then the power of two at or above (16, 32); n and k exact.
class GemvBf16Op final : public CudaOp {
public:
  GemvBf16Op();

  // gemv_bf16_configs() that can implement the bucket, default first.
  std::vector<Tactic> candidates(const Shape &bucket) const override;
  Tactic default_tactic(const Shape &bucket) const override;
  void validate(const Shape &shape) const override;
  std::unique_ptr<Workload> prepare(const Shape &shape) const override;
  // Throws Error(invalid_argument) for a tactic that is not a gemv.bf16 config, or names one
  // not compiled into this build (its launch would fail).
  CompiledTactic compile(const Tactic &tactic) const override;
  // One copy: W [n, k] and X [rows, k]; fixed: the output, its reference and the split-K
  // workspace.
  std::optional<WorkloadBytes> workload_bytes(const Shape &shape) const override;
};

} // namespace hone::cuda
