// gemv_bf16_matrix: tunes gemv.bf16 over the decode shapes of common LLM layers and times,
// in the same run and on the same weights, the static default, hone's pick and cuBLASLt
// (BF16 GEMM, the matched peer), interleaved round-robin with cold L2.
//
//   gemv_bf16_matrix --quick
//   gemv_bf16_matrix --shapes 4096x4096,14336x4096 --rows 1,8,32 --json out.json
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cuda/cuda_backend.h"
#include "hone/backend.h"
#include "hone/error.h"
#include "hone/registry.h"
#include "hone/tune.h"
#include "matrix_common.h"

namespace {

using hone::bench::fixed;
using hone::bench::geomean;
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
struct Point : hone::bench::MatrixPoint {
  int n = 0, k = 0, rows = 0;
  double speedup() const { return t_peer / t_pick; } // cublas / pick
  double weight_bandwidth() const {                  // [bytes/second]
    return 2.0 * static_cast<double>(n) * k / t_pick;
  }
};

nlohmann::json to_json(const Point &p, double read_bandwidth) {
  nlohmann::json j{{"n", p.n}, {"k", p.k}, {"rows", p.rows}, {"bucket", p.bucket}};
  if (!p.error.empty()) {
    j["error"] = p.error;
    return j;
  }
  hone::bench::add_point_json(j, p, "cublas");
  j.update({{"cublas_over_pick", p.speedup()},
            {"weight_bandwidth_bytes_per_s", p.weight_bandwidth()},
            {"fraction_of_read_bandwidth", p.weight_bandwidth() / read_bandwidth}});
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

  const double read_bandwidth = backend.measure_read_bandwidth().value_or(0);
  hone::bench::print_header(backend, options.samples, read_bandwidth);

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
        hone::bench::tune_and_time(backend, *op, *peer, shape, options.samples, tuned, p);
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

  nlohmann::json doc =
      hone::bench::matrix_doc("gemv_bf16_matrix", backend, options.samples, read_bandwidth, tuned);
  doc["peer"] = "cublas (cuBLASLt BF16 GEMM, fp32 compute, bf16 out)";
  doc["results"] = nlohmann::json::array();
  for (const Point &p : points)
    doc["results"].push_back(to_json(p, read_bandwidth));
  doc["geomean"] = {
      {"rows_1_16",
       {{"pick_over_default", geomean(ratio_16)}, {"cublas_over_pick", geomean(speedup_16)}}},
      {"all_rows",
       {{"pick_over_default", geomean(ratio_all)}, {"cublas_over_pick", geomean(speedup_all)}}}};
  hone::bench::write_json(options.json_path, doc);

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
