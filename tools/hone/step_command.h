// `hone step`: one decode step of a model (config.json) through hone's ops, captured in a
// CUDA graph: step time, tokens/s, bytes read per step and their fraction of the measured read
// bandwidth, default and tuned tactics with and without programmatic dependent launch,
// interleaved in one run, PDL checked bit for bit against PDL off, and a per-op breakdown.
//
//   hone step --model models/llama-3.1-8b.json --batch 1 --context 4k
//   hone step --model models/qwen2.5-1.5b.json --batch 16 --context 4096 --quant int4:g64
//   hone step --model models/llama-3.1-8b.json --prefill 512 --context 0 --quant int4:g64
//   hone step --model Qwen2.5-0.5B/config.json --weights Qwen2.5-0.5B --quant int4:g64
//   hone step --model models/qwen2.5-0.5b.json --context 100 --export out/step  # for a peer
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "hone/dispatcher.h"
#include "hone/global_options.h"
#include "model/decode_step.h"

namespace CLI {
class App;
}

namespace hone::cli {

struct StepOptions {
  std::string model; // config.json path
  int64_t batch = 1;
  std::string context = "4k"; // tokens cached per request: 4096, 4k, 32K
  std::string quant = "bf16"; // bf16, int4:g64, int8:g128, ...
  int64_t page_size = 16;
  int samples = 9;
  int check_replays = 1000;
  bool no_breakdown = false;
  uint64_t seed = 1;
  std::string json_path;
  std::string weights;    // safetensors file or checkpoint directory; empty: random weights
  std::string export_dir; // write the step and one default step's outputs here, then exit
  int64_t prefill = 0;    // 0: a decode step; M: a prefill of M tokens per request
  // One more variant per value: the tuned step with PDL and decode.paged's L2 prefetch of this
  // many KiB per CTA of cached K and V before its wait (model::StepLaunch::kv_prefetch_kib).
  std::vector<int> kv_prefetch_kib;
  // One more variant: the tuned PDL step with rope and the K/V append as separate launches
  // (model::StepLaunch::fuse_rope_append off; the step's default takes them in one).
  bool separate_rope_append = false;
  // One more variant: the tuned PDL step with the decode linears' weights-once ring twins
  // (model::StepLaunch::weights_once).
  bool weights_once = false;
  // One more variant: the tuned PDL step with SiLU x up as its own launch after the gate/up
  // linear (model::StepLaunch::fuse_silu_mul off; the step's default has it in the linear's
  // epilogue).
  bool separate_silu_mul = false;
  // One more variant: the tuned PDL step with the rmsnorm after o_proj and down the other way
  // from the step's model::StepOptions::fuse_norm.
  bool norm_variant = false;
  // One more variant per name: the tuned PDL step without that kind's launches (timing only;
  // model::StepLaunch::omit), e.g. "rmsnorm".
  std::vector<std::string> omit;
  // One more variant per value: the tuned PDL step with every dependent launch asking for this
  // L1 / shared-memory split (percent of the most shared memory; model::StepLaunch::
  // shared_carveout).
  std::vector<int> carveouts;
};

// "bf16" -> {16, 0}; "int4:g64" -> {4, 64}. Throws Error(invalid_argument) naming the value.
std::pair<int, int> parse_quant(const std::string &text);
// --omit's names (the per-op breakdown's, model::to_string(StepOp)) -> {name, StepOp index}.
// Throws Error(invalid_argument) naming an unknown one and listing the kinds.
std::vector<std::pair<std::string, int>> parse_omit(const std::vector<std::string> &names);
// "4096", "4k", "32K" -> tokens (k = 1024). Throws Error(invalid_argument) naming `option`.
int64_t parse_tokens(const std::string &text, std::string_view option);
// The options of a step with `bits`-bit weights in groups of `group` (parse_quant's pair; bf16's
// group 0 becomes the step's default, which bf16 ignores), pages of `page_size` and `seed`;
// batch and context are the caller's.
model::StepOptions quant_step_options(int bits, int group, int64_t page_size, uint64_t seed);
// The chain tactic of a tuned step: PDL on only where its replays were bit-identical to PDL off
// (`pdl_mismatches` == 0; -1, unchecked, never wins) and it beats PDL off by the tuner's switch
// margin floor (TunerOptions::min_margin, 2 %). Times in [seconds].
bool pdl_chain_wins(double pdl_off_seconds, double pdl_on_seconds, int64_t pdl_mismatches);
// The default path `hone step` and `hone sweep` time: no tuning cache, no lazy tune, no
// HONE_TACTIC_* override.
DispatcherOptions default_path_options();
// One timed variant of a step (model::StepVariantResult, SweepVariant: name, pdl, seconds,
// spread, mismatches, check_replays; where a step variant has them, fuse_rope_append,
// fuse_silu_mul and fuse_norm, and kv_prefetch_kib, weights_once and omit_mask where they are
// on) as both commands
// write it in their JSON.
template <class Variant> nlohmann::json step_variant_json(const Variant &v) {
  nlohmann::json j = {{"name", v.name},
                      {"seconds", v.seconds},
                      {"spread", v.spread},
                      {"mismatches", v.mismatches},
                      {"check_replays", v.check_replays}};
  if constexpr (requires { v.launch; }) {
    j["pdl"] = v.launch.pdl;
    if (v.launch.kv_prefetch_kib > 0)
      j["kv_prefetch_kib"] = v.launch.kv_prefetch_kib;
    j["fuse_rope_append"] = v.launch.fuse_rope_append;
    if (v.launch.weights_once)
      j["weights_once"] = true;
    j["fuse_silu_mul"] = v.launch.fuse_silu_mul;
    j["fuse_norm"] = v.launch.fuse_norm;
    if (v.launch.omit != 0)
      j["omit_mask"] = v.launch.omit; // timing only (model::StepLaunch::omit)
    if (v.launch.shared_carveout >= 0)
      j["shared_carveout"] = v.launch.shared_carveout;
    if (v.launch.early_trigger)
      j["early_trigger"] = true;
  } else {
    j["pdl"] = v.pdl;
  }
  return j;
}

class StepCommand {
public:
  StepCommand(CLI::App &parent, const GlobalOptions &global);
  CLI::App *app() const { return app_; }
  int run();

private:
  const GlobalOptions &global_;
  CLI::App *app_;
  StepOptions options_;
};

} // namespace hone::cli
