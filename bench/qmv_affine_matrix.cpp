// qmv_affine_matrix: tunes qmv.affine over the decode shapes of common LLM layers in int4 and
// int8 affine formats and times, in the same run, the static default, hone's pick and
// cuBLASLt BF16 on the same weights dequantised ("cublas.dequant"), interleaved round-robin
// with cold L2. cublas.dequant reads 2 bytes per weight: a representation change, reported
// apart from the tuning result and never as hone's speedup.
//
//   qmv_affine_matrix --quick
//   qmv_affine_matrix --shapes 14336x4096 --rows 1,8,32 --formats 4x64,8x64 --json out.json
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

constexpr const char *kPeer = "cublas.dequant";

struct MatrixOptions {
  std::vector<std::pair<int, int>> shapes{
      {4096, 4096}, {14336, 4096}, {4096, 14336}, {8960, 1536}, {1536, 8960}};
  std::vector<int> rows{1, 2, 4, 8, 12, 16, 24, 32};
  std::vector<std::pair<int, int>> formats{{4, 64}, {4, 128}, {8, 64}}; // (bits, group)
  std::string json_path;
  int samples = 7; // per median, for each of default, pick and peer
  bool quick = false;
};

// One (n, k, bits, group, rows) point.
struct Point : hone::bench::MatrixPoint {
  int n = 0, k = 0, bits = 0, group = 0, rows = 0;

  // Representation change: bf16 cuBLASLt time over the quantized pick's (> 1: the format
  // and kernel together are faster than bf16 weights); reported apart.
  double peer_over_pick() const { return t_peer / t_pick; }
  // [bytes] the quantized weights: packed q + scales + biases (what qmv.affine streams).
  double weight_bytes() const {
    const double nk = static_cast<double>(n) * k;
    return nk * bits / 8 + 2.0 * 2.0 * nk / group;
  }
  double weight_bandwidth() const { return weight_bytes() / t_pick; } // [bytes/second]
  std::string format() const { return "int" + std::to_string(bits) + "/g" + std::to_string(group); }
};

nlohmann::json to_json(const Point &p, double read_bandwidth) {
  nlohmann::json j{{"n", p.n},         {"k", p.k},       {"bits", p.bits},
                   {"group", p.group}, {"rows", p.rows}, {"bucket", p.bucket}};
  if (!p.error.empty()) {
    j["error"] = p.error;
    return j;
  }
  hone::bench::add_point_json(j, p, "cublas_dequant");
  j.update({{"representation_change",
             {{"peer", kPeer}, {"cublas_dequant_over_pick", p.peer_over_pick()}}},
            {"weight_bytes", p.weight_bytes()},
            {"weight_bandwidth_bytes_per_s", p.weight_bandwidth()},
            {"fraction_of_read_bandwidth",
             read_bandwidth > 0 ? p.weight_bandwidth() / read_bandwidth : 0.0}});
  return j;
}

int run(const MatrixOptions &options) {
  if (!hone::cuda::device_present()) {
    std::printf("qmv_affine_matrix: skipped: no CUDA device present\n");
    return 0;
  }
  hone::Backend &backend = hone::cuda::backend();
  hone::Registry &registry = hone::Registry::global();
  const hone::TunableOp *op = registry.find("qmv.affine", "cuda");
  HONE_CHECK(op != nullptr, "qmv.affine (cuda) is not registered");
  const hone::PeerFactory *peer = registry.find_peer(*op, kPeer);
  HONE_CHECK(peer != nullptr, std::string("qmv.affine has no '") + kPeer + "' peer");

  const double read_bandwidth = backend.measure_read_bandwidth().value_or(0);
  hone::bench::print_header(backend, options.samples, read_bandwidth);

  std::map<std::string, hone::TuneReport> tuned; // by bucket text
  std::vector<Point> points;
  for (const auto &[bits, group] : options.formats) {
    for (const auto &[n, k] : options.shapes) {
      for (int rows : options.rows) {
        Point p;
        p.n = n;
        p.k = k;
        p.bits = bits;
        p.group = group;
        p.rows = rows;
        try {
          const hone::Shape shape{{rows, n, k, bits, group}, hone::DType::bf16};
          hone::bench::tune_and_time(backend, *op, *peer, shape, options.samples, tuned, p);
        } catch (const hone::Error &e) {
          p.error = e.what();
          std::fprintf(stderr, "n=%d k=%d %s rows=%d: %s\n", n, k, p.format().c_str(), rows,
                       e.what());
        }
        if (p.error.empty())
          std::printf("n=%-5d k=%-5d %-8s rows=%-2d default %8s us  pick %8s us  %s %8s us  %s\n",
                      n, k, p.format().c_str(), rows, us(p.t_default).c_str(), us(p.t_pick).c_str(),
                      kPeer, us(p.t_peer).c_str(), p.pick_tactic.c_str());
        std::fflush(stdout);
        points.push_back(std::move(p));
      }
    }
  }

  // Geometric means over rows 1..16 and over all rows.
  std::vector<double> ratio_16, peer_16, ratio_all, peer_all;
  for (const Point &p : points) {
    if (!p.error.empty())
      continue;
    ratio_all.push_back(p.ratio());
    peer_all.push_back(p.peer_over_pick());
    if (p.rows <= 16) {
      ratio_16.push_back(p.ratio());
      peer_16.push_back(p.peer_over_pick());
    }
  }

  nlohmann::json doc =
      hone::bench::matrix_doc("qmv_affine_matrix", backend, options.samples, read_bandwidth, tuned);
  doc["peer"] = std::string(kPeer) +
                " (cuBLASLt BF16 GEMM, fp32 compute, bf16 out, on the weights dequantised to "
                "bf16 up front: a representation change, not a matched peer)";
  doc["results"] = nlohmann::json::array();
  for (const Point &p : points)
    doc["results"].push_back(to_json(p, read_bandwidth));
  doc["geomean"] = {{"rows_1_16", {{"pick_over_default", geomean(ratio_16)}}},
                    {"all_rows", {{"pick_over_default", geomean(ratio_all)}}}};
  doc["representation_change_geomean"] = {
      {"peer", kPeer},
      {"rows_1_16", {{"cublas_dequant_over_pick", geomean(peer_16)}}},
      {"all_rows", {{"cublas_dequant_over_pick", geomean(peer_all)}}}};
  hone::bench::write_json(options.json_path, doc);

  // The compact table last.
  std::printf("\n| N | K | format | rows | t_default us | t_pick us | t_%s us | pick/default | "
              "weight GB/s | of read bw |\n",
              kPeer);
  std::printf("|---:|---:|:---|---:|---:|---:|---:|---:|---:|---:|\n");
  int failed = 0;
  for (const Point &p : points) {
    if (!p.error.empty()) {
      ++failed;
      std::printf("| %d | %d | %s | %d | failed | | | | | |\n", p.n, p.k, p.format().c_str(),
                  p.rows);
      continue;
    }
    std::printf("| %d | %d | %s | %d | %s | %s | %s | %s | %s | %s |\n", p.n, p.k,
                p.format().c_str(), p.rows, us(p.t_default).c_str(), us(p.t_pick).c_str(),
                us(p.t_peer).c_str(), fixed(p.ratio(), 3).c_str(),
                fixed(p.weight_bandwidth() / 1e9, 0).c_str(),
                read_bandwidth > 0 ? fixed(p.weight_bandwidth() / read_bandwidth, 2).c_str() : "-");
  }
  std::printf("\ngeomean rows 1-16: pick/default %.3f (%zu points)\n", geomean(ratio_16),
              ratio_16.size());
  std::printf("geomean all rows:  pick/default %.3f (%zu points)\n", geomean(ratio_all),
              ratio_all.size());
  std::printf("representation change, apart: %s (bf16 weights) / quantized pick, geomean "
              "rows 1-16 %.2f, all rows %.2f\n",
              kPeer, geomean(peer_16), geomean(peer_all));
  if (failed > 0)
    std::printf("%d point(s) failed; see stderr and the JSON\n", failed);
  return failed > 0 ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  MatrixOptions options;
  CLI::App app{"qmv.affine: default vs tuned pick, with cuBLASLt on dequantised weights "
               "(a representation change) alongside, cold L2, interleaved"};
  std::string shapes, rows, formats;
  app.add_option("--shapes", shapes, "comma-separated NxK list, e.g. 4096x4096,14336x4096");
  app.add_option("--rows", rows, "comma-separated row counts (1..32)");
  app.add_option("--formats", formats,
                 "comma-separated BITSxGROUP list, e.g. 4x64,4x128,8x64 (bits 4|8, group "
                 "32|64|128)");
  app.add_option("--json", options.json_path, "write the full results as JSON to FILE");
  app.add_option("--samples", options.samples, "samples per median (>= 5)")
      ->check(CLI::Range(5, 1000));
  app.add_flag("--quick", options.quick,
               "a reduced matrix: 2 shapes, rows 1,4,16,32, formats 4x64 and 8x64");
  CLI11_PARSE(app, argc, argv);
  try {
    if (options.quick) {
      options.shapes = {{4096, 4096}, {14336, 4096}};
      options.rows = {1, 4, 16, 32};
      options.formats = {{4, 64}, {8, 64}};
    }
    if (!shapes.empty())
      options.shapes = hone::bench::parse_pairs(shapes, "--shapes", "NxK (e.g. 4096x4096)");
    if (!rows.empty())
      options.rows = hone::bench::parse_ints(rows, "--rows");
    if (!formats.empty())
      options.formats = hone::bench::parse_pairs(formats, "--formats", "BITSxGROUP (e.g. 4x64)");
    for (const auto &[bits, group] : options.formats)
      if ((bits != 4 && bits != 8) || (group != 32 && group != 64 && group != 128))
        HONE_INVALID_ARGUMENT("--formats: " + std::to_string(bits) + "x" + std::to_string(group) +
                              " is not bits 4|8 x group 32|64|128");
    return run(options);
  } catch (const hone::Error &e) {
    std::fprintf(stderr, "qmv_affine_matrix: %s\n", e.what());
    return e.kind() == hone::ErrorKind::invalid_argument ? 2 : 1;
  }
}
