// CappedOp: a tune that times at most `cap` candidates, the rest recorded as rejected by the
// budget, under the op's own key.
#include "hone/capped_op.h"

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"
#include "hone/key.h"
#include "hone/registry.h"
#include "hone/tune.h"

namespace hone::cli {
namespace {

std::vector<Tactic> numbered(int n) {
  std::vector<Tactic> out;
  for (int i = 0; i < n; ++i)
    out.push_back(Tactic{"t", {{"i", i}}});
  return out;
}

std::vector<int64_t> indices(const std::vector<Tactic> &tactics) {
  std::vector<int64_t> out;
  for (const Tactic &t : tactics)
    out.push_back(t.param("i"));
  return out;
}

// The CPU gemv.f32 bucket the tests tune, with quick warm measurement.
const TunableOp &cpu_gemv() { return *Registry::global().find("gemv.f32", "cpu"); }
const Shape kBucket{{2, 32, 64}, DType::f32};
TuneOptions quick_options() {
  TuneOptions quick;
  quick.measure.cold = false;
  quick.tuner.samples = 5;
  return quick;
}
// Candidates a tune timed.
long timed(const TuneReport &r) {
  return std::count_if(r.result.candidates.begin(), r.result.candidates.end(),
                       [](const CandidateReport &c) { return c.status == Status::ok; });
}

TEST(CappedOp, SpreadOrderKeepsTheDefaultFirstAndSpreadsEveryPrefix) {
  EXPECT_EQ(indices(spread_order(numbered(1))), (std::vector<int64_t>{0}));
  EXPECT_EQ(indices(spread_order(numbered(2))), (std::vector<int64_t>{0, 1}));
  // 1 + the bit-reversed order of 0..4 within 8 slots: 0, 4, 2, 1, 3.
  EXPECT_EQ(indices(spread_order(numbered(6))), (std::vector<int64_t>{0, 1, 5, 3, 2, 4}));
  EXPECT_EQ(indices(spread_order(numbered(9))), (std::vector<int64_t>{0, 1, 5, 3, 7, 2, 6, 4, 8}));
  for (int n = 1; n <= 40; ++n) {
    std::vector<int64_t> order = indices(spread_order(numbered(n)));
    ASSERT_EQ(order.front(), 0);
    std::sort(order.begin(), order.end());
    EXPECT_EQ(order, indices(numbered(n))) << n << " candidates: not a permutation";
  }
}

TEST(CappedOp, AtMostCapCandidatesAreTimedUnderTheOpsKey) {
  const TunableOp &op = cpu_gemv();
  const Shape &bucket = kBucket;
  const TuneOptions quick = quick_options();
  const TuneReport full = tune_bucket(cpu::backend(), op, bucket, quick);
  ASSERT_GT(timed(full), 2) << "the test needs an op with more than two candidates";

  const CappedOp capped(op, 2);
  EXPECT_EQ(cache_key(capped, bucket, "dev"), cache_key(op, bucket, "dev"));
  EXPECT_EQ(capped.tune_candidates(bucket, Numerics::tolerance),
            spread_order(op.tune_candidates(bucket, Numerics::tolerance)));
  const TuneReport r = tune_bucket(cpu::backend(), capped, bucket, quick);
  EXPECT_EQ(r.key, full.key);
  EXPECT_EQ(timed(r), 2);
  EXPECT_EQ(r.result.default_tactic(), op.default_tactic(bucket));
  EXPECT_EQ(r.result.candidates[r.result.default_index].status, Status::ok);
  size_t rejected = 0;
  for (const CandidateReport &c : r.result.candidates)
    if (c.status == Status::rejected) {
      ++rejected;
      EXPECT_EQ(c.reason.rfind("budget: 2 candidates", 0), 0u) << c.reason;
    }
  // Every candidate the full tune timed but these two was turned down by the cap.
  EXPECT_GE(rejected, static_cast<size_t>(timed(full) - 2));
  EXPECT_EQ(r.result.candidates[r.result.pick_index].status, Status::ok);
}

TEST(CappedOp, PastTheDeadlineTheDefaultAndOneOtherAreTimed) {
  const TunableOp &op = cpu_gemv();
  const Shape &bucket = kBucket;
  const TuneOptions quick = quick_options();
  const TuneReport full = tune_bucket(cpu::backend(), op, bucket, quick);
  ASSERT_GT(timed(full), 2) << "the test needs an op with more than two candidates";

  // A deadline still ahead caps nothing.
  const CappedOp ahead(op, CappedOp::kUncapped, CappedOp::Clock::now() + std::chrono::hours(1));
  EXPECT_EQ(timed(tune_bucket(cpu::backend(), ahead, bucket, quick)), timed(full));

  // One already past: the default and one other pass the gate, every later one is turned down.
  const CappedOp late(op, CappedOp::kUncapped, CappedOp::Clock::now() - std::chrono::seconds(1));
  const TuneReport r = tune_bucket(cpu::backend(), late, bucket, quick);
  EXPECT_EQ(r.key, full.key);
  EXPECT_EQ(timed(r), 2);
  EXPECT_EQ(r.result.candidates[r.result.default_index].status, Status::ok);
  size_t rejected = 0;
  for (const CandidateReport &c : r.result.candidates)
    if (c.status == Status::rejected) {
      ++rejected;
      EXPECT_EQ(c.reason.rfind("budget: the time budget ran out after 2 candidates", 0), 0u)
          << c.reason;
    }
  EXPECT_GE(rejected, static_cast<size_t>(timed(full) - 2));
}

} // namespace
} // namespace hone::cli
