#include "hone/capped_op.h"

#include <bit>

#include "hone/error.h"

namespace hone::cli {

namespace {

// The op's workload; check() admits the default and at most cap - 1 other candidates, and past
// the deadline no other once one has passed.
class CappedWorkload final : public Workload {
public:
  CappedWorkload(std::unique_ptr<Workload> workload, Tactic default_tactic, int cap,
                 CappedOp::Clock::time_point deadline)
      : workload_(std::move(workload)), default_(std::move(default_tactic)), cap_(cap),
        deadline_(deadline) {}

  size_t bytes_per_launch() const override { return workload_->bytes_per_launch(); }
  void set_rotation(int copies) override { workload_->set_rotation(copies); }
  int rotation() const override { return workload_->rotation(); }
  Status can_run(const Tactic &tactic, std::string *reason) const override {
    return workload_->can_run(tactic, reason);
  }
  void run(const Tactic &tactic, int copy) override { workload_->run(tactic, copy); }
  CheckResult check(const Tactic &tactic, Numerics numerics) override {
    const bool is_default = tactic == default_;
    const auto rejected = [](std::string reason) {
      CheckResult r;
      r.status = Status::rejected;
      r.reason = "budget: " + std::move(reason);
      return r;
    };
    // The default always runs its gate (the tuner needs it); it holds one place of the cap.
    if (!is_default && admitted_others_ + 1 >= cap_)
      return rejected(std::to_string(cap_) +
                      " candidates of this bucket passed the gate already (the time budget's cap)");
    if (!is_default && admitted_others_ >= 1 && CappedOp::Clock::now() >= deadline_)
      return rejected("the time budget ran out after " + std::to_string(admitted_others_ + 1) +
                      " candidates of this bucket passed the gate");
    CheckResult r = workload_->check(tactic, numerics);
    if (r.pass() && !is_default)
      ++admitted_others_;
    return r;
  }

private:
  std::unique_ptr<Workload> workload_;
  Tactic default_;
  int cap_;
  CappedOp::Clock::time_point deadline_;
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

CappedOp::CappedOp(const TunableOp &op, int cap, Clock::time_point deadline)
    : op_(op), cap_(cap), deadline_(deadline) {
  HONE_CHECK(cap >= 1, "CappedOp: cap " + std::to_string(cap) + " must be at least 1");
}

std::vector<Tactic> CappedOp::tune_candidates(const Shape &bucket, Numerics numerics) const {
  return spread_order(op_.tune_candidates(bucket, numerics));
}

std::unique_ptr<Workload> CappedOp::prepare(const Shape &shape) const {
  return std::make_unique<CappedWorkload>(op_.prepare(shape), op_.default_tactic(shape), cap_,
                                          deadline_);
}

} // namespace hone::cli
