#include "hone/tune_command.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <set>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "hone/error.h"
#include "hone/format.h"
#include "hone/key.h"
#include "hone/model_config.h"
#include "hone/progress.h"
#include "hone/registry.h"
#include "hone/settings.h"
#include "hone/shape_arg.h"
#include "hone/table.h"
#include "hone/tune.h"
#include "hone/tuning_store.h"

namespace hone::cli {

namespace {

using nlohmann::json;

// One bucket to tune: the first raw shape that mapped to it, and every model layer that did.
struct Problem {
  const TunableOp *op = nullptr;
  Shape shape;
  Shape bucket;
  std::string bucket_text;
  std::string key;                 // cache key
  std::vector<std::string> layers; // model layers mapping here ("qkv", ...); empty for --op
};

struct Outcome {
  const Problem *problem = nullptr;
  bool cached = false;
  std::optional<TuneReport> report; // set when tuned in this run
  CacheEntry entry;                 // the pick, as recorded in (or read from) the cache
};

// Validates `shape` for `op`, maps it to its bucket, checks that the bucket's workload fits
// in the device's memory and that any HONE_TACTIC_* override of the op is valid, and appends
// it unless its bucket is already listed (then only the layer name is added). Nothing is
// measured here, so a bad shape anywhere in the matrix stops the run before any measurement.
void add_problem(std::vector<Problem> &problems, const TunableOp &op, const Shape &shape,
                 const std::string &layer, const Backend &backend) {
  op.validate(shape);
  const std::optional<Shape> bucket = op.buckets().map(shape);
  if (!bucket)
    HONE_INVALID_ARGUMENT(std::string(op.name()) + ": shape " + op.buckets().describe(shape) +
                          " is outside the op's buckets");
  op.validate(*bucket);
  if (std::optional<std::string> shortfall = memory_shortfall(backend, op, *bucket))
    HONE_INVALID_ARGUMENT(*shortfall);
  op.env_override(*bucket, settings()); // throws naming a malformed or unrunnable variable
  const std::string key = cache_key(op, *bucket, backend.info().model);
  for (Problem &p : problems)
    if (p.key == key) {
      if (!layer.empty() && std::find(p.layers.begin(), p.layers.end(), layer) == p.layers.end())
        p.layers.push_back(layer);
      return;
    }
  Problem p;
  p.op = &op;
  p.shape = shape;
  p.bucket = *bucket;
  p.bucket_text = op.buckets().describe(*bucket);
  p.key = key;
  if (!layer.empty())
    p.layers.push_back(layer);
  problems.push_back(std::move(p));
}

// True when the op's dimensions begin with rows, n, k (a linear layer's problem).
bool is_linear(const TunableOp &op) {
  const std::vector<DimSpec> &dims = op.buckets().dims;
  return dims.size() >= 3 && dims[0].name == "rows" && dims[1].name == "n" && dims[2].name == "k";
}

// The dimension values beyond rows, n, k that a model run can fill; nullopt names none.
std::optional<std::vector<int64_t>> model_extras(const TunableOp &op, const TuneCommandOptions &o) {
  std::vector<int64_t> extras;
  const std::vector<DimSpec> &dims = op.buckets().dims;
  for (size_t i = 3; i < dims.size(); ++i) {
    if (dims[i].name == "bits")
      extras.push_back(o.bits);
    else if (dims[i].name == "group")
      extras.push_back(o.group);
    else
      return std::nullopt;
  }
  return extras;
}

// True when the op's dimensions are decode.paged's (a decode attention step's problem).
bool is_decode_attention(const TunableOp &op) {
  const std::vector<DimSpec> &dims = op.buckets().dims;
  const std::vector<std::string> &names = decode_attention_dim_names();
  if (dims.size() != names.size())
    return false;
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i].name != names[i])
      return false;
  return true;
}

// Pages of the decode attention steps a model run tunes (the size runtimes use most).
constexpr int64_t kModelPageSize = 16;

// The decode attention steps of `config` for `op`. A model whose heads the op cannot take is
// an error when the op was asked for (`explicit_op`), else a note and no steps. Steps whose
// workload does not fit in the device's memory are left out, with a note.
void add_attention_problems(std::vector<Problem> &problems, const TunableOp &op,
                            const ModelConfig &config, bool explicit_op, const Backend &backend) {
  const std::vector<DecodeAttentionStep> steps = decode_attention_steps(config, kModelPageSize);
  try {
    op.validate(Shape(std::span<const int64_t>(steps.front().dims), op.dtype()));
  } catch (const Error &e) {
    if (explicit_op || e.kind() != ErrorKind::invalid_argument)
      throw;
    std::cerr << "note: " << op.name() << " skipped: " << e.what() << '\n';
    return;
  }
  int too_large = 0;
  for (const DecodeAttentionStep &step : steps) {
    const Shape shape(std::span<const int64_t>(step.dims), op.dtype());
    if (const std::optional<Shape> bucket = op.buckets().map(shape);
        bucket && memory_shortfall(backend, op, *bucket)) {
      ++too_large;
      continue;
    }
    add_problem(problems, op, shape, "attention", backend);
  }
  if (too_large > 0)
    std::cerr << "note: " << op.name() << ": " << too_large << " of " << steps.size()
              << " batch x context steps do not fit in device memory and are left out\n";
}

std::vector<Problem> model_problems(const TuneCommandOptions &o, const Backend &backend,
                                    ModelConfig *config_out) {
  const ModelConfig config = o.model.empty() ? default_model_config() : load_model_config(o.model);
  *config_out = config;
  const std::vector<int64_t> rows = parse_rows(o.rows);

  std::vector<const TunableOp *> ops, attention_ops;
  if (o.ops.empty()) {
    for (const TunableOp *op : Registry::global().ops(backend.info().backend)) {
      if (is_linear(*op) && model_extras(*op, o))
        ops.push_back(op);
      else if (is_decode_attention(*op))
        attention_ops.push_back(op);
    }
    if (ops.empty())
      HONE_INVALID_ARGUMENT("backend " + backend.info().backend +
                            " has no op with dimensions rows, n, k to tune a model with");
  } else {
    for (const std::string &name : split_list(o.ops, "--ops")) {
      const TunableOp &op = find_op(name, backend);
      if (is_decode_attention(op)) {
        attention_ops.push_back(&op);
        continue;
      }
      if (!is_linear(op) || !model_extras(op, o))
        HONE_INVALID_ARGUMENT("--ops: op '" + name + "' has dimensions " + dim_names(op) +
                              "; a model fills only rows, n, k, bits and group, or the "
                              "dimensions of decode attention (" +
                              "batch, max_len, total_len, hq, hkv, head_dim, page_size)");
      ops.push_back(&op);
    }
  }

  std::vector<Problem> problems;
  for (const TunableOp *op : ops) {
    const std::vector<int64_t> extras = *model_extras(*op, o);
    const DimSpec &rows_dim = op->buckets().dims[0];
    for (const LinearLayer &layer : linear_layers(config, o.include_lm_head))
      for (int64_t r : rows) {
        // Each op takes the row counts its buckets cover: gemv.bf16 and qmv.affine stop at 32,
        // qmm.affine and quantized_linear run prefill up to 16384.
        if (r < rows_dim.lo || r > rows_dim.hi)
          continue;
        std::vector<int64_t> dims = {r, layer.n, layer.k};
        dims.insert(dims.end(), extras.begin(), extras.end());
        add_problem(problems, *op, Shape(std::span<const int64_t>(dims), op->dtype()), layer.name,
                    backend);
      }
  }
  if (problems.empty() && !ops.empty())
    HONE_INVALID_ARGUMENT("--rows " + o.rows + ": no op to tune takes these row counts");
  for (const TunableOp *op : attention_ops)
    add_attention_problems(problems, *op, config, !o.ops.empty(), backend);
  if (problems.empty())
    HONE_INVALID_ARGUMENT("--model " + config.name + ": nothing to tune");
  return problems;
}

json candidate_json(const CandidateReport &c) {
  return {{"tactic", c.tactic.str()},
          {"status", to_string(c.status)},
          {"reason", c.reason},
          {"error", c.error},
          {"median_s", c.median_s},
          {"spread", c.spread},
          {"finalist", c.finalist},
          {"ratio", c.ratio},
          {"ratio_spread", c.ratio_spread}};
}

json outcome_json(const Outcome &o) {
  const Problem &p = *o.problem;
  json j = {{"op", std::string(p.op->name())},
            {"bucket", p.bucket_text},
            {"key", p.key},
            {"layers", p.layers},
            {"source", o.cached ? "cached" : "tuned"},
            {"default", o.entry.default_tactic},
            {"pick", o.entry.tactic},
            {"ratio", o.entry.ratio},
            {"spread", o.entry.spread},
            {"pick_s", o.entry.median_s},
            {"default_s", o.entry.default_s},
            {"mode", o.entry.mode},
            {"date", o.entry.date}};
  if (o.report) {
    const TuneReport &r = *o.report;
    j["numerics"] = to_string(r.numerics);
    j["batch"] = r.batch;
    j["sync_round_trip_s"] = r.sync_round_trip;
    j["rotation"] = {{"copies", r.rotation.copies},
                     {"needed", r.rotation.needed},
                     {"flush", r.rotation.flush},
                     {"footprint_bytes", r.rotation.footprint}};
    j["noise_floor"] = r.result.noise_floor;
    j["margin"] = r.result.margin;
    json candidates = json::array();
    for (const CandidateReport &c : r.result.candidates)
      candidates.push_back(candidate_json(c));
    j["candidates"] = std::move(candidates);
    // hone's own best beside a vendor pick, so that the vendor candidate cannot hide a weak
    // kernel: triage medians of the same round-robin.
    j["pick_is_vendor"] = p.op->is_vendor_tactic(r.result.pick());
    if (std::optional<size_t> own = best_own_index(*p.op, r.result)) {
      const CandidateReport &c = r.result.candidates[*own];
      const double pick_triage_s = r.result.candidates[r.result.pick_index].median_s;
      j["best_own"] = {{"tactic", c.tactic.str()},
                       {"median_s", c.median_s},
                       {"over_pick", pick_triage_s > 0 ? c.median_s / pick_triage_s : 1.0}};
    }
  }
  return j;
}

void write_json_file(const std::string &path, const json &doc) {
  std::ofstream out(path);
  if (!out)
    HONE_RUNTIME_ERROR("--json: cannot write '" + path + "'");
  out << doc.dump(2) << '\n';
  if (!out)
    HONE_RUNTIME_ERROR("--json: writing '" + path + "' failed");
}

// ": 40 qmv.affine, 56 decode.paged" in order of first appearance; empty for one op.
std::string per_op_counts(const std::vector<Problem> &problems) {
  std::vector<std::pair<const TunableOp *, int>> counts;
  for (const Problem &p : problems) {
    auto it =
        std::find_if(counts.begin(), counts.end(), [&](const auto &c) { return c.first == p.op; });
    if (it == counts.end())
      counts.emplace_back(p.op, 1);
    else
      ++it->second;
  }
  if (counts.size() < 2)
    return {};
  std::string text;
  for (const auto &[op, n] : counts)
    text += (text.empty() ? ": " : ", ") + std::to_string(n) + " " + std::string(op->name());
  return text;
}

// The HONE_TACTIC_* variable that overrides `op`, or empty when none is set.
std::string override_variable(const TunableOp &op) {
  for (const std::string &name :
       {tactic_env_name(op.backend(), op.name()), tactic_env_name(op.name())})
    if (settings().tactic(name))
      return name;
  return {};
}

} // namespace

TuneCommand::TuneCommand(CLI::App &parent, const GlobalOptions &global)
    : global_(global),
      app_(parent.add_subcommand("tune", "Tune buckets and record the picks in the cache")) {
  auto *op = app_->add_option("--op", options_.op, "Op to tune (with --shape)");
  auto *shape = app_->add_option("--shape", options_.shape,
                                 "Shape as name=value per dimension: rows=8,n=4096,k=4096");
  auto *model = app_->add_option("--model", options_.model,
                                 "Hugging Face config.json; every linear layer is tuned, and "
                                 "decode attention (decode.paged) at batch 1-64 x context "
                                 "1k-128k");
  op->needs(shape);
  shape->needs(op);
  model->excludes(op);
  model->excludes(shape);
  auto *rows = app_->add_option("--rows", options_.rows, "Row counts for a model: 1-16, 1,2,4,8")
                   ->capture_default_str();
  auto *ops = app_->add_option("--ops", options_.ops,
                               "Ops for a model (default: every op over rows, n, k)");
  auto *bits = app_->add_option("--bits", options_.bits, "Weight bits for quantized ops")
                   ->capture_default_str();
  auto *group =
      app_->add_option("--group", options_.group, "Quantization group size")->capture_default_str();
  auto *lm_head = app_->add_flag("--include-lm-head", options_.include_lm_head,
                                 "Also tune the lm_head layer (vocab x hidden)");
  for (CLI::Option *model_only : {rows, ops, bits, group, lm_head}) {
    model_only->excludes(op);
    model_only->excludes(shape);
  }
  app_->add_flag("--force", options_.force, "Re-tune buckets the cache already holds");
  app_->add_option("--samples", options_.samples, "Samples per median (default 7)")
      ->check(CLI::Range(5, 1000));
  app_->add_option("--json", options_.json, "Write every report and candidate to this file");
  app_->add_option("--numerics", options_.numerics,
                   "Gate: batch_invariant or tolerance (default: each op's own); tolerance also "
                   "admits gemv.bf16's cuBLASLt candidates")
      ->check(CLI::IsMember({"batch_invariant", "tolerance"}));
}

int TuneCommand::run() {
  const auto t0 = std::chrono::steady_clock::now();
  Backend &backend = selected_backend(global_);
  const std::string &device_model = backend.info().model;

  // The whole matrix is derived and validated before anything is measured.
  std::vector<Problem> problems;
  ModelConfig config;
  const bool from_model = options_.op.empty();
  if (from_model) {
    problems = model_problems(options_, backend, &config);
  } else {
    const TunableOp &op = find_op(options_.op, backend);
    add_problem(problems, op, parse_shape(op, options_.shape), "", backend);
  }

  TuningStore store = TuningStore::open(backend, settings());
  const Metadata &metadata = store.metadata();
  if (!options_.json.empty())
    require_writable(options_.json, "--json");

  TuneOptions tune_options;
  if (options_.samples > 0)
    tune_options.tuner.samples = options_.samples;
  if (!options_.numerics.empty())
    tune_options.numerics = parse_numerics(options_.numerics, "--numerics");

  if (from_model)
    std::cerr << "model " << config.name << ": hidden " << config.hidden_size << ", intermediate "
              << config.intermediate_size << ", heads " << config.num_attention_heads << "/"
              << config.num_key_value_heads << " (kv), head_dim " << config.head_dim << "; "
              << problems.size() << " buckets on " << backend.info().backend << " (" << device_model
              << ")" << per_op_counts(problems) << "\n";
  std::set<const TunableOp *> noted;
  for (const Problem &p : problems)
    if (const std::string var = override_variable(*p.op); !var.empty() && noted.insert(p.op).second)
      std::cerr << "note: " << var << " is set: dispatch of " << p.op->name()
                << " runs it, not the picks recorded here\n";

  // What the cache holds decides what is measured; an entry this build cannot run is re-tuned
  // like a stale one.
  std::vector<Outcome> outcomes(problems.size());
  std::vector<size_t> to_tune;
  int tuned = 0, cached = 0;
  for (size_t i = 0; i < problems.size(); ++i) {
    const Problem &p = problems[i];
    outcomes[i].problem = &p;
    const CacheLookup found = store.find(*p.op, p.bucket);
    if (found.usable() && !options_.force) {
      outcomes[i].cached = true;
      outcomes[i].entry = *found.entry;
      ++cached;
      continue;
    }
    if (found.status == Lookup::unrunnable)
      std::cerr << "note: re-tuning " << p.op->name() << " " << p.bucket_text
                << ": its cache entry has a tactic this build cannot run (" << found.reason
                << ")\n";
    to_tune.push_back(i);
  }

  // Saved after every bucket, under the cache's lock, so an interrupted run keeps what it
  // measured. A failing save does not stop the run: the results are still printed and written
  // to --json, and the error is reported last.
  std::string save_error;
  const auto save = [&] {
    try {
      store.save();
      save_error.clear();
    } catch (const Error &e) {
      if (e.kind() != ErrorKind::runtime)
        throw;
      if (save_error.empty())
        std::cerr << "hone: warning: " << e.what()
                  << "; tuning goes on and its results are still printed\n";
      save_error = e.what();
    }
  };
  {
    Progress progress(to_tune.size(), stderr_is_tty());
    for (size_t i : to_tune) {
      Outcome &o = outcomes[i];
      const Problem &p = *o.problem;
      progress.start("tuning " + std::string(p.op->name()) + " " + p.bucket_text);
      o.report = store.tune(*p.op, p.bucket, tune_options);
      o.entry = store.put(*o.report);
      ++tuned;
      progress.clear(); // a warning of the save starts at column 0
      save();
      progress.finish();
    }
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  std::vector<std::string> header = {"op", "bucket"};
  if (from_model)
    header.push_back("layers");
  for (const char *h : {"default", "pick", "ratio", "spread", "time", "source"})
    header.push_back(h);
  std::vector<bool> right(header.size(), false);
  for (size_t c = header.size() - 4; c < header.size() - 1; ++c)
    right[c] = true;
  Table table(header, right);
  for (const Outcome &o : outcomes) {
    const std::string op_name(o.problem->op->name());
    std::vector<std::string> row = {op_name, o.problem->bucket_text};
    if (from_model) {
      std::string layers;
      for (const std::string &l : o.problem->layers)
        layers += (layers.empty() ? "" : ",") + l;
      row.push_back(layers);
    }
    const bool kept = o.entry.tactic == o.entry.default_tactic;
    row.push_back(short_tactic(o.entry.default_tactic, op_name));
    row.push_back(kept ? "(default)" : short_tactic(o.entry.tactic, op_name));
    row.push_back(format_ratio(o.entry.ratio));
    row.push_back(format_percent(o.entry.spread));
    row.push_back(format_seconds(o.entry.median_s));
    row.push_back(o.cached ? "cached" : "tuned");
    table.add(std::move(row));
  }
  table.print(std::cout);
  // A vendor pick is shown with the best of hone's own kernels of the same tune.
  for (const Outcome &o : outcomes) {
    if (!o.report || !o.problem->op->is_vendor_tactic(o.report->result.pick()))
      continue;
    const TuneResult &r = o.report->result;
    const std::string op_name(o.problem->op->name());
    std::cout << "note: " << op_name << " " << o.problem->bucket_text << ": the pick is the vendor "
              << short_tactic(r.pick().str(), op_name);
    if (std::optional<size_t> own = best_own_index(*o.problem->op, r))
      std::cout << "; best own " << short_tactic(r.candidates[*own].tactic.str(), op_name) << " "
                << format_seconds(r.candidates[*own].median_s) << " vs "
                << format_seconds(r.candidates[r.pick_index].median_s) << " (triage)";
    std::cout << '\n';
  }
  char elapsed[32];
  std::snprintf(elapsed, sizeof elapsed, "%.1f", seconds);
  std::cout << "tuned " << tuned << ", cached " << cached << ", in " << elapsed << " s\n";
  if (!store.enabled())
    std::cout << "cache: off (HONE_CACHE=off); nothing recorded\n";
  else if (tuned > 0 && save_error.empty())
    std::cout << "cache: " << store.path().string() << '\n';

  if (!options_.json.empty()) {
    json reports = json::array();
    for (const Outcome &o : outcomes)
      reports.push_back(outcome_json(o));
    json doc = {{"format", "hone.tune"},
                {"format_version", 1},
                {"backend", backend.info().backend},
                {"device", device_model},
                {"metadata",
                 {{"hone_version", metadata.hone_version},
                  {"kernel_build", metadata.kernel_build},
                  {"runtime", metadata.runtime},
                  {"driver", metadata.driver},
                  {"method", metadata.method}}},
                {"reports", std::move(reports)},
                {"summary", {{"tuned", tuned}, {"cached", cached}, {"seconds", seconds}}}};
    if (from_model)
      doc["model"] = config.name;
    write_json_file(options_.json, doc);
  }
  if (!save_error.empty())
    HONE_RUNTIME_ERROR("the tuning cache was not saved (the results above were measured): " +
                       save_error);
  return 0;
}

} // namespace hone::cli
