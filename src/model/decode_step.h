// DecodeStep: one decode step of a decoder-only transformer (Llama, Qwen2) as a chain of hone
// ops on one stream, per layer:
//   rmsnorm (fused with the residual add from the second layer on) -> q/k/v (one fused
//   linear; Qwen2 adds its bias) -> rope (q out of place into the attention input, k in
//   place) -> kv_append (the new token's K and V into the paged cache) -> decode.paged ->
//   o -> rmsnorm + residual -> gate/up (one fused linear) -> silu_mul -> down,
// then the final rmsnorm and the lm_head. Linear layers are gemv.bf16 (bf16 weights) or
// quantized_linear (int4 / int8 affine weights, one copy for every row count). The step
// starts from the embedded tokens (the embedding lookup, one row per token, is not modelled).
// Weights are random and seeded (uniform, scaled by 1 / sqrt(fan-in) so that activations stay
// in range over every layer); the cache holds `context` random tokens per request on shuffled
// pages, and the step appends token `context` (position context).
//
//   hone::model::DecodeStep step(spec, {.batch = 1, .context = 4096});
//   step.enqueue(stream, hone::ops::cuda::dispatcher(), /*pdl=*/true);
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "model/model_spec.h"

namespace hone {
class Dispatcher;
}

namespace hone::model {

struct StepOptions {
  int64_t batch = 1;      // requests, one new token each; 1..32
  int64_t context = 4096; // tokens already cached per request
  int bits = 16;          // 16: bf16 weights; 4 or 8: affine
  int group = 64;         // affine group size (32, 64, 128)
  int64_t page_size = 16; // KV cache page (16, 32, 64)
  uint64_t seed = 1;      // weights, cache and inputs
};

// The kinds of launch in a step, in chain order (for the per-op breakdown).
enum class StepOp { rmsnorm, qkv, rope, kv_append, attention, o_proj, gate_up, silu_mul, down,
                    lm_head };
constexpr int kStepOpCount = 10;
const char *to_string(StepOp op);

class DecodeStep {
public:
  // Allocates and fills every weight, the cache and the inputs (synchronises). Throws
  // Error(invalid_argument) naming a bad option (batch outside 1..32, bits, group, a hidden
  // size not a multiple of the group), Error(runtime) when the device lacks the memory (naming
  // the bytes needed).
  DecodeStep(const ModelSpec &spec, const StepOptions &options);
  ~DecodeStep();
  DecodeStep(const DecodeStep &) = delete;
  DecodeStep &operator=(const DecodeStep &) = delete;

  // Enqueues one step on `stream` (a cudaStream_t) with the tactics `d` resolves; never
  // synchronises. The chain tactic `pdl`: every kernel but qmm's is a programmatic dependent
  // launch (its launch and set-up overlap the tail of the kernel before it, which it waits for
  // before it reads anything); no bit of the outputs changes. Run it once before capturing it
  // in a CUDA graph (workspaces grow on the first run).
  void enqueue(void *stream, Dispatcher &d, bool pdl);
  // Only the launches of one kind, every layer, on the same buffers (for the breakdown).
  void enqueue_only(StepOp op, void *stream, Dispatcher &d, bool pdl);

  const void *logits() const; // bf16 [batch, vocab]
  const void *hidden() const; // bf16 [batch, hidden]: the final norm's output
  size_t logits_elements() const;
  size_t hidden_elements() const;
  size_t weight_bytes() const; // every weight read per step
  size_t kv_bytes() const;     // every K and V byte read per step (context + 1 tokens)
  size_t device_bytes() const; // all that this step allocated
  const ModelSpec &spec() const;
  const StepOptions &options() const;

private:
  struct State;
  void run(const StepOp *only, void *stream, Dispatcher &d, bool pdl);
  std::unique_ptr<State> s_;
};

// Bytes a DecodeStep of these options would allocate (weights, cache, activations), for a
// check before allocating.
size_t decode_step_bytes(const ModelSpec &spec, const StepOptions &options);

} // namespace hone::model
