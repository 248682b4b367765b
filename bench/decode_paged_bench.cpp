// decode_paged_bench: the decode.paged acceptance configs (docs/notes/decode_paged.md), each
// timed at the default heuristic kv_chunk, at every tuning candidate (the fastest of them is
// what tuning would pick), unsplit (kv_chunk = 0) and, where the default splits, the default
// with the merge fused into the split kernel (fused_merge=1, one kernel), and with several KV
// heads per CTA (decode_paged_kv_heads_configs: kv_heads=2/4/8); the last two are not tuning
// candidates (the entry point's plan runs neither) and are reported beside the tuned pick.
// Subjects are interleaved sample by sample on one workload with cold L2, after every subject
// passed the float64 gate on the same lengths.
//
//   decode_paged_bench --json decode_paged_bench.json [--read-bandwidth 4455] [--configs quick]
//
// One sample is one CUDA-graph replay of B launches (B calibrated on the default so that a
// sample lasts >= 100 sync round trips), each launch on the next of R = ceil(8 x L2 / bytes) + 1
// input copies (an explicit L2 flush between samples where R copies exceed the memory
// budget); the time is the median of at least --samples (>= 7) samples. KV GB/s counts the K
// and V bytes of every token read once; the fraction is of --read-bandwidth (default: the
// backend's probe).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/ops/decode_paged_op.h"
#include "hone/error.h"
#include "hone/measurement.h"
#include "hone/stats.h"

namespace {

using hone::cuda::DecodePagedConfig;
using hone::cuda::DecodePagedProblem;

// The ragged acceptance batch: 16 lengths from 100 to 32768 (also in
// bench/peers/decode_paged_torch.py and bench/shapes/decode.paged.txt, total 165347).
const std::vector<int32_t> kRagged16 = {100,  32768, 517,  20000, 3000, 9000,  1024, 27000,
                                        640,  15000, 5000, 12000, 250,  30000, 7000, 2048};

struct Config {
  std::string name;
  int hq, hkv, head_dim, page_size;
  std::vector<int32_t> lengths;
  bool quick; // in the --configs quick set
};

std::vector<int32_t> uniform(int batch, int len) { return std::vector<int32_t>(batch, len); }

std::vector<Config> acceptance_configs() {
  std::vector<Config> out;
  const auto add = [&](const std::string &suffix, int hq, int hkv, int d, bool main_set) {
    const std::vector<std::pair<std::string, std::vector<int32_t>>> sizes = {
        {"1x1k", uniform(1, 1024)},   {"1x4k", uniform(1, 4096)},
        {"1x32k", uniform(1, 32768)}, {"1x128k", uniform(1, 131072)},
        {"8x4k", uniform(8, 4096)},   {"8x32k", uniform(8, 32768)},
        {"32x4k", uniform(32, 4096)}, {"64x2k", uniform(64, 2048)},
        {"ragged16", kRagged16}};
    for (const auto &[size, lengths] : sizes) {
      const bool subset = size == "1x4k" || size == "1x32k" || size == "8x4k" || size == "ragged16";
      if (!main_set && !subset)
        continue;
      const bool quick = main_set && (size == "1x4k" || size == "1x32k" || size == "ragged16");
      out.push_back({size + suffix, hq, hkv, d, 16, lengths, quick});
    }
  };
  add("", 32, 8, 128, true);         // Hq 32, Hkv 8, D 128, page 16
  add("-hq28-hkv4", 28, 4, 128, false);
  add("-d64", 32, 8, 64, false);
  return out;
}

struct Subject {
  std::string label; // "default", "unsplit", "candidate", "fused_merge" or "kv_heads"
  DecodePagedConfig config;
  double error = 0;  // relative L2 against the reference
  std::vector<double> times;
  double median = 0, spread = 0;
};

Subject subject(std::string label, const DecodePagedConfig &config) {
  Subject s;
  s.label = std::move(label);
  s.config = config;
  return s;
}

std::string tactic_text(const DecodePagedConfig &c) { return c.to_tactic().str(); }

struct Result {
  std::string name;
  Config config;
  size_t kv_bytes = 0;
  int copies = 1, batch = 0;
  bool flush = false;
  std::vector<Subject> subjects;
  // The fastest tuning candidate (fused_merge and kv_heads are measured beside them).
  const Subject &best() const {
    const Subject *b = nullptr;
    for (const Subject &s : subjects)
      if (s.label != "fused_merge" && s.label != "kv_heads" &&
          (b == nullptr || s.median < b->median))
        b = &s;
    return *b;
  }
  // The fastest kv_heads subject, or null.
  const Subject *best_kv_heads() const {
    const Subject *b = nullptr;
    for (const Subject &s : subjects)
      if (s.label == "kv_heads" && (b == nullptr || s.median < b->median))
        b = &s;
    return b;
  }
  const Subject *find(const std::string &label) const {
    for (const Subject &s : subjects)
      if (s.label == label)
        return &s;
    return nullptr;
  }
  const Subject &labelled(const std::string &label) const {
    for (const Subject &s : subjects)
      if (s.label == label)
        return s;
    HONE_RUNTIME_ERROR("no subject " + label);
  }
};

Result run_config(hone::cuda::CudaBackend &backend, const Config &c, int samples) {
  DecodePagedProblem p;
  p.hq = c.hq;
  p.hkv = c.hkv;
  p.head_dim = c.head_dim;
  p.page_size = c.page_size;
  p.lengths = c.lengths;
  hone::cuda::DecodePagedWorkload w(backend, p, 0.0, 20261212);
  Result r;
  r.name = c.name;
  r.config = c;
  r.kv_bytes = w.kv_bytes();

  const std::vector<DecodePagedConfig> candidates = hone::cuda::decode_paged_candidate_configs(
      w.table().indptr, p.hkv, p.head_dim, p.page_size);
  r.subjects.push_back(subject("default", candidates.front()));
  const DecodePagedConfig unsplit{0, candidates.front().warps};
  r.subjects.push_back(subject("unsplit", unsplit));
  for (const DecodePagedConfig &cand : candidates)
    if (!(cand == candidates.front()) && !(cand == unsplit))
      r.subjects.push_back(subject("candidate", cand));
  if (w.split(candidates.front()).max_chunks > 1) {
    DecodePagedConfig fused = candidates.front();
    fused.fused_merge = 1;
    r.subjects.push_back(subject("fused_merge", fused));
  }
  for (const DecodePagedConfig &cand : hone::cuda::decode_paged_kv_heads_configs(
           w.table().indptr, p.hkv, p.head_dim, p.page_size))
    r.subjects.push_back(subject("kv_heads", cand));
  // The gate first: every subject must match the float64 reference on these lengths, every
  // output written (poisoned before each run). One set of random inputs and one reference
  // serve every subject (the device tests draw fresh inputs per check).
  // The fused merge must also give the default's bits exactly (the same merge order).
  w.randomize_inputs();
  const hone::cuda::DecodePagedReference ref = w.reference_of(0);
  std::vector<uint16_t> default_o;
  for (Subject &s : r.subjects) {
    w.poison_output();
    const hone::cuda::LaunchStatus status = w.launch(s.config, 0);
    if (!status.ok())
      HONE_RUNTIME_ERROR(c.name + ": " + tactic_text(s.config) + ": " + status.message());
    const std::vector<uint16_t> o = w.download_y();
    if (s.label == "default")
      default_o = o;
    if (s.label == "fused_merge" && o != default_o)
      HONE_RUNTIME_ERROR(c.name + ": " + tactic_text(s.config) +
                         " differs from the merge kernel's bits");
    const hone::cuda::DecodePagedComparison cmp =
        hone::cuda::compare_decode_paged(o, nullptr, ref, p.head_dim);
    if (cmp.nan_count > 0 || !(cmp.relative_l2 <= hone::cuda::kDecodePagedRelativeL2Bound))
      HONE_RUNTIME_ERROR(c.name + ": " + tactic_text(s.config) + " fails the gate: " +
                         std::to_string(cmp.nan_count) + " NaN outputs, relative L2 " +
                         std::to_string(cmp.relative_l2));
    s.error = cmp.relative_l2;
  }

  const hone::DeviceInfo &info = backend.info();
  const hone::RotationPlan plan = hone::plan_rotation(info.llc_bytes, w.bytes_per_launch(),
                                                      info.memory_budget_bytes, /*cold=*/true);
  w.set_rotation(plan.copies);
  r.copies = w.rotation();
  r.flush = plan.flush;
  hone::Measurement m(backend.timer(), &backend);
  const hone::Tactic first = r.subjects.front().config.to_tactic();
  r.batch = m.calibrate([&](int copy) { w.run(first, copy); }, r.copies);
  // Interleaved so that every subject directly follows every other one equally often.
  for (size_t i : hone::interleaved_order(r.subjects.size(), samples)) {
    Subject &subject = r.subjects[i];
    const hone::Tactic t = subject.config.to_tactic();
    subject.times.push_back(
        m.sample([&](int copy) { w.run(t, copy); }, r.batch, r.copies, r.flush));
  }
  for (Subject &s : r.subjects) {
    s.median = hone::median(s.times);
    s.spread = hone::relative_spread(s.times);
  }
  return r;
}

nlohmann::json subject_json(const Subject &s, size_t kv_bytes, double bandwidth) {
  return {{"label", s.label},         {"tactic", tactic_text(s.config)},
          {"kv_chunk", s.config.kv_chunk}, {"warps", s.config.warps},
          {"kv_heads", s.config.kv_heads}, {"fused_merge", s.config.fused_merge},
          {"median_s", s.median},     {"spread", s.spread},
          {"kv_gbps", kv_bytes / s.median / 1e9},
          {"read_fraction", kv_bytes / s.median / bandwidth},
          {"relative_l2", s.error}};
}

int run(int argc, char **argv) {
  CLI::App app{"decode.paged acceptance configs: default, every kv_chunk candidate, unsplit"};
  std::string json_path, which = "all";
  double read_gbps = 0;
  int samples = 9;
  app.add_option("--json", json_path, "write the results here");
  app.add_option("--configs", which, "all, quick, or a comma-separated list of config names");
  app.add_option("--read-bandwidth", read_gbps,
                 "device read bandwidth in GB/s (default: the backend's probe)");
  app.add_option("--samples", samples,
                 "samples per median, at least (rounded up to whole interleaving circuits; >= 7)")
      ->check(CLI::Range(7, 1000));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError &e) {
    return app.exit(e);
  }

  std::vector<Config> configs;
  for (const Config &c : acceptance_configs()) {
    const bool named = ("," + which + ",").find("," + c.name + ",") != std::string::npos;
    if (which == "all" || (which == "quick" && c.quick) || named)
      configs.push_back(c);
  }
  if (configs.empty())
    HONE_INVALID_ARGUMENT("--configs " + which + ": no such config");

  hone::cuda::CudaBackend &backend = hone::cuda::cuda_backend();
  double bandwidth = read_gbps * 1e9;
  std::string source = "--read-bandwidth";
  if (bandwidth <= 0) {
    bandwidth = backend.measure_read_bandwidth().value_or(0);
    source = "measured (read probe)";
  }
  HONE_CHECK(bandwidth > 0, "no read bandwidth: pass --read-bandwidth");
  std::printf("device %s, %d SMs, read bandwidth %.0f GB/s (%s)\n",
              backend.info().model.c_str(), backend.info().compute_units, bandwidth / 1e9,
              source.c_str());

  nlohmann::json results = nlohmann::json::array();
  std::vector<Result> done;
  for (const Config &c : configs) {
    try {
      Result r = run_config(backend, c, samples);
      const Subject &def = r.labelled("default"), &best = r.best(), &un = r.labelled("unsplit");
      std::printf("%-18s %8.2f MB  default %-34s %8.2f us  best %-34s %8.2f us  unsplit %8.2f "
                  "us  (%zu subjects, %d copies%s, batch %d)\n",
                  c.name.c_str(), r.kv_bytes / 1e6, tactic_text(def.config).c_str(),
                  def.median * 1e6, tactic_text(best.config).c_str(), best.median * 1e6,
                  un.median * 1e6, r.subjects.size(), r.copies, r.flush ? " + flush" : "",
                  r.batch);
      std::fflush(stdout);
      nlohmann::json subjects = nlohmann::json::array();
      for (const Subject &s : r.subjects)
        subjects.push_back(subject_json(s, r.kv_bytes, bandwidth));
      results.push_back({{"config", c.name},
                         {"hq", c.hq},
                         {"hkv", c.hkv},
                         {"head_dim", c.head_dim},
                         {"page_size", c.page_size},
                         {"batch", c.lengths.size()},
                         {"lengths", c.lengths},
                         {"kv_bytes", r.kv_bytes},
                         {"ceiling_s", r.kv_bytes / bandwidth},
                         {"rotation_copies", r.copies},
                         {"flush", r.flush},
                         {"batch_per_sample", r.batch},
                         {"default", subject_json(def, r.kv_bytes, bandwidth)},
                         {"tuned", subject_json(best, r.kv_bytes, bandwidth)},
                         {"unsplit", subject_json(un, r.kv_bytes, bandwidth)},
                         {"kv_heads", r.best_kv_heads()
                                          ? subject_json(*r.best_kv_heads(), r.kv_bytes,
                                                         bandwidth)
                                          : nlohmann::json(nullptr)},
                         {"fused_merge", r.find("fused_merge")
                                              ? subject_json(*r.find("fused_merge"), r.kv_bytes,
                                                             bandwidth)
                                              : nlohmann::json(nullptr)},
                         {"subjects", subjects}});
      done.push_back(std::move(r));
    } catch (const hone::Error &e) { // one config failing does not end the sweep
      std::printf("%-18s FAILED: %s\n", c.name.c_str(), e.what());
      results.push_back({{"config", c.name}, {"error", e.what()}});
    }
  }

  std::printf("\n| config | KV MB | default us (frac) | tuned us (frac) | tactic | unsplit us "
              "(frac) | default/tuned | unsplit/tuned | fused merge us (/default) | best kv_heads "
              "us (frac) | kv_heads tactic |\n|---|---:|---:|---:|---|---:|---:|---:|---:|---:|---|\n");
  for (const Result &r : done) {
    const Subject &def = r.labelled("default"), &best = r.best(), &un = r.labelled("unsplit");
    const auto frac = [&](const Subject &s) { return r.kv_bytes / s.median / bandwidth; };
    char two[64] = "-";
    if (const Subject *mk = r.find("fused_merge"))
      std::snprintf(two, sizeof two, "%.2f (%.2f)", mk->median * 1e6, mk->median / def.median);
    char heads[64] = "-";
    std::string heads_tactic = "-";
    if (const Subject *kh = r.best_kv_heads()) {
      std::snprintf(heads, sizeof heads, "%.2f (%.2f)", kh->median * 1e6, frac(*kh));
      heads_tactic = tactic_text(kh->config);
    }
    std::printf("| %s | %.1f | %.2f (%.2f) | %.2f (%.2f) | %s | %.2f (%.2f) | %.2f | %.2f | %s | "
                "%s | %s |\n",
                r.name.c_str(), r.kv_bytes / 1e6, def.median * 1e6, frac(def), best.median * 1e6,
                frac(best), tactic_text(best.config).c_str(), un.median * 1e6, frac(un),
                def.median / best.median, un.median / best.median, two, heads,
                heads_tactic.c_str());
  }
  if (!json_path.empty()) {
    const nlohmann::json doc = {{"format", "hone.bench.decode_paged"},
                                {"format_version", 1},
                                {"device", backend.info().model},
                                {"sms", backend.info().compute_units},
                                {"l2_bytes", backend.info().llc_bytes},
                                {"method", backend.method_id()},
                                {"read_bandwidth", bandwidth},
                                {"read_bandwidth_source", source},
                                {"samples", samples},
                                {"results", results}};
    std::ofstream(json_path) << doc.dump(2) << "\n";
  }
  return done.size() == configs.size() ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const hone::Error &e) {
    std::fprintf(stderr, "decode_paged_bench: %s\n", e.what());
    return e.kind() == hone::ErrorKind::invalid_argument ? 2 : 1;
  }
}
