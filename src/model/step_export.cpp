#include "model/step_export.h"

#include <fstream>

#include <nlohmann/json.hpp>

#include "hone/error.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"

namespace hone::model {

namespace {

using json = nlohmann::json;

std::string lm_head_name(const ModelSpec &m) {
  return m.tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
}

std::string layer_cache_name(int64_t i, const char *kv) {
  return "model.layers." + std::to_string(i) + "." + kv + "_cache";
}

// Writes `values` (bf16 bits) as the writer's next tensor.
void put(SafetensorsWriter &w, const std::string &name, const uint16_t *values, size_t count) {
  w.write(name, values, count * sizeof(uint16_t));
}

void write_text(const std::filesystem::path &path, const std::string &text) {
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out)
      HONE_RUNTIME_ERROR("cannot write '" + tmp.string() + "'");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec)
    HONE_RUNTIME_ERROR("cannot rename '" + tmp.string() + "' to '" + path.string() +
                       "': " + ec.message());
}

} // namespace

std::string model_config_json(const ModelSpec &m) {
  json j{{"model_type", m.family},       {"hidden_size", m.hidden},
         {"intermediate_size", m.inter}, {"num_attention_heads", m.hq},
         {"num_key_value_heads", m.hkv}, {"head_dim", m.head_dim},
         {"vocab_size", m.vocab},        {"num_hidden_layers", m.layers},
         {"rms_norm_eps", m.rms_eps},    {"rope_theta", m.rope_theta},
         {"attention_bias", m.qkv_bias}, {"tie_word_embeddings", m.tie_embeddings},
         {"torch_dtype", "bfloat16"}};
  if (m.llama3_factor != 0)
    j["rope_scaling"] = {{"rope_type", "llama3"},
                         {"factor", m.llama3_factor},
                         {"low_freq_factor", m.llama3_low_freq_factor},
                         {"high_freq_factor", m.llama3_high_freq_factor},
                         {"original_max_position_embeddings", m.llama3_original_max_positions}};
  return j.dump(2) + "\n";
}

void write_step_export(const std::filesystem::path &dir, const StepExportSource &src) {
  const ModelSpec &m = src.spec;
  const int64_t B = src.batch, C = src.context;
  check_host_ends(src.inputs, src.head, m, B);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    HONE_RUNTIME_ERROR("cannot create export directory '" + dir.string() + "': " + ec.message());

  std::vector<SafetensorsEntry> weights, state;
  for (int64_t i = 0; i < m.layers; ++i)
    for (LayerTensor &t : layer_tensors(m, i))
      weights.push_back({std::move(t.name), "BF16", std::move(t.shape)});
  weights.push_back({"model.norm.weight", "BF16", {m.hidden}});
  weights.push_back({lm_head_name(m), "BF16", {m.vocab, m.hidden}});
  state.push_back({"input", "BF16", {B, m.hidden}});
  state.push_back({"positions", "I32", {B}});
  if (!src.inputs.tokens.empty())
    state.push_back({"tokens", "I32", {B}});
  for (int64_t i = 0; i < m.layers; ++i) {
    state.push_back({layer_cache_name(i, "k"), "BF16", {B, C, m.hkv, m.head_dim}});
    state.push_back({layer_cache_name(i, "v"), "BF16", {B, C, m.hkv, m.head_dim}});
  }
  SafetensorsWriter w(dir / "model.safetensors", weights);
  SafetensorsWriter st(dir / "step.safetensors", state);
  put(st, "input", src.inputs.input.data(), src.inputs.input.size());
  st.write("positions", src.inputs.positions.data(), src.inputs.positions.size() * 4);
  if (!src.inputs.tokens.empty())
    st.write("tokens", src.inputs.tokens.data(), src.inputs.tokens.size() * 4);

  for (int64_t i = 0; i < m.layers; ++i) {
    const HostLayer l = src.layer(i);
    check_host_layer(l, m, B, C, "layer " + std::to_string(i));
    // The step's fused weights in bf16, written tensor by tensor: each takes the next rows of
    // its part (layer_tensors lists a part's tensors one after another).
    LayerWeights parts;
    parts.qkv = l.qkv.bf16();
    parts.qkv_bias = l.qkv_bias;
    parts.o = l.o.bf16();
    parts.gate_up = l.gate_up.bf16();
    parts.down = l.down.bf16();
    parts.norm1 = l.norm1;
    parts.norm2 = l.norm2;
    std::vector<uint16_t> LayerWeights::*part = nullptr;
    size_t first = 0;
    for (const LayerTensor &t : layer_tensors(m, i)) {
      if (t.part != part) {
        part = t.part;
        first = 0;
      }
      size_t count = 1;
      for (int64_t d : t.shape)
        count *= size_t(d);
      put(w, t.name, (parts.*part).data() + first, count);
      first += count;
    }
    put(st, layer_cache_name(i, "k"), l.k_cache.data(), l.k_cache.size());
    put(st, layer_cache_name(i, "v"), l.v_cache.data(), l.v_cache.size());
  }
  put(w, "model.norm.weight", src.head.final_norm.data(), src.head.final_norm.size());
  const std::vector<uint16_t> lm_head = src.head.lm_head.bf16();
  put(w, lm_head_name(m), lm_head.data(), lm_head.size());
  w.finish();
  st.finish();

  write_text(dir / "config.json", model_config_json(m));
  json info{{"format", "hone.step_export"},
            {"format_version", 1},
            {"model", m.name},
            {"family", m.family},
            {"layers", m.layers},
            {"batch", B},
            {"context", C},
            {"weights", src.weights},
            {"files",
             {{"config", "config.json"},
              {"weights", "model.safetensors"},
              {"step", "step.safetensors"}}}};
  if (src.weights != "bf16")
    info["weights_note"] = "the step ran on the " + src.weights +
                           " weights (q x scale + bias); model.safetensors holds each of them "
                           "rounded once to bf16";
  write_text(dir / "step.json", info.dump(2) + "\n");
}

StepExportSource export_source(const HostStep &step, std::string weights) {
  if (step.new_tokens != 1)
    HONE_INVALID_ARGUMENT(
        "step export: the export holds one new token per request; this step has " +
        std::to_string(step.new_tokens));
  StepExportSource s;
  s.spec = step.spec;
  s.batch = step.batch;
  s.context = step.context;
  s.weights = std::move(weights);
  s.inputs = step.inputs;
  s.head = step.head;
  s.layer = [&step](int64_t i) { return step.layers.at(static_cast<size_t>(i)); };
  return s;
}

} // namespace hone::model
