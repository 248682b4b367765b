// `hone tune`: tune one shape of one op, or a model's whole op matrix, and record the picks in
// the tuning cache. A model's matrix (tools/hone/model_matrix.h): every linear layer over the
// decode batches 1-64 and the prefill buckets 128-8192, the step's rmsnorm, rope, kv_append and
// silu_mul over the same rows, and decode attention (decode.paged: batch 1-64 x context
// 1k-128k); then, on CUDA, its chain cells: the tuned decode step timed with programmatic
// dependent launch off and on per batch bucket and weight format (chain.decode_step,
// tools/hone/chain_tactic.h). Buckets the cache already holds usable entries for are reported
// as cached and not measured; stale ones, and ones whose tactic this build cannot run, are
// re-tuned. The whole matrix is checked first (shapes, memory, HONE_TACTIC_* overrides, the
// --json path), its size and a time estimate are printed, then each bucket is saved as soon as
// it is tuned, with a progress line per bucket on stderr (done/total and the time left) when it
// is not a terminal. A model tune keeps to a time budget (--budget, default 9m) by capping the
// candidates of its costliest buckets (tools/hone/tune_budget.h).
//
//   hone tune                                     # the built-in model (Qwen2.5-0.5B)
//   hone tune --op gemv.f32 --shape rows=8,n=4096,k=4096
//   hone tune --model models/llama-3.1-8b.json --rows 1-16 --ops qmv.affine --json out.json
//   hone tune --model models/llama-3.1-8b.json --dry-run   # the matrix and the estimate only
#pragma once

#include <string>

#include "hone/global_options.h"

namespace CLI {
class App;
}

namespace hone::cli {

struct TuneCommandOptions {
  std::string op;    // --op: one op (with --shape)
  std::string shape; // --shape rows=8,n=4096,k=4096[,bits=4,group=64]
  std::string model; // --model CONFIG.json; empty with no --op: the built-in model
  std::string rows;  // --rows for a model; empty: default_model_rows()
  // --ops a,b; empty: every op a model fills (linears, the step's small ops, decode.paged) and
  // the chain cells
  std::string ops;
  int bits = 4;   // fills a `bits` dimension of model problems
  int group = 64; // fills a `group` dimension of model problems
  bool include_lm_head = false;
  std::string chain_batches = "1,4,16"; // batch buckets of the chain cells (parse_batch_grid)
  std::string chain_context = "4k";     // tokens cached per request in the chain cells
  std::string budget;     // --budget for a model tune; empty: kDefaultModelBudget; "0": none
  int max_candidates = 0; // --max-candidates per bucket; 0: as the budget allows
  bool dry_run = false;   // print the matrix and the estimate, measure nothing
  bool force = false;     // re-tune buckets the cache already holds
  int samples = 0;        // samples per median; 0 keeps the tuner's default
  std::string numerics;   // --numerics batch_invariant|tolerance; empty: each op's default
  std::string json;       // --json FILE: every report, every candidate
};

class TuneCommand {
public:
  TuneCommand(CLI::App &parent, const GlobalOptions &global);
  CLI::App *app() const { return app_; }
  int run();

private:
  const GlobalOptions &global_;
  CLI::App *app_;
  TuneCommandOptions options_;
};

} // namespace hone::cli
