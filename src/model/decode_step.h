// DecodeStep: one decode step of a decoder-only transformer (Llama, Qwen2) as a chain of hone
// ops on one stream, per layer:
//   rmsnorm (fused with the residual add from the second layer on) -> q/k/v (one fused
//   linear; Qwen2 adds its bias) -> rope (q out of place into the attention input) with the
//   append of the new token's roped K and its V into the paged cache (and Qwen2's bias) in the
//   same launch where StepOptions::fuse_rope_append is set (else rope, then kv_append) ->
//   decode.paged -> o -> rmsnorm + residual -> gate/up (one fused linear) -> silu_mul -> down,
// then the final rmsnorm and the lm_head. Linear layers are gemv.bf16 (bf16 weights) or
// quantized_linear (int4 / int8 affine weights, one copy for every row count). The step
// starts from the embedded tokens (the embedding lookup, one row per token, is not modelled).
// Weights are random and seeded (uniform, scaled by 1 / sqrt(fan-in) so that activations stay
// in range over every layer) and so is the input, or they are read from a checkpoint
// (StepOptions::weights: Hugging Face names, bf16), one layer at a time, and quantised on the
// device for int4 / int8 steps; the input is then the embedding of seeded random tokens. The
// cache holds `context` random tokens per request on shuffled pages, and the step appends token
// `context` (position context).
//
// A prefill step (StepOptions::prefill = M) is the same chain over batch x M rows: token j of a
// request is at position context + j, and it attends causally to the request's tokens 0 ..
// context + j. The attention runs on decode.paged with one query row per new token, each row a
// request of its own over a prefix of the same pages (kv_append writes each new token into its
// slot the same way), so each row reads its prefix of K and V (from L2 at prompt lengths). The
// linears run quantized_linear at every row count (qmv or qmm, its tuned crossover), or for bf16
// weights gemv.bf16 up to 32 rows and cuBLASLt's BF16 GEMM (the vendor library, not tuned by
// hone) above. The final norm and the lm_head run on each request's last token only.
//
//   hone::model::DecodeStep step(spec, {.batch = 1, .context = 4096});
//   step.enqueue(stream, hone::ops::cuda::dispatcher(), /*pdl=*/true);
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "model/model_spec.h"
#include "model/step_state.h"

namespace hone {
class Dispatcher;
}

namespace hone::model {

// The most requests a decode step takes: its decode linears run gemv / qmv.
inline constexpr int64_t kMaxStepBatch = 32;

struct StepOptions {
  int64_t batch = 1;      // requests, one new token each (prefill: `prefill` each); 1..32
  int64_t context = 4096; // tokens already cached per request (>= 1; a prefill may start at 0)
  // 0: a decode step. M > 0: a prefill step, M new tokens per request after the `context`
  // cached ones, batch x M <= 4096 rows through every op (see the class comment).
  int64_t prefill = 0;
  int bits = 16;          // 16: bf16 weights; 4 or 8: affine
  int group = 64;         // affine group size (32, 64, 128)
  int64_t page_size = 16; // KV cache page (16, 32, 64)
  uint64_t seed = 1;      // weights, cache and inputs (tokens with real weights)
  // A safetensors file, or a checkpoint directory (model.safetensors.index.json or
  // model.safetensors; Checkpoint::open): bf16 weights of Hugging Face names
  // (model.layers.L.self_attn.q_proj.weight, ..., model.norm.weight, model.embed_tokens.weight,
  // lm_head.weight unless the config ties it to the embedding). Empty: random weights.
  std::string weights;
  // One launch per layer for rope, the K/V append and the q/k/v bias (RopeTensors::append and
  // qkv_bias) instead of two or three, in every enqueue that does not say otherwise
  // (StepLaunch); the same bits either way (the rope op's and the step's fused-against-separate
  // device tests; bit-identical over 1000 graph replays of the Llama-3.1-8B step, and 0.8-1.7 %
  // faster: docs/benchmark_results/2026-12-05-h100).
  bool fuse_rope_append = true;
  // The gate/up linear with SiLU x up in its epilogue (StepLaunch::fuse_silu_mul) in every
  // enqueue that does not say otherwise; the same bits either way (the ops' and the step's
  // fused-against-separate device tests; bit-identical over 1000 graph replays of the
  // Llama-3.1-8B step). Measured on an H100 with the linears' first weights before the wait:
  // 2.1-2.5 % (int4 g64) and 0.8 % (bf16) off the default PDL step, level without PDL
  // (docs/benchmark_results/2026-12-06-h100-2).
  bool fuse_silu_mul = true;
  // The rmsnorm after o_proj and after down done by that linear's last CTA
  // (StepLaunch::fuse_norm; ops::cuda::quantized_linear_rmsnorm) in every enqueue that does not
  // say otherwise: 64 of Llama-3.1-8B's 65 rmsnorm launches at batch 1, int4. The same bits
  // either way (the op's and the step's fused-against-separate device tests). Off: its first form
  // made the int4 step 8 % slower on an H100 (docs/benchmark_results/2026-12-07-3, call1), and
  // the second has not been timed; `hone step --norm-variant` times it beside the default.
  bool fuse_norm = false;
};

// How a step's chain is launched (no bit of its outputs changes): `pdl`, every kernel but
// cuBLASLt's and qmm's a programmatic dependent launch; with it, `kv_prefetch_kib` KiB per CTA
// of each layer's cached K and V that decode.paged asks L2 for before its griddepcontrol.wait
// (ops::cuda::ChainLaunch::prefetch_kib; 0: none) and the linears' weights-once twins; and
// whether rope takes the append.
struct StepLaunch {
  bool pdl = false;
  int kv_prefetch_kib = 0;
  // Rope, the K/V append and the q/k/v bias in one launch a layer (StepOptions::fuse_rope_append
  // is what enqueue(stream, d, pdl) takes).
  bool fuse_rope_append = true;
  // With `pdl`: the decode linears (gemv.bf16, qmv.affine) of the mma path run as their
  // weights-once ring twins, the same bits, whose weights start before the wait
  // (ops::cuda::ChainLaunch::weights_once).
  bool weights_once = false;
  // The gate/up linear with SiLU x up in its epilogue (ops::cuda::gemv_bf16_silu_mul,
  // quantized_linear_silu_mul), one launch a layer fewer, the same bits. Decode steps whose
  // gate/up tactic has that epilogue (gemv.bf16's mma path; qmv.affine's at 4 bits and up to 8
  // rows); the others run silu_mul as before. A whole step only: a per-op enqueue (the
  // breakdown) times the two ops apart. StepOptions::fuse_silu_mul is what enqueue(stream, d,
  // pdl) takes.
  bool fuse_silu_mul = false;
  // The rmsnorm after o_proj and after down in that linear's launch, done by its last CTA
  // (ops::cuda::quantized_linear_rmsnorm; the same bits): decode steps of 4-bit weights up to 8
  // rows whose linear tactic has that form (qmv.affine's per-weight one-tile ahead=2 kernel);
  // the others launch rmsnorm as before. A whole step only, as fuse_silu_mul.
  // StepOptions::fuse_norm is what enqueue(stream, d, pdl) takes.
  bool fuse_norm = false;
  // Timing only: the launches of these kinds (bit 1 << StepOp) are left out, so that a step
  // timed with and without them gives their share of the chain as it runs (the breakdown times
  // each kind alone, PDL off). The outputs are then not the step's.
  uint32_t omit = 0;
  // With `pdl`: the L1 / shared-memory split every dependent launch of the chain asks for (the
  // percent of the most shared memory an SM can have; cuda/kernels/common/chain_settings.h), so
  // that no kernel waits for an SM to empty before it can change the split; -1: each kernel's
  // the driver's choice. No bit of the outputs changes.
  int shared_carveout = -1;
  // With `pdl`: rmsnorm lets the next kernel start at its own start rather than after its loads
  // (cuda/kernels/common/chain_settings.h, chain_early_trigger), so that the linear after it
  // issues its first weights while the norm still waits. No bit changes. A chain tactic
  // (`chain.decode_step:pdl=1,early=1`): on an H100 it took the Llama-3.1-8B int4 step from
  // 2685.9 to 2601.6 us and bf16 from 5614.6 to 5584.5, but Qwen2.5-1.5B int4 from 1184.6 to
  // 1202.6 (docs/benchmark_results/2026-12-07-4, call10), so `hone tune --model` times it per
  // step.
  bool early_trigger = false;
  bool operator==(const StepLaunch &) const = default;
};

// The kinds of launch in a step, in chain order (for the per-op breakdown).
enum class StepOp {
  rmsnorm,
  qkv,
  rope,
  kv_append,
  attention,
  o_proj,
  gate_up,
  silu_mul,
  down,
  lm_head
};
constexpr int kStepOpCount = 10;
// The per-op breakdown's name of a kind (host only, every build: `hone step --omit` reads it).
constexpr const char *to_string(StepOp op) {
  switch (op) {
  case StepOp::rmsnorm:
    return "rmsnorm";
  case StepOp::qkv:
    return "qkv";
  case StepOp::rope:
    return "rope";
  case StepOp::kv_append:
    return "kv_append";
  case StepOp::attention:
    return "decode.paged";
  case StepOp::o_proj:
    return "o_proj";
  case StepOp::gate_up:
    return "gate_up";
  case StepOp::silu_mul:
    return "silu_mul";
  case StepOp::down:
    return "down";
  case StepOp::lm_head:
    return "lm_head";
  }
  return "?";
}

class DecodeStep {
public:
  // Allocates and fills every weight, the cache and the inputs (synchronises). With
  // options.weights, host memory holds one layer's bf16 weights at a time (or the embedding,
  // where that is larger), and int4 / int8 weights are quantised on the device by the twin of
  // `hone quantize`'s quantizer. Throws Error(invalid_argument) naming a bad option (batch
  // outside 1..32, bits, group, a hidden size not a multiple of the group) or a checkpoint
  // tensor that is missing, not BF16 or of a shape other than the config's (naming the tensor
  // and both shapes), Error(runtime) when the device lacks the memory (naming the bytes needed).
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
  // The same with the whole chain launch: PDL and, with it, decode.paged's L2 prefetch of its
  // first cached K and V tiles before its wait (StepLaunch::kv_prefetch_kib).
  void enqueue(void *stream, Dispatcher &d, const StepLaunch &launch);
  // Only the launches of one kind, every layer, on the same buffers (for the breakdown).
  void enqueue_only(StepOp op, void *stream, Dispatcher &d, bool pdl);

  const void *logits() const; // bf16 [batch, vocab] (a prefill: of each request's last token)
  const void *hidden() const; // bf16 [batch, hidden]: the final norm's output
  size_t logits_elements() const;
  size_t hidden_elements() const;
  int64_t rows() const;        // rows through the layers: batch, or batch x prefill
  size_t weight_bytes() const; // every weight read per step
  // Every K and V byte of the requests after the step (context + new tokens), each counted once.
  size_t kv_bytes() const;
  // Floating-point operations per step: 2 n k per row of every linear (the lm_head on the last
  // token of each request), and 4 x head_dim per query head and attended token.
  double flops() const;
  size_t device_bytes() const; // all that this step allocated
  const ModelSpec &spec() const;
  const StepOptions &options() const;

  // Host copies of what the step reads (each synchronises the device first): a layer's weights
  // and the cached tokens 0 .. context - 1 of its K and V, gathered from the pages into
  // [batch, context, hkv, head_dim]; the input and positions of every row ([batch x M, ...],
  // M = 1 for a decode step, else the prefill's M); the final norm and the lm_head.
  HostLayer host_layer(int64_t layer) const;
  HostStepInputs host_inputs() const;
  HostHead host_head() const;
  // What the last enqueue left: the final hidden state and the logits (of each request's last
  // token), and the K and V it appended to every layer's cache at positions context ..
  // context + M - 1, [batch, M, hkv, head_dim] (random before the first step).
  HostStepOutputs host_outputs() const;

private:
  struct State;
  void run(const StepOp *only, void *stream, Dispatcher &d, const StepLaunch &launch);
  std::unique_ptr<State> s_;
};

// The whole step on the host (host_layer of every layer, host_inputs, host_head): for small
// models (tests, the float64 reference).
HostStep download(const DecodeStep &step);

// Writes the step's weights, input, positions and cached K and V to `dir` (write_step_export:
// the layout is in model/step_export.h), one layer in host memory at a time. The export holds
// decode steps: a prefill step throws Error(invalid_argument).
void export_decode_step(const DecodeStep &step, const std::filesystem::path &dir);

// What a step of these options reads, as DecodeStep::weight_bytes() and kv_bytes() report it:
// one linear's weights ([n, k] bf16, or its packed words, scales and biases); every weight of the
// step (each layer's linears, norms and q/k/v bias, the final norm and the lm_head); every K and
// V byte of the requests after the step (context + new tokens), each counted once.
size_t linear_read_bytes(int64_t n, int64_t k, const StepOptions &options);
size_t step_weight_bytes(const ModelSpec &spec, const StepOptions &options);
size_t step_kv_bytes(const ModelSpec &spec, const StepOptions &options);

// Bytes a DecodeStep of these options would allocate (weights, cache, activations), for a
// check before allocating.
size_t decode_step_bytes(const ModelSpec &spec, const StepOptions &options);

} // namespace hone::model
