// Exporting a decode step so that another implementation (bench/peers/decode_step_torch.py
// --from) can run the identical step: its weights under Hugging Face names, its input, positions
// and the cached tokens' K and V, and the model config. Written one layer at a time (host memory
// holds one layer), but the files hold every weight and the whole cache: large for a big model.
//
// DIR/config.json        the model config (Hugging Face fields; hone's load_model_spec reads it)
// DIR/model.safetensors  bf16 weights: model.layers.L.self_attn.{q,k,v,o}_proj.weight (and the
//                        q/k/v biases), model.layers.L.mlp.{gate,up,down}_proj.weight,
//                        model.layers.L.{input,post_attention}_layernorm.weight,
//                        model.norm.weight, and lm_head.weight (or model.embed_tokens.weight
//                        where the config ties them); an int4 / int8 step's weights as
//                        q x scale + bias rounded once to bf16
// DIR/step.safetensors   input bf16 [batch, hidden], positions I32 [batch], tokens I32 [batch]
//                        (real weights only), model.layers.L.k_cache and .v_cache bf16
//                        [batch, context, hkv, head_dim]: the cached tokens 0 .. context - 1
// DIR/step.json          format, batch, context, weight format, files
//
//   hone::model::write_step_export("out/step", hone::model::export_source(host_step, "bf16"));
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>

#include "model/step_state.h"

namespace hone::model {

struct StepExportSource {
  ModelSpec spec;
  int64_t batch = 0, context = 0;
  std::string weights = "bf16"; // the step's weight format (weight_format)
  HostStepInputs inputs;
  HostHead head;
  std::function<HostLayer(int64_t)> layer; // called once per layer, in order
};

// Creates `dir` where needed and writes the files above (each under a temporary name, renamed
// into place). Throws Error(invalid_argument) naming a buffer whose size does not match the spec,
// Error(runtime) when a file cannot be written.
void write_step_export(const std::filesystem::path &dir, const StepExportSource &source);

// The source of a step already in host memory; `step` must outlive the source. The export holds
// decode steps (one new token per request): a prefill step throws Error(invalid_argument).
StepExportSource export_source(const HostStep &step, std::string weights);

// The Hugging Face config.json text of `spec` (the fields load_model_spec reads).
std::string model_config_json(const ModelSpec &spec);

} // namespace hone::model
