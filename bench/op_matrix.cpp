// op_matrix: the benchmark matrix of any registered op. For every shape of the op's shape list
// (bench/shapes/<op>.txt) it tunes the shape's bucket, then times, in the same run and on the
// same inputs, the bucket's static default, hone's pick, any extra tactics asked for, and every
// peer registered for the op, interleaved round-robin with cold L2. A peer that reads another
// representation (bf16 weights against int4) is named as such by its registration and
// reported apart, never as hone's speedup.
//
// --warm measures warm instead: one input copy reused, no LLC flush, for the tunes as for the
// timing. Each bucket is then tuned by a warm TuningStore without a file, so the pick is what a
// warm cache would hold (its metadata method ends in "+warm"); no run of op_matrix reads or
// writes the tuning cache. The header, the table's caption and the JSON ("mode") say which.
//
//   op_matrix --op gemv.bf16 --set quick --json out.json
//   op_matrix --op qmv.affine --shapes my_shapes.txt --peers none
//   op_matrix --op decode.paged --also decode.paged:kv_chunk=0
//   op_matrix --op gemv.bf16 --numerics tolerance   # cuBLASLt among the candidates too
//   op_matrix --op rmsnorm --set quick --warm        # warm LLC: what an L2-resident op sees
//
// With --numerics tolerance, gemv.bf16's tune also weighs cuBLASLt's heuristic algorithms
// (vendor tactics). hone's own best kernel of the tune is then timed too, as "best_own", so
// that a vendor pick cannot hide a weak kernel: best_own/pick and cublas/best_own are hone's
// own standing.
//
// Bandwidth is the workload's bytes_per_launch() (every input read once, every output
// written once) over the pick's time, and its fraction of the device's measured read
// bandwidth.
#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "hone/backend.h"
#include "hone/error.h"
#include "hone/registry.h"
#include "hone/tune.h"
#include "hone/tuning_store.h"
#include "matrix_common.h"
#include "shape_list.h"

namespace {

using hone::bench::fixed;
using hone::bench::geomean;
using hone::bench::us;

struct Options {
  std::string op;
  std::string backend; // default: the best present
  std::string shapes;  // default: bench/shapes/<op>.txt beside this program's sources
  std::string set = "full";
  std::string peers = "all"; // "all", "none" or a comma-separated list
  std::vector<std::string> also;
  std::string json_path;
  int samples = 7;      // per median, for every subject
  std::string numerics; // of the tunes: batch_invariant or tolerance; empty: the op's default
  bool warm = false;    // tune and time warm (one input copy, no flush); default cold
  bool flush_every_sample = false; // cold: the LLC flush before every sample of every subject
  double rotate_llc = hone::kRotationLlcMultiple; // cold: copies span >= this x the LLC
};

// One timed subject of a point: a tactic of the op or a peer.
struct Subject {
  std::string label; // "default", "pick", a tactic's text, or the peer's name
  double t = 0;      // [seconds] per launch, median
  double spread = 0; // IQR / median
};

struct Point {
  hone::Shape shape;
  std::string shape_text, bucket, default_tactic, pick_tactic;
  std::string best_own_tactic; // the best of hone's own kernels of the tune (best_own_index)
  double tune_ratio = 1, noise_floor = 0, margin = 0;
  int candidates = 0, gated_out = 0, batch = 0, copies = 0;
  bool flush = false;
  size_t bytes = 0;                 // [bytes] per launch
  std::vector<Subject> subjects;    // default, pick, extra tactics, peers
  std::vector<std::string> skipped; // extra tactics this shape cannot run, with the reason
  std::string error;                // non-empty when the point failed (the sweep goes on)
  const Subject *find(const std::string &label) const {
    for (const Subject &s : subjects)
      if (s.label == label)
        return &s;
    return nullptr;
  }
  double t(const std::string &label) const { return find(label) ? find(label)->t : 0; }
};

std::vector<std::string> split_commas(const std::string &text) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t at = text.find(',', start);
    const std::string item = text.substr(start, at == std::string::npos ? at : at - start);
    if (!item.empty())
      out.push_back(item);
    if (at == std::string::npos)
      break;
    start = at + 1;
  }
  return out;
}

// Tunes the bucket of `p.shape` once per bucket (kept in `tuned`) with `store` (whose mode is
// tune_options.measure.cold's), then times default, pick, extras and peers round-robin on one
// workload in the same mode. Throws Error for a shape the op rejects or a default or pick that
// cannot run it.
void measure(hone::Backend &backend, const hone::TunableOp &op,
             const std::vector<std::pair<std::string, const hone::PeerFactory *>> &peers,
             const std::vector<hone::Tactic> &also, int samples,
             const hone::TuneOptions &tune_options, const hone::TuningStore &store,
             bool flush_every_sample, double rotate_llc,
             std::map<std::string, hone::TuneReport> &tuned, Point &p) {
  op.validate(p.shape);
  const std::optional<hone::Shape> bucket = op.buckets().map(p.shape);
  HONE_CHECK(bucket.has_value(), "shape outside the " + std::string(op.name()) + " buckets");
  p.bucket = op.buckets().describe(*bucket);
  auto it = tuned.find(p.bucket);
  if (it == tuned.end())
    it = tuned.emplace(p.bucket, store.tune(op, *bucket, tune_options)).first;
  const hone::TuneResult &r = it->second.result;
  p.candidates = static_cast<int>(r.candidates.size());
  for (const hone::CandidateReport &c : r.candidates)
    p.gated_out += c.status != hone::Status::ok ? 1 : 0;
  p.tune_ratio = r.ratio;
  p.noise_floor = r.noise_floor;
  p.margin = r.margin;
  const hone::Tactic default_tactic = op.default_tactic(*bucket);
  const hone::Tactic pick = r.pick();
  p.default_tactic = default_tactic.str();
  p.pick_tactic = pick.str();
  const std::optional<size_t> own = hone::best_own_index(op, r);
  const hone::Tactic best_own = own ? r.candidates[*own].tactic : default_tactic;
  p.best_own_tactic = best_own.str();

  std::unique_ptr<hone::Workload> workload = op.prepare(p.shape);
  std::vector<std::pair<std::string, hone::Tactic>> tactics{{"default", default_tactic},
                                                            {"pick", pick}};
  // hone's own best apart from a vendor pick, timed in the same round.
  const bool own_is_pick = best_own == pick;
  if (!own_is_pick && best_own != default_tactic)
    tactics.emplace_back("best_own", best_own);
  for (const hone::Tactic &t : also)
    tactics.emplace_back(t.str(), t);
  std::vector<std::pair<std::string, hone::Tactic>> runnable;
  for (auto &[label, t] : tactics) {
    std::string reason;
    hone::CheckResult c;
    if (workload->can_run(t, &reason) == hone::Status::ok) {
      c = workload->check(t, hone::Numerics::tolerance);
      reason = c.reason;
    }
    if (reason.empty() && c.pass()) {
      runnable.emplace_back(label, t);
      continue;
    }
    if (label == "default" || label == "pick")
      HONE_RUNTIME_ERROR(label + " " + t.str() + " cannot run " + p.shape_text + ": " + reason);
    p.skipped.push_back(t.str() + ": " + reason);
  }
  const hone::DeviceInfo &info = backend.info();
  const hone::RotationPlan plan =
      hone::plan_rotation(info.llc_bytes, workload->bytes_per_launch(), info.memory_budget_bytes,
                          tune_options.measure.cold, rotate_llc);
  workload->set_rotation(plan.copies);
  p.copies = workload->rotation();
  p.flush = plan.flush;
  p.bytes = workload->bytes_per_launch();
  // Peers are made after the rotation is set and the checks are done: a peer that prepares
  // copies of its own (dequantised weights) is then at least as cold as the kernel.
  std::vector<std::unique_ptr<hone::Peer>> made;
  for (const auto &[name, factory] : peers)
    made.push_back((*factory)(*workload));

  std::vector<std::string> labels;
  std::vector<hone::LaunchFn> launches;
  // When the tune kept the default, the pick is the same kernel: it is timed once, so its
  // ratio is 1 by construction rather than two positions of one kernel in the round.
  const bool pick_is_default = pick == default_tactic;
  for (const auto &[label, t] : runnable) {
    if (label == "pick" && pick_is_default)
      continue;
    labels.push_back(label);
    launches.push_back([&, t = t](int copy) { workload->run(t, copy); });
  }
  for (size_t i = 0; i < made.size(); ++i) {
    labels.push_back(peers[i].first);
    launches.push_back([&, i](int copy) { made[i]->run(copy); });
  }
  hone::Measurement m(backend.timer(), &backend, tune_options.measure);
  // One batch for every subject, calibrated on the default: identical sample context.
  p.batch = m.calibrate(launches[0], p.copies);
  std::vector<size_t> order(launches.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  const bool flush = p.flush || (flush_every_sample && tune_options.measure.cold);
  const std::vector<std::vector<double>> times =
      hone::bench::time_round_robin(m, launches, order, p.batch, p.copies, flush, samples);
  for (size_t i = 0; i < labels.size(); ++i)
    p.subjects.push_back({labels[i], hone::median(times[i]), hone::relative_spread(times[i])});
  if (pick_is_default)
    p.subjects.insert(p.subjects.begin() + 1,
                      Subject{"pick", p.subjects[0].t, p.subjects[0].spread});
  // hone's own best is the default: its time, under its own label (the pick is the vendor's).
  if (!own_is_pick && best_own == default_tactic) {
    const Subject same = *p.find(own_is_pick ? "pick" : "default");
    p.subjects.push_back(Subject{"best_own", same.t, same.spread});
  }
}

nlohmann::json to_json(const Point &p, double read_bandwidth) {
  nlohmann::json j{{"shape", p.shape_text}, {"bucket", p.bucket}};
  if (!p.error.empty()) {
    j["error"] = p.error;
    return j;
  }
  const double t_pick = p.t("pick");
  j.update({{"default_tactic", p.default_tactic},
            {"pick_tactic", p.pick_tactic},
            {"best_own_tactic", p.best_own_tactic},
            {"pick_over_default", t_pick / p.t("default")},
            {"tune_ratio", p.tune_ratio},
            {"tune_noise_floor", p.noise_floor},
            {"tune_margin", p.margin},
            {"candidates", p.candidates},
            {"gated_out", p.gated_out},
            {"batch", p.batch},
            {"rotation_copies", p.copies},
            {"flush", p.flush},
            {"bytes_per_launch", p.bytes},
            {"bandwidth_bytes_per_s", static_cast<double>(p.bytes) / t_pick},
            {"fraction_of_read_bandwidth",
             read_bandwidth > 0 ? static_cast<double>(p.bytes) / t_pick / read_bandwidth : 0.0},
            {"times", nlohmann::json::object()}});
  // hone's own best is the pick unless a vendor tactic won.
  const double t_own = p.find("best_own") ? p.t("best_own") : t_pick;
  for (const Subject &s : p.subjects) {
    j["times"][s.label] = {{"t_s", s.t}, {"spread", s.spread}, {"over_pick", s.t / t_pick}};
    if (t_own > 0)
      j["times"][s.label]["over_best_own"] = s.t / t_own;
  }
  if (!p.skipped.empty())
    j["skipped"] = p.skipped;
  return j;
}

int run(const Options &o) {
  hone::Registry &registry = hone::Registry::global();
  const std::string backend_name =
      o.backend.empty() ? hone::available_backends().front() : o.backend;
  hone::Backend &backend = hone::get_backend(backend_name);
  const hone::TunableOp *op = registry.find(o.op, backend_name);
  if (!op)
    HONE_INVALID_ARGUMENT("--op " + o.op + ": no such op on backend " + backend_name);
  std::vector<std::pair<std::string, const hone::PeerFactory *>> peers;
  const std::vector<std::string> wanted = o.peers == "all"    ? registry.peers(*op)
                                          : o.peers == "none" ? std::vector<std::string>{}
                                                              : split_commas(o.peers);
  for (const std::string &name : wanted) {
    const hone::PeerFactory *f = registry.find_peer(*op, name);
    if (!f)
      HONE_INVALID_ARGUMENT("--peers: " + o.op + " has no peer '" + name + "'");
    peers.emplace_back(name, f);
  }
  std::vector<hone::Tactic> also;
  for (const std::string &text : o.also)
    also.push_back(hone::Tactic::parse(text));
  const std::filesystem::path shapes_path =
      o.shapes.empty() ? std::filesystem::path(HONE_BENCH_SHAPES_DIR) / (o.op + ".txt")
                       : std::filesystem::path(o.shapes);
  const std::vector<hone::Shape> shapes = hone::bench::read_shape_list(shapes_path, *op, o.set);

  const double read_bandwidth = backend.measure_read_bandwidth().value_or(0);
  const bool cold = !o.warm;
  hone::bench::print_header(backend, o.samples, read_bandwidth, cold);
  std::printf("op: %s (%s), %zu shapes (%s set of %s), peers: %s\n", o.op.c_str(),
              backend_name.c_str(), shapes.size(), o.set.c_str(), shapes_path.string().c_str(),
              wanted.empty() ? "none" : o.peers.c_str());
  std::fflush(stdout);

  hone::TuneOptions tune_options;
  if (!o.numerics.empty())
    tune_options.numerics =
        o.numerics == "tolerance" ? hone::Numerics::tolerance : hone::Numerics::batch_invariant;
  tune_options.measure.cold = cold;
  const hone::Numerics numerics = tune_options.numerics.value_or(op->default_numerics());
  std::printf("tunes: %s numerics, %s\n", hone::to_string(numerics), hone::bench::mode_name(cold));
  // The tunes' store: no file (nothing is read from or written to the tuning cache), in the
  // run's mode, so a warm run's picks are warm tunes' picks.
  const hone::TuningStore store(backend, std::nullopt, cold);

  std::map<std::string, hone::TuneReport> tuned;
  std::vector<Point> points;
  for (const hone::Shape &shape : shapes) {
    Point p;
    p.shape = shape;
    p.shape_text = op->buckets().describe(shape);
    try {
      measure(backend, *op, peers, also, o.samples, tune_options, store, o.flush_every_sample,
              o.rotate_llc, tuned, p);
    } catch (const hone::Error &e) {
      p.error = e.what();
      std::fprintf(stderr, "%s: %s\n", p.shape_text.c_str(), e.what());
    }
    if (p.error.empty()) {
      std::printf("%s:", p.shape_text.c_str());
      for (const Subject &s : p.subjects)
        std::printf("  %s %s us", s.label.c_str(), us(s.t).c_str());
      std::printf("  [%s]\n", p.pick_tactic.c_str());
    }
    std::fflush(stdout);
    points.push_back(std::move(p));
  }

  // Geometric means: pick/default, and every other subject over the pick.
  std::map<std::string, std::vector<double>> over_pick;
  std::vector<double> ratio;
  for (const Point &p : points) {
    if (!p.error.empty())
      continue;
    ratio.push_back(p.t("pick") / p.t("default"));
    for (const Subject &s : p.subjects)
      if (s.label != "pick" && s.label != "default")
        over_pick[s.label].push_back(s.t / p.t("pick"));
  }
  nlohmann::json doc =
      hone::bench::matrix_doc("op_matrix", backend, o.samples, read_bandwidth, tuned, cold);
  doc["cache_method"] = store.metadata().method; // what a cache entry of these tunes would carry
  doc["flush_every_sample"] = o.flush_every_sample && cold;
  doc["rotate_llc"] = cold ? o.rotate_llc : 0.0;
  doc["op"] = o.op;
  doc["backend"] = backend_name;
  doc["set"] = o.set;
  doc["shapes_file"] = shapes_path.string();
  doc["peers"] = wanted;
  doc["numerics"] = hone::to_string(numerics);
  doc["results"] = nlohmann::json::array();
  for (const Point &p : points)
    doc["results"].push_back(to_json(p, read_bandwidth));
  doc["geomean"] = {{"pick_over_default", geomean(ratio)}};
  for (const auto &[label, v] : over_pick)
    doc["geomean"][label + "_over_pick"] = geomean(v);
  hone::bench::write_json(o.json_path, doc);

  // The compact table last: one column per subject, then ratios against the pick.
  // best_own: the best of hone's own kernels; shown when a vendor tactic was picked somewhere.
  std::vector<std::string> columns{"default", "pick"};
  bool vendor_picks = false;
  for (const Point &p : points)
    vendor_picks = vendor_picks || (p.error.empty() && p.find("best_own"));
  if (vendor_picks)
    columns.push_back("best_own");
  for (const std::string &t : o.also)
    columns.push_back(t);
  for (const auto &[name, f] : peers)
    columns.push_back(name);
  std::printf("\n%s, %s: %s\n\n| shape |", o.op.c_str(), hone::bench::mode_name(cold),
              hone::bench::mode_text(cold));
  for (const std::string &c : columns)
    std::printf(" %s us |", c.c_str());
  std::printf(" pick/default |");
  for (size_t c = 2; c < columns.size(); ++c)
    std::printf(" %s/pick |", columns[c].c_str());
  // Each peer against hone's own best as well, where a vendor tactic can be the pick.
  std::vector<std::string> over_own;
  if (vendor_picks)
    for (const auto &[name, f] : peers)
      over_own.push_back(name);
  std::map<std::string, std::vector<double>> over_own_ratios;
  for (const std::string &c : over_own)
    std::printf(" %s/best_own |", c.c_str());
  std::printf(" GB/s | of read bw |\n|---|");
  for (size_t c = 0; c < 2 * columns.size() - 1 + 2 + over_own.size(); ++c)
    std::printf("---:|");
  std::printf("\n");
  int failed = 0;
  for (const Point &p : points) {
    std::printf("| %s |", p.shape_text.c_str());
    if (!p.error.empty()) {
      ++failed;
      std::printf(" failed |\n");
      continue;
    }
    const double t_pick = p.t("pick");
    for (const std::string &c : columns)
      std::printf(" %s |", p.find(c) ? us(p.t(c)).c_str() : "-");
    std::printf(" %s |", fixed(t_pick / p.t("default"), 3).c_str());
    for (size_t c = 2; c < columns.size(); ++c)
      std::printf(" %s |", p.find(columns[c]) ? fixed(p.t(columns[c]) / t_pick, 2).c_str() : "-");
    for (const std::string &c : over_own) {
      const double t_own = p.find("best_own") ? p.t("best_own") : t_pick;
      if (p.find(c))
        over_own_ratios[c].push_back(p.t(c) / t_own);
      std::printf(" %s |", p.find(c) ? fixed(p.t(c) / t_own, 2).c_str() : "-");
    }
    const double bw = static_cast<double>(p.bytes) / t_pick;
    std::printf(" %s | %s |\n", fixed(bw / 1e9, 0).c_str(),
                read_bandwidth > 0 ? fixed(bw / read_bandwidth, 2).c_str() : "-");
  }
  std::printf("\ngeomean pick/default %.3f", geomean(ratio));
  for (const auto &[label, v] : over_pick)
    std::printf(", %s/pick %.2fx", label.c_str(), geomean(v));
  for (const auto &[label, v] : over_own_ratios)
    std::printf(", %s/best_own %.2fx", label.c_str(), geomean(v));
  std::printf(" (%zu points)\n", ratio.size());
  if (failed > 0)
    std::printf("%d point(s) failed; see stderr and the JSON\n", failed);
  return failed > 0 ? 1 : 0;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  CLI::App app{"An op's benchmark matrix: default vs tuned pick vs peers, cold L2 (or --warm), "
               "interleaved"};
  app.add_option("--op", o.op, "op name, e.g. gemv.bf16")->required();
  app.add_option("--backend", o.backend, "cpu or cuda (default: the best present)");
  app.add_option("--shapes", o.shapes, "shape list file (default: bench/shapes/<op>.txt)");
  app.add_option("--set", o.set, "full or quick")->check(CLI::IsMember({"full", "quick"}));
  app.add_option("--peers", o.peers, "all, none, or a comma-separated list of peer names");
  app.add_option("--also", o.also, "extra tactics to time beside default and pick");
  app.add_option("--json", o.json_path, "write the full results as JSON to FILE");
  app.add_option("--samples", o.samples,
                 "samples per median, at least (rounded up to whole interleaving circuits; >= 5)")
      ->check(CLI::Range(5, 1000));
  app.add_option("--numerics", o.numerics,
                 "numerics of the tunes: batch_invariant or tolerance (default: the op's; "
                 "tolerance admits gemv.bf16's cuBLASLt candidates)")
      ->check(CLI::IsMember({"batch_invariant", "tolerance"}));
  app.add_flag("--warm", o.warm,
               "tune and time warm: one input copy reused, no LLC flush (default: cold)");
  app.add_flag("--flush-every-sample", o.flush_every_sample,
               "cold: flush the LLC before every sample of every subject (outside the timed "
               "region), so that each starts after the same predecessor");
  app.add_option("--rotate-llc", o.rotate_llc,
                 "cold: the input copies a sample cycles through span at least this many times "
                 "the LLC (default: the tuner's kRotationLlcMultiple; the tunes keep theirs)")
      ->check(CLI::Range(1.0, 64.0));
  bool quick = false;
  app.add_flag("--quick", quick, "the quick set (same as --set quick)");
  CLI11_PARSE(app, argc, argv);
  if (quick)
    o.set = "quick";
  try {
    return run(o);
  } catch (const hone::Error &e) {
    std::fprintf(stderr, "op_matrix: %s\n", e.what());
    return e.kind() == hone::ErrorKind::invalid_argument ? 2 : 1;
  }
}
