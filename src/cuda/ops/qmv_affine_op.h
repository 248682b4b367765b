// The qmv.affine op (backend "cuda"): Y[rows, n] = X[rows, k] . W[n, k]^T with W
// affine-quantized along K (int4/int8 in uint32 words, bf16 scale and bias per group of
// 32/64/128), X and Y bf16, fp32 accumulation, rows 1..32. Its candidates are the compiled
// qmv_affine kernel configs; its workload owns device inputs with cold-L2 rotation copies and
// gates a candidate against a float64 host reference on the exactly dequantised weights and,
// in batch-invariant mode, bitwise against the rows=1 default.
//
//   hone::cuda::QmvAffineOp op;
//   auto w = op.prepare(hone::Shape{{8, 4096, 4096, 4, 64}, hone::DType::bf16});
//   if (w->check(op.default_tactic(bucket), hone::Numerics::batch_invariant).pass()) ...
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/kernels/qmv_affine/qmv_affine.h"
#include "cuda/ops/affine_linear_workload.h"
#include "cuda/ops/cuda_op.h"
#include "cuda/ops/qmv_affine_reference.h"

namespace hone::cuda {

// Relative L2 bound of the tolerance gate against the reference on exact weights. A kernel
// that rounds each dequantised weight once to bf16 perturbs it by at most 2^-9 relative; over
// a k-term dot product of independent terms these errors add in quadrature, so the output
// moves by ~2^-9 / sqrt(3) (~1.1e-3) relative in L2 (worst case 2^-9 ~ 1.95e-3 when no
// cancellation makes |y| small against sum |x w|). Rounding Y to bf16 adds at most 2^-9 more;
// fp32 accumulation adds ~sqrt(k) x 2^-24, negligible. 8e-3, as for gemv.bf16, leaves room
// for one more bf16 rounding of a partial sum while an indexing bug (wrong nibble, group or
// row) gives an O(1) error and still fails.
inline constexpr double kQmvAffineRelativeL2Bound = 8e-3;

// The workload of qmv.affine: the affine linear layer's inputs, downloads and reference
// (AffineLinearWorkload, shared with qmm.affine), checked on every row, with the qmv kernels'
// launch and the batch-invariance hooks.
class QmvAffineWorkload final : public AffineLinearWorkload {
public:
  // REQUIRES: QmvAffineOp::validate() accepted the problem.
  QmvAffineWorkload(CudaBackend &backend, const QmvAffineProblem &problem);

  // Every row: qmv runs at most 32 rows, and batch invariance holds each of them.
  std::vector<int64_t> reference_rows() const override { return {}; }
  using AffineLinearWorkload::reference;
  // Float64 reference of copy `copy`'s current inputs, [rows, n] row-major.
  std::vector<double> reference(int copy) const;
  // Enqueues `config` on copy `copy`'s weights with explicit X and Y of `rows` rows.
  LaunchStatus launch(const QmvAffineConfig &config, int copy, const void *x, void *y, int rows);

private:
  std::optional<std::string> cannot_implement(const Tactic &tactic) const override;
  std::optional<KernelResources> resources(const Tactic &tactic) const override;
  LaunchStatus launch(const Tactic &tactic, int copy) override;
  HONE_CUDA_BATCH_INVARIANCE_HOOKS;

  LastConfig<QmvAffineConfig> last_config_;
};

// Buckets: rows exact 1..8, then the power of two at or above (16, 32); n and k exact; bits
// one of {4, 8}; group one of {32, 64, 128}.
class QmvAffineOp final : public CudaOp {
public:
  QmvAffineOp();

  // candidates(): qmv_affine_configs(bits) that can implement the bucket, default first.
  // validate(): Shape {rows, n, k, bits, group}, dtype bf16. Throws Error(invalid_argument) naming
  // the bad value: rank, dtype, rows outside 1..32, n or k out of range, bits, group, k not a
  // multiple of group, or a shape the default config cannot run. compile(): Throws
  // Error(invalid_argument) for a tactic that is not a qmv.affine config, or names one compiled
  // into this build for neither bits (its launch would fail). workload_bytes(): One copy: q,
  // scales, biases and X; fixed: the output and its reference.
  HONE_CUDA_OP_INTERFACE;
  // 2: the grouped configs (qmv.affine.grouped) joined the candidates. 3: the default splits K
  // further on small matrices (the fill floor of qmv_affine_config.cpp), which changes its
  // summation order there, so picks of the old order are not served beside the new default.
  int version() const override { return 3; }
};

// {rows, n, k, bits, group} of a validated shape.
QmvAffineProblem qmv_affine_problem(const Shape &shape);

} // namespace hone::cuda
