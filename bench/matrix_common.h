// Shared pieces of the benchmark-matrix programs (gemv_bf16_matrix, qmv_affine_matrix):
// option parsing, the interleaved timing round, one point's tune and timing, formatting, the
// device header and the JSON of one tune and one point.
//
//   std::vector<int> rows = hone::bench::parse_ints(text, "--rows");
//   auto times = hone::bench::time_round_robin(m, launches, {0, 1, 2}, batch, copies, flush, 7);
//   hone::bench::tune_and_time(backend, op, peer, shape, samples, tuned, point);
#pragma once

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hone/backend.h"
#include "hone/error.h"
#include "hone/measurement.h"
#include "hone/registry.h"
#include "hone/stats.h"
#include "hone/tune.h"

namespace hone::bench {

// "1,2,8" -> {1, 2, 8}; throws Error(invalid_argument) naming `option` and the bad item.
inline std::vector<int> parse_ints(const std::string &text, const std::string &option) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ','))
    try {
      size_t used = 0;
      out.push_back(std::stoi(item, &used));
      if (used != item.size())
        throw std::invalid_argument(item);
    } catch (const std::exception &) {
      HONE_INVALID_ARGUMENT(option + ": '" + item + "' is not an integer");
    }
  return out;
}

// "4096x4096,14336x4096" -> {{4096, 4096}, {14336, 4096}}; throws Error(invalid_argument)
// naming `option`, the bad item and `example`.
inline std::vector<std::pair<int, int>>
parse_pairs(const std::string &text, const std::string &option, const std::string &example) {
  std::vector<std::pair<int, int>> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    const size_t x = item.find('x');
    try {
      if (x == std::string::npos)
        throw std::invalid_argument(item);
      size_t used_a = 0, used_b = 0;
      const std::string a = item.substr(0, x), b = item.substr(x + 1);
      const int first = std::stoi(a, &used_a);
      const int second = std::stoi(b, &used_b);
      if (used_a != a.size() || used_b != b.size())
        throw std::invalid_argument(item);
      out.emplace_back(first, second);
    } catch (const std::exception &) {
      HONE_INVALID_ARGUMENT(option + ": '" + item + "' is not of the form " + example);
    }
  }
  return out;
}

inline double geomean(const std::vector<double> &v) {
  if (v.empty())
    return 0;
  double s = 0;
  for (double x : v)
    s += std::log(x);
  return std::exp(s / static_cast<double>(v.size()));
}

// [seconds] -> microseconds with two decimals.
inline std::string us(double seconds) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", seconds * 1e6);
  return buf;
}
inline std::string fixed(double v, int digits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// Samples every subject (indices into `launches`) `samples` times, round-robin, with the
// starting subject rotated every round so that a position effect (what ran just before)
// falls on every subject alike. Returns [seconds] per launch, per index of `launches`
// (empty for indices not in `subjects`).
inline std::vector<std::vector<double>> time_round_robin(Measurement &m,
                                                         const std::vector<LaunchFn> &launches,
                                                         const std::vector<size_t> &subjects,
                                                         int batch, int copies, bool flush,
                                                         int samples) {
  std::vector<std::vector<double>> times(launches.size());
  for (int s = 0; s < samples; ++s)
    for (size_t i = 0; i < subjects.size(); ++i) {
      const size_t j = subjects[(i + static_cast<size_t>(s)) % subjects.size()];
      times[j].push_back(m.sample(launches[j], batch, copies, flush));
    }
  return times;
}

// Every candidate of one bucket's tune: gate outcome, triage time, confirmation ratio.
inline nlohmann::json tune_json(const TuneReport &report) {
  const TuneResult &r = report.result;
  nlohmann::json j{{"bucket", report.bucket_text},
                   {"key", report.key},
                   {"numerics", to_string(report.numerics)},
                   {"batch", report.batch},
                   {"rotation_copies", report.rotation.copies},
                   {"flush", report.rotation.flush},
                   {"sync_round_trip_s", report.sync_round_trip},
                   {"default", r.default_tactic().str()},
                   {"pick", r.pick().str()},
                   {"ratio", r.ratio},
                   {"noise_floor", r.noise_floor},
                   {"margin", r.margin},
                   {"candidates", nlohmann::json::array()}};
  for (const CandidateReport &c : r.candidates) {
    nlohmann::json cj{{"tactic", c.tactic.str()}, {"status", to_string(c.status)}};
    if (!c.reason.empty())
      cj["reason"] = c.reason;
    if (c.status == Status::ok) {
      cj["median_s"] = c.median_s;
      cj["spread"] = c.spread;
      cj["gate_error"] = c.error;
    }
    if (c.finalist) {
      cj["ratio"] = c.ratio;
      cj["ratio_spread"] = c.ratio_spread;
    }
    j["candidates"].push_back(std::move(cj));
  }
  return j;
}

// What every point of a matrix records: its bucket's tune and the interleaved timing of the
// bucket's default, hone's pick and the peer on one workload. A program's point adds its
// problem (n, k, rows, ...) on top.
struct MatrixPoint {
  std::string bucket;
  std::string default_tactic, pick_tactic;
  double t_default = 0, t_pick = 0, t_peer = 0;       // [seconds] per launch, medians
  double s_default = 0, s_pick = 0, s_peer = 0;       // IQR / median
  double tune_ratio = 1, noise_floor = 0, margin = 0; // from the bucket's tune
  int candidates = 0, gated_out = 0, batch = 0, copies = 0;
  bool flush = false;
  std::string error; // non-empty when this point failed (the sweep goes on)
  double ratio() const { return t_pick / t_default; } // pick / default
};

// Times default, pick and peer round-robin on one workload of `shape` (rows first); fills the
// t_/s_ fields, batch, copies and flush of `p`. Throws Error(runtime) when the default or the
// pick cannot run `shape` or fails the tolerance gate.
inline void time_point(Backend &backend, const TunableOp &op, const PeerFactory &peer_factory,
                       const Shape &shape, const Tactic &default_tactic, const Tactic &pick,
                       int samples, MatrixPoint &p) {
  const std::string rows = std::to_string(shape[0]);
  std::unique_ptr<Workload> workload = op.prepare(shape);
  for (const Tactic *t : {&default_tactic, &pick}) {
    std::string reason;
    if (workload->can_run(*t, &reason) != Status::ok)
      HONE_RUNTIME_ERROR(t->str() + " cannot run rows=" + rows + ": " + reason);
    const CheckResult c = workload->check(*t, Numerics::tolerance);
    if (!c.pass())
      HONE_RUNTIME_ERROR(t->str() + " fails the gate at rows=" + rows + ": " + c.reason);
  }
  const DeviceInfo &info = backend.info();
  const RotationPlan plan = plan_rotation(info.llc_bytes, workload->bytes_per_launch(),
                                          info.memory_budget_bytes, /*cold=*/true);
  workload->set_rotation(plan.copies);
  const int copies = workload->rotation();
  // Made after the rotation is set and the checks are done: a peer that prepares copies of
  // its own (cublas.dequant dequantises every copy now, outside the timed region, into bf16
  // weights 2-4x the size of the quantized ones) is then at least as cold as the kernel.
  std::unique_ptr<Peer> peer = peer_factory(*workload);

  const std::vector<LaunchFn> launches{
      [&](int copy) { workload->run(default_tactic, copy); },
      [&](int copy) { workload->run(pick, copy); },
      [&](int copy) { peer->run(copy); },
  };
  Measurement m(backend.timer(), &backend, {});
  // One batch for all three, calibrated on the default: identical sample context.
  const int batch = m.calibrate(launches[0], copies);
  // When the tune kept the default, the pick is the same kernel: it is timed once, so its
  // ratio is 1 by construction rather than two positions of one kernel in the round.
  const bool pick_is_default = pick == default_tactic;
  std::vector<size_t> subjects{0, 2};
  if (!pick_is_default)
    subjects.insert(subjects.begin() + 1, 1);
  std::vector<std::vector<double>> times =
      time_round_robin(m, launches, subjects, batch, copies, plan.flush, samples);
  if (pick_is_default)
    times[1] = times[0];
  p.t_default = median(times[0]);
  p.t_pick = median(times[1]);
  p.t_peer = median(times[2]);
  p.s_default = relative_spread(times[0]);
  p.s_pick = relative_spread(times[1]);
  p.s_peer = relative_spread(times[2]);
  p.batch = batch;
  p.copies = copies;
  p.flush = plan.flush;
}

// Tunes the bucket of `shape` once per bucket text (kept in `tuned`), then times what the
// dispatcher serves for `shape`, the bucket's default or its pick, against the peer: fills
// every field of `p` but error. Throws Error for a shape `op` rejects or a failed timing.
inline void tune_and_time(Backend &backend, const TunableOp &op, const PeerFactory &peer,
                          const Shape &shape, int samples, std::map<std::string, TuneReport> &tuned,
                          MatrixPoint &p) {
  op.validate(shape);
  const std::optional<Shape> bucket = op.buckets().map(shape);
  HONE_CHECK(bucket.has_value(), "shape outside the " + std::string(op.name()) + " buckets");
  p.bucket = op.buckets().describe(*bucket);
  auto it = tuned.find(p.bucket);
  if (it == tuned.end())
    it = tuned.emplace(p.bucket, tune_bucket(backend, op, *bucket, TuneOptions{})).first;
  const TuneResult &r = it->second.result;
  p.candidates = static_cast<int>(r.candidates.size());
  for (const CandidateReport &c : r.candidates)
    p.gated_out += c.status != Status::ok ? 1 : 0;
  p.tune_ratio = r.ratio;
  p.noise_floor = r.noise_floor;
  p.margin = r.margin;
  const Tactic default_tactic = op.default_tactic(*bucket);
  const Tactic pick = r.pick();
  p.default_tactic = default_tactic.str();
  p.pick_tactic = pick.str();
  time_point(backend, op, peer, shape, default_tactic, pick, samples, p);
}

// Adds the fields of a timed point to its JSON; `peer` names the peer's time and spread
// (t_<peer>_s, spread_<peer>).
inline void add_point_json(nlohmann::json &j, const MatrixPoint &p, const std::string &peer) {
  j.update({{"default_tactic", p.default_tactic},
            {"pick_tactic", p.pick_tactic},
            {"t_default_s", p.t_default},
            {"t_pick_s", p.t_pick},
            {"t_" + peer + "_s", p.t_peer},
            {"spread_default", p.s_default},
            {"spread_pick", p.s_pick},
            {"spread_" + peer, p.s_peer},
            {"pick_over_default", p.ratio()},
            {"tune_ratio", p.tune_ratio},
            {"tune_noise_floor", p.noise_floor},
            {"tune_margin", p.margin},
            {"candidates", p.candidates},
            {"gated_out", p.gated_out},
            {"batch", p.batch},
            {"rotation_copies", p.copies},
            {"flush", p.flush}});
}

// The two lines a matrix program starts with: the device, then the method and the measured
// read bandwidth [bytes/second].
inline void print_header(Backend &backend, int samples, double read_bandwidth) {
  const DeviceInfo &info = backend.info();
  std::printf("device: %s, %d SMs, L2 %zu MiB, cc %s, %s, driver %s\n", info.model.c_str(),
              info.compute_units, info.llc_bytes >> 20, info.compute_capability.c_str(),
              info.runtime_version.c_str(), info.driver_version.c_str());
  std::printf("method: %s, cold L2, %d samples per median; measured read bandwidth %.0f GB/s\n",
              backend.method_id().c_str(), samples, read_bandwidth / 1e9);
  std::fflush(stdout);
}

inline nlohmann::json device_json(const DeviceInfo &info) {
  return {{"model", info.model},
          {"sms", info.compute_units},
          {"l2_bytes", info.llc_bytes},
          {"compute_capability", info.compute_capability},
          {"runtime", info.runtime_version},
          {"driver", info.driver_version}};
}

// The fields of the JSON document every matrix program writes, its tunes included; the program
// adds "peer", "results" and its geometric means.
inline nlohmann::json matrix_doc(const std::string &benchmark, Backend &backend, int samples,
                                 double read_bandwidth,
                                 const std::map<std::string, TuneReport> &tuned) {
  nlohmann::json doc;
  doc["benchmark"] = benchmark;
  doc["device"] = device_json(backend.info());
  doc["method"] = backend.method_id();
  doc["mode"] = "cold";
  doc["samples"] = samples;
  doc["read_bandwidth_bytes_per_s"] = read_bandwidth;
  doc["tunes"] = nlohmann::json::array();
  for (const auto &[bucket_text, report] : tuned)
    doc["tunes"].push_back(tune_json(report));
  return doc;
}

// Writes `doc` to `path` (nothing for an empty path); throws Error(runtime) when it cannot.
inline void write_json(const std::string &path, const nlohmann::json &doc) {
  if (path.empty())
    return;
  std::ofstream out(path);
  if (!out)
    HONE_RUNTIME_ERROR("cannot write " + path);
  out << doc.dump(2) << "\n";
}

} // namespace hone::bench
