// Model configs: the ops of a decoder-only transformer's step, from a Hugging Face config.json
// read by the library (model::ModelSpec, src/model/model_spec.h, the one parser of config.json):
// the linear layers as the (N, K) weight shapes a serving runtime multiplies by every step, the
// small ops of the step (rmsnorm, rope, kv_append, silu_mul) and the decode attention, each as
// the op's dimensions the step (src/model/decode_step.cpp) launches it with.
//
//   hone::model::ModelSpec m = hone::cli::load_model_config("models/llama-3.1-8b.json");
//   for (const hone::cli::LinearLayer &l : hone::cli::linear_layers(m, false))
//     tune(l.n, l.k);   // qkv: N = (heads + 2 kv_heads) x head_dim, K = hidden, ...
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "model/model_spec.h"

namespace hone::cli {

// The config at `path` as a model tune reads it: for the shapes of its ops
// (model::ModelSpecUse::op_shapes), so a family the decode step does not run, or a config
// without num_hidden_layers, still tunes its ops. Throws Error(invalid_argument) as
// model::load_model_spec does, naming the file and the field.
model::ModelSpec load_model_config(const std::filesystem::path &path);
// The config compiled into the binary (models/qwen2.5-0.5b.json), tuned by a bare `hone tune`.
model::ModelSpec default_model_config();
std::string_view default_model_name();
std::string_view default_model_text();
// How errors name the built-in config: "(built-in qwen2.5-0.5b)".
std::string default_model_source();

// [bytes] the K and V cache of every layer of `config` for `tokens` cached tokens (bf16); 0
// when the config does not state its layers.
size_t model_kv_bytes(const model::ModelSpec &config, int64_t tokens);

// One linear layer as Y[rows, n] = X[rows, k] W[n, k]^T.
struct LinearLayer {
  std::string name; // "qkv", "o_proj", "gate_up", "down", "lm_head"
  int64_t n = 0;
  int64_t k = 0;
};

// Fused qkv (N = (heads + 2 kv_heads) x head_dim, K = hidden), o_proj (hidden, heads x
// head_dim), fused gate_up (2 x intermediate, hidden), down (hidden, intermediate), and
// lm_head (vocab, hidden) when `include_lm_head`.
std::vector<LinearLayer> linear_layers(const model::ModelSpec &config, bool include_lm_head);

// The row counts a model tune covers by default: every decode batch 1..kModelDecodeMaxRows and
// the prefill buckets kModelPrefillMinRows, 2x, .., kModelPrefillMaxRows. Each op takes the
// counts its buckets cover (gemv.bf16 and qmv.affine stop at 32 rows; qmm.affine,
// quantized_linear, rmsnorm, rope and silu_mul go past 8192), and counts that map to one
// bucket are one problem of the matrix (rows 33..64 of qmm.affine are its bucket rows=64).
inline constexpr int64_t kModelDecodeMaxRows = 64;
inline constexpr int64_t kModelPrefillMinRows = 128;
inline constexpr int64_t kModelPrefillMaxRows = 8192;
// 1, 2, .., 64, 128, 256, .., 8192, ascending.
std::vector<int64_t> default_model_rows();
// The same as --rows spells it: "1-64,128,256,512,1024,2048,4096,8192".
std::string default_model_rows_text();

// One launch shape of a small op of the decode step, as the op's dimensions in its order.
struct StepOpShape {
  std::string op;            // the op's name: "rmsnorm", "rope", "kv_append", "silu_mul"
  std::string use;           // where the step launches it: "norm", "norm+residual", ...
  std::vector<int64_t> dims; // in the order of step_op_dim_names(op)
};
// rmsnorm {rows, hidden, residual}: the first layer's input norm reads the embedded tokens
// alone (residual 0, use "norm"); every other norm adds the residual stream (1,
// "norm+residual").
StepOpShape rmsnorm_shape(const model::ModelSpec &config, int64_t rows, bool residual);
// rope {rows, hq, hkv, head_dim}: the q and k heads of every token.
StepOpShape rope_shape(const model::ModelSpec &config, int64_t rows);
// kv_append {batch, hkv, head_dim, page_size}: the new token's K and V of every request.
StepOpShape kv_append_shape(const model::ModelSpec &config, int64_t batch, int64_t page_size);
// silu_mul {rows, inter}: the activation of the fused gate/up output.
StepOpShape silu_mul_shape(const model::ModelSpec &config, int64_t rows);
// Every small-op launch shape of a step over `rows` tokens: both rmsnorm forms, rope and
// silu_mul, and kv_append when `rows` is a decode batch (<= kModelDecodeMaxRows): it appends
// one token per request, which a prefill of many tokens per request is not.
std::vector<StepOpShape> step_op_shapes(const model::ModelSpec &config, int64_t rows,
                                        int64_t page_size);
// The dimension names of small op `op` in order ({rows, hidden, residual} for rmsnorm); empty
// for a name that is not one of the four.
const std::vector<std::string> &step_op_dim_names(std::string_view op);

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
std::vector<DecodeAttentionStep> decode_attention_steps(const model::ModelSpec &config,
                                                        int64_t page_size);
// The names of decode.paged's dimensions, in order: an op whose buckets have exactly these
// takes decode_attention_steps().
const std::vector<std::string> &decode_attention_dim_names();

} // namespace hone::cli
