// `hone tune`: tune one shape of one op, or every linear layer of a model over a range of
// row counts and the model's decode attention (decode.paged, where the backend has it: batch
// 1-64 x context 1k-128k, decode_attention_steps), and record the picks in the tuning cache. Buckets the cache already holds
// usable entries for are reported as cached and not measured; stale ones, and ones whose
// tactic this build cannot run, are re-tuned. The whole matrix is checked first (shapes,
// memory, HONE_TACTIC_* overrides, the --json path); then each bucket is saved as soon as it
// is tuned, with a progress line per bucket on stderr when it is not a terminal.
//
//   hone tune                                     # the built-in model (Qwen2.5-0.5B)
//   hone tune --op gemv.f32 --shape rows=8,n=4096,k=4096
//   hone tune --model models/llama-3.1-8b.json --rows 1-16 --ops qmv.affine --json out.json
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
  std::string rows = "1-16";
  std::string ops; // --ops a,b; empty: every op whose dims begin with rows, n, k, and decode.paged
  int bits = 4;    // fills a `bits` dimension of model problems
  int group = 64;  // fills a `group` dimension of model problems
  bool include_lm_head = false;
  bool force = false; // re-tune buckets the cache already holds
  int samples = 0;    // samples per median; 0 keeps the tuner's default
  std::string numerics; // --numerics batch_invariant|tolerance; empty: each op's default
  std::string json;   // --json FILE: every report, every candidate
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
