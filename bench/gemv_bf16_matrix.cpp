// gemv_bf16_matrix: tunes gemv.bf16 over the decode shapes of common LLM layers and times,
// in the same run and on the same weights, the static default, hone's pick and cuBLASLt
// (BF16 GEMM, the matched peer), interleaved round-robin with cold L2.
//
//   gemv_bf16_matrix --quick
//   gemv_bf16_matrix --shapes 4096x4096,14336x4096 --rows 1,8,32 --json out.json
#include <algorithm>
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

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cuda/cuda_backend.h"
#include "hone/backend.h"
#include "hone/error.h"
#include "hone/measurement.h"
#include "hone/registry.h"
#include "hone/stats.h"
#include "hone/tune.h"
#include "matrix_common.h"

namespace {

using hone::bench::fixed;
using hone::bench::geomean;
using hone::bench::time_round_robin;
using hone::bench::tune_json;
using hone::bench::us;

struct MatrixOptions {
  std::vector<std::pair<int, int>> shapes{{4096, 4096}, {6144, 4096}, {14336, 4096}, {4096, 14336},
                                          {8960, 1536}, {1536, 8960}, {2048, 2048}};
  std::vector<int> rows{1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
  std::string json_path;
  int samples = 7; // per median, for each of default, pick and peer
  bool quick = false;
};

// One (n, k, rows) point.
struct Point {
  int n = 0, k = 0, rows = 0;
  std::string bucket;
  std::string default_tactic, pick_tactic;
  double t_default = 0, t_pick = 0, t_peer = 0;       // [seconds] per launch, medians
  double s_default = 0, s_pick = 0, s_peer = 0;       // IQR / median
  double tune_ratio = 1, noise_floor = 0, margin = 0; // from the bucket's tune
  int candidates = 0, gated_out = 0, batch = 0, copies = 0;
  bool flush = false;
  std::string error; // non-empty when this point failed (the sweep goes on)
  double ratio() const { return t_pick / t_default; } // pick / default
  double speedup() const { return t_peer / t_pick; }  // cublas / pick
  double weight_bandwidth() const {                   // [bytes/second]
    return 2.0 * static_cast<double>(n) * k / t_pick;
  }
};

// Times default, pick and peer round-robin on one workload; fills the t_/s_ fields.
void time_point(hone::Backend &backend, const hone::TunableOp &op,
                const hone::PeerFactory &peer_factory, const hone::Tactic &default_tactic,
                const hone::Tactic &pick, const MatrixOptions &options, Point &p) {
  const hone::Shape shape{{p.rows, p.n, p.k}, hone::DType::bf16};
  std::unique_ptr<hone::Workload> workload = op.prepare(shape);
  for (const hone::Tactic *t : {&default_tactic, &pick}) {
    std::string reason;
    if (workload->can_run(*t, &reason) != hone::Status::ok)
      HONE_RUNTIME_ERROR(t->str() + " cannot run rows=" + std::to_string(p.rows) + ": " + reason);
    const hone::CheckResult c = workload->check(*t, hone::Numerics::tolerance);
    if (!c.pass())
      HONE_RUNTIME_ERROR(t->str() + " fails the gate at rows=" + std::to_string(p.rows) + ": " +
                         c.reason);
  }
  const hone::DeviceInfo &info = backend.info();
  const hone::RotationPlan plan = hone::plan_rotation(info.llc_bytes, workload->bytes_per_launch(),
                                                      info.memory_budget_bytes, /*cold=*/true);
  workload->set_rotation(plan.copies);
  const int copies = workload->rotation();
  std::unique_ptr<hone::Peer> peer = peer_factory(*workload);

  const std::vector<hone::LaunchFn> launches{
      [&](int copy) { workload->run(default_tactic, copy); },
      [&](int copy) { workload->run(pick, copy); },
      [&](int copy) { peer->run(copy); },
  };
  hone::Measurement m(backend.timer(), &backend, {});
  // One batch for all three, calibrated on the default: identical sample context.
  const int batch = m.calibrate(launches[0], copies);
  // When the tune kept the default, the pick is the same kernel: it is timed once, so its
  // ratio is 1 by construction rather than two positions of one kernel in the round.
  const bool pick_is_default = pick == default_tactic;
  std::vector<size_t> subjects{0, 2};
  if (!pick_is_default)
    subjects.insert(subjects.begin() + 1, 1);
  std::vector<std::vector<double>> times =
      time_round_robin(m, launches, subjects, batch, copies, plan.flush, options.samples);
  if (pick_is_default)
    times[1] = times[0];
  p.t_default = hone::median(times[0]);
  p.t_pick = hone::median(times[1]);
  p.t_peer = hone::median(times[2]);
  p.s_default = hone::relative_spread(times[0]);
  p.s_pick = hone::relative_spread(times[1]);
  p.s_peer = hone::relative_spread(times[2]);
  p.batch = batch;
  p.copies = copies;
  p.flush = plan.flush;
}

nlohmann::json to_json(const Point &p, double read_bandwidth) {
  nlohmann::json j{{"n", p.n}, {"k", p.k}, {"rows", p.rows}, {"bucket", p.bucket}};
  if (!p.error.empty()) {
    j["error"] = p.error;
    return j;
  }
  j.update({{"default_tactic", p.default_tactic},
            {"pick_tactic", p.pick_tactic},
            {"t_default_s", p.t_default},
            {"t_pick_s", p.t_pick},
            {"t_cublas_s", p.t_peer},
            {"spread_default", p.s_default},
            {"spread_pick", p.s_pick},
            {"spread_cublas", p.s_peer},
            {"pick_over_default", p.ratio()},
            {"cublas_over_pick", p.speedup()},
            {"weight_bandwidth_bytes_per_s", p.weight_bandwidth()},
            {"fraction_of_read_bandwidth", p.weight_bandwidth() / read_bandwidth},
            {"tune_ratio", p.tune_ratio},
            {"tune_noise_floor", p.noise_floor},
            {"tune_margin", p.margin},
            {"candidates", p.candidates},
            {"gated_out", p.gated_out},
            {"batch", p.batch},
            {"rotation_copies", p.copies},
            {"flush", p.flush}});
  return j;
}

int run(const MatrixOptions &options) {
  if (!hone::cuda::device_present()) {
    std::printf("gemv_bf16_matrix: skipped: no CUDA device present\n");
    return 0;
  }
  hone::Backend &backend = hone::cuda::backend();
  hone::Registry &registry = hone::Registry::global();
  const hone::TunableOp *op = registry.find("gemv.bf16", "cuda");
  HONE_CHECK(op != nullptr, "gemv.bf16 (cuda) is not registered");
  const hone::PeerFactory *peer = registry.find_peer(*op, "cublas");
  HONE_CHECK(peer != nullptr, "gemv.bf16 has no 'cublas' peer");

  const hone::DeviceInfo &info = backend.info();
  const double read_bandwidth = backend.measure_read_bandwidth().value_or(0);
  std::printf("device: %s, %d SMs, L2 %zu MiB, cc %s, %s, driver %s\n", info.model.c_str(),
              info.compute_units, info.llc_bytes >> 20, info.compute_capability.c_str(),
              info.runtime_version.c_str(), info.driver_version.c_str());
  std::printf("method: %s, cold L2, %d samples per median; measured read bandwidth %.0f GB/s\n",
              backend.method_id().c_str(), options.samples, read_bandwidth / 1e9);
  std::fflush(stdout);

  hone::TuneOptions tune_options;
  std::map<std::string, hone::TuneReport> tuned; // by bucket text, per (n, k)
  std::vector<Point> points;
  for (const auto &[n, k] : options.shapes) {
    for (int rows : options.rows) {
      Point p;
      p.n = n;
      p.k = k;
      p.rows = rows;
      try {
        const hone::Shape shape{{rows, n, k}, hone::DType::bf16};
        op->validate(shape);
        const std::optional<hone::Shape> bucket = op->buckets().map(shape);
        HONE_CHECK(bucket.has_value(), "shape outside the gemv.bf16 buckets");
        p.bucket = op->buckets().describe(*bucket);
        auto it = tuned.find(p.bucket);
        if (it == tuned.end())
          it =
              tuned.emplace(p.bucket, hone::tune_bucket(backend, *op, *bucket, tune_options)).first;
        const hone::TuneResult &r = it->second.result;
        p.candidates = static_cast<int>(r.candidates.size());
        for (const hone::CandidateReport &c : r.candidates)
          p.gated_out += c.status != hone::Status::ok ? 1 : 0;
        p.tune_ratio = r.ratio;
        p.noise_floor = r.noise_floor;
        p.margin = r.margin;
        // What the dispatcher serves for this shape: the bucket's default or its pick.
        const hone::Tactic default_tactic = op->default_tactic(*bucket);
        const hone::Tactic pick = r.pick();
        p.default_tactic = default_tactic.str();
        p.pick_tactic = pick.str();
        time_point(backend, *op, *peer, default_tactic, pick, options, p);
      } catch (const hone::Error &e) {
        p.error = e.what();
        std::fprintf(stderr, "n=%d k=%d rows=%d: %s\n", n, k, rows, e.what());
      }
      if (p.error.empty())
        std::printf("n=%-5d k=%-5d rows=%-2d default %8s us  pick %8s us  cublas %8s us  %s\n", n,
                    k, rows, us(p.t_default).c_str(), us(p.t_pick).c_str(), us(p.t_peer).c_str(),
                    p.pick_tactic.c_str());
      std::fflush(stdout);
      points.push_back(std::move(p));
    }
  }

  // Geometric means over rows 1..16 and over all rows.
  std::vector<double> ratio_16, speedup_16, ratio_all, speedup_all;
  for (const Point &p : points) {
    if (!p.error.empty())
      continue;
    ratio_all.push_back(p.ratio());
    speedup_all.push_back(p.speedup());
    if (p.rows <= 16) {
      ratio_16.push_back(p.ratio());
      speedup_16.push_back(p.speedup());
    }
  }

  nlohmann::json doc;
  doc["benchmark"] = "gemv_bf16_matrix";
  doc["device"] = {{"model", info.model},
                   {"sms", info.compute_units},
                   {"l2_bytes", info.llc_bytes},
                   {"compute_capability", info.compute_capability},
                   {"runtime", info.runtime_version},
                   {"driver", info.driver_version}};
  doc["method"] = backend.method_id();
  doc["mode"] = "cold";
  doc["samples"] = options.samples;
  doc["read_bandwidth_bytes_per_s"] = read_bandwidth;
  doc["peer"] = "cublas (cuBLASLt BF16 GEMM, fp32 compute, bf16 out)";
  doc["tunes"] = nlohmann::json::array();
  for (const auto &[bucket_text, report] : tuned)
    doc["tunes"].push_back(tune_json(report));
  doc["results"] = nlohmann::json::array();
  for (const Point &p : points)
    doc["results"].push_back(to_json(p, read_bandwidth));
  doc["geomean"] = {
      {"rows_1_16",
       {{"pick_over_default", geomean(ratio_16)}, {"cublas_over_pick", geomean(speedup_16)}}},
      {"all_rows",
       {{"pick_over_default", geomean(ratio_all)}, {"cublas_over_pick", geomean(speedup_all)}}}};
  if (!options.json_path.empty()) {
    std::ofstream out(options.json_path);
    if (!out)
      HONE_RUNTIME_ERROR("cannot write " + options.json_path);
    out << doc.dump(2) << "\n";
  }

  // The compact table last.
  std::printf("\n| N | K | rows | t_default us | t_pick us | t_cublas us | pick/default | "
              "cublas/pick | weight GB/s | of read bw |\n");
  std::printf("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
  int failed = 0;
  for (const Point &p : points) {
    if (!p.error.empty()) {
      ++failed;
      std::printf("| %d | %d | %d | failed | | | | | | |\n", p.n, p.k, p.rows);
      continue;
    }
    std::printf("| %d | %d | %d | %s | %s | %s | %s | %s | %s | %s |\n", p.n, p.k, p.rows,
                us(p.t_default).c_str(), us(p.t_pick).c_str(), us(p.t_peer).c_str(),
                fixed(p.ratio(), 3).c_str(), fixed(p.speedup(), 2).c_str(),
                fixed(p.weight_bandwidth() / 1e9, 0).c_str(),
                fixed(p.weight_bandwidth() / read_bandwidth, 2).c_str());
  }
  std::printf("\ngeomean rows 1-16: pick/default %.3f, cublas/pick %.2fx (%zu points)\n",
              geomean(ratio_16), geomean(speedup_16), ratio_16.size());
  std::printf("geomean all rows:  pick/default %.3f, cublas/pick %.2fx (%zu points)\n",
              geomean(ratio_all), geomean(speedup_all), ratio_all.size());
  if (failed > 0)
    std::printf("%d point(s) failed; see stderr and the JSON\n", failed);
  return failed > 0 ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  MatrixOptions options;
  CLI::App app{"gemv.bf16: default vs tuned pick vs cuBLASLt, cold L2, interleaved"};
  std::string shapes, rows;
  app.add_option("--shapes", shapes, "comma-separated NxK list, e.g. 4096x4096,14336x4096");
  app.add_option("--rows", rows, "comma-separated row counts (1..32)");
  app.add_option("--json", options.json_path, "write the full results as JSON to FILE");
  app.add_option("--samples", options.samples, "samples per median (>= 5)")
      ->check(CLI::Range(5, 1000));
  app.add_flag("--quick", options.quick, "a reduced matrix: 3 shapes, rows 1,4,16,32");
  CLI11_PARSE(app, argc, argv);
  try {
    if (options.quick) {
      options.shapes = {{4096, 4096}, {14336, 4096}, {1536, 8960}};
      options.rows = {1, 4, 16, 32};
    }
    if (!shapes.empty())
      options.shapes = hone::bench::parse_pairs(shapes, "--shapes", "NxK (e.g. 4096x4096)");
    if (!rows.empty())
      options.rows = hone::bench::parse_ints(rows, "--rows");
    return run(options);
  } catch (const hone::Error &e) {
    std::fprintf(stderr, "gemv_bf16_matrix: %s\n", e.what());
    return e.kind() == hone::ErrorKind::invalid_argument ? 2 : 1;
  }
}
