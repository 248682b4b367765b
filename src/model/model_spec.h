// ModelSpec: what a decode step needs of a Hugging Face config.json (Llama and Qwen2
// families): the dimensions, the layer count, the norm epsilon, the rotary embedding and the
// q/k/v bias. Weights are not read here (random and seeded, or a safetensors file).
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
  std::string family;             // "llama" or "qwen2" (model_type)
  int64_t hidden = 0;             // hidden_size
  int64_t inter = 0;              // intermediate_size
  int64_t hq = 0, hkv = 0;        // num_attention_heads, num_key_value_heads
  int64_t head_dim = 0;           // head_dim, else hidden / hq
  int64_t vocab = 0;              // vocab_size
  int64_t layers = 0;             // num_hidden_layers
  double rms_eps = 1e-6;          // rms_norm_eps
  double rope_theta = 10000.0;    // rope_theta
  bool qkv_bias = false;          // Qwen2 (always), Llama with attention_bias
  bool tie_embeddings = false;    // tie_word_embeddings: lm_head is the embedding
  // rope_scaling {"rope_type": "llama3", ...}; factor 0: none.
  double llama3_factor = 0, llama3_low_freq_factor = 1, llama3_high_freq_factor = 4,
         llama3_original_max_positions = 8192;

  int64_t qkv_width() const { return (hq + 2 * hkv) * head_dim; }
};

// Parses config.json text; `source` is named in every error. Throws Error(invalid_argument)
// naming the source and field: malformed JSON, a family other than llama / qwen2, a missing or
// non-positive dimension, heads not a multiple of kv heads, an unsupported rope_scaling type.
ModelSpec parse_model_spec(std::string_view json_text, const std::string &source,
                           std::string name);
// Reads and parses a file; throws Error(invalid_argument) naming the path when it cannot be
// read (a directory, missing, no permission).
ModelSpec load_model_spec(const std::filesystem::path &path);

} // namespace hone::model
