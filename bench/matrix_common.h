// Shared pieces of the benchmark programs (op_matrix, read_ceiling's reports): the interleaved
// timing round, formatting, the device header and the JSON of one tune.
//
//   auto times = hone::bench::time_round_robin(m, launches, {0, 1, 2}, batch, copies, flush, 7);
//   nlohmann::json doc = hone::bench::matrix_doc("op_matrix", backend, 7, bandwidth, tuned);
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

// Samples every subject (indices into `launches`) at least `samples` times, interleaved in
// hone::interleaved_order: every subject directly follows every other one equally often, so
// that what ran just before falls on every subject alike. (A cyclic round with a rotated start
// did not: it puts each subject after the same neighbour every time, and on the H200 the
// default timed after the cuBLAS peer read 5 % slower than the same kernel timed after the
// default, docs/benchmark_results/2026-12-04-h200.) Returns [seconds] per launch, per index of
// `launches` (empty for indices not in `subjects`).
inline std::vector<std::vector<double>> time_round_robin(Measurement &m,
                                                         const std::vector<LaunchFn> &launches,
                                                         const std::vector<size_t> &subjects,
                                                         int batch, int copies, bool flush,
                                                         int samples) {
  std::vector<std::vector<double>> times(launches.size());
  if (subjects.empty())
    return times;
  for (size_t i : interleaved_order(subjects.size(), samples)) {
    const size_t j = subjects[i];
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
                   {"runoff_ratio", r.runoff_ratio},
                   {"long_margin", r.long_margin},
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

// "cold" or "warm", as reports and JSON spell the mode.
inline const char *mode_name(bool cold) { return cold ? "cold" : "warm"; }
// How the mode measures, for a header or a caption.
inline const char *mode_text(bool cold) {
  return cold ? "cold LLC (rotating input copies, or an LLC flush between samples)"
              : "warm LLC (one input copy reused, no flush)";
}

// The two lines a matrix program starts with: the device, then the method, the mode and the
// measured read bandwidth [bytes/second].
inline void print_header(Backend &backend, int samples, double read_bandwidth, bool cold) {
  const DeviceInfo &info = backend.info();
  std::printf("device: %s, %d SMs, L2 %zu MiB, cc %s, %s, driver %s\n", info.model.c_str(),
              info.compute_units, info.llc_bytes >> 20, info.compute_capability.c_str(),
              info.runtime_version.c_str(), info.driver_version.c_str());
  std::printf("method: %s, %s, at least %d samples per median, every subject after every other "
              "equally often; measured read bandwidth %.0f GB/s\n",
              backend.method_id().c_str(), mode_text(cold), samples, read_bandwidth / 1e9);
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
// adds "peer", "results" and its geometric means. `cold`: the mode of the tunes and the timing.
inline nlohmann::json matrix_doc(const std::string &benchmark, Backend &backend, int samples,
                                 double read_bandwidth,
                                 const std::map<std::string, TuneReport> &tuned, bool cold) {
  nlohmann::json doc;
  doc["benchmark"] = benchmark;
  doc["device"] = device_json(backend.info());
  doc["method"] = backend.method_id();
  doc["mode"] = mode_name(cold);
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
