// Progress lines of a long run: durations like 3m20s, and the time left from the steps done.
#include "hone/format.h"
#include "hone/progress.h"

#include <regex>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace hone::cli {
namespace {

TEST(Progress, DurationsReadLikeAClock) {
  const std::pair<double, const char *> cases[] = {
      {0, "0.0s"},    {-3, "0.0s"},       {0.04, "0.0s"},  {4.24, "4.2s"},  {9.94, "9.9s"},
      {9.96, "10s"},  {42.4, "42s"},      {59.6, "1m00s"}, {65, "1m05s"},   {200, "3m20s"},
      {540, "9m00s"}, {3599.4, "59m59s"}, {3600, "1h00m"}, {3929, "1h05m"}, {90000, "25h00m"}};
  for (const auto &[seconds, text] : cases)
    EXPECT_EQ(format_duration(seconds), text) << seconds << " s";
}

TEST(Progress, TimeLeftIsTheMeanStepTimesTheStepsLeft) {
  EXPECT_EQ(progress_times(2.5, 0, 10), "2.5s elapsed");
  // 10 s for 3 of 23 steps: 20 left at 3.33 s.
  EXPECT_EQ(progress_times(10, 3, 23), "10s elapsed, about 1m07s left");
  EXPECT_EQ(progress_times(70, 7, 10), "1m10s elapsed, about 30s left");
  EXPECT_EQ(progress_times(70, 10, 10), "1m10s elapsed");
}

TEST(Progress, TheCallersEstimateOfTheTimeLeftWinsOverTheMean) {
  EXPECT_EQ(progress_times(10, 3, 23, 42.0), "10s elapsed, about 42s left");
  EXPECT_EQ(progress_times(10, 3, 23, -1.0), "10s elapsed, about 0.0s left");
  EXPECT_EQ(progress_times(10, 23, 23, 42.0), "10s elapsed");
  ::testing::internal::CaptureStderr();
  {
    Progress progress(3, /*terminal=*/false);
    progress.start("tuning a");
    progress.finish(100.0);
    progress.start("tuning b");
    progress.finish();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::regex lines(
      "\\[1/3\\] tuning a: [0-9.]+ [mun]?s; [0-9.]+s elapsed, about 1m40s left\n"
      "\\[2/3\\] tuning b: [0-9.]+ [mun]?s; [0-9.]+s elapsed, about [0-9.]+s left\n");
  EXPECT_TRUE(std::regex_match(err, lines)) << err;
}

TEST(Progress, OffATerminalEachStepPrintsOneLine) {
  ::testing::internal::CaptureStderr();
  {
    Progress progress(2, /*terminal=*/false);
    progress.start("tuning a");
    progress.finish();
    progress.start("tuning b");
    progress.finish();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  const std::regex lines(
      "\\[1/2\\] tuning a: [0-9.]+ [mun]?s; [0-9.]+s elapsed, about [0-9.]+s left\n"
      "\\[2/2\\] tuning b: [0-9.]+ [mun]?s; [0-9.]+s elapsed\n");
  EXPECT_TRUE(std::regex_match(err, lines)) << err;
}

} // namespace
} // namespace hone::cli
