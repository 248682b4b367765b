// ModelSpec: what hone reads of a Hugging Face config.json (Llama and Qwen2 families): the
// dimensions, the layer count, the norm epsilon, the rotary embedding and the q/k/v bias. The
// one parser of config.json in hone: the decode step (`hone step`, `hone sweep`) and the op
// shapes of a model tune (`hone tune --model`) both read a config through it. Weights are not
// read here (random and seeded, or a safetensors file).
//
//   hone::model::ModelSpec m = hone::model::load_model_spec("models/llama-3.1-8b.json");
//   m.layers;  // 32
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace hone::model {

struct ModelSpec {
  std::string name;               // file stem, e.g. "llama-3.1-8b"
  std::string family;             // model_type: "llama" or "qwen2"; op_shapes: any, "" if absent
  int64_t hidden = 0;             // hidden_size
  int64_t inter = 0;              // intermediate_size
  int64_t hq = 0, hkv = 0;        // num_attention_heads, num_key_value_heads (else hq)
  int64_t head_dim = 0;           // head_dim, else hidden / hq
  int64_t vocab = 0;              // vocab_size
  int64_t layers = 0;             // num_hidden_layers; op_shapes: 0 when absent
  double rms_eps = 1e-6;          // rms_norm_eps
  double rope_theta = 10000.0;    // rope_theta
  bool qkv_bias = false;          // Qwen2 (always), Llama with attention_bias
  bool tie_embeddings = false;    // tie_word_embeddings: lm_head is the embedding
  // rope_scaling's rope_type (else type): "" (none) or "llama3"; op_shapes: any.
  std::string rope_scaling;
  // rope_scaling {"rope_type": "llama3", ...}; factor 0: none.
  double llama3_factor = 0, llama3_low_freq_factor = 1, llama3_high_freq_factor = 4,
         llama3_original_max_positions = 8192;

  int64_t qkv_width() const { return (hq + 2 * hkv) * head_dim; }
  bool operator==(const ModelSpec &) const = default;
};

// What a config is read for, and so what it must state.
enum class ModelSpecUse {
  // The decode step runs it: model_type llama or qwen2, num_hidden_layers present, rope_scaling
  // llama3 or none.
  decode_step,
  // The shapes of its ops only (a model tune): any model_type or none, num_hidden_layers
  // optional, any rope_scaling type. Every field that is present is checked as for the step.
  op_shapes,
};

// Parses config.json text; `source` (a file name) is named in every error. Throws
// Error(invalid_argument) "model config SOURCE: ..." naming the field: malformed JSON, a
// missing or non-positive dimension, heads not a multiple of kv heads, hidden not a multiple
// of heads without head_dim, a flag that is not true or false, a number that is not positive,
// rope_scaling without a type, and for ModelSpecUse::decode_step what require_decode_step
// refuses. An absent and a null optional field are the same.
ModelSpec parse_model_spec(std::string_view json_text, const std::string &source, std::string name,
                           ModelSpecUse use = ModelSpecUse::decode_step);
// Reads and parses a file; throws Error(invalid_argument) naming the path when it cannot be
// read (a directory, missing, no permission).
ModelSpec load_model_spec(const std::filesystem::path &path,
                          ModelSpecUse use = ModelSpecUse::decode_step);
// Throws Error(invalid_argument) naming `source` and the field unless the decode step runs
// `spec`: family llama or qwen2, a layer count, rope_scaling llama3 or none (what
// parse_model_spec checks for ModelSpecUse::decode_step; for a spec read for its op shapes that
// may also feed the step).
void require_decode_step(const ModelSpec &spec, const std::string &source);

} // namespace hone::model
