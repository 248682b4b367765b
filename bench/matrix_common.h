// Shared pieces of the benchmark-matrix programs (gemv_bf16_matrix, qmv_affine_matrix):
// option parsing, the interleaved timing round, formatting and the JSON of one tune.
//
//   std::vector<int> rows = hone::bench::parse_ints(text, "--rows");
//   auto times = hone::bench::time_round_robin(m, launches, {0, 1, 2}, batch, copies, flush, 7);
#pragma once

#include <cmath>
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hone/error.h"
#include "hone/measurement.h"
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

} // namespace hone::bench
