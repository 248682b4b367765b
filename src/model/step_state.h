// A decode or prefill step's state on the host: the weights, the cached K and V, the input and
// the positions of one DecodeStep, as bf16 bit patterns in the step's own layout (fused q/k/v and
// gate/up, affine weights in the qmv.affine layout). What an export writes and what the float64
// reference reads; DecodeStep hands it out one layer at a time.
//
//   hone::model::HostLayer l = step.host_layer(0);          // downloads layer 0
//   std::vector<double> w = l.qkv.values();                 // the weights the kernels use
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "model/model_spec.h"

namespace hone::model {

// One linear layer's weights, y = W x with W [n, k].
struct HostLinear {
  int64_t n = 0, k = 0;
  int bits = 16;                        // 16: bf16 `w`; 4 or 8: affine `q`, `scales`, `biases`
  int group = 0;                        // affine group size along k
  std::vector<uint16_t> w;              // bf16 [n, k]
  std::vector<uint32_t> q;              // [n, k * bits / 32], lowest bits first along k
  std::vector<uint16_t> scales, biases; // bf16 [n, k / group]

  // W [n, k] exactly: the bf16 values, or q * scale + bias (exact in float64).
  std::vector<double> values() const;
  // W [n, k] in bf16: `w` itself, or each q * scale + bias rounded once to bf16 (nearest).
  std::vector<uint16_t> bf16() const;
};

// One decoder layer.
struct HostLayer {
  HostLinear qkv;                     // [(hq + 2 hkv) head_dim, hidden]: q rows, k rows, v rows
  HostLinear o;                       // [hidden, hq head_dim]
  HostLinear gate_up;                 // [2 inter, hidden]: gate rows, then up rows
  HostLinear down;                    // [hidden, inter]
  std::vector<uint16_t> qkv_bias;     // [qkv_width] where the model has one, else empty
  std::vector<uint16_t> norm1, norm2; // [hidden]: input and post-attention rmsnorm weights
  // The cached tokens 0 .. context - 1 of every request, gathered from the pages:
  // [batch, context, hkv, head_dim] each.
  std::vector<uint16_t> k_cache, v_cache;
};

// What the step starts from: M new tokens per request (1 for a decode step), row b x M + j
// holding token j of request b.
struct HostStepInputs {
  std::vector<uint16_t> input;    // bf16 [batch x M, hidden]: the embedded new tokens
  std::vector<int32_t> positions; // [batch x M]: each new token's position (its rope angle)
  std::vector<int32_t> tokens;    // [batch x M]: the token ids where `input` is their embedding
                                  // (real weights), else empty (random input)
};

// What follows the last layer.
struct HostHead {
  std::vector<uint16_t> final_norm; // [hidden]
  HostLinear lm_head;               // [vocab, hidden]
};

// What a step computes (M new tokens per request, 1 for a decode step).
struct HostStepOutputs {
  std::vector<uint16_t> hidden; // bf16 [batch, hidden]: the final rmsnorm's output (last token)
  std::vector<uint16_t> logits; // bf16 [batch, vocab] (of each request's last token)
  // Per layer, bf16 [batch, M, hkv, head_dim]: the new tokens' K (after rope) and V as the step
  // appended them to the cache at positions context .. context + M - 1.
  std::vector<std::vector<uint16_t>> appended_k, appended_v;
};

// A whole step in host memory (small models: tests, the float64 reference).
struct HostStep {
  ModelSpec spec;
  int64_t batch = 0, context = 0;
  int64_t new_tokens = 1; // M per request: 1 for a decode step, the prefill's M for a prefill
  HostStepInputs inputs;
  std::vector<HostLayer> layers;
  HostHead head;
};

// Each throws Error(invalid_argument) naming the first buffer whose size is not the one the
// spec, batch, context and new tokens give (the layer index in `what`); check_host_step also
// a new-token count below 1. `rows` is batch x new tokens.
void check_host_layer(const HostLayer &layer, const ModelSpec &spec, int64_t batch, int64_t context,
                      const std::string &what);
void check_host_ends(const HostStepInputs &inputs, const HostHead &head, const ModelSpec &spec,
                     int64_t rows);
void check_host_step(const HostStep &step);

// `value` rounded to bf16 (nearest, ties to even) in one step, as a kernel rounds its fp32 result.
uint16_t bf16_nearest(double value);

// "bf16", "int4:g64", ...: the format of a step's linear weights.
std::string weight_format(int bits, int group);

} // namespace hone::model
