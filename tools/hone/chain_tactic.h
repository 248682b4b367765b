// The chain tactic of a model's decode step, as a tuning-cache entry. Whether the step
// launches its kernels as programmatic dependent launches (PDL) is a tactic of the whole chain,
// not of one kernel: `hone tune --model` times the tuned step with PDL off and on
// (bench_decode_step) per batch bucket and weight format, and records the pick under an op of
// its own, chain.decode_step, whose dimensions are the step's identity; `hone step` reads it.
// PDL is picked only when its graph replays were bit-identical to PDL off over
// kChainCheckReplays replays and it beat PDL off by the switch margin (2 %).
//
//   chain.decode_step@2|batch=4,bits=4,group=64,page_size=16,hidden=4096,layers=32,
//     model=2077950130|bf16|NVIDIA H200                         (one line; docs/cache-format.md)
//
//   Shape bucket = chain_bucket(spec, /*batch=*/4, /*bits=*/4, /*group=*/64, /*page_size=*/16);
//   ChainLookup found = find_chain_pick(cache, bucket, device_model, warm_metadata);
//   if (found.usable()) use(found.choice);
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "decode_step_chain_op.h"
#include "hone/backend.h"
#include "hone/cache.h"
#include "hone/key.h"
#include "hone/op.h"
#include "hone/settings.h"
#include "hone/tune.h"
#include "hone/tuning_store.h"
#include "model/model_spec.h"

namespace hone::cli {

using hone::DecodeStepChainOp;
using hone::kChainOpName;
// Graph replays of the PDL step compared bit for bit with PDL off before PDL may be picked.
inline constexpr int kChainCheckReplays = 1000;

// The registry's chain op (CUDA builds register it with the library's ops, so that every
// `cache verify`, the C API's and Python's too, judges chain entries like any op's), or in a
// build without CUDA an instance of its own.
const DecodeStepChainOp &chain_op();

// The step's identity: a 64-bit FNV-1a hash, folded to 32 bits, of what its time depends on:
// hidden, intermediate, heads, kv heads, head_dim, layers, vocab and the q/k/v bias. Stable: it is
// part of cache keys.
int64_t chain_model_id(const model::ModelSpec &spec);
// The bucket of `spec`'s decode step at `batch` requests with `bits`-bit weights (16: bf16,
// `group` ignored) in groups of `group`, pages of `page_size`. Throws Error(invalid_argument)
// naming a value the step cannot take.
Shape chain_bucket(const model::ModelSpec &spec, int64_t batch, int bits, int group,
                   int64_t page_size);
using hone::chain_tactic;

// A PDL variant as timed beside plain PDL: with decode.paged's KV prefetch, or with rmsnorm's
// early trigger.
struct ChainVariantTiming {
  ChainChoice choice; // pdl, and the variant's kv_prefetch_kib or early_trigger
  double seconds = 0; // [seconds] median per step
  double spread = 0;
  int64_t mismatches = -1; // as ChainTiming::mismatches
  int check_replays = 0;
};

// What one timing of the tuned step measured (bench_decode_step's variants).
struct ChainTiming {
  double off_s = 0;      // [seconds] median per step, PDL off
  double on_s = 0;       // [seconds] median per step, PDL on
  double off_spread = 0; // (max - min) / median over samples, PDL off
  double on_spread = 0;
  // 16-bit output words of the PDL step that differed from PDL off over check_replays replays;
  // -1: not checked.
  int64_t mismatches = -1;
  int check_replays = 0;
  int replays_per_sample = 0;
  // PDL with the KV prefetch or the early trigger (the candidates with kv_prefetch or early),
  // each checked like PDL.
  std::vector<ChainVariantTiming> variants;
};

struct ChainDecision {
  ChainChoice choice; // PDL off, PDL, or a PDL variant
  std::string reason; // why PDL was or was not picked
};
// PDL when checked over at least kChainCheckReplays replays and pdl_chain_wins() (bit-identical,
// faster than PDL off by the tuner's switch margin floor, 2 %); else PDL off. Then a variant
// (KV prefetch, early trigger), checked the same way, where it beats the choice so far (PDL, or
// PDL off) by the same margin: the fastest such.
ChainDecision decide_chain(const ChainTiming &timing);
// The timing as a tune of chain_op(): candidates pdl=0 (the default), pdl=1 and each prefetch
// variant (gate_failed when not bit-identical, or not checked enough), the pick by
// decide_chain(), so that to_cache_entry() records it and `hone tune` reports it like any
// bucket.
TuneReport chain_report(const Shape &bucket, const std::string &device_model,
                        const ChainTiming &timing);

// What a cache holds for one chain bucket on this device.
struct ChainLookup {
  Lookup status = Lookup::absent;
  std::string key;                 // the bucket's cache key on this device
  std::optional<CacheEntry> entry; // the entry under the key, usable or not
  ChainChoice choice;              // the pick, when usable
  // Why the entry cannot be used (stale, unrunnable); when absent, the entries of the same
  // bucket that exist for another device or op version ("measured on NVIDIA A100"), or empty.
  std::string reason;
  bool usable() const { return status == Lookup::usable; }
};
// Looks `bucket` up in `cache` (loaded) for `device_model`, judging the entry against
// `current` (the warm metadata: the chain is timed on warm graph replays) and chain_op()'s
// tactics. Never throws for what the file holds: a stale, garbage or foreign entry is reported
// in the result.
ChainLookup find_chain_pick(const Cache &cache, const Shape &bucket,
                            const std::string &device_model, const Metadata &current);
// What the tuning cache `settings` name holds for the decode step of `spec` at `batch`
// requests, `bits`-bit weights (16: bf16) in groups of `group`, pages of `page_size`, on
// `backend`: find_chain_pick() under the backend's warm metadata. An entry that cannot be used
// (stale, unrunnable, measured on another device or op version) is ignored with one warning
// on stderr; a cache that is off or unreadable, or a step outside the chain's buckets, is
// absent.
ChainLookup cached_chain_pick(const model::ModelSpec &spec, int64_t batch, int bits, int group,
                              int64_t page_size, const Backend &backend, const Settings &settings);

} // namespace hone::cli
