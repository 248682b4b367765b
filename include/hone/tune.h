// Tuning one bucket end to end: prepare the op's workload, plan rotation for a cold LLC,
// calibrate the batch, gate every candidate, then let the Tuner select.
//
//   hone::TuneReport r = hone::tune_bucket(backend, op, bucket, {});
//   cache.put(hone::to_cache_entry(r, hone::current_metadata(backend)));
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "hone/cache.h"
#include "hone/measurement.h"
#include "hone/tuner.h"

namespace hone {

class Backend;
class TunableOp;
class Workload;

struct TuneOptions {
  TunerOptions tuner;
  MeasureOptions measure;
  std::optional<Numerics> numerics; // default: the op's default_numerics()
};

struct TuneReport {
  std::string op;
  Shape bucket;
  std::string bucket_text; // "rows=8,n=4096,k=4096"
  std::string key;         // cache key
  Numerics numerics = Numerics::tolerance;
  RotationPlan rotation;
  int batch = 1;             // launches per sample
  double sync_round_trip = 0; // [seconds]
  TuneResult result;
  // [seconds] where the tune's time went: allocating and filling the rotation copies; the
  // gate (every candidate's check: fresh inputs, a launch, the download and the host
  // reference); calibration and timing (triage and every pairing).
  double prepare_s = 0;
  double gate_s = 0;
  double measure_s = 0;
};

// Why `shape` of `op` cannot be prepared in the memory `backend` has free now, naming the
// bytes one input copy and the outputs need and the bytes available; nullopt when it fits or
// when the op or the backend does not say.
std::optional<std::string> memory_shortfall(const Backend &backend, const TunableOp &op,
                                            const Shape &shape);

// A workload ready to measure: allocated after the memory check, its rotation copies set.
struct PreparedWorkload {
  std::unique_ptr<Workload> workload;
  RotationPlan rotation;
  int copies = 1; // workload->rotation()
};
// Checks memory first (Error(invalid_argument) with memory_shortfall()'s text, before anything
// is allocated), prepares `shape`, then sets the rotation copies a cold measurement needs
// within the backend's budget and the memory left (warm: one copy).
PreparedWorkload prepare_workload(Backend &backend, const TunableOp &op, const Shape &shape,
                                  bool cold);

// Throws Error(invalid_argument) when the op rejects the shape (validate()) or when it does
// not fit in memory (memory_shortfall()).
TuneReport tune_bucket(Backend &backend, const TunableOp &op, const Shape &bucket,
                       const TuneOptions &options);

// The best of `op`'s own kernels in `result` (index into result.candidates): the pick when it is
// one of them; when the pick is a vendor tactic (TunableOp::is_vendor_tactic), the own
// candidate that passed the gate with the smallest triage median. nullopt when none was timed.
std::optional<size_t> best_own_index(const TunableOp &op, const TuneResult &result);

CacheEntry to_cache_entry(const TuneReport &report, const Metadata &metadata);

} // namespace hone
