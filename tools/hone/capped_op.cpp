#include "hone/capped_op.h"

#include <bit>

#include "hone/error.h"

namespace hone::cli {

namespace {

// The op's workload; check() admits the default and at most cap - 1 other candidates.
class CappedWorkload final : public Workload {
public:
  CappedWorkload(std::unique_ptr<Workload> workload, Tactic default_tactic, int cap)
      : workload_(std::move(workload)), default_(std::move(default_tactic)), cap_(cap) {}

  size_t bytes_per_launch() const override { return workload_->bytes_per_launch(); }
  void set_rotation(int copies) override { workload_->set_rotation(copies); }
  int rotation() const override { return workload_->rotation(); }
  Status can_run(const Tactic &tactic, std::string *reason) const override {
    return workload_->can_run(tactic, reason);
  }
  void run(const Tactic &tactic, int copy) override { workload_->run(tactic, copy); }
  CheckResult check(const Tactic &tactic, Numerics numerics) override {
    const bool is_default = tactic == default_;
    // The default always runs its gate (the tuner needs it); it holds one place of the cap.
    if (!is_default && admitted_others_ + 1 >= cap_) {
      CheckResult r;
      r.status = Status::rejected;
      r.reason = "budget: " + std::to_string(cap_) +
                 " candidates of this bucket passed the gate already (the time budget's cap)";
      return r;
    }
    CheckResult r = workload_->check(tactic, numerics);
    if (r.pass() && !is_default)
      ++admitted_others_;
    return r;
  }

private:
  std::unique_ptr<Workload> workload_;
  Tactic default_;
  int cap_;
  int admitted_others_ = 0;
};

} // namespace

std::vector<Tactic> spread_order(std::vector<Tactic> candidates) {
  if (candidates.size() <= 2)
    return candidates;
  const size_t m = candidates.size() - 1;
  const size_t slots = std::bit_ceil(m);
  const int bits = std::countr_zero(slots);
  std::vector<Tactic> out;
  out.reserve(candidates.size());
  out.push_back(std::move(candidates[0]));
  for (size_t i = 0; i < slots; ++i) {
    size_t reversed = 0;
    for (int b = 0; b < bits; ++b)
      reversed |= ((i >> b) & 1u) << (bits - 1 - b);
    if (reversed < m)
      out.push_back(std::move(candidates[1 + reversed]));
  }
  return out;
}

CappedOp::CappedOp(const TunableOp &op, int cap) : op_(op), cap_(cap) {
  HONE_CHECK(cap >= 1, "CappedOp: cap " + std::to_string(cap) + " must be at least 1");
}

std::vector<Tactic> CappedOp::tune_candidates(const Shape &bucket, Numerics numerics) const {
  return spread_order(op_.tune_candidates(bucket, numerics));
}

std::unique_ptr<Workload> CappedOp::prepare(const Shape &shape) const {
  return std::make_unique<CappedWorkload>(op_.prepare(shape), op_.default_tactic(shape), cap_);
}

} // namespace hone::cli
