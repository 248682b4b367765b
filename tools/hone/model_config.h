// Model configs: the linear layers of a decoder-only transformer, read from a Hugging Face
// config.json, as the (N, K) weight shapes a serving runtime multiplies by every step.
//
//   hone::cli::ModelConfig m = hone::cli::load_model_config("models/llama-3.1-8b.json");
//   for (const hone::cli::LinearLayer &l : hone::cli::linear_layers(m, false))
//     tune(l.n, l.k);   // qkv: N = (heads + 2 kv_heads) x head_dim, K = hidden, ...
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace hone::cli {

struct ModelConfig {
  std::string name;                 // file stem, e.g. "llama-3.1-8b"
  int64_t hidden_size = 0;          // hidden_size
  int64_t intermediate_size = 0;    // intermediate_size (MLP width)
  int64_t num_attention_heads = 0;  // num_attention_heads
  int64_t num_key_value_heads = 0;  // num_key_value_heads; = heads when absent
  int64_t head_dim = 0;             // head_dim; = hidden_size / heads when absent or null
  int64_t vocab_size = 0;           // vocab_size
  bool tie_word_embeddings = false; // lm_head shares the embedding (false when absent)
};

// One linear layer as Y[rows, n] = X[rows, k] W[n, k]^T.
struct LinearLayer {
  std::string name; // "qkv", "o_proj", "gate_up", "down", "lm_head"
  int64_t n = 0;
  int64_t k = 0;
};

// Parses config.json text; `source` (a file name) is named in every error. Throws
// Error(invalid_argument) naming the source and field for malformed JSON, a missing field or
// a value that is not a positive integer or is inconsistent (e.g. heads % kv_heads != 0).
ModelConfig parse_model_config(std::string_view json_text, const std::string &source,
                               std::string name);
// Reads and parses a file; throws Error(invalid_argument) naming the file when unreadable.
ModelConfig load_model_config(const std::filesystem::path &path);
// The config compiled into the binary (models/qwen2.5-0.5b.json), tuned by a bare `hone tune`.
ModelConfig default_model_config();
std::string_view default_model_name();
std::string_view default_model_text();

// Fused qkv (N = (heads + 2 kv_heads) x head_dim, K = hidden), o_proj (hidden, heads x
// head_dim), fused gate_up (2 x intermediate, hidden), down (hidden, intermediate), and
// lm_head (vocab, hidden) when `include_lm_head`.
std::vector<LinearLayer> linear_layers(const ModelConfig &config, bool include_lm_head);

// One decode step of the model's attention over a paged KV cache: `batch` requests of
// `context` tokens each, as the dimensions of the decode.paged op, in its order.
struct DecodeAttentionStep {
  int64_t batch = 0;
  int64_t context = 0; // [tokens] per request
  // {batch, max_len, total_len, hq, hkv, head_dim, page_size}
  std::vector<int64_t> dims;
};
// The decode attention matrix a model run tunes: batch 1, 2, 4, .., 64 x context 1k, 2k, ..,
// 128k (7 x 8 = 56 steps, batch-major), heads and head_dim from `config`, pages of
// `page_size` tokens.
std::vector<DecodeAttentionStep> decode_attention_steps(const ModelConfig &config,
                                                        int64_t page_size);
// The names of decode.paged's dimensions, in order: an op whose buckets have exactly these
// takes decode_attention_steps().
const std::vector<std::string> &decode_attention_dim_names();

} // namespace hone::cli
