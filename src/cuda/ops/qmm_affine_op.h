// The qmm.affine op (backend "cuda"): Y[m, n] = X[m, k] . W[n, k]^T with W affine-quantized
// along K in the qmv.affine layout (int4/int8 in uint32 words, bf16 scale and bias per group of
// 32/64/128), X and Y bf16, fp32 accumulation, m 1..16384: the prefill GEMM. Its candidates are
// the compiled CUTLASS Hopper kernels (tile, cluster, schedule) times their run-time splits
// (split-K, stream-K); its gate is the relative L2 error against float64 on the exactly
// dequantised weights (affine_linear_workload.h). HONE_QMM_TILE_M/N/K pick the tile verbatim.
//
//   hone::cuda::QmmAffineOp op;
//   auto w = op.prepare(hone::Shape{{2048, 4096, 4096, 4, 128}, hone::DType::bf16});
//   if (w->check(op.default_tactic(bucket), hone::Numerics::tolerance).pass()) ...
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cuda/backend/device_buffer.h"
#include "cuda/backend/last_config.h"
#include "cuda/kernels/qmm_affine/qmm_affine.h"
#include "cuda/ops/affine_linear_workload.h"
#include "cuda/ops/cuda_op.h"
#include "hone/bucket.h"
#include "hone/op.h"

namespace hone::cuda {

class QmmAffineWorkload final : public AffineLinearWorkload {
public:
  // REQUIRES: QmmAffineOp::validate() accepted the problem ({m, n, k, bits, group} as rows, n,
  // k, bits, group).
  QmmAffineWorkload(CudaBackend &backend, const QmvAffineProblem &problem);

  // Enqueues `config` on copy `copy`'s weights with an explicit X and Y of `m` rows.
  LaunchStatus launch(const QmmAffineConfig &config, int copy, const void *x, void *y, int m);

private:
  std::optional<std::string> cannot_implement(const Tactic &tactic) const override;
  std::optional<KernelResources> resources(const Tactic &tactic) const override;
  LaunchStatus launch(const Tactic &tactic, int copy) override;

  DeviceBuffer workspace_; // the largest qmm_affine_workspace_bytes of any admissible config
  LastConfig<QmmAffineConfig> last_config_;
};

// Buckets: rows (= m) exact 1..32 then pow2 up to 16384; n, k exact; bits one of {4, 8};
// group one of {32, 64, 128}. Its tactics' kernels are "qmm.affine.<path>" (wgmma).
class QmmAffineOp final : public CudaOp {
public:
  QmmAffineOp();

  // candidates(): The default first, then every compiled config that can implement the bucket, less
  // those that cannot win: an activation tile over twice the next power of two of m (padding), and
  // split-K / stream-K once the data-parallel grid fills two waves. validate(): Shape {m, n, k,
  // bits, group}, dtype bf16. Throws Error(invalid_argument) naming the bad value: rank, dtype, m
  // outside 1..16384, n not a multiple of 8, bits, group, k not a multiple of group, or a build
  // without qmm kernels. compile(): Throws Error(invalid_argument) for a tactic that is not a
  // compiled config (for either bits), naming the compiled tiles.
  HONE_CUDA_OP_INTERFACE;
  // HONE_TACTIC_[CUDA_]QMM_AFFINE first (a whole tactic), then HONE_QMM_TILE_M/N/K: the tile
  // verbatim (unset fields from the bucket's default), cluster, schedule and split from the
  // default where that kernel exists with the tile, else the first compiled kernel of it.
  // Throws Error(invalid_argument) naming the variables and the compiled tiles when no kernel
  // has the tile, or naming why the tile cannot run the bucket.
  std::optional<Tactic> env_override(const Shape &bucket, const Settings &settings) const override;
};

} // namespace hone::cuda
