#include "model/model_spec.h"

#include <fstream>
#include <optional>
#include <sstream>
#include <system_error>
#include <utility>

#include <nlohmann/json.hpp>

#include "hone/error.h"

namespace hone::model {
namespace {

using nlohmann::json;

[[noreturn]] void invalid(const std::string &source, const std::string &why) {
  HONE_INVALID_ARGUMENT("model config " + source + ": " + why);
}

// The members of one JSON object of a config, each read and checked once. An absent and a
// null member are the same; `prefix` names nested members in errors ("rope_scaling.").
class Fields {
public:
  Fields(const json &object, const std::string &source, std::string prefix = "")
      : object_(object), source_(source), prefix_(std::move(prefix)) {}

  [[noreturn]] void fail(const std::string &field, const std::string &why) const {
    invalid(source_, "field '" + prefix_ + field + "' " + why);
  }

  // The member when present and not null, else nullptr.
  const json *find(const std::string &field) const {
    const auto it = object_.find(field);
    return it == object_.end() || it->is_null() ? nullptr : &*it;
  }

  std::optional<int64_t> positive(const std::string &field) const {
    const json *v = find(field);
    if (v == nullptr)
      return std::nullopt;
    if (!v->is_number_integer() || v->get<int64_t>() < 1)
      fail(field, "must be a positive integer, got " + v->dump());
    return v->get<int64_t>();
  }

  int64_t required_positive(const std::string &field) const {
    if (find(field) == nullptr)
      fail(field, "is missing");
    return *positive(field);
  }

  double positive_number(const std::string &field, double fallback) const {
    const json *v = find(field);
    if (v == nullptr)
      return fallback;
    if (!v->is_number() || !(v->get<double>() > 0))
      fail(field, "must be a positive number, got " + v->dump());
    return v->get<double>();
  }

  bool flag(const std::string &field, bool fallback) const {
    const json *v = find(field);
    if (v == nullptr)
      return fallback;
    if (!v->is_boolean())
      fail(field, "must be true or false, got " + v->dump());
    return v->get<bool>();
  }

  std::string text(const std::string &field) const {
    const json *v = find(field);
    if (v == nullptr)
      return {};
    if (!v->is_string())
      fail(field, "must be a string, got " + v->dump());
    return v->get<std::string>();
  }

private:
  const json &object_;
  const std::string &source_;
  std::string prefix_;
};

// The members of rope_scaling into `m`: its type, and the factors of llama3 (the one scaling
// the decode step implements; require_decode_step refuses any other).
void read_rope_scaling(const Fields &s, ModelSpec &m) {
  m.rope_scaling = s.text("rope_type");
  if (m.rope_scaling.empty())
    m.rope_scaling = s.text("type");
  if (m.rope_scaling.empty())
    s.fail("rope_type", "is missing");
  if (m.rope_scaling != "llama3")
    return;
  m.llama3_factor = s.positive_number("factor", m.llama3_factor);
  m.llama3_low_freq_factor = s.positive_number("low_freq_factor", m.llama3_low_freq_factor);
  m.llama3_high_freq_factor = s.positive_number("high_freq_factor", m.llama3_high_freq_factor);
  m.llama3_original_max_positions =
      s.positive_number("original_max_position_embeddings", m.llama3_original_max_positions);
}

} // namespace

ModelSpec parse_model_spec(std::string_view json_text, const std::string &source, std::string name,
                           ModelSpecUse use) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::parse_error &e) {
    invalid(source, std::string("not valid JSON (") + e.what() + ")");
  }
  if (!j.is_object())
    invalid(source, std::string("not a JSON object, got ") + j.type_name());
  const Fields f(j, source);
  ModelSpec m;
  m.name = std::move(name);
  m.family = f.text("model_type");
  m.hidden = f.required_positive("hidden_size");
  m.inter = f.required_positive("intermediate_size");
  m.hq = f.required_positive("num_attention_heads");
  m.hkv = f.positive("num_key_value_heads").value_or(m.hq);
  if (m.hq % m.hkv != 0)
    f.fail("num_key_value_heads", "must divide num_attention_heads " + std::to_string(m.hq) +
                                      ", got " + std::to_string(m.hkv));
  if (const std::optional<int64_t> head_dim = f.positive("head_dim"))
    m.head_dim = *head_dim;
  else if (m.hidden % m.hq != 0)
    f.fail("head_dim", "is missing and hidden_size " + std::to_string(m.hidden) +
                           " is not a multiple of num_attention_heads " + std::to_string(m.hq));
  else
    m.head_dim = m.hidden / m.hq;
  m.vocab = f.required_positive("vocab_size");
  m.layers = f.positive("num_hidden_layers").value_or(0);
  m.rms_eps = f.positive_number("rms_norm_eps", m.rms_eps);
  m.rope_theta = f.positive_number("rope_theta", m.rope_theta);
  m.qkv_bias = f.flag("attention_bias", m.qkv_bias) || m.family == "qwen2";
  m.tie_embeddings = f.flag("tie_word_embeddings", m.tie_embeddings);
  if (const json *scaling = f.find("rope_scaling")) {
    if (!scaling->is_object())
      f.fail("rope_scaling", "must be an object, got " + scaling->dump());
    read_rope_scaling(Fields(*scaling, source, "rope_scaling."), m);
  }
  if (use == ModelSpecUse::decode_step)
    require_decode_step(m, source);
  return m;
}

void require_decode_step(const ModelSpec &m, const std::string &source) {
  if (m.family.empty())
    invalid(source, "field 'model_type' is missing (expected llama or qwen2)");
  if (m.family != "llama" && m.family != "qwen2")
    invalid(source, "model_type '" + m.family + "' is not supported (expected llama or qwen2)");
  if (m.layers == 0)
    invalid(source, "field 'num_hidden_layers' is missing");
  if (!m.rope_scaling.empty() && m.rope_scaling != "llama3")
    invalid(source, "rope_scaling type '" + m.rope_scaling +
                        "' is not supported (expected llama3 or none)");
}

ModelSpec load_model_spec(const std::filesystem::path &path, ModelSpecUse use) {
  // An ifstream opens a directory and then reads nothing, which would read as "not valid JSON".
  if (std::error_code ec; std::filesystem::is_directory(path, ec))
    invalid(path.string(), "is a directory; give the config.json file itself");
  std::ifstream in(path);
  if (!in)
    invalid(path.string(), "cannot be read (missing file?)");
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad())
    invalid(path.string(), "read failed");
  return parse_model_spec(text.str(), path.string(), path.stem().string(), use);
}

} // namespace hone::model
