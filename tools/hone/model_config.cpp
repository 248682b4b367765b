#include "hone/model_config.h"

namespace hone::cli {

model::ModelSpec load_model_config(const std::filesystem::path &path) {
  return model::load_model_spec(path, model::ModelSpecUse::op_shapes);
}

model::ModelSpec default_model_config() {
  return model::parse_model_spec(default_model_text(), default_model_source(),
                                 std::string(default_model_name()), model::ModelSpecUse::op_shapes);
}

std::string default_model_source() {
  std::string source = "(built-in ";
  source += default_model_name();
  source += ')';
  return source;
}

size_t model_kv_bytes(const model::ModelSpec &config, int64_t tokens) {
  return size_t(config.layers) * size_t(tokens) * 2 * size_t(config.hkv * config.head_dim) * 2;
}

std::vector<LinearLayer> linear_layers(const model::ModelSpec &c, bool include_lm_head) {
  std::vector<LinearLayer> layers = {
      {"qkv", c.qkv_width(), c.hidden},
      {"o_proj", c.hidden, c.hq * c.head_dim},
      {"gate_up", 2 * c.inter, c.hidden},
      {"down", c.hidden, c.inter},
  };
  if (include_lm_head)
    layers.push_back({"lm_head", c.vocab, c.hidden});
  return layers;
}

std::vector<int64_t> default_model_rows() {
  std::vector<int64_t> rows;
  for (int64_t r = 1; r <= kModelDecodeMaxRows; ++r)
    rows.push_back(r);
  for (int64_t r = kModelPrefillMinRows; r <= kModelPrefillMaxRows; r *= 2)
    rows.push_back(r);
  return rows;
}

std::string default_model_rows_text() {
  // Appended piece by piece: GCC 12 at -O3 warns -Wrestrict (a false positive) on
  // "1-" + std::string&&.
  std::string text = "1-";
  text += std::to_string(kModelDecodeMaxRows);
  for (int64_t r = kModelPrefillMinRows; r <= kModelPrefillMaxRows; r *= 2) {
    text += ',';
    text += std::to_string(r);
  }
  return text;
}

StepOpShape rmsnorm_shape(const model::ModelSpec &c, int64_t rows, bool residual) {
  return {"rmsnorm", residual ? "norm+residual" : "norm", {rows, c.hidden, residual ? 1 : 0}};
}

StepOpShape rope_shape(const model::ModelSpec &c, int64_t rows) {
  return {"rope", "rope", {rows, c.hq, c.hkv, c.head_dim}};
}

StepOpShape kv_append_shape(const model::ModelSpec &c, int64_t batch, int64_t page_size) {
  return {"kv_append", "kv_append", {batch, c.hkv, c.head_dim, page_size}};
}

StepOpShape silu_mul_shape(const model::ModelSpec &c, int64_t rows) {
  return {"silu_mul", "silu_mul", {rows, c.inter}};
}

std::vector<StepOpShape> step_op_shapes(const model::ModelSpec &c, int64_t rows,
                                        int64_t page_size) {
  std::vector<StepOpShape> shapes = {rmsnorm_shape(c, rows, false), rmsnorm_shape(c, rows, true),
                                     rope_shape(c, rows)};
  if (rows <= kModelDecodeMaxRows)
    shapes.push_back(kv_append_shape(c, rows, page_size));
  shapes.push_back(silu_mul_shape(c, rows));
  return shapes;
}

const std::vector<std::string> &step_op_dim_names(std::string_view op) {
  static const std::vector<std::string> rmsnorm = {"rows", "hidden", "residual"};
  static const std::vector<std::string> rope = {"rows", "hq", "hkv", "head_dim"};
  static const std::vector<std::string> kv_append = {"batch", "hkv", "head_dim", "page_size"};
  static const std::vector<std::string> silu_mul = {"rows", "inter"};
  static const std::vector<std::string> none;
  if (op == "rmsnorm")
    return rmsnorm;
  if (op == "rope")
    return rope;
  if (op == "kv_append")
    return kv_append;
  if (op == "silu_mul")
    return silu_mul;
  return none;
}

std::vector<DecodeAttentionStep> decode_attention_steps(const model::ModelSpec &c,
                                                        int64_t page_size) {
  std::vector<DecodeAttentionStep> steps;
  for (int64_t batch = 1; batch <= 64; batch *= 2)
    for (int64_t context = 1024; context <= 131072; context *= 2)
      steps.push_back(
          {batch, context, {batch, context, batch * context, c.hq, c.hkv, c.head_dim, page_size}});
  return steps;
}

const std::vector<std::string> &decode_attention_dim_names() {
  static const std::vector<std::string> names = {"batch", "max_len",  "total_len", "hq",
                                                 "hkv",   "head_dim", "page_size"};
  return names;
}

} // namespace hone::cli
