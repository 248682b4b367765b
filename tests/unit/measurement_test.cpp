#include "hone/measurement.h"

#include <gtest/gtest.h>

#include <set>

#include "hone/error.h"
#include "hone/stats.h"
#include "hone/tuner.h"
#include "synthetic.h"

namespace hone {
namespace {

using testing::SyntheticKernels;
using testing::VirtualClock;

TEST(Rotation, CountCoversEightTimesTheLlc) {
  static_assert(kRotationLlcMultiple == 8);
  EXPECT_EQ(rotation_count(32 << 20, 10 << 20), 27); // ceil(25.6) + 1
  EXPECT_EQ(rotation_count(60 << 20, 480 << 20), 2);
  EXPECT_EQ(rotation_count(60 << 20, 120 << 20), 5);
  EXPECT_EQ(rotation_count(60 << 20, 60 << 20), 9);
  EXPECT_EQ(rotation_count(60 << 20, 60 << 20, 2), 3); // an explicit multiple (op_matrix's A/B)
  EXPECT_EQ(plan_rotation(60 << 20, 60 << 20, 1ull << 30, true, 2).copies, 3);
}

TEST(Rotation, BudgetFallsBackToFlush) {
  RotationPlan fits = plan_rotation(32 << 20, 10 << 20, 1ull << 30, true);
  EXPECT_EQ(fits.copies, 27);
  EXPECT_FALSE(fits.flush);
  EXPECT_EQ(fits.footprint, 270ull << 20);
  RotationPlan capped = plan_rotation(32 << 20, 10 << 20, 200 << 20, true);
  EXPECT_EQ(capped.copies, 1);
  EXPECT_TRUE(capped.flush);
  EXPECT_EQ(capped.needed, 27);
  RotationPlan warm = plan_rotation(32 << 20, 10 << 20, 1ull << 30, false);
  EXPECT_EQ(warm.copies, 1);
  EXPECT_FALSE(warm.flush);
}

TEST(Measurement, SyncRoundTripIsMeasured) {
  VirtualClock clock;
  clock.sync_cost = 40e-6;
  Measurement m(clock, nullptr);
  EXPECT_NEAR(m.sync_round_trip(), 40e-6, 1e-12);
}

TEST(Measurement, SamplesCycleThroughEveryCopy) {
  VirtualClock clock;
  Measurement m(clock, nullptr);
  std::vector<int> used;
  LaunchFn launch = [&](int copy) {
    used.push_back(copy);
    clock.now += 1e-6;
  };
  m.sample(launch, 5, 3, false);
  m.sample(launch, 2, 3, false);
  EXPECT_EQ(used, (std::vector<int>{0, 1, 2, 0, 1, 2, 0}));
}

TEST(Measurement, CalibratedSampleOutlastsSyncAndResolution) {
  VirtualClock clock;
  clock.sync_cost = 50e-6;
  Measurement m(clock, nullptr);
  LaunchFn launch = [&](int) { clock.now += 1e-6; };
  const int batch = m.calibrate(launch, 1);
  const double factor = MeasureOptions{}.sync_factor;
  EXPECT_GE(factor, 100);                              // the fixed cost of a sample stays ~1 %
  EXPECT_GE(batch * 1e-6, factor * 50e-6 - 50e-6);     // sample >= factor x sync round trip
  EXPECT_LE(batch, 4 * static_cast<int>(factor) * 50); // and not absurdly long
}

// One launch per sample with a large sync cost adds the same sync to every candidate and
// squeezes their ratio towards 1; batch calibration recovers the true ratio.
TEST(Measurement, BatchCalibrationRecoversRatiosThatSyncSqueezes) {
  VirtualClock clock;
  clock.sync_cost = 50e-6; // 50 us sync against 1 us kernels
  SyntheticKernels k{clock, {1.0e-6, 1.1e-6}};
  auto ratio_with = [&](MeasureOptions opt) {
    Measurement m(clock, nullptr, opt);
    const int batch = m.calibrate([&](int) { k.launch(0); }, 1);
    const double a = m.sample([&](int) { k.launch(0); }, batch, 1, false);
    const double b = m.sample([&](int) { k.launch(1); }, batch, 1, false);
    return b / a;
  };
  MeasureOptions single;
  single.fixed_batch = 1;
  EXPECT_LT(ratio_with(single), 1.01); // 51.1 / 51: the 10% difference is gone
  EXPECT_NEAR(ratio_with(MeasureOptions{}), 1.1, 0.011);

  // The tuner sees the same thing: a true 10% win is missed with one launch per sample and
  // found with calibrated batches.
  SyntheticKernels win{clock, {1.0e-6, 0.9e-6}, 0.002};
  auto pick_with = [&](MeasureOptions opt) {
    Measurement m(clock, nullptr, opt);
    const int batch = m.calibrate([&](int) { win.launch(0); }, 1);
    SampleFn sample = [&](size_t i) {
      return m.sample([&](int) { win.launch(i); }, batch, 1, false);
    };
    GateFn pass = [](size_t) { return CheckResult{}; };
    return Tuner().select({Tactic{"a", {}}, Tactic{"b", {}}}, 0, pass, sample).pick_index;
  };
  EXPECT_EQ(pick_with(single), 0u);
  EXPECT_EQ(pick_with(MeasureOptions{}), 1u);
}

TEST(InterleavedOrder, EverySubjectFollowsEveryOtherEquallyOften) {
  for (size_t n = 2; n <= 7; ++n)
    for (int each : {1, 5, 7, 9}) {
      const std::vector<size_t> order = interleaved_order(n, each);
      std::vector<int> count(n, 0);
      std::vector<std::vector<int>> after(n, std::vector<int>(n, 0)); // after[prev][next]
      for (size_t i = 0; i < order.size(); ++i) {
        ASSERT_LT(order[i], n);
        ++count[order[i]];
        // Cyclically: the last sample precedes the first (the order is whole circuits).
        ++after[order[i]][order[(i + 1) % order.size()]];
      }
      const int circuits = (each + static_cast<int>(n) - 2) / static_cast<int>(n - 1);
      for (size_t a = 0; a < n; ++a) {
        EXPECT_EQ(count[a], circuits * static_cast<int>(n - 1)) << "n=" << n << " each=" << each;
        EXPECT_GE(count[a], each);
        for (size_t b = 0; b < n; ++b)
          EXPECT_EQ(after[a][b], a == b ? 0 : circuits) << "n=" << n << " " << a << "->" << b;
      }
    }
  EXPECT_EQ(interleaved_order(1, 3), (std::vector<size_t>{0, 0, 0}));
  EXPECT_THROW(interleaved_order(0, 3), Error);
}

// A subject that slows whatever runs right after it (a peer streaming far more bytes than the
// L2, on the H200) biased a cyclic round: the subject after it was always the same one. Two
// identical subjects must get the same median in the interleaved order.
TEST(InterleavedOrder, WhatRanBeforeFallsOnEverySubjectAlike) {
  const std::vector<double> base{1e-6, 1e-6, 1.5e-6, 3e-6}; // 0 and 1 are the same kernel
  const auto medians = [&](const std::vector<size_t> &order) {
    std::vector<std::vector<double>> t(base.size());
    size_t prev = base.size();
    for (size_t i : order) {
      t[i].push_back(base[i] * (prev == 3 ? 1.05 : 1.0)); // 5 % slower after subject 3
      prev = i;
    }
    std::vector<double> out;
    for (auto &v : t)
      out.push_back(median(v));
    return out;
  };
  std::vector<size_t> cyclic; // the former round: start rotated each round
  for (size_t s = 0; s < 9; ++s)
    for (size_t i = 0; i < base.size(); ++i)
      cyclic.push_back((i + s) % base.size());
  const std::vector<double> biased = medians(cyclic);
  EXPECT_GT(biased[0] / biased[1], 1.04); // subject 0 always ran after subject 3
  const std::vector<double> fair = medians(interleaved_order(base.size(), 9));
  EXPECT_DOUBLE_EQ(fair[0], fair[1]);
}

} // namespace
} // namespace hone
