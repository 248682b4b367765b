// gemv.f32 as a TunableOp: Y[r, n] = sum_k X[r, k] * W[n, k], f32, rows 1-32.
// Shape: {rows, n, k}, dtype f32. Tactic parameters: see cpu/gemv_f32.h.
//
//   hone::cpu::GemvF32Op op;
//   auto w = op.prepare(hone::Shape{{8, 4096, 4096}, hone::DType::f32});
//   w->check(op.default_tactic(bucket), hone::Numerics::tolerance);
#pragma once

#include "cpu/gemv_f32.h"
#include "hone/op.h"

namespace hone::cpu {

class GemvF32Op final : public TunableOp {
public:
  GemvF32Op();
  std::string_view name() const override { return "gemv.f32"; }
  int version() const override { return 1; }
  std::string_view backend() const override { return "cpu"; }
  DType dtype() const override { return DType::f32; }
  const BucketSpec &buckets() const override { return buckets_; }
  std::vector<Tactic> candidates(const Shape &bucket) const override;
  Tactic default_tactic(const Shape &bucket) const override;
  void validate(const Shape &shape) const override;
  std::unique_ptr<Workload> prepare(const Shape &shape) const override;
  // One copy: W [n, k] and X [rows, k]; fixed: the output and its reference.
  std::optional<WorkloadBytes> workload_bytes(const Shape &shape) const override;
  // Tolerance: candidates with another k_unroll sum in another order and are legitimate
  // whenever bit-identity with single-row calls is not asked for; batch_invariant mode is
  // available on request (TuneOptions::numerics) and keeps only the default's k_unroll.
  Numerics default_numerics() const override { return Numerics::tolerance; }
  CompiledTactic compile(const Tactic &tactic) const override {
    return CompiledTactic::of(GemvConfig::from(tactic));
  }

private:
  BucketSpec buckets_;
};

} // namespace hone::cpu
