// qmv.affine as a TunableOp: Y[r, n] = sum_k X[r, k] * W[n, k] with W affine-quantized
// (int4/int8, groups of 32/64/128 along K), f32 activations, rows 1-32.
// Shape: {rows, n, k, bits, group}, dtype f32. Tactic parameters: see cpu/qmv_affine.h.
//
//   hone::cpu::QmvAffineOp op;
//   auto w = op.prepare(hone::Shape{{1, 4096, 4096, 4, 64}, hone::DType::f32});
//   w->check(op.default_tactic(bucket), hone::Numerics::tolerance);
#pragma once

#include "cpu/qmv_affine.h"
#include "hone/op.h"

namespace hone::cpu {

class QmvAffineOp final : public TunableOp {
public:
  QmvAffineOp();
  std::string_view name() const override { return "qmv.affine"; }
  int version() const override { return 1; }
  std::string_view backend() const override { return "cpu"; }
  DType dtype() const override { return DType::f32; }
  const BucketSpec &buckets() const override { return buckets_; }
  std::vector<Tactic> candidates(const Shape &bucket) const override;
  Tactic default_tactic(const Shape &bucket) const override;
  // Throws Error(invalid_argument) naming the value: rank, rows/n/k < 1, bits, group, or
  // k not a multiple of group.
  void validate(const Shape &shape) const override;
  std::unique_ptr<Workload> prepare(const Shape &shape) const override;
  // One copy: the quantized W and X; fixed: the output, its reference and the dequantised W
  // the reference is computed on.
  std::optional<WorkloadBytes> workload_bytes(const Shape &shape) const override;
  // Tolerance, as for gemv.f32: the CPU ops promise agreement with the float64 reference.
  // Every qmv.affine tactic happens to keep one summation order, so batch_invariant mode,
  // when asked for, admits them all; the promise is not made by default so that a future
  // candidate with another order (e.g. factoring the scale out of each group) stays legal.
  Numerics default_numerics() const override { return Numerics::tolerance; }
  CompiledTactic compile(const Tactic &tactic) const override {
    return CompiledTactic::of(QmvConfig::from(tactic));
  }

private:
  BucketSpec buckets_;
};

} // namespace hone::cpu
