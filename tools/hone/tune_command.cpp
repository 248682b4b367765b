#include "hone/tune_command.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <set>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "hone/capped_op.h"
#include "hone/chain_tactic.h"
#include "hone/chain_tune.h"
#include "hone/error.h"
#include "hone/format.h"
#include "hone/key.h"
#include "hone/model_config.h"
#include "hone/model_matrix.h"
#include "hone/progress.h"
#include "hone/registry.h"
#include "hone/settings.h"
#include "hone/shape_arg.h"
#include "hone/step_command.h"
#include "hone/sweep_report.h"
#include "hone/table.h"
#include "hone/tune.h"
#include "hone/tune_budget.h"
#include "hone/tuning_store.h"

namespace hone::cli {

namespace {

using nlohmann::json;

// Pages of kv_append, the decode attention steps and the chain cells a model run tunes (the
// size runtimes use most).
constexpr int64_t kModelPageSize = 16;

struct Outcome {
  const Problem *problem = nullptr;
  const ChainCell *cell = nullptr; // a chain cell; null for a bucket
  bool cached = false;
  std::optional<TuneReport> report; // set when tuned in this run
  CacheEntry entry;                 // the pick, as recorded in (or read from) the cache
  double seconds = 0;               // [seconds] this run spent on it
  int cap = 0;                      // candidates it was capped to; 0: none
};

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
  if (o.cell)
    j["chain"] = {{"batch", o.cell->batch}, {"quant", o.cell->quant()}};
  if (o.report) {
    const TuneReport &r = *o.report;
    j["tune_s"] = o.seconds;
    j["prepare_s"] = r.prepare_s;
    j["gate_s"] = r.gate_s;
    j["measure_s"] = r.measure_s;
    if (o.cap > 0)
      j["candidate_cap"] = o.cap;
    j["numerics"] = to_string(r.numerics);
    j["batch"] = r.batch;
    j["sync_round_trip_s"] = r.sync_round_trip;
    j["rotation"] = {{"copies", r.rotation.copies},
                     {"needed", r.rotation.needed},
                     {"flush", r.rotation.flush},
                     {"footprint_bytes", r.rotation.footprint}};
    j["noise_floor"] = r.result.noise_floor;
    j["margin"] = r.result.margin;
    j["runoff_ratio"] = r.result.runoff_ratio;
    j["long_noise_floor"] = r.result.long_noise_floor;
    j["long_margin"] = r.result.long_margin;
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

// The HONE_TACTIC_* variable that overrides `op`, or empty when none is set.
std::string override_variable(const TunableOp &op) {
  for (const std::string &name :
       {tactic_env_name(op.backend(), op.name()), tactic_env_name(op.name())})
    if (settings().tactic(name))
      return name;
  return {};
}

// Whether the decode step runs the model of `spec` (read from `source`), for its chain cells. A
// config the step cannot run (another family, a missing layer count) is a note and no cells, or
// an error when --ops named the chain (`named`).
bool step_runs(const model::ModelSpec &spec, const std::string &source, bool named) {
  try {
    model::require_decode_step(spec, source);
    return true;
  } catch (const Error &e) {
    if (named)
      throw;
    std::cerr << "note: " << kChainOpName << " skipped: " << e.what() << '\n';
    return false;
  }
}

std::string join(const std::vector<std::string> &items, const char *separator) {
  std::string out;
  for (const std::string &s : items)
    out += (out.empty() ? "" : separator) + s;
  return out;
}

// "batch 1, 4, 16 x bf16, int4:g64 at context 4096".
std::string cells_text(const std::vector<ChainCell> &cells, int64_t context) {
  std::vector<std::string> batches, quants;
  for (const ChainCell &c : cells) {
    if (std::find(batches.begin(), batches.end(), std::to_string(c.batch)) == batches.end())
      batches.push_back(std::to_string(c.batch));
    if (std::find(quants.begin(), quants.end(), c.quant()) == quants.end())
      quants.push_back(c.quant());
  }
  return "batch " + join(batches, ", ") + " x " + join(quants, ", ") + " at context " +
         std::to_string(context);
}

// The estimate line printed with the matrix size.
std::string estimate_text(const TuneBudget &b) {
  std::string text = "estimate: " + format_duration(b.predicted_full()) +
                     " with every candidate (" + std::to_string(b.candidates_full()) + ")";
  if (!b.limited())
    return text + "; no budget";
  const std::string budget = format_duration(b.budget_s());
  if (!b.allowance())
    return text + ", within the budget " + budget;
  text += "; budget " + budget + ": " + std::to_string(b.capped_count()) + " buckets capped to " +
          std::to_string(b.candidates_capped()) + " candidates";
  if (b.over())
    return text + ", still " + format_duration(b.predicted()) + " at " +
           std::to_string(kMinCandidates) + " a bucket (over the budget)";
  return text + " (at most " + format_seconds(*b.allowance()) +
         " of candidates a bucket): " + format_duration(b.predicted());
}

} // namespace

TuneCommand::TuneCommand(CLI::App &parent, const GlobalOptions &global)
    : global_(global),
      app_(parent.add_subcommand("tune", "Tune buckets and record the picks in the cache")) {
  auto *op = app_->add_option("--op", options_.op, "Op to tune (with --shape)");
  auto *shape = app_->add_option("--shape", options_.shape,
                                 "Shape as name=value per dimension: rows=8,n=4096,k=4096");
  auto *model = app_->add_option(
      "--model", options_.model,
      "Hugging Face config.json; every linear layer and small op of the step over --rows, "
      "decode attention (decode.paged) at batch 1-64 x context 1k-128k, and on CUDA the "
      "step's chain tactic (PDL off/on)");
  op->needs(shape);
  shape->needs(op);
  model->excludes(op);
  model->excludes(shape);
  auto *rows = app_->add_option(
      "--rows", options_.rows,
      "Row counts for a model: 1-16, 1,2,4,8 (default: " + default_model_rows_text() +
          ", decode batches and prefill buckets)");
  auto *ops = app_->add_option(
      "--ops", options_.ops,
      "Ops for a model (default: every op over rows, n, k, the step's small ops, decode.paged "
      "and chain.decode_step)");
  auto *bits = app_->add_option("--bits", options_.bits, "Weight bits for quantized ops")
                   ->capture_default_str();
  auto *group =
      app_->add_option("--group", options_.group, "Quantization group size")->capture_default_str();
  auto *lm_head = app_->add_flag("--include-lm-head", options_.include_lm_head,
                                 "Also tune the lm_head layer (vocab x hidden)");
  auto *chain_batches =
      app_->add_option("--chain-batches", options_.chain_batches,
                       "Batch buckets of the chain cells (the decode step, 1..32): a range "
                       "1-16 (its powers of two) or a list 1,4,16")
          ->capture_default_str();
  auto *chain_context = app_->add_option("--chain-context", options_.chain_context,
                                         "Tokens cached per request in the chain cells (4096, 4k)")
                            ->capture_default_str();
  auto *budget = app_->add_option("--budget", options_.budget,
                                  "Time budget of a model tune: 9m, 90s, 1m30s; 0: none "
                                  "(default " +
                                      std::string(kDefaultModelBudget) +
                                      "); the costliest buckets time fewer candidates");
  auto *max_candidates =
      app_->add_option("--max-candidates", options_.max_candidates,
                       "At most this many candidates timed per bucket of a model")
          ->check(CLI::Range(kMinCandidates, 1 << 20));
  for (CLI::Option *model_only :
       {rows, ops, bits, group, lm_head, chain_batches, chain_context, budget, max_candidates}) {
    model_only->excludes(op);
    model_only->excludes(shape);
  }
  app_->add_flag("--dry-run", options_.dry_run,
                 "Print the matrix and the time estimate; measure nothing");
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
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  Backend &backend = selected_backend(global_);
  const std::string &device_model = backend.info().model;

  // The whole matrix is derived and validated before anything is measured.
  std::vector<Problem> problems;
  model::ModelSpec config;
  ModelOps ops;
  ChainPlanOptions chain_options;
  std::vector<ChainCell> cells;
  const bool from_model = options_.op.empty();
  if (from_model) {
    const bool built_in = options_.model.empty();
    config = built_in ? default_model_config() : load_model_config(options_.model);
    ops = select_model_ops(backend, options_.ops, options_.bits, options_.group);
    ModelMatrixOptions mo;
    if (!options_.rows.empty())
      mo.rows = parse_rows(options_.rows);
    mo.bits = options_.bits;
    mo.group = options_.group;
    mo.include_lm_head = options_.include_lm_head;
    mo.page_size = kModelPageSize;
    problems = model_problems(config, ops, mo, backend);
    chain_options.batches = parse_batch_grid(options_.chain_batches, "--chain-batches");
    chain_options.context = parse_tokens(options_.chain_context, "--chain-context");
    chain_options.page_size = kModelPageSize;
    chain_options.bits = options_.bits;
    chain_options.group = options_.group;
    if (options_.samples > 0)
      chain_options.samples = options_.samples;
    if (ops.chain && chain_available(backend) &&
        step_runs(config, built_in ? default_model_source() : options_.model, ops.named))
      cells = chain_cells(config, chain_options, backend);
    if (problems.empty() && cells.empty())
      HONE_INVALID_ARGUMENT("--model " + config.name + ": nothing to tune");
  } else {
    const TunableOp &op = find_op(options_.op, backend);
    if (op.name() == kChainOpName)
      HONE_INVALID_ARGUMENT(std::string(kChainOpName) +
                            " is tuned with a model: hone tune --model CONFIG.json");
    add_problem(problems, op, parse_shape(op, options_.shape), "", backend);
  }
  const double budget_s =
      from_model ? parse_duration(options_.budget.empty() ? kDefaultModelBudget : options_.budget,
                                  "--budget")
                 : 0;
  // The chain cells as problems of their own, after the buckets.
  std::vector<Problem> chain_problems;
  for (const ChainCell &cell : cells) {
    Problem p;
    p.op = ops.chain;
    p.shape = p.bucket = cell.bucket;
    p.bucket_text = ops.chain->buckets().describe(cell.bucket);
    p.key = cache_key(*ops.chain, cell.bucket, device_model);
    p.layers = {"step"};
    chain_problems.push_back(std::move(p));
  }

  TuningStore store = TuningStore::open(backend, settings());
  const Metadata &metadata = store.metadata();
  // Chain entries are measured on warm graph replays, so they carry warm metadata; they are
  // read and written through a Cache of their own (saves merge, so neither loses the other's).
  const Metadata chain_metadata = current_metadata(backend, /*cold=*/false);
  std::optional<Cache> chain_cache;
  if (!cells.empty() && store.enabled()) {
    chain_cache.emplace(store.path());
    chain_cache->load();
  }
  if (!options_.json.empty())
    require_writable(options_.json, "--json");

  TuneOptions tune_options;
  if (options_.samples > 0)
    tune_options.tuner.samples = options_.samples;
  if (!options_.numerics.empty())
    tune_options.numerics = parse_numerics(options_.numerics, "--numerics");

  if (from_model) {
    std::cerr << "model " << config.name << ": hidden " << config.hidden << ", intermediate "
              << config.inter << ", heads " << config.hq << "/" << config.hkv << " (kv), head_dim "
              << config.head_dim << "\n";
    std::cerr << "matrix: " << problems.size() << " buckets on " << backend.info().backend << " ("
              << device_model << ")" << per_op_counts(problems) << "; ";
    if (!cells.empty())
      std::cerr << cells.size() << " chain cells (" << cells_text(cells, chain_options.context)
                << ")\n";
    else if (!chain_available(backend))
      std::cerr << "no chain cells (the " << backend.info().backend
                << " backend has no decode step)\n";
    else
      std::cerr << "no chain cells\n";
  }
  std::set<const TunableOp *> noted;
  for (const Problem &p : problems)
    if (const std::string var = override_variable(*p.op); !var.empty() && noted.insert(p.op).second)
      std::cerr << "note: " << var << " is set: dispatch of " << p.op->name()
                << " runs it, not the picks recorded here\n";

  // What the cache holds decides what is measured; an entry this build cannot run is re-tuned
  // like a stale one.
  std::vector<Outcome> outcomes(problems.size() + chain_problems.size());
  std::vector<size_t> to_run;
  int tuned = 0, cached = 0, chain_timed = 0, chain_cached = 0;
  // Outcome i is cached when the cache holds a usable entry (and no --force), else run.
  const auto settle = [&](size_t i, bool usable, const CacheEntry *entry, Lookup status,
                          const std::string &reason, int &cached_count) {
    if (usable && !options_.force) {
      outcomes[i].cached = true;
      outcomes[i].entry = *entry;
      ++cached_count;
      return;
    }
    if (status == Lookup::unrunnable)
      std::cerr << "note: re-tuning " << outcomes[i].problem->op->name() << " "
                << outcomes[i].problem->bucket_text
                << ": its cache entry has a tactic this build cannot run (" << reason << ")\n";
    to_run.push_back(i);
  };
  for (size_t i = 0; i < problems.size(); ++i) {
    outcomes[i].problem = &problems[i];
    const CacheLookup found = store.find(*problems[i].op, problems[i].bucket);
    settle(i, found.usable(), found.entry, found.status, found.reason, cached);
  }
  for (size_t c = 0; c < chain_problems.size(); ++c) {
    const size_t i = problems.size() + c;
    outcomes[i].problem = &chain_problems[c];
    outcomes[i].cell = &cells[c];
    const ChainLookup found =
        chain_cache ? find_chain_pick(*chain_cache, cells[c].bucket, device_model, chain_metadata)
                    : ChainLookup{};
    settle(i, found.usable(), found.entry ? &*found.entry : nullptr, found.status, found.reason,
           chain_cached);
  }

  // The budget's steps: every bucket to tune, then every chain cell to time.
  std::vector<BudgetItem> items;
  for (size_t i : to_run) {
    const Outcome &o = outcomes[i];
    if (o.cell) {
      items.push_back(
          {std::string(kChainOpName), 0, 0, chain_cell_seconds(config, *o.cell, chain_options)});
      continue;
    }
    const TunableOp &op = *o.problem->op;
    const Numerics numerics = tune_options.numerics.value_or(op.default_numerics());
    items.push_back(
        bucket_item(op, o.problem->bucket,
                    static_cast<int>(op.tune_candidates(o.problem->bucket, numerics).size())));
  }
  TuneBudget budget(std::move(items), budget_s);
  if (from_model) {
    std::cerr << "to run: " << to_run.size() << " of " << outcomes.size() << " ("
              << cached + chain_cached << " cached); " << estimate_text(budget)
              << " (prior costs, refined as buckets finish)\n";
  }
  if (options_.dry_run) {
    std::cout << "dry run: " << to_run.size() << " of " << outcomes.size()
              << " to run, nothing measured\n";
    return 0;
  }

  // Saved after every bucket, under the cache's lock, so an interrupted run keeps what it
  // measured. A failing save does not stop the run: the results are still printed and written
  // to --json, and the error is reported last.
  std::string save_error;
  const auto save = [&](const std::function<void()> &write) {
    try {
      write();
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
  std::vector<size_t> skipped_cells;
  {
    Progress progress(to_run.size(), stderr_is_tty());
    for (size_t step = 0; step < to_run.size(); ++step) {
      Outcome &o = outcomes[to_run[step]];
      const Problem &p = *o.problem;
      budget.plan(elapsed());
      const auto step_t0 = std::chrono::steady_clock::now();
      if (o.cell) {
        progress.start("timing " + std::string(kChainOpName) + " batch " +
                       std::to_string(o.cell->batch) + " " + o.cell->quant() +
                       " (PDL off/on, KV prefetch)");
        std::optional<ChainTiming> timing;
        try {
          timing = time_chain_cell(backend, config, *o.cell, chain_options);
        } catch (const Error &e) {
          if (e.kind() != ErrorKind::runtime)
            throw;
          progress.clear();
          std::cerr << "note: " << kChainOpName << " batch " << o.cell->batch << " "
                    << o.cell->quant() << " skipped: " << e.what() << '\n';
          skipped_cells.push_back(to_run[step]);
        }
        if (timing) {
          o.report = chain_report(o.cell->bucket, device_model, *timing);
          o.entry = to_cache_entry(*o.report, chain_metadata);
          ++chain_timed;
          progress.clear();
          if (chain_cache)
            save([&] {
              chain_cache->put(o.entry);
              chain_cache->save();
            });
        }
      } else {
        const int count = budget.capped(step) ? budget.cap(step) : 0;
        const int cap =
            options_.max_candidates > 0 && (count == 0 || options_.max_candidates < count)
                ? options_.max_candidates
                : count;
        std::string what = "tuning " + std::string(p.op->name()) + " " + p.bucket_text;
        if (cap > 0)
          what += " (at most " + std::to_string(cap) + " candidates)";
        progress.start(what);
        if (cap > 0 || budget.limited()) {
          // Under a budget every bucket stops gating new candidates at the budget's end (past the
          // default and one other), whatever its cap: its cost was predicted, not known.
          const auto deadline = budget.limited()
                                    ? t0 + std::chrono::duration_cast<CappedOp::Clock::duration>(
                                               std::chrono::duration<double>(budget.budget_s()))
                                    : CappedOp::Clock::time_point::max();
          const CappedOp capped(*p.op, cap > 0 ? cap : CappedOp::kUncapped, deadline);
          o.report = store.tune(capped, p.bucket, tune_options);
        } else {
          o.report = store.tune(*p.op, p.bucket, tune_options);
        }
        o.cap = cap;
        o.entry = store.put(*o.report);
        ++tuned;
        progress.clear(); // a warning of the save starts at column 0
        save([&] { store.save(); });
      }
      o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - step_t0).count();
      budget.record(step, o.seconds);
      // The time left from the cost model (per op, scaled by what each op measured), not the mean
      // step: the chain cells at the end take several times a bucket each.
      progress.finish(budget.predicted());
    }
  }
  const double seconds = elapsed();
  std::vector<const Outcome *> shown;
  for (size_t i = 0; i < outcomes.size(); ++i)
    if (std::find(skipped_cells.begin(), skipped_cells.end(), i) == skipped_cells.end())
      shown.push_back(&outcomes[i]);

  std::vector<std::string> header = {"op", "bucket"};
  if (from_model)
    header.push_back("layers");
  for (const char *h : {"default", "pick", "ratio", "spread", "time", "source"})
    header.push_back(h);
  std::vector<bool> right(header.size(), false);
  for (size_t c = header.size() - 4; c < header.size() - 1; ++c)
    right[c] = true;
  Table table(header, right);
  for (const Outcome *o : shown) {
    const std::string op_name(o->problem->op->name());
    std::vector<std::string> row = {op_name, o->problem->bucket_text};
    if (from_model)
      row.push_back(join(o->problem->layers, ","));
    const bool kept = o->entry.tactic == o->entry.default_tactic;
    row.push_back(short_tactic(o->entry.default_tactic, op_name));
    row.push_back(kept ? "(default)" : short_tactic(o->entry.tactic, op_name));
    row.push_back(format_ratio(o->entry.ratio));
    row.push_back(format_percent(o->entry.spread));
    row.push_back(format_seconds(o->entry.median_s));
    row.push_back(o->cached ? "cached" : "tuned");
    table.add(std::move(row));
  }
  table.print(std::cout);
  // A vendor pick is shown with the best of hone's own kernels of the same tune.
  for (const Outcome *o : shown) {
    if (!o->report || !o->problem->op->is_vendor_tactic(o->report->result.pick()))
      continue;
    const TuneResult &r = o->report->result;
    const std::string op_name(o->problem->op->name());
    std::cout << "note: " << op_name << " " << o->problem->bucket_text
              << ": the pick is the vendor " << short_tactic(r.pick().str(), op_name);
    if (std::optional<size_t> own = best_own_index(*o->problem->op, r))
      std::cout << "; best own " << short_tactic(r.candidates[*own].tactic.str(), op_name) << " "
                << format_seconds(r.candidates[*own].median_s) << " vs "
                << format_seconds(r.candidates[r.pick_index].median_s) << " (triage)";
    std::cout << '\n';
  }
  // The chain picks, with why PDL was or was not picked.
  for (const Outcome *o : shown)
    if (o->cell && o->report) {
      const TuneResult &r = o->report->result;
      std::cout << "chain: batch " << o->cell->batch << " " << o->cell->quant() << ": "
                << short_tactic(r.pick().str(), kChainOpName) << " ("
                << r.candidates[r.pick_index == 0 ? 1 : r.pick_index].reason << ")\n";
    }
  int capped = 0;
  double prepare_s = 0, gate_s = 0, measure_s = 0; // over the buckets tuned in this run
  for (const Outcome *o : shown) {
    capped += o->cap > 0;
    if (o->report) {
      prepare_s += o->report->prepare_s;
      gate_s += o->report->gate_s;
      measure_s += o->report->measure_s;
    }
  }
  char elapsed_text[32];
  std::snprintf(elapsed_text, sizeof elapsed_text, "%.1f", seconds);
  std::cout << "tuned " << tuned << ", cached " << cached << ", in " << elapsed_text << " s ("
            << format_duration(seconds) << ")";
  if (!cells.empty())
    std::cout << "; chain cells: " << chain_timed << " timed, " << chain_cached << " cached";
  if (capped > 0)
    std::cout << "; " << capped << " buckets capped by the budget "
              << format_duration(budget.budget_s());
  if (gate_s + measure_s > 0) {
    char split[96];
    std::snprintf(split, sizeof split, "; preparing %.1f s, gates %.1f s, timing %.1f s", prepare_s,
                  gate_s, measure_s);
    std::cout << split;
  }
  std::cout << '\n';
  if (!store.enabled())
    std::cout << "cache: off (HONE_CACHE=off); nothing recorded\n";
  else if (tuned + chain_timed > 0 && save_error.empty())
    std::cout << "cache: " << store.path().string() << '\n';

  if (!options_.json.empty()) {
    json reports = json::array();
    for (const Outcome *o : shown)
      reports.push_back(outcome_json(*o));
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
                {"summary",
                 {{"tuned", tuned},
                  {"cached", cached},
                  {"chain_timed", chain_timed},
                  {"chain_cached", chain_cached},
                  {"capped", capped},
                  {"budget_s", budget_s},
                  {"seconds", seconds},
                  {"prepare_s", prepare_s},
                  {"gate_s", gate_s},
                  {"measure_s", measure_s}}}};
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
