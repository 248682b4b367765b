#include "hone/tune.h"

#include <algorithm>
#include <chrono>
#include <ctime>

#include "hone/backend.h"
#include "hone/error.h"
#include "hone/number_format.h"
#include "hone/key.h"
#include "hone/op.h"

namespace hone {

std::optional<std::string> memory_shortfall(const Backend &backend, const TunableOp &op,
                                            const Shape &shape) {
  const std::optional<WorkloadBytes> need = op.workload_bytes(shape);
  if (!need)
    return std::nullopt;
  const std::optional<size_t> available = backend.available_memory_bytes();
  if (!available || need->total(1) <= *available)
    return std::nullopt;
  const auto bytes = [](size_t b) {
    return std::to_string(b) + " bytes (" + format_g(static_cast<double>(b) / (1ull << 30)) +
           " GiB)";
  };
  return std::string(op.name()) + " " + op.buckets().describe(shape) + " needs " +
         bytes(need->total(1)) + " for one input copy and its outputs; the " +
         backend.info().backend + " device (" + backend.info().model + ") has " +
         bytes(*available) + " available";
}

PreparedWorkload prepare_workload(Backend &backend, const TunableOp &op, const Shape &shape,
                                  bool cold) {
  if (std::optional<std::string> shortfall = memory_shortfall(backend, op, shape))
    HONE_INVALID_ARGUMENT(*shortfall);
  PreparedWorkload p;
  p.workload = op.prepare(shape);
  const DeviceInfo &info = backend.info();
  // The extra copies come out of what is left once the first is allocated.
  size_t budget = info.memory_budget_bytes;
  if (const std::optional<size_t> available = backend.available_memory_bytes())
    budget = std::min(budget, *available);
  p.rotation = plan_rotation(info.llc_bytes, p.workload->bytes_per_launch(), budget, cold);
  p.workload->set_rotation(p.rotation.copies);
  p.copies = p.workload->rotation();
  return p;
}

TuneReport tune_bucket(Backend &backend, const TunableOp &op, const Shape &bucket,
                       const TuneOptions &options) {
  op.validate(bucket);
  TuneReport report;
  report.op = std::string(op.name());
  report.bucket = bucket;
  report.bucket_text = op.buckets().describe(bucket);
  report.key = cache_key(op, bucket, backend.info().model);
  report.numerics = options.numerics.value_or(op.default_numerics());

  std::vector<Tactic> candidates = op.tune_candidates(bucket, report.numerics);
  const Tactic default_tactic = op.default_tactic(bucket);
  auto it = std::find(candidates.begin(), candidates.end(), default_tactic);
  size_t default_index = 0;
  if (it == candidates.end())
    candidates.insert(candidates.begin(), default_tactic);
  else
    default_index = static_cast<size_t>(it - candidates.begin());

  using Clock = std::chrono::steady_clock;
  const auto since = [](Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  const Clock::time_point t_prepare = Clock::now();
  PreparedWorkload prepared = prepare_workload(backend, op, bucket, options.measure.cold);
  std::unique_ptr<Workload> &workload = prepared.workload;
  report.rotation = prepared.rotation;
  const int copies = prepared.copies;
  report.prepare_s = since(t_prepare);

  const GateFn gate = [&](size_t i) {
    const Clock::time_point t0 = Clock::now();
    CheckResult r;
    std::string reason;
    r.status = workload->can_run(candidates[i], &reason);
    if (r.status != Status::ok) {
      r.reason = reason;
    } else {
      r = workload->check(candidates[i], report.numerics);
    }
    report.gate_s += since(t0);
    return r;
  };
  const Clock::time_point t_measure = Clock::now();

  Measurement measurement(backend.timer(), &backend, options.measure);
  report.sync_round_trip = measurement.sync_round_trip();
  // One batch for every candidate, calibrated on the default, so that all are timed in an
  // identically sized context.
  report.batch = measurement.calibrate(
      [&](int copy) { workload->run(candidates[default_index], copy); }, copies);
  const SampleFn sample = [&](size_t i) {
    const Tactic &t = candidates[i];
    return measurement.sample([&](int copy) { workload->run(t, copy); }, report.batch, copies,
                              report.rotation.flush);
  };
  report.result = Tuner(options.tuner).select(candidates, default_index, gate, sample);
  report.measure_s = since(t_measure) - report.gate_s;
  return report;
}

std::optional<size_t> best_own_index(const TunableOp &op, const TuneResult &result) {
  if (result.candidates.empty())
    return std::nullopt;
  if (!op.is_vendor_tactic(result.pick()))
    return result.pick_index;
  std::optional<size_t> best;
  for (size_t i = 0; i < result.candidates.size(); ++i) {
    const CandidateReport &c = result.candidates[i];
    if (c.status != Status::ok || op.is_vendor_tactic(c.tactic) || !(c.median_s > 0))
      continue;
    if (!best || c.median_s < result.candidates[*best].median_s)
      best = i;
  }
  return best;
}

CacheEntry to_cache_entry(const TuneReport &report, const Metadata &metadata) {
  CacheEntry e;
  e.key = report.key;
  e.metadata = metadata;
  e.tactic = report.result.pick().str();
  e.default_tactic = report.result.default_tactic().str();
  e.median_s = report.result.pick_s;
  e.default_s = report.result.default_s;
  e.ratio = report.result.ratio;
  e.spread = report.result.noise_floor;
  e.mode = metadata.method.ends_with("+warm") ? "warm" : "cold";
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  e.date = buf;
  return e;
}

} // namespace hone
