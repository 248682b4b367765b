#include "hone/measurement.h"

#include <gtest/gtest.h>

#include <set>

#include "hone/tuner.h"
#include "synthetic.h"

namespace hone {
namespace {

using testing::SyntheticKernels;
using testing::VirtualClock;

TEST(Rotation, CountCoversTwiceTheLlc) {
  EXPECT_EQ(rotation_count(32 << 20, 10 << 20), 8); // ceil(6.4) + 1
  EXPECT_EQ(rotation_count(60 << 20, 120 << 20), 2);
  EXPECT_EQ(rotation_count(60 << 20, 60 << 20), 3);
}

TEST(Rotation, BudgetFallsBackToFlush) {
  RotationPlan fits = plan_rotation(32 << 20, 10 << 20, 1ull << 30, true);
  EXPECT_EQ(fits.copies, 8);
  EXPECT_FALSE(fits.flush);
  EXPECT_EQ(fits.footprint, 80ull << 20);
  RotationPlan capped = plan_rotation(32 << 20, 10 << 20, 50 << 20, true);
  EXPECT_EQ(capped.copies, 1);
  EXPECT_TRUE(capped.flush);
  EXPECT_EQ(capped.needed, 8);
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

} // namespace
} // namespace hone
