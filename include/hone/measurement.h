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
#include <vector>

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

// The copies cycled through between two uses of one copy span at least this many times the
// LLC. Twice was not cold on the H200: its L2 keeps part of data read 2 x L2 ago, so a kernel
// timed after a kernel on the same copies read 3 % faster than at 8 x, and 5 % faster than
// after a peer streaming other buffers, which made the samples of one kernel bimodal (spread 4 %
// against 0.7 % at 8 x; docs/benchmark_results/2026-12-04-h200, calls 3-5).
inline constexpr int kRotationLlcMultiple = 8;

// R = ceil(llc_multiple x llc / bytes_per_launch) + 1 copies. A multiple other than
// kRotationLlcMultiple is for measuring the rotation itself (bench/op_matrix --rotate-llc).
int rotation_count(size_t llc_bytes, size_t bytes_per_launch,
                   double llc_multiple = kRotationLlcMultiple);

struct RotationPlan {
  int copies = 1;          // input sets to allocate
  bool flush = false;      // true when the budget capped copies below the needed count
  int needed = 1;          // rotation_count() before the budget cap
  size_t footprint = 0;    // [bytes] copies x bytes_per_launch
};
// Fits rotation_count() into `budget_bytes`; past it, uses one copy and flushes instead.
RotationPlan plan_rotation(size_t llc_bytes, size_t bytes_per_launch, size_t budget_bytes,
                           bool cold, double llc_multiple = kRotationLlcMultiple);

// The order in which to sample n subjects (indices 0..n-1) so that each gets at least
// `samples_each` samples and each directly follows every other one equally often: repeated
// Eulerian circuits of the complete directed graph on the subjects. One circuit holds every
// ordered pair of distinct subjects once as neighbours and ends where the next begins, so it
// takes n - 1 samples of each. A subject's time then cannot depend on which subject ran before
// it: a memory-bound kernel timed right after a peer that streams 117 MB read 5 % slower on the
// H200 than the same kernel timed after itself (docs/benchmark_results/2026-12-04-h200), and a
// cyclic round puts one subject after the same neighbour every time. n = 1: samples_each zeros.
std::vector<size_t> interleaved_order(size_t n, int samples_each);

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
