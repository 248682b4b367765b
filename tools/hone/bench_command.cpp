#include "hone/bench_command.h"

#include <chrono>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "hone/error.h"
#include "hone/format.h"
#include "hone/measurement.h"
#include "hone/registry.h"
#include "hone/settings.h"
#include "hone/shape_arg.h"
#include "hone/stats.h"
#include "hone/table.h"
#include "hone/tune.h"
#include "hone/tuning_store.h"

namespace hone::cli {

namespace {

using nlohmann::json;

constexpr int kMinSamples = 5;
constexpr double kNoiseTarget = 0.01; // stop once every subject's IQR / median is below this
constexpr int kMaxRounds = 10000;

// One thing being timed: a tactic of the op (gated first) or a matched peer (not gated: it is
// the other library's kernel, the comparison's reference point).
struct Subject {
  std::string label; // "default", "cached", "tactic", "peer", or several joined by '+'
  std::string name;  // Tactic::str() or the peer's name
  std::optional<Tactic> tactic;
  std::unique_ptr<Peer> peer;
  Status status = Status::ok;
  std::string reason;
  double error = 0;
  std::vector<double> samples; // [seconds] per launch
  bool timed() const { return status == Status::ok; }
};

void add_tactic(std::vector<Subject> &subjects, const std::string &label, Tactic tactic) {
  for (Subject &s : subjects)
    if (s.tactic && *s.tactic == tactic) {
      s.label += "+" + label;
      return;
    }
  Subject s;
  s.label = label;
  s.name = tactic.str();
  s.tactic = std::move(tactic);
  subjects.push_back(std::move(s));
}

} // namespace

BenchCommand::BenchCommand(CLI::App &parent, const GlobalOptions &global)
    : global_(global),
      app_(parent.add_subcommand(
          "bench", "Measure the default, the cached pick and given tactics of one shape")) {
  app_->add_option("--op", options_.op, "Op to measure")->required();
  app_->add_option("--shape", options_.shape,
                   "Shape as name=value per dimension: rows=8,n=4096,k=4096")
      ->required();
  app_->add_option("--tactic", options_.tactic,
                   "An extra tactic, e.g. gemv.f32:rows_per_block=4,...");
  // Peers come from the registry (Registry::add_peer); an op without one rejects the name.
  app_->add_option("--peer", options_.peer, "A matched peer library kernel, e.g. cublas");
  auto *warm = app_->add_flag("--warm", options_.warm, "Reuse one input copy (warm LLC)");
  auto *cold = app_->add_flag("--cold", options_.cold,
                              "Rotate input copies so each launch starts cold (default)");
  warm->excludes(cold);
  app_->add_option("--samples", options_.samples,
                   "Samples per subject, at least: whole rounds of n - 1 each for n subjects "
                   "(default: stop when IQR/median < 1% or --max-time)")
      ->check(CLI::Range(1, kMaxRounds));
  app_->add_option("--max-time", options_.max_time, "Seconds of sampling before stopping")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  app_->add_option("--batch", options_.batch, "Fixed launches per sample (default: calibrated)")
      ->check(CLI::Range(1, 1 << 20));
  app_->add_option("--json", options_.json, "Write the measurements to this file");
  app_->add_option("--numerics", options_.numerics,
                   "Gate: batch_invariant or tolerance (default: the op's own); a pick of a "
                   "tolerance tune is gated with tolerance")
      ->check(CLI::IsMember({"batch_invariant", "tolerance"}));
}

int BenchCommand::run() {
  Backend &backend = selected_backend(global_);
  const DeviceInfo &info = backend.info();
  const TunableOp &op = find_op(options_.op, backend);
  const Shape shape = parse_shape(op, options_.shape);
  op.validate(shape);
  const std::optional<Shape> bucket = op.buckets().map(shape);
  const bool cold = !options_.warm;

  std::vector<Subject> subjects;
  // Out of bucket, the dispatcher runs the default for the raw shape; so does this.
  add_tactic(subjects, "default", op.default_tactic(bucket ? *bucket : shape));
  if (bucket) {
    // What the dispatcher would run: a HONE_TACTIC_* override (a malformed one is refused
    // here, as the C API refuses it), and the cached pick unless it is stale or this build
    // cannot run it.
    if (std::optional<Tactic> t = op.env_override(*bucket, settings()))
      add_tactic(subjects, "env", std::move(*t));
    const TuningStore store = TuningStore::open(backend, settings());
    const CacheLookup found = store.find(op, *bucket);
    if (found.usable())
      add_tactic(subjects, "cached", found.tactic);
    else if (found.status == Lookup::unrunnable)
      std::cerr << "hone: warning: cache entry " << found.key
                << " has a tactic this build cannot run; ignoring it: " << found.reason << '\n';
  }
  if (!options_.tactic.empty())
    add_tactic(subjects, "tactic", Tactic::parse(options_.tactic));

  const PeerFactory *peer_factory = nullptr;
  if (!options_.peer.empty()) {
    peer_factory = Registry::global().find_peer(op, options_.peer);
    if (!peer_factory) {
      std::string known;
      for (const std::string &p : Registry::global().peers(op))
        known += (known.empty() ? "" : ", ") + p;
      HONE_INVALID_ARGUMENT("unknown peer '" + options_.peer + "' for op " +
                            std::string(op.name()) + " on " + info.backend +
                            " (available: " + (known.empty() ? "none" : known) + ")");
    }
  }
  if (!options_.json.empty())
    require_writable(options_.json, "--json");

  PreparedWorkload prepared = prepare_workload(backend, op, shape, cold);
  std::unique_ptr<Workload> &workload = prepared.workload;
  const RotationPlan &plan = prepared.rotation;
  const int copies = prepared.copies;
  if (peer_factory) {
    Subject s;
    s.label = "peer";
    s.name = options_.peer;
    s.peer = (*peer_factory)(*workload);
    subjects.push_back(std::move(s));
  }

  // Correctness before timing: a tactic that cannot run or fails the gate is reported only.
  const Numerics numerics = options_.numerics.empty()
                                ? op.default_numerics()
                                : parse_numerics(options_.numerics, "--numerics");
  for (Subject &s : subjects) {
    if (!s.tactic)
      continue;
    s.status = workload->can_run(*s.tactic, &s.reason);
    if (s.status != Status::ok)
      continue;
    const CheckResult check = workload->check(*s.tactic, numerics);
    s.status = check.status;
    s.reason = check.reason;
    s.error = check.error;
  }
  const auto launch_of = [&](Subject &s) -> LaunchFn {
    if (s.peer)
      return [&s](int copy) { s.peer->run(copy); };
    return [&s, &workload](int copy) { workload->run(*s.tactic, copy); };
  };

  MeasureOptions measure;
  measure.cold = cold;
  measure.fixed_batch = options_.batch;
  Measurement measurement(backend.timer(), &backend, measure);
  int batch = 0;
  std::string stop = "no subject could run";
  int taken = 0; // samples of each runnable subject so far
  auto first =
      std::find_if(subjects.begin(), subjects.end(), [](const Subject &s) { return s.timed(); });
  if (first != subjects.end()) {
    // One batch for every subject, calibrated on the first runnable one (the default when
    // it passes), so that all are timed in an identically sized context.
    batch = measurement.calibrate(launch_of(*first), copies);
    std::vector<LaunchFn> launches;
    for (Subject &s : subjects)
      launches.push_back(s.timed() ? launch_of(s) : LaunchFn());
    // A round is one circuit of interleaved_order over the runnable subjects: each is sampled
    // n - 1 times (once when alone), right after every other one once, so that neither drift
    // nor what ran just before favours a subject.
    std::vector<size_t> runnable;
    for (size_t i = 0; i < subjects.size(); ++i)
      if (launches[i])
        runnable.push_back(i);
    const std::vector<size_t> circuit = interleaved_order(runnable.size(), 1);
    const auto t0 = std::chrono::steady_clock::now();
    while (true) {
      for (size_t j : circuit) {
        const size_t i = runnable[j];
        subjects[i].samples.push_back(measurement.sample(launches[i], batch, copies, plan.flush));
      }
      taken = static_cast<int>(subjects[runnable.front()].samples.size());
      if (options_.samples > 0) {
        if (taken >= options_.samples) {
          stop = "fixed " + std::to_string(taken) + " samples";
          break;
        }
        continue;
      }
      if (taken < kMinSamples)
        continue;
      bool quiet = true;
      for (const Subject &s : subjects)
        if (s.timed() && relative_spread(s.samples) >= kNoiseTarget)
          quiet = false;
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (quiet) {
        stop = std::to_string(taken) + " samples, stopped on noise (IQR/median < 1%)";
        break;
      }
      if (elapsed >= options_.max_time || taken >= kMaxRounds) {
        stop = std::to_string(taken) + " samples, stopped on the time budget";
        break;
      }
    }
  }

  const Subject &def = subjects.front();
  const double default_s = def.timed() ? median(def.samples) : 0;
  std::cout << "op        " << op.name() << " on " << info.backend << " (" << info.model << ")\n";
  std::cout << "shape     " << op.buckets().describe(shape) << " " << to_string(shape.dtype)
            << " (bucket " << (bucket ? op.buckets().describe(*bucket) : "none: out of bucket")
            << ")\n";
  std::cout << "mode      " << (cold ? "cold" : "warm") << ": " << copies << " rotation cop"
            << (copies == 1 ? "y" : "ies") << " of " << format_bytes(workload->bytes_per_launch())
            << " (footprint " << format_bytes(plan.footprint) << ", llc "
            << format_bytes(info.llc_bytes) << ")"
            << (plan.flush ? ", llc flush between samples" : "") << '\n';
  std::cout << "batch     " << batch << (batch == 1 ? " launch" : " launches")
            << " per sample; sync round trip " << format_seconds(measurement.sync_round_trip())
            << '\n';
  std::cout << "samples   " << stop << '\n';

  Table table({"subject", "tactic", "status", "median", "spread", "ratio", "GB/s"},
              {false, false, false, true, true, true, true});
  for (const Subject &s : subjects) {
    if (!s.timed()) {
      table.add({s.label, short_tactic(s.name, op.name()),
                 std::string(to_string(s.status)) + ": " + s.reason, "-", "-", "-", "-"});
      continue;
    }
    const double m = median(s.samples);
    char gbs[32];
    std::snprintf(gbs, sizeof gbs, "%.1f",
                  m > 0 ? static_cast<double>(workload->bytes_per_launch()) / m / 1e9 : 0.0);
    table.add({s.label, short_tactic(s.name, op.name()), s.peer ? "ok (not gated)" : "ok",
               format_seconds(m), format_percent(relative_spread(s.samples)),
               default_s > 0 ? format_ratio(m / default_s) : "-", gbs});
  }
  table.print(std::cout);

  if (!options_.json.empty()) {
    json items = json::array();
    for (const Subject &s : subjects) {
      const double m = s.timed() ? median(s.samples) : 0;
      items.push_back({{"label", s.label},
                       {"name", s.name},
                       {"kind", s.peer ? "peer" : "tactic"},
                       {"status", to_string(s.status)},
                       {"reason", s.reason},
                       {"error", s.error},
                       {"median_s", m},
                       {"spread", s.timed() ? relative_spread(s.samples) : 0.0},
                       {"ratio", default_s > 0 && m > 0 ? m / default_s : 0.0},
                       {"samples_s", s.samples}});
    }
    const json doc = {{"format", "hone.bench"},
                      {"format_version", 1},
                      {"op", std::string(op.name())},
                      {"backend", info.backend},
                      {"device", info.model},
                      {"shape", op.buckets().describe(shape)},
                      {"dtype", std::string(to_string(shape.dtype))},
                      {"bucket", bucket ? op.buckets().describe(*bucket) : ""},
                      {"numerics", to_string(numerics)},
                      {"mode", cold ? "cold" : "warm"},
                      {"batch", batch},
                      {"sync_round_trip_s", measurement.sync_round_trip()},
                      {"bytes_per_launch", workload->bytes_per_launch()},
                      {"rotation",
                       {{"copies", copies},
                        {"needed", plan.needed},
                        {"flush", plan.flush},
                        {"footprint_bytes", plan.footprint}}},
                      {"stop", stop},
                      {"subjects", std::move(items)}};
    std::ofstream json_out(options_.json);
    json_out << doc.dump(2) << '\n';
    if (!json_out)
      HONE_RUNTIME_ERROR("--json: writing '" + options_.json + "' failed");
  }
  return def.timed() ? 0 : 1;
}

} // namespace hone::cli
