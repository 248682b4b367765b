// Test doubles: a virtual clock whose "launches" advance time by a configured amount, so
// measurement and tuner decisions can be tested on exact, controllable timings.
#pragma once

#include <random>
#include <vector>

#include "hone/backend.h"

namespace hone::testing {

class VirtualClock : public Timer {
public:
  double now = 0;             // [seconds]
  double sync_cost = 0;       // [seconds] added by every stop()
  double resolution_s = 1e-9; // [seconds]
  void start() override { t0_ = now; }
  double stop() override {
    now += sync_cost;
    return now - t0_;
  }
  double resolution() const override { return resolution_s; }

private:
  double t0_ = 0;
};

// Candidate i takes base[i] seconds per launch, times (1 + drift x launches so far), times
// a multiplicative noise uniform in [1 - noise, 1 + noise].
struct SyntheticKernels {
  VirtualClock &clock;
  std::vector<double> base;
  double noise = 0;
  double drift = 0; // relative slow-down per launch
  std::mt19937_64 rng{12345};
  long launches = 0;

  void launch(size_t i) {
    std::uniform_real_distribution<double> u(1 - noise, 1 + noise);
    const double factor = (1 + drift * static_cast<double>(launches++)) * (noise > 0 ? u(rng) : 1);
    clock.now += base[i] * factor;
  }
  // One sample of candidate i: `batch` launches in one timed region, per-launch seconds.
  double sample(size_t i, int batch = 1) {
    clock.start();
    for (int b = 0; b < batch; ++b)
      launch(i);
    return clock.stop() / batch;
  }
};

} // namespace hone::testing
