// tune_bucket's account of where a tune's time went: preparing the rotation copies, the gate
// (every candidate's check) and the timing, which do not overlap and add up to nearly all of
// the tune (the CPU backend's gemv.f32).
#include <chrono>
#include <cstdio>

#include <gtest/gtest.h>

#include "cpu/cpu_backend.h"
#include "hone/registry.h"
#include "hone/tune.h"

namespace hone {
namespace {

TEST(TuneBucket, ReportsWhereItsTimeWent) {
  TuneOptions options; // warm, 5 samples: a short tune
  options.tuner.samples = 5;
  options.measure.cold = false;
  const auto t0 = std::chrono::steady_clock::now();
  const TuneReport r = tune_bucket(cpu::backend(), *Registry::global().find("gemv.f32", "cpu"),
                                   Shape{{2, 512, 512}, DType::f32}, options);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  EXPECT_GT(r.gate_s, 0);
  EXPECT_GT(r.measure_s, 0);
  EXPECT_GE(r.prepare_s, 0);
  // The three parts do not overlap (the timing excludes the gate, which the tuner calls
  // inside its selection) and miss only the tune's bookkeeping.
  const double parts = r.prepare_s + r.gate_s + r.measure_s;
  EXPECT_LE(parts, wall);
  EXPECT_GE(parts, 0.5 * wall);
  std::printf("prepare %.4f s, gate %.4f s, timing %.4f s of %.4f s\n", r.prepare_s, r.gate_s,
              r.measure_s, wall);
}

} // namespace
} // namespace hone
