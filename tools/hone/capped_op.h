// CappedOp: an op whose tune gates and times at most `cap` of its candidates, for a model tune
// that must fit a time budget (TuneBudget). It wraps the real op and changes nothing else: the
// same name, version, buckets and cache key, so its picks are the op's own entries. The
// candidates keep the default first and come in an order spread over the op's list
// (spread_order), so that a cap samples every kind of config rather than the first few of one
// kind; once `cap` candidates (the default among them) have passed the gate, every later one
// is recorded as rejected with the reason, without a launch. Candidates the gate turns down
// cost little and do not count against the cap. With a deadline (the model tune's budget), a
// candidate that comes to the gate past it is turned down the same way once the default and one
// other have passed: the cap is planned from predicted costs, and a bucket whose gate costs
// several times its prediction (a 263 MB int4 lm_head, 0.5 s a candidate) would otherwise run
// its whole cap past the budget.
//
//   CappedOp capped(op, /*cap=*/6);
//   TuneReport r = store.tune(capped, bucket, options);   // at most 6 candidates timed
//   CappedOp until(op, kUncapped, deadline);               // every candidate, until the deadline
#pragma once

#include <chrono>
#include <climits>
#include <memory>
#include <string>
#include <vector>

#include "hone/op.h"

namespace hone::cli {

// `candidates` with its first element kept first and the rest in bit-reversed index order
// (0, m/2, m/4, 3m/4, ..): every prefix is spread over the whole list.
std::vector<Tactic> spread_order(std::vector<Tactic> candidates);

class CappedOp final : public TunableOp {
public:
  using Clock = std::chrono::steady_clock;
  static constexpr int kUncapped = INT_MAX;
  // REQUIRES: cap >= 1; `op` outlives this. `deadline`: none by default.
  CappedOp(const TunableOp &op, int cap, Clock::time_point deadline = Clock::time_point::max());
  int cap() const { return cap_; }

  std::string_view name() const override { return op_.name(); }
  int version() const override { return op_.version(); }
  std::string_view backend() const override { return op_.backend(); }
  DType dtype() const override { return op_.dtype(); }
  const BucketSpec &buckets() const override { return op_.buckets(); }
  std::vector<Tactic> candidates(const Shape &bucket) const override {
    return op_.candidates(bucket);
  }
  // The op's tune candidates in spread_order().
  std::vector<Tactic> tune_candidates(const Shape &bucket, Numerics numerics) const override;
  bool is_vendor_tactic(const Tactic &tactic) const override {
    return op_.is_vendor_tactic(tactic);
  }
  Tactic default_tactic(const Shape &bucket) const override { return op_.default_tactic(bucket); }
  void validate(const Shape &shape) const override { op_.validate(shape); }
  // The op's workload, whose check() turns candidates down past the cap.
  std::unique_ptr<Workload> prepare(const Shape &shape) const override;
  std::optional<WorkloadBytes> workload_bytes(const Shape &shape) const override {
    return op_.workload_bytes(shape);
  }
  Numerics default_numerics() const override { return op_.default_numerics(); }
  bool owns_kernel(std::string_view kernel) const override { return op_.owns_kernel(kernel); }
  std::optional<Tactic> env_override(const Shape &bucket, const Settings &settings) const override {
    return op_.env_override(bucket, settings);
  }
  CompiledTactic compile(const Tactic &tactic) const override { return op_.compile(tactic); }

private:
  const TunableOp &op_;
  int cap_;
  Clock::time_point deadline_;
};

} // namespace hone::cli
