// The model tune's time budget: caps that fit the steps left into the time left, costly buckets
// cut first, predictions corrected by what was measured (the part that grows with the gate's
// bytes apart from the rest, never by a negative scale); and the --budget durations.
#include "hone/tune_budget.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "invalid_message.h"

namespace hone::cli {
namespace {

using hone::testing::invalid_message;

// `n` cheap buckets of 20 candidates at 0.01 s and one costly one of 30 at 1 s.
std::vector<BudgetItem> items(int n) {
  std::vector<BudgetItem> out(static_cast<size_t>(n), BudgetItem{"cheap", 20, 0.01, 0.1});
  out.push_back({"costly", 30, 1.0, 0.1});
  return out;
}

TEST(TuneBudget, WithoutABudgetOrWithRoomNothingIsCapped) {
  const TuneBudget none(items(10), 0);
  EXPECT_FALSE(none.limited());
  EXPECT_EQ(none.cap(0), 20);
  EXPECT_EQ(none.cap(10), 30);
  EXPECT_EQ(none.capped_count(), 0u);
  // 10 x (0.1 + 0.2) + 0.1 + 30 = 33.1 s.
  EXPECT_NEAR(none.predicted_full(), 33.1, 1e-9);
  EXPECT_EQ(none.candidates_full(), 230);

  const TuneBudget roomy(items(10), 40);
  EXPECT_FALSE(roomy.allowance().has_value());
  EXPECT_EQ(roomy.capped_count(), 0u);
  EXPECT_NEAR(roomy.predicted(), 33.1, 1e-9);
}

TEST(TuneBudget, TheCostlyBucketIsCutFirstAndThePlanFits) {
  TuneBudget b(items(10), 13.15); // 3 s of cheap buckets and 10.15 for the costly one
  ASSERT_TRUE(b.allowance().has_value());
  EXPECT_FALSE(b.over());
  for (size_t i = 0; i < 10; ++i)
    EXPECT_EQ(b.cap(i), 20) << i; // cheap: every candidate
  EXPECT_EQ(b.cap(10), 10);       // 0.1 + 10 x 1 s fits what is left
  EXPECT_TRUE(b.capped(10));
  EXPECT_EQ(b.capped_count(), 1u);
  EXPECT_LE(b.predicted(), 13.15);
  EXPECT_EQ(b.candidates_capped(), 210);
}

TEST(TuneBudget, MeasuredTimesScaleTheirOpsPredictions) {
  TuneBudget b(items(10), 24);
  EXPECT_EQ(b.cap(10), 20); // 3 s + 0.1 + 20 x 1 s: all that fits by the priors
  // Every cheap bucket measures half its prediction: 10 x 0.15 s.
  for (size_t i = 0; i < 10; ++i) {
    b.plan(0.15 * static_cast<double>(i));
    b.record(i, 0.15);
  }
  // The costly op is predicted at the scale of what was measured (0.5) until it has its own:
  // 0.05 + 30 x 0.5 s = 15.05 s fits the 22.5 s left.
  b.plan(1.5);
  EXPECT_EQ(b.cap(10), 30);
  EXPECT_NEAR(b.predicted(), 15.05, 1e-9);
  // With 10 s left, 0.05 + k x 0.5 <= 10: k = 19.
  b.plan(14);
  EXPECT_EQ(b.cap(10), 19);
}

// Three buckets of one op, 100 candidates each, whose gates touch 1 x, 5 x and 50 x the bytes:
// per candidate 0.01 s of the rest and 0.01, 0.05 or 0.5 s that grow with the bytes.
std::vector<BudgetItem> sized() {
  std::vector<BudgetItem> out;
  for (double bytes_s : {0.01, 0.05, 0.5})
    out.push_back({"q", 100, 0.01 + bytes_s, 0.5, bytes_s});
  return out;
}

TEST(TuneBudget, TheBytesPartIsScaledApartOnceTwoSizesAreMeasured) {
  // The host's gate costs 4 x its prior per byte, the rest as predicted: the buckets take
  // 0.5 + 1 + 4 x 1 = 5.5 s, 0.5 + 1 + 4 x 5 = 21.5 s, and the big one 201.5 s.
  TuneBudget b(sized(), 0);
  EXPECT_NEAR(b.predicted_full(), 2.5 + 6.5 + 51.5, 1e-9);
  b.record(0, 5.5);
  // One bucket: one scale, 5.5 / 2.5 = 2.2 x the priors.
  EXPECT_NEAR(b.predicted_full(), 2.2 * (6.5 + 51.5), 1e-9);
  b.record(1, 21.5);
  // Two sizes: the rest at 1 x and the bytes at 4 x, which one scale (27 / 9 = 3 x: 154.5 s)
  // would not see.
  EXPECT_NEAR(b.predicted_full(), 201.5, 1e-9);

  // And the cap follows: 100.5 s left for the big bucket, 0.5 + k x (0.01 + 4 x 0.5) <= 100.5.
  TuneBudget capped(sized(), 27 + 100.5);
  capped.record(0, 5.5);
  capped.record(1, 21.5);
  capped.plan(27);
  EXPECT_EQ(capped.cap(2), 49);
  EXPECT_LE(capped.predicted(), 100.5);
}

TEST(TuneBudget, NeitherScaleOfTheFitGoesNegative) {
  // The small bucket measured far under its prior: the unconstrained fit would give the rest a
  // negative scale. Held at 0, the bytes' scale is the best fit alone: (0.1 x 1 + 21.5 x 5) /
  // (1 + 25).
  TuneBudget b(sized(), 0);
  b.record(0, 0.1);
  b.record(1, 21.5);
  EXPECT_NEAR(b.predicted_full(), (0.1 * 1 + 21.5 * 5) / 26 * 50, 1e-9);
}

TEST(TuneBudget, ATooSmallBudgetStillTimesTwoCandidates) {
  TuneBudget b(items(10), 1);
  EXPECT_TRUE(b.over());
  for (size_t i = 0; i <= 10; ++i)
    EXPECT_EQ(b.cap(i), kMinCandidates) << i;
  // A bucket of fewer candidates than the floor, and a fixed-cost step, are as they are.
  TuneBudget small({{"op", 1, 1.0, 0}, {"chain.decode_step", 0, 0, 5.0}}, 1);
  EXPECT_EQ(small.cap(0), 1);
  EXPECT_EQ(small.cap(1), 0);
  EXPECT_FALSE(small.capped(1));
  EXPECT_NEAR(small.predicted_full(), 6.0, 1e-9);
}

TEST(TuneBudget, DurationsParse) {
  EXPECT_EQ(parse_duration("9m", "--budget"), 540);
  EXPECT_EQ(parse_duration("90s", "--budget"), 90);
  EXPECT_EQ(parse_duration("1m30s", "--budget"), 90);
  EXPECT_EQ(parse_duration("1h", "--budget"), 3600);
  EXPECT_EQ(parse_duration("1h2m3s", "--budget"), 3723);
  EXPECT_EQ(parse_duration("600", "--budget"), 600);
  EXPECT_EQ(parse_duration("0", "--budget"), 0);
  EXPECT_EQ(parse_duration(kDefaultModelBudget, "--budget"), 540);
  for (const char *bad : {"", "m", "9x", "1m30", "30s1m", "9mm", "-5m", "1.5m", "9 m"}) {
    const std::string msg = invalid_message([&] { parse_duration(bad, "--budget"); });
    EXPECT_NE(msg.find("--budget: '" + std::string(bad) + "'"), std::string::npos) << bad;
  }
}

} // namespace
} // namespace hone::cli
