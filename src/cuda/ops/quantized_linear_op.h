// The quantized_linear op (backend "cuda"): one affine-quantized linear layer for any row count,
// Y[rows, n] = X[rows, k] . W[n, k]^T on the one copy of the weights in the qmv.affine layout,
// rows 1..16384. Per (n, k, bits, group, rows bucket) it runs one of two sides, each with its
// own tuned tactic:
//   quantized_linear.qmv   qmv.affine (rows <= 32): the decode GEMV, weights read once;
//   quantized_linear.qmm   qmm.affine: the tensor-core GEMM.
// Its tactic is the side. Tuning a bucket times the two sides against each other, each with
// the tactic its own op resolves for the bucket's shape (HONE_TACTIC_*, the cache, a lazy tune
// under HONE_AUTOTUNE, the default: a Dispatcher), so the tuned crossover row count is where
// the picks change from qmv to qmm. HONE_QMV_MAX_ROWS=R overrides it: rows <= R run qmv (rows
// above 32 always run qmm).
//
//   hone::cuda::QuantizedLinearOp op;
//   auto w = op.prepare(hone::Shape{{24, 4096, 14336, 4, 64}, hone::DType::bf16});
//   w->check(hone::Tactic::parse("quantized_linear.qmm"), hone::Numerics::tolerance);
#pragma once

#include <memory>
#include <optional>
#include <string>

#include "cuda/backend/device_buffer.h"
#include "cuda/kernels/qmm_affine/qmm_affine.h"
#include "cuda/kernels/qmv_affine/qmv_affine.h"
#include "cuda/ops/affine_linear_workload.h"
#include "cuda/ops/cuda_op.h"
#include "hone/bucket.h"
#include "hone/op.h"

namespace hone::cuda {

enum class QuantizedLinearSide { qmv = 0, qmm = 1 };

// The largest row count qmv.affine runs.
inline constexpr int kQmvMaxRows = 32;
// The default crossover: rows <= this run qmv. A starting point; tuning decides per bucket.
inline constexpr int kDefaultQmvMaxRows = 16;

// "quantized_linear.qmv" / "quantized_linear.qmm".
Tactic quantized_linear_tactic(QuantizedLinearSide side);
// The side rows run on when at most `qmv_max_rows` rows go to qmv (qmv never above 32 rows).
QuantizedLinearSide quantized_linear_side(int64_t rows, int64_t qmv_max_rows);

class QuantizedLinearWorkload final : public AffineLinearWorkload {
public:
  // Resolves the two sides' own tactics for this shape through a Dispatcher built now from a
  // fresh read of the environment, so it reads the cache as it is at this call: a `hone tune
  // --model` run sees the qmv.affine and qmm.affine picks it saved before this bucket.
  // REQUIRES: QuantizedLinearOp::validate() accepted the problem.
  QuantizedLinearWorkload(CudaBackend &backend, const QmvAffineProblem &problem);

  // The inner tactics each side runs (qmv: empty above 32 rows).
  const Tactic &qmv_tactic() const { return qmv_tactic_; }
  const Tactic &qmm_tactic() const { return qmm_tactic_; }
  // Enqueues one side with its resolved tactic on copy `copy` into y().
  LaunchStatus launch(QuantizedLinearSide side, int copy);

private:
  std::optional<std::string> cannot_implement(const Tactic &tactic) const override;
  std::optional<KernelResources> resources(const Tactic &tactic) const override;
  LaunchStatus launch(const Tactic &tactic, int copy) override;

  Tactic qmv_tactic_, qmm_tactic_;
  std::optional<QmvAffineConfig> qmv_;
  std::optional<QmmAffineConfig> qmm_;
  DeviceBuffer workspace_; // for qmm_
};

// Buckets: rows exact 1..32 then pow2 up to 16384; n, k exact; bits one of {4, 8}; group one
// of {32, 64, 128}. Its tactics' kernels are "quantized_linear.<side>".
class QuantizedLinearOp final : public CudaOp {
public:
  QuantizedLinearOp();

  // The default side first, then the other where it can run (qmv: rows <= 32).
  std::vector<Tactic> candidates(const Shape &bucket) const override;
  // qmv up to kDefaultQmvMaxRows rows, qmm above.
  Tactic default_tactic(const Shape &bucket) const override;
  // Shape {rows, n, k, bits, group}, dtype bf16: what qmm.affine accepts (n a multiple of 8),
  // which covers qmv.affine's rows.
  void validate(const Shape &shape) const override;
  std::unique_ptr<Workload> prepare(const Shape &shape) const override;
  // HONE_TACTIC_[CUDA_]QUANTIZED_LINEAR first (a side), then HONE_QMV_MAX_ROWS: the side
  // quantized_linear_side(rows, R) gives.
  std::optional<Tactic> env_override(const Shape &bucket, const Settings &settings) const override;
  // A QuantizedLinearSide; throws Error(invalid_argument) for another tactic.
  CompiledTactic compile(const Tactic &tactic) const override;
};

} // namespace hone::cuda
