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
// With `silu` (qmv.affine.silu_mul) the problem is the gate/up linear, W = [gate; up] of n = 2
// inter rows, and Y [rows, inter] = SiLU(X . gate^T) x (X . up^T) from the kernels' SiLU epilogue
// (QmvAffineArgs::silu_inter); its reference applies the same to the float64 linear.
class QmvAffineWorkload final : public AffineLinearWorkload {
public:
  // REQUIRES: QmvAffineOp::validate() (QmvAffineSiluMulOp::validate() with `silu`) accepted the
  // problem.
  QmvAffineWorkload(CudaBackend &backend, const QmvAffineProblem &problem, bool silu = false);

  // Every row: qmv runs at most 32 rows, and batch invariance holds each of them.
  std::vector<int64_t> reference_rows() const override { return {}; }
  // Float64 reference of copy 0's current inputs, [rows, n] (with `silu`: [rows, n / 2]).
  std::vector<double> reference() const override { return reference(0); }
  // Float64 reference of copy `copy`'s current inputs, as reference().
  std::vector<double> reference(int copy) const;
  // Enqueues `config` on copy `copy`'s weights with explicit X and Y of `rows` rows.
  LaunchStatus launch(const QmvAffineConfig &config, int copy, const void *x, void *y, int rows);

private:
  std::optional<std::string> cannot_implement(const Tactic &tactic) const override;
  std::optional<KernelResources> resources(const Tactic &tactic) const override;
  LaunchStatus launch(const Tactic &tactic, int copy) override;
  HONE_CUDA_BATCH_INVARIANCE_HOOKS;

  bool silu_ = false;
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
  // 4: the `deep=2` configs (two blocks of words ahead) joined the candidates.
  int version() const override { return 4; }
};

// qmv.affine.silu_mul: the gate/up linear of an MLP with SiLU x up in its epilogue, as the
// decode step runs it (ops::cuda::quantized_linear_silu_mul): Y[rows, inter] = SiLU(X . gate^T)
// x (X . up^T), W = [gate; up] affine-quantized as for qmv.affine, n = 2 inter. Its own op, so
// that the step's fused launch runs a config timed as that launch: the epilogue's kernels are
// not qmv.affine's (they pair gate and up rows and apply the SiLU), and a qmv.affine pick can be
// slower than the default once fused (docs/benchmark_results/2026-12-06-h100-3, call5).
// Buckets: rows exact 1..8 (the epilogue's configs take one 8-row activation tile), inter, k
// exact, bits {4, 8} (8 is refused: its epilogue is compiled for 4 bits only), group {32, 64,
// 128}. The candidates are qmv.affine's configs with the epilogue; the default is qmv.affine's
// default of the gate/up shape, as the step ran it before.
class QmvAffineSiluMulOp final : public CudaOp {
public:
  QmvAffineSiluMulOp();

  // candidates(): qmv_affine_configs(bits) that can implement the gate/up shape and have the
  // epilogue compiled, default first. validate(): Shape {rows, inter, k, bits, group}, dtype bf16.
  // Throws Error(invalid_argument) naming the bad value: rank, dtype, rows outside 1..8, inter
  // not a positive multiple of 8 or too large, bits other than 4, group, k, or a shape whose
  // default has no epilogue. workload_bytes(): one copy: q, scales, biases (2 inter rows) and
  // X; fixed: the output [rows, inter] and its reference.
  HONE_CUDA_OP_INTERFACE;
  // Its tactics are qmv.affine's ("qmv.affine.<path>:..."): the same configs, launched with the
  // epilogue. HONE_TACTIC_CUDA_QMV_AFFINE_SILU_MUL names one for this op alone.
  bool owns_kernel(std::string_view kernel) const override;
  // 2: the `deep=2` configs' SiLU twins joined the candidates.
  int version() const override { return 2; }
};

// qmv.affine's launch arguments after the public entry points' checks (alignment; the shape is
// validated by the dispatcher's lookup), `dependent` a chain link. Defined with the entry points
// (cuda_ops.cpp).
QmvAffineArgs qmv_affine_entry_args(const void *x, const uint32_t *q, const void *scales,
                                    const void *biases, void *y, int64_t rows, int64_t n, int64_t k,
                                    int bits, int group, bool dependent);

// {rows, n, k, bits, group} of a validated shape.
QmvAffineProblem qmv_affine_problem(const Shape &shape);
// {rows, 2 inter, k, bits, group}: the gate/up linear of a validated qmv.affine.silu_mul shape.
QmvAffineProblem qmv_affine_silu_mul_problem(const Shape &shape);

} // namespace hone::cuda
