#include "model/model_spec.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "hone/error.h"

namespace hone::model {
namespace {

using nlohmann::json;

int64_t positive(const json &j, const std::string &field, const std::string &source) {
  if (!j.contains(field))
    HONE_INVALID_ARGUMENT(source + ": missing field '" + field + "'");
  const json &v = j.at(field);
  if (!v.is_number_integer() || v.get<int64_t>() <= 0)
    HONE_INVALID_ARGUMENT(source + ": field '" + field + "' must be a positive integer, not " +
                          v.dump());
  return v.get<int64_t>();
}

double number_or(const json &j, const std::string &field, double fallback,
                 const std::string &source) {
  if (!j.contains(field) || j.at(field).is_null())
    return fallback;
  const json &v = j.at(field);
  if (!v.is_number() || v.get<double>() <= 0)
    HONE_INVALID_ARGUMENT(source + ": field '" + field + "' must be a positive number, not " +
                          v.dump());
  return v.get<double>();
}

} // namespace

ModelSpec parse_model_spec(std::string_view json_text, const std::string &source,
                           std::string name) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error &e) {
    HONE_INVALID_ARGUMENT(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object())
    HONE_INVALID_ARGUMENT(source + ": not a JSON object");
  ModelSpec m;
  m.name = std::move(name);
  m.family = j.value("model_type", std::string());
  if (m.family != "llama" && m.family != "qwen2")
    HONE_INVALID_ARGUMENT(source + ": model_type '" + m.family +
                          "' is not supported (expected llama or qwen2)");
  m.hidden = positive(j, "hidden_size", source);
  m.inter = positive(j, "intermediate_size", source);
  m.hq = positive(j, "num_attention_heads", source);
  m.hkv = j.contains("num_key_value_heads") ? positive(j, "num_key_value_heads", source) : m.hq;
  m.head_dim = j.contains("head_dim") && !j.at("head_dim").is_null()
                   ? positive(j, "head_dim", source)
                   : m.hidden / m.hq;
  m.vocab = positive(j, "vocab_size", source);
  m.layers = positive(j, "num_hidden_layers", source);
  if (m.hq % m.hkv != 0)
    HONE_INVALID_ARGUMENT(source + ": num_attention_heads " + std::to_string(m.hq) +
                          " is not a multiple of num_key_value_heads " + std::to_string(m.hkv));
  m.rms_eps = number_or(j, "rms_norm_eps", 1e-6, source);
  m.rope_theta = number_or(j, "rope_theta", 10000.0, source);
  m.qkv_bias = m.family == "qwen2" || j.value("attention_bias", false);
  m.tie_embeddings = j.value("tie_word_embeddings", false);
  if (j.contains("rope_scaling") && !j.at("rope_scaling").is_null()) {
    const json &s = j.at("rope_scaling");
    const std::string type = s.value("rope_type", s.value("type", std::string()));
    if (type != "llama3")
      HONE_INVALID_ARGUMENT(source + ": rope_scaling type '" + type +
                            "' is not supported (expected llama3 or none)");
    const std::string where = source + " rope_scaling";
    m.llama3_factor = number_or(s, "factor", 0, where);
    m.llama3_low_freq_factor = number_or(s, "low_freq_factor", 1, where);
    m.llama3_high_freq_factor = number_or(s, "high_freq_factor", 4, where);
    m.llama3_original_max_positions =
        number_or(s, "original_max_position_embeddings", 8192, where);
  }
  return m;
}

ModelSpec load_model_spec(const std::filesystem::path &path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    HONE_INVALID_ARGUMENT("model config '" + path.string() +
                          "' is a directory (expected a config.json file)");
  std::ifstream in(path);
  if (!in)
    HONE_INVALID_ARGUMENT("cannot read model config '" + path.string() + "'");
  std::ostringstream text;
  text << in.rdbuf();
  return parse_model_spec(text.str(), path.string(), path.stem().string());
}

} // namespace hone::model
