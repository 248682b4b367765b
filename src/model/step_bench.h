// Timing a DecodeStep: each variant (a dispatcher and PDL on or off) is captured once in a
// CUDA graph and the graphs are replayed interleaved, sample by sample, so that default and
// tuned see the same clocks; the time is the median over samples of (sample time / replays).
// Mode: warm replays of the whole step. Every model this runs reads weights far larger than
// the L2 (60 MiB on an H200), so the weights come from memory on every step; the activations
// (a few KB per token) stay in L2, as they do in a serving runtime.
//
//   StepBenchResult r = bench_decode_step(step, {step_variant("default", &defaults, false),
//                                                step_variant("tuned", &tuned, true)}, {});
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/decode_step.h"

namespace hone {
class Dispatcher;
}

namespace hone::model {

struct StepVariant {
  std::string name;
  Dispatcher *dispatcher = nullptr;
  bool pdl = false;
  int kv_prefetch_kib = 0; // with pdl: StepLaunch::kv_prefetch_kib
  // StepLaunch::fuse_rope_append; unset: the step's StepOptions::fuse_rope_append.
  std::optional<bool> fuse_rope_append;
  bool weights_once = false; // with pdl: StepLaunch::weights_once
  // StepLaunch::fuse_silu_mul; unset: the step's StepOptions::fuse_silu_mul.
  std::optional<bool> fuse_silu_mul;
  // StepLaunch::fuse_norm; unset: the step's StepOptions::fuse_norm.
  std::optional<bool> fuse_norm;
  uint32_t omit = 0;          // StepLaunch::omit (timing only)
  int shared_carveout = -1;   // with pdl: StepLaunch::shared_carveout
  bool early_trigger = false; // with pdl: StepLaunch::early_trigger
};

// The variant `name` of `dispatcher`'s tactics, PDL on or off, with the KV prefetch of
// `kv_prefetch_kib` (with PDL); the rope and the twins as the step's unless set after.
inline StepVariant step_variant(std::string name, Dispatcher *dispatcher, bool pdl,
                                int kv_prefetch_kib = 0) {
  StepVariant v;
  v.name = std::move(name);
  v.dispatcher = dispatcher;
  v.pdl = pdl;
  v.kv_prefetch_kib = kv_prefetch_kib;
  return v;
}

struct StepBenchOptions {
  int samples = 9;              // medians over this many interleaved samples (>= 3)
  double sample_seconds = 0.02; // replays per sample: enough for this long at the first time
  int check_replays = 1000;     // PDL variants: replays compared bit for bit with PDL off
  bool breakdown = true;        // time each kind of launch alone (first variant's tactics)
};

struct StepVariantResult {
  std::string name;
  StepLaunch launch;  // what the variant ran: PDL, the KV prefetch, the fused rope, the twins
  double seconds = 0; // median per step
  double spread = 0;  // (max - min) / median over samples
  // PDL variants: 16-bit words of the logits and final hidden state that differed from the
  // same launches' PDL-off step (same dispatcher), summed over check_replays replays (0:
  // bit-identical).
  int64_t mismatches = -1; // -1: not checked
  int check_replays = 0;
  // 16-bit words of the logits and final hidden state that differ from the first variant's
  // outputs (one eager step each; -1 for the first variant itself). 0 where the variant runs
  // the first one's tactics, e.g. the tuned dispatcher with no cache and no lazy tune.
  int64_t differs_from_first = -1;
};

struct StepOpTime {
  StepOp op;
  int launches = 0;   // per step
  double seconds = 0; // median, all launches of this kind in one graph
};

struct StepBenchResult {
  std::vector<StepVariantResult> variants;
  std::vector<StepOpTime> breakdown;
  int replays_per_sample = 0;
};

// REQUIRES: variants non-empty, every dispatcher non-null. PDL variants are checked against
// the PDL-off step of their dispatcher (run once, outside any graph). Synchronises.
StepBenchResult bench_decode_step(DecodeStep &step, const std::vector<StepVariant> &variants,
                                  const StepBenchOptions &options);

} // namespace hone::model
