// The float64 reference of one decode or prefill step: DecodeStep's math on the same weights,
// cache and input, without its bf16 roundings. Every request has M new tokens (HostStep::
// new_tokens: 1 for a decode step), token j at position context + j. Per layer, on every new
// token: rmsnorm -> q/k/v (+ bias) -> rope at the token's position (half rotation, llama3
// scaling where the model has it) -> K and V appended after the `context` cached tokens, in
// order -> causal attention of token j over the cached tokens and the request's new tokens
// 0 .. j (GQA, scale 1 / sqrt(head_dim)) -> o -> residual add -> rmsnorm -> gate/up ->
// silu(gate) x up -> down -> residual add; then the final rmsnorm and the lm_head on each
// request's last token. The rope frequencies are computed here, apart from the kernel's.
//
//   hone::model::StepReferenceOutput want = hone::model::reference_decode_step(host_step);
//   hone::model::OutputError e = hone::model::output_error(got_logits, want.logits);
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "model/step_state.h"

namespace hone::model {

struct StepReferenceOptions {
  // Round to bf16 where DecodeStep's kernels round (every op's output and the residual sums),
  // the rest in float64: a model of the error a bf16 chain shows against the exact reference,
  // used to judge a tolerance. Not a bit-exact model of the kernels (their sums run in fp32).
  bool bf16_rounding = false;
};

struct StepReferenceOutput {
  std::vector<double> hidden; // [batch, hidden]: the final rmsnorm's output (last token)
  std::vector<double> logits; // [batch, vocab] (of each request's last token)
  // Per layer, [batch, M, hkv, head_dim]: the new tokens' K (after rope) and V, which the step
  // appends to the cache at positions context .. context + M - 1.
  std::vector<std::vector<double>> appended_k, appended_v;
};

// REQUIRES: every buffer of `step` has the size its spec, batch, context and new tokens give
// (checked: throws Error(invalid_argument) naming the first that does not).
StepReferenceOutput reference_decode_step(const HostStep &step,
                                          const StepReferenceOptions &options = {});

// How far `got` is from `want` (same size).
struct OutputError {
  double rel_l2 = 0;  // |got - want|_2 / |want|_2
  double max_abs = 0; // max_i |got_i - want_i|
  size_t worst = 0;   // the i of max_abs
  double worst_got = 0, worst_want = 0;
  double want_max_abs = 0; // max_i |want_i|
};
OutputError output_error(const std::vector<double> &got, const std::vector<double> &want);

// bf16 bit patterns widened to float64.
std::vector<double> bf16_values(const std::vector<uint16_t> &bits);

// The bound on relative L2 error of a bf16 DecodeStep's hidden state and logits against the
// float64 reference, for a model of `layers` layers (docs/notes/decode_step.md derives it):
// every rounding to bf16 leaves a relative error of at most u = 2^-8 (RMS about u / 3 over a
// vector of random significands), the step rounds R = 12 times per layer plus 3 at the end
// (every row of a prefill step as often as a decode step's), the errors of independent roundings
// add in quadrature and a layer passes on the relative error of its input at most unchanged, so
// the expected error is about u / 3 x sqrt(12 L + 3); the bound is 3 times that.
double step_reference_bound(int64_t layers);

} // namespace hone::model
