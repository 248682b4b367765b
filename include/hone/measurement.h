// Measurement: turns "launch once" into honest per-launch times. It calibrates a batch of
// launches per sample so that the sync round trip and timer resolution vanish in the
// ratio, rotates input copies so every launch starts with a cold LLC, and flushes the LLC
// between samples when rotation cannot cover it.
//
//   hone::Measurement m(backend.timer(), backend);   // measures the sync round trip once
//   int batch = m.calibrate(launch);                // launch(copy) enqueues one launch
//   double s = m.sample(launch, batch);             // [seconds] per launch
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "hone/backend.h"

namespace hone {


struct MeasureOptions {
  // A sample lasts >= this x the sync round trip. 20 left the H200 timing one 35 us launch
  // per CUDA-graph sample, whose fixed graph-launch cost (several round trips) inflated every
  // time by 5-10 % and pulled ratios towards 1; 100 keeps it near 1 %.
  double sync_factor = 100;
  double resolution_factor = 50; // ... and >= this x the timer resolution
  int max_batch = 1 << 16;
  int fixed_batch = 0; // > 0 forces this batch (1 reproduces one-launch-per-sample timing)
  bool cold = true;    // rotate inputs / flush the LLC; false reuses one copy (warm)
};

// R = ceil(2 x llc / bytes_per_launch) + 1 copies, so that the copies cycled through between
// two uses of one copy exceed twice the LLC. 1 when warm.
int rotation_count(size_t llc_bytes, size_t bytes_per_launch);

struct RotationPlan {
  int copies = 1;          // input sets to allocate
  bool flush = false;      // true when the budget capped copies below the needed count
  int needed = 1;          // rotation_count() before the budget cap
  size_t footprint = 0;    // [bytes] copies x bytes_per_launch
};
// Fits rotation_count() into `budget_bytes`; past it, uses one copy and flushes instead.
RotationPlan plan_rotation(size_t llc_bytes, size_t bytes_per_launch, size_t budget_bytes,
                           bool cold);

class Measurement {
public:
  // `backend` may be null (no flush available); the sync round trip is measured here.
  Measurement(Timer &timer, Backend *backend, MeasureOptions options = {});

  // [seconds] median of timed empty regions.
  double sync_round_trip() const { return sync_round_trip_; }
  double resolution() const;
  const MeasureOptions &options() const { return options_; }

  // Launches per sample so that a sample lasts >= max(sync_factor x sync round trip,
  // resolution_factor x resolution). Warms up first.
  int calibrate(const LaunchFn &launch, int copies);
  // [seconds] per launch: one timed region of `batch` launches over rotating copies,
  // preceded (outside the region) by an LLC flush when `flush`.
  double sample(const LaunchFn &launch, int batch, int copies, bool flush);

private:
  Timer &timer_;
  Backend *backend_;
  MeasureOptions options_;
  double sync_round_trip_ = 0;
  int next_copy_ = 0;
};

} // namespace hone
