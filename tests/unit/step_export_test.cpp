// The export of a decode step (src/model/step_export): written from a step in host memory and
// read back through the safetensors reader and the checkpoint a DecodeStep loads (bit for bit:
// every weight under its Hugging Face name, the quantised ones as their bf16 rounding), the
// step's input, positions and cache, and a config.json that load_model_spec reads back to the
// same spec.
#include "model/step_export.h"

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "invalid_message.h"
#include "model/checkpoint.h"
#include "model/model_spec.h"
#include "model/safetensors.h"
#include "random_host_step.h"

namespace hone::model {
namespace {

using testing::llama_like;
using testing::qwen2_like;
using testing::random_host_step;

class StepExportTest : public ::testing::Test {
protected:
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("hone_step_export_" + std::to_string(::getpid()));
  void TearDown() override { std::filesystem::remove_all(dir_); }
};

template <class T> std::vector<T> read_as(const SafetensorsFile &f, const std::string &name) {
  const std::vector<uint8_t> bytes = f.read(name);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}

std::vector<uint16_t> rows(const std::vector<uint16_t> &w, int64_t first, int64_t count,
                           int64_t width) {
  return {w.begin() + first * width, w.begin() + (first + count) * width};
}

void expect_round_trip(const HostStep &s, const std::filesystem::path &dir) {
  const ModelSpec &m = s.spec;
  const Checkpoint c = Checkpoint::open(dir);
  const std::vector<const SafetensorsFile *> files = c.files();
  for (int64_t i = 0; i < m.layers; ++i) {
    const HostLayer &l = s.layers[static_cast<size_t>(i)];
    const LayerWeights w = layer_weights(files, m, i);
    EXPECT_EQ(w.qkv, l.qkv.bf16()) << "layer " << i;
    EXPECT_EQ(w.qkv_bias, l.qkv_bias) << "layer " << i;
    EXPECT_EQ(w.o, l.o.bf16()) << "layer " << i;
    EXPECT_EQ(w.gate_up, l.gate_up.bf16()) << "layer " << i;
    EXPECT_EQ(w.down, l.down.bf16()) << "layer " << i;
    EXPECT_EQ(w.norm1, l.norm1) << "layer " << i;
    EXPECT_EQ(w.norm2, l.norm2) << "layer " << i;
  }
  // The unfused names hold the right rows.
  const std::vector<uint16_t> qkv = s.layers[1].qkv.bf16();
  const int64_t qw = m.hq * m.head_dim, kvw = m.hkv * m.head_dim;
  EXPECT_EQ(read_bf16(files, "model.layers.1.self_attn.v_proj.weight", {kvw, m.hidden}),
            rows(qkv, qw + kvw, kvw, m.hidden));
  EXPECT_EQ(read_bf16(files, "model.layers.1.mlp.up_proj.weight", {m.inter, m.hidden}),
            rows(s.layers[1].gate_up.bf16(), m.inter, m.inter, m.hidden));
  EXPECT_EQ(read_bf16(files, "model.norm.weight", {m.hidden}), s.head.final_norm);
  const std::string head = m.tie_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
  EXPECT_EQ(read_bf16(files, head, {m.vocab, m.hidden}), s.head.lm_head.bf16());
  EXPECT_FALSE(c.has(m.tie_embeddings ? "lm_head.weight" : "model.embed_tokens.weight"));

  const SafetensorsFile st = SafetensorsFile::open(dir / "step.safetensors");
  EXPECT_EQ(read_bf16({&st}, "input", {s.batch, m.hidden}), s.inputs.input);
  EXPECT_EQ(read_as<int32_t>(st, "positions"), s.inputs.positions);
  EXPECT_EQ(st.find("tokens"), nullptr);
  const std::vector<int64_t> cache = {s.batch, s.context, m.hkv, m.head_dim};
  for (int64_t i = 0; i < m.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    EXPECT_EQ(read_bf16({&st}, p + "k_cache", cache), s.layers[static_cast<size_t>(i)].k_cache);
    EXPECT_EQ(read_bf16({&st}, p + "v_cache", cache), s.layers[static_cast<size_t>(i)].v_cache);
  }

  const ModelSpec back = load_model_spec(dir / "config.json");
  EXPECT_EQ(back.family, m.family);
  EXPECT_EQ(back.hidden, m.hidden);
  EXPECT_EQ(back.inter, m.inter);
  EXPECT_EQ(back.hq, m.hq);
  EXPECT_EQ(back.hkv, m.hkv);
  EXPECT_EQ(back.head_dim, m.head_dim);
  EXPECT_EQ(back.vocab, m.vocab);
  EXPECT_EQ(back.layers, m.layers);
  EXPECT_EQ(back.rms_eps, m.rms_eps);
  EXPECT_EQ(back.rope_theta, m.rope_theta);
  EXPECT_EQ(back.qkv_bias, m.qkv_bias);
  EXPECT_EQ(back.tie_embeddings, m.tie_embeddings);
  EXPECT_EQ(back.llama3_factor, m.llama3_factor);
  EXPECT_EQ(back.llama3_low_freq_factor, m.llama3_low_freq_factor);
  EXPECT_EQ(back.llama3_high_freq_factor, m.llama3_high_freq_factor);
  EXPECT_EQ(back.llama3_original_max_positions, m.llama3_original_max_positions);
}

TEST_F(StepExportTest, ABf16StepReadsBackBitForBit) {
  for (const ModelSpec &m : {llama_like(), qwen2_like()}) {
    const HostStep s = random_host_step(m, 2, 37, 16, 0, 5);
    const std::filesystem::path dir = dir_ / m.name;
    write_step_export(dir, export_source(s, "bf16"));
    expect_round_trip(s, dir);
    std::ifstream in(dir / "step.json");
    const nlohmann::json info = nlohmann::json::parse(in);
    EXPECT_EQ(info["format"], "hone.step_export");
    EXPECT_EQ(info["batch"], 2);
    EXPECT_EQ(info["context"], 37);
    EXPECT_EQ(info["weights"], "bf16");
    EXPECT_FALSE(info.contains("weights_note"));
  }
}

TEST_F(StepExportTest, AQuantisedStepExportsItsWeightsRoundedToBf16) {
  const HostStep s = random_host_step(llama_like(), 1, 16, 4, 64, 9);
  write_step_export(dir_, export_source(s, "int4:g64"));
  expect_round_trip(s, dir_);
  // The bf16 rounding is of q x scale + bias: within half a bf16 ulp of the exact weight.
  const std::vector<double> exact = s.layers[0].down.values();
  const std::vector<uint16_t> rounded = s.layers[0].down.bf16();
  for (size_t i = 0; i < exact.size(); ++i)
    ASSERT_LE(std::abs(bf16_to_float(rounded[i]) - exact[i]), std::abs(exact[i]) * 0x1p-8) << i;
  std::ifstream in(dir_ / "step.json");
  EXPECT_TRUE(nlohmann::json::parse(in).contains("weights_note"));
}

TEST_F(StepExportTest, ABufferOfTheWrongSizeIsNamedAndNothingIsRenamedIntoPlace) {
  HostStep s = random_host_step(qwen2_like(), 1, 4, 16, 0, 2);
  s.layers[1].k_cache.resize(3);
  EXPECT_NE(testing::invalid_message([&] {
              write_step_export(dir_, export_source(s, "bf16"));
            }).find("layer 1 k cache holds 3 elements"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_ / "model.safetensors"));
  EXPECT_FALSE(std::filesystem::exists(dir_ / "step.json"));
}

TEST_F(StepExportTest, APrefillStepIsRefused) {
  // The export holds one new token per request (input [batch, hidden], positions [batch]).
  const HostStep s = random_host_step(qwen2_like(), 1, 4, 16, 0, 2, 3);
  EXPECT_NE(testing::invalid_message([&] {
              write_step_export(dir_, export_source(s, "bf16"));
            }).find("one new token per request; this step has 3"),
            std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir_));
}

} // namespace
} // namespace hone::model
