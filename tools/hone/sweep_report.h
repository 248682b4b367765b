// What `hone sweep` computes and writes, as plain data: the batch x context grid it parses,
// the per-cell results, the PyTorch peer's step times it reads, and the Markdown table and JSON
// it writes. Nothing here touches a device, so every piece is tested on the host.
//
//   std::vector<int64_t> batches = hone::cli::parse_batch_grid("1-16");     // 1, 2, 4, 8, 16
//   std::vector<int64_t> contexts = hone::cli::parse_context_grid("1k-32k"); // 1024 .. 32768
//   std::string md = hone::cli::sweep_markdown(report);
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hone/backend.h"
#include "model/decode_step.h"

namespace hone::cli {

// A grid axis: "a-b" is every power of two in [a, b] (a and b need not be powers of two:
// "1-16" -> 1, 2, 4, 8, 16; "3-20" -> 4, 8, 16); "a,b,c" is taken verbatim, in that order; a
// single value is itself. Values are positive integers (batch) or token counts as
// parse_tokens reads them (context: 4096, 4k). Throws Error(invalid_argument) naming `option`
// and the bad value: a non-number, 0, a reversed range, a range without a power of two, a
// value listed twice, a batch above model::kMaxStepBatch.
std::vector<int64_t> parse_batch_grid(const std::string &text, std::string_view option = "--batch");
std::vector<int64_t> parse_context_grid(const std::string &text,
                                        std::string_view option = "--context");

// One variant of a cell's step, as bench_decode_step measured it.
struct SweepVariant {
  std::string name; // default, default+pdl, tuned, tuned+pdl
  bool pdl = false;
  double seconds = 0;      // [seconds] median per step
  double spread = 0;       // (max - min) / median over the samples
  int64_t mismatches = -1; // PDL variants: 16-bit words that differed from PDL off; -1 unchecked
  int check_replays = 0;
};

// One batch x context point of the sweep.
struct SweepCell {
  int64_t batch = 0;
  int64_t context = 0;
  enum class Status { ok, skipped, failed } status = Status::ok;
  std::string note;                   // skipped / failed: why
  std::vector<SweepVariant> variants; // ok: default, default+pdl, tuned, tuned+pdl
  size_t weight_bytes = 0;            // [bytes] read per step
  size_t kv_bytes = 0;                // [bytes] K and V read per step
  size_t need_bytes = 0;              // [bytes] device memory the step allocates
  int replays_per_sample = 0;
  std::optional<double> peer_seconds; // [seconds] the peer's step, when it has this cell

  const SweepVariant *find(std::string_view name) const;
  // [seconds] the default step (no cache, no lazy tune), PDL off.
  double default_seconds() const;
  // The tuned variant the chain tactic picks: tuned+pdl where its replays were bit-identical
  // to tuned and it beats it by the switch margin (pdl_chain_wins), else tuned.
  const SweepVariant &tuned() const;
  // default_seconds() / tuned().seconds: > 1 when tuning helped.
  double speedup() const;
};

// The peer's step times, keyed by (batch, context): the JSON of
// `bench/peers/decode_step_torch.py --json`, the records of one model.
struct PeerSteps {
  std::string source; // the file
  std::string peer;   // what the peer runs ("torch.matmul (cuBLAS) + SDPA ...")
  std::string device;
  std::map<std::pair<int64_t, int64_t>, double> seconds;
};
// Reads the records of `model` (the config's file stem, as both tools name a model) from the
// peer JSON text. Throws Error(invalid_argument) naming `source` and the field when the text is
// not that script's JSON or holds no record of `model` (listing the models it holds).
PeerSteps parse_peer_steps(const std::string &text, const std::string &source,
                           const std::string &model);
PeerSteps read_peer_steps(const std::string &path, const std::string &model);

struct SweepReport {
  std::string model, family, quant; // quant as given: bf16, int4:g64
  int64_t layers = 0;
  int64_t page_size = 16;
  uint64_t seed = 1;
  DeviceInfo device;
  double read_bandwidth = 0; // [bytes/second] measured; 0 when unknown
  int samples = 9;
  int check_replays = 100;
  std::vector<int64_t> batches, contexts;
  std::vector<SweepCell> cells; // batch-major, in grid order
  std::optional<PeerSteps> peer;

  // "warm, CUDA graph, interleaved, median of N"
  std::string method() const;
  bool has_peer_data() const;
};

// The table (and the lines that say how to read it) of DIR/sweep.md. A cell without peer data
// shows '-'; a skipped or failed cell shows its note.
std::string sweep_markdown(const SweepReport &report);
// DIR/sweep.json: every number of the report.
nlohmann::json sweep_json(const SweepReport &report);
// Writes DIR/sweep.md and DIR/sweep.json (DIR must exist); returns their paths. Throws
// Error(runtime) naming a file that cannot be written.
std::vector<std::filesystem::path> write_sweep_report(const SweepReport &report,
                                                      const std::filesystem::path &dir);

} // namespace hone::cli
