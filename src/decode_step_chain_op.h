// chain.decode_step: the chain tactic of a model's decode step as an op of the registry.
// Whether the step launches its kernels as programmatic dependent launches (PDL) is a tactic of
// the whole chain, not of one kernel; `hone tune --model` times it and records the pick under
// this op (tools/hone/chain_tactic.h: the key, the timing, the lookup). The op lives in the
// library, registered with the CUDA ops, so that every reader of a tuning cache (hone cache
// verify, the C API's hone_cache_verify, Python) judges chain entries like any op's.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "hone/op.h"

namespace hone {

inline constexpr std::string_view kChainOpName = "chain.decode_step";
// The largest model identity (the model dimension: a 32-bit hash of the step's shape).
inline constexpr int64_t kChainMaxModelId = 0xffffffff;
// The KV prefetch distance the chain tune times beside plain PDL: KiB per CTA of cached K and
// V that decode.paged asks L2 for before its wait (ops::cuda::ChainLaunch::prefetch_kib).
inline constexpr int kChainKvPrefetchKib = 256;
// The largest distance a chain tactic may spell (decode.paged's own limit).
inline constexpr int kChainMaxKvPrefetchKib = 1 << 20;

// A chain tactic compiled: PDL, and with it decode.paged's KV prefetch distance (0: none) and
// whether rmsnorm lets the next kernel start at its own start (model::StepLaunch::early_trigger).
struct ChainChoice {
  bool pdl = false;
  int kv_prefetch_kib = 0;
  bool early_trigger = false;
  bool operator==(const ChainChoice &) const = default;
};

// The chain op: dimensions {batch, bits, group, page_size, hidden, layers, model}, dtype bf16,
// backend cuda. batch: the power of two at or above (1, 2, 4, .., 32, the step's range);
// bits 16 for bf16 weights (group 0), else 4 or 8 with group 32, 64 or 128; page_size 16, 32
// or 64; hidden and layers for a reader; model: chain_model_id(), every dimension the step's
// time depends on. Tactics `chain.decode_step:pdl=0` (the default), `:pdl=1`,
// `:pdl=1,kv_prefetch=K` (PDL with decode.paged's KV prefetch of K KiB per CTA; the candidate
// is K = kChainKvPrefetchKib, any K in 1..kChainMaxKvPrefetchKib compiles) and `...,early=1`
// after either (rmsnorm lets the next kernel start at its own start; the candidate is
// `:pdl=1,early=1`). It has no per-launch workload: prepare() throws, since the chain is timed
// as CUDA graphs of the whole step.
class DecodeStepChainOp final : public TunableOp {
public:
  DecodeStepChainOp();
  // The identity in its keys, chain.decode_step@2 on cuda over bf16 activations. Bump the
  // version when the dimensions, the fields of chain_model_id(), the meaning of a field or the
  // candidates change (2: early=1 joined them, so that a pick made without it is re-timed).
  std::string_view name() const override { return kChainOpName; }
  std::string_view backend() const override { return "cuda"; }
  int version() const override { return 2; }
  DType dtype() const override { return DType::bf16; }
  const BucketSpec &buckets() const override { return buckets_; }
  Tactic default_tactic(const Shape &bucket) const override; // pdl=0
  // pdl=0, pdl=1, pdl=1,kv_prefetch=kChainKvPrefetchKib, pdl=1,early=1
  std::vector<Tactic> candidates(const Shape &bucket) const override;
  // A ChainChoice; throws Error(invalid_argument) naming a tactic of another spelling.
  CompiledTactic compile(const Tactic &tactic) const override;
  // PDL is admitted only bit-identical to PDL off.
  Numerics default_numerics() const override { return Numerics::batch_invariant; }
  // Throws Error(invalid_argument) naming the bad dimension.
  void validate(const Shape &shape) const override;
  // Throws Error(invalid_argument): `hone tune --model` times the chain.
  std::unique_ptr<Workload> prepare(const Shape &shape) const override;

private:
  BucketSpec buckets_;
};

// `chain.decode_step:pdl=0` / `:pdl=1` / `:pdl=1,kv_prefetch=K` (K > 0 only with pdl), then
// `,early=1` where early_trigger (only with pdl).
Tactic chain_tactic(bool pdl, int kv_prefetch_kib = 0, bool early_trigger = false);
Tactic chain_tactic(const ChainChoice &choice);

} // namespace hone
