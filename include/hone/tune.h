// Tuning one bucket end to end: prepare the op's workload, plan rotation for a cold LLC,
// calibrate the batch, gate every candidate, then let the Tuner select.
//
//   hone::TuneReport r = hone::tune_bucket(backend, op, bucket, {});
//   cache.put(hone::to_cache_entry(r, hone::current_metadata(backend)));
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "hone/cache.h"
#include "hone/measurement.h"
#include "hone/tuner.h"

namespace hone {

class Backend;
class TunableOp;

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
};

// Throws Error(invalid_argument) when the op rejects the shape (validate()).
TuneReport tune_bucket(Backend &backend, const TunableOp &op, const Shape &bucket,
                       const TuneOptions &options);

CacheEntry to_cache_entry(const TuneReport &report, const Metadata &metadata);

} // namespace hone
