// Tuner: the selection policy. Gate every candidate, triage the field round-robin to the
// best k, confirm each finalist in its own two-way interleave against the default, and
// switch only when the median per-pair ratio clears margin = max(min_margin, 3 x the A/A
// noise floor). Ties go to the default. A ratio past min_margin but inside a margin that noise
// has widened is undecided: that pairing, and the A/A, are timed again with more pairs, and the
// longer pairing decides against its own, narrower margin. Timing is passed in, so decisions
// are testable with synthetic timings.
//
//   hone::Tuner tuner(options);
//   hone::TuneResult r = tuner.select(cands, /*default=*/0, gate, sample);
//   use(r.pick());
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "hone/op.h"
#include "hone/tactic.h"

namespace hone {

struct TunerOptions {
  int samples = 7;          // N >= 5 samples per median
  int top_k = 3;            // finalists kept by triage
  double min_margin = 0.02; // the margin is never below this
  double noise_multiplier = 3.0;
  // An undecided ratio (|ratio - 1| in [min_margin, margin)) is timed again with this many times
  // `samples` pairs; 1 decides on the first pairing alone.
  int undecided_factor = 3;
  bool interleave = true; // false samples one candidate after another (for comparison only)
};

struct CandidateReport {
  Tactic tactic;
  Status status = Status::ok;
  std::string reason;     // why it was not timed or not picked
  double error = 0;       // gate error figure
  double median_s = 0;    // [seconds] triage median per launch
  double spread = 0;      // triage IQR / median
  bool finalist = false;
  double ratio = 0;        // confirmation: median of t_candidate / t_default (finalists)
  double ratio_spread = 0; // IQR / median of those ratios
};

struct TuneResult {
  std::vector<CandidateReport> candidates; // same order as given
  size_t default_index = 0;
  size_t pick_index = 0;
  double noise_floor = 0; // spread of the A/A ratios of the default against itself
  double margin = 0;      // max(min_margin, noise_multiplier x noise_floor)
  double ratio = 1;       // pick's confirmed ratio to the default (1 when default kept)
  double runoff_ratio = 0; // runner-up over the best finalist, paired directly (0: no runoff)
  // The longer pairings of undecided ratios (0 when none ran): the A/A spread over
  // undecided_factor x samples pairs, and its margin, max(min_margin, noise_multiplier x that
  // spread / sqrt(undecided_factor)), since the spread of a median falls with the square root
  // of the pairs.
  double long_noise_floor = 0;
  double long_margin = 0;
  double pick_s = 0;      // [seconds] per launch
  double default_s = 0;   // [seconds] per launch
  const Tactic &pick() const { return candidates[pick_index].tactic; }
  const Tactic &default_tactic() const { return candidates[default_index].tactic; }
};

// Gate: (candidate index) -> check result. Sample: (candidate index) -> [seconds] per launch
// for one sample.
using GateFn = std::function<CheckResult(size_t)>;
using SampleFn = std::function<double(size_t)>;

class Tuner {
public:
  explicit Tuner(TunerOptions options = {});
  const TunerOptions &options() const { return options_; }

  // `default_index` must pass the gate; throws Error(runtime) when it does not.
  TuneResult select(const std::vector<Tactic> &candidates, size_t default_index,
                    const GateFn &gate, const SampleFn &sample) const;

private:
  TunerOptions options_;
};

} // namespace hone
