#include "hone/model_config.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>

#include <nlohmann/json.hpp>

#include "hone/error.h"

namespace hone::cli {

namespace {

using nlohmann::json;

[[noreturn]] void bad_field(const std::string &source, const char *field, const std::string &why) {
  HONE_INVALID_ARGUMENT("model config " + source + ": field '" + field + "' " + why);
}

// A present, non-null field as a positive integer; nullopt when absent or null.
std::optional<int64_t> optional_positive(const json &config, const std::string &source,
                                         const char *field) {
  auto it = config.find(field);
  if (it == config.end() || it->is_null())
    return std::nullopt;
  if (!it->is_number_integer())
    bad_field(source, field, "must be a positive integer, got " + it->dump());
  const int64_t value = it->get<int64_t>();
  if (value < 1)
    bad_field(source, field, "must be a positive integer, got " + std::to_string(value));
  return value;
}

int64_t required_positive(const json &config, const std::string &source, const char *field) {
  if (!config.contains(field) || config[field].is_null())
    bad_field(source, field, "is missing");
  return *optional_positive(config, source, field);
}

} // namespace

ModelConfig parse_model_config(std::string_view json_text, const std::string &source,
                               std::string name) {
  json config;
  try {
    config = json::parse(json_text);
  } catch (const json::parse_error &e) {
    HONE_INVALID_ARGUMENT("model config " + source + ": not valid JSON (" + e.what() + ")");
  }
  if (!config.is_object())
    HONE_INVALID_ARGUMENT("model config " + source + ": expected a JSON object, got " +
                          config.type_name());

  ModelConfig m;
  m.name = std::move(name);
  m.hidden_size = required_positive(config, source, "hidden_size");
  m.intermediate_size = required_positive(config, source, "intermediate_size");
  m.num_attention_heads = required_positive(config, source, "num_attention_heads");
  m.vocab_size = required_positive(config, source, "vocab_size");
  m.num_key_value_heads =
      optional_positive(config, source, "num_key_value_heads").value_or(m.num_attention_heads);
  if (m.num_attention_heads % m.num_key_value_heads != 0)
    bad_field(source, "num_key_value_heads",
              "= " + std::to_string(m.num_key_value_heads) + " does not divide " +
                  "num_attention_heads = " + std::to_string(m.num_attention_heads));
  if (std::optional<int64_t> head_dim = optional_positive(config, source, "head_dim")) {
    m.head_dim = *head_dim;
  } else {
    if (m.hidden_size % m.num_attention_heads != 0)
      bad_field(source, "head_dim",
                "is missing and hidden_size = " + std::to_string(m.hidden_size) +
                    " is not a multiple of num_attention_heads = " +
                    std::to_string(m.num_attention_heads));
    m.head_dim = m.hidden_size / m.num_attention_heads;
  }
  m.num_hidden_layers = optional_positive(config, source, "num_hidden_layers").value_or(0);
  if (auto it = config.find("tie_word_embeddings"); it != config.end() && !it->is_null()) {
    if (!it->is_boolean())
      bad_field(source, "tie_word_embeddings", "must be true or false, got " + it->dump());
    m.tie_word_embeddings = it->get<bool>();
  }
  return m;
}

size_t model_kv_bytes(const ModelConfig &config, int64_t tokens) {
  return size_t(config.num_hidden_layers) * size_t(tokens) * 2 *
         size_t(config.num_key_value_heads * config.head_dim) * 2;
}

ModelConfig load_model_config(const std::filesystem::path &path) {
  // An ifstream opens a directory and then reads nothing, which would read as "not valid JSON".
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    HONE_INVALID_ARGUMENT("model config " + path.string() +
                          ": is a directory; give the config.json file itself");
  std::ifstream in(path);
  if (!in)
    HONE_INVALID_ARGUMENT("model config " + path.string() + ": cannot be read (missing file?)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    HONE_INVALID_ARGUMENT("model config " + path.string() + ": read failed");
  return parse_model_config(text.str(), path.string(), path.stem().string());
}

ModelConfig default_model_config() {
  const std::string name(default_model_name());
  return parse_model_config(default_model_text(), "(built-in " + name + ")", name);
}

std::vector<LinearLayer> linear_layers(const ModelConfig &c, bool include_lm_head) {
  std::vector<LinearLayer> layers = {
      {"qkv", (c.num_attention_heads + 2 * c.num_key_value_heads) * c.head_dim, c.hidden_size},
      {"o_proj", c.hidden_size, c.num_attention_heads * c.head_dim},
      {"gate_up", 2 * c.intermediate_size, c.hidden_size},
      {"down", c.hidden_size, c.intermediate_size},
  };
  if (include_lm_head)
    layers.push_back({"lm_head", c.vocab_size, c.hidden_size});
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

StepOpShape rmsnorm_shape(const ModelConfig &c, int64_t rows, bool residual) {
  return {"rmsnorm", residual ? "norm+residual" : "norm", {rows, c.hidden_size, residual ? 1 : 0}};
}

StepOpShape rope_shape(const ModelConfig &c, int64_t rows) {
  return {"rope", "rope", {rows, c.num_attention_heads, c.num_key_value_heads, c.head_dim}};
}

StepOpShape kv_append_shape(const ModelConfig &c, int64_t batch, int64_t page_size) {
  return {"kv_append", "kv_append", {batch, c.num_key_value_heads, c.head_dim, page_size}};
}

StepOpShape silu_mul_shape(const ModelConfig &c, int64_t rows) {
  return {"silu_mul", "silu_mul", {rows, c.intermediate_size}};
}

std::vector<StepOpShape> step_op_shapes(const ModelConfig &c, int64_t rows, int64_t page_size) {
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

std::vector<DecodeAttentionStep> decode_attention_steps(const ModelConfig &c, int64_t page_size) {
  std::vector<DecodeAttentionStep> steps;
  for (int64_t batch = 1; batch <= 64; batch *= 2)
    for (int64_t context = 1024; context <= 131072; context *= 2)
      steps.push_back({batch,
                       context,
                       {batch, context, batch * context, c.num_attention_heads,
                        c.num_key_value_heads, c.head_dim, page_size}});
  return steps;
}

const std::vector<std::string> &decode_attention_dim_names() {
  static const std::vector<std::string> names = {"batch", "max_len",  "total_len", "hq",
                                                 "hkv",   "head_dim", "page_size"};
  return names;
}

} // namespace hone::cli
