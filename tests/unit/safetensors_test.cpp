// safetensors reading (src/model/safetensors): a small checkpoint this test writes, one layer of
// a tiny Qwen2-shaped model split over two files, read back into the step's fused layout; and
// every malformed header named.
#include "model/safetensors.h"

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include "hone/error.h"
#include "invalid_message.h"

namespace hone::model {
namespace {

struct Entry {
  std::string name, dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes;
};

// Writes a safetensors file: 8-byte little-endian header length, the JSON header, the data.
void write_file(const std::filesystem::path &path, const std::vector<Entry> &entries,
                const std::string &header_override = "") {
  nlohmann::json header = nlohmann::json::object();
  header["__metadata__"] = {{"format", "pt"}};
  std::vector<uint8_t> data;
  for (const Entry &e : entries) {
    header[e.name] = {{"dtype", e.dtype},
                      {"shape", e.shape},
                      {"data_offsets", {data.size(), data.size() + e.bytes.size()}}};
    data.insert(data.end(), e.bytes.begin(), e.bytes.end());
  }
  const std::string text = header_override.empty() ? header.dump() : header_override;
  std::ofstream out(path, std::ios::binary);
  uint64_t n = text.size();
  for (int i = 0; i < 8; ++i, n >>= 8)
    out.put(static_cast<char>(n & 0xff));
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  out.write(reinterpret_cast<const char *>(data.data()), static_cast<std::streamsize>(data.size()));
}

// bf16 values first, first + 1, ... as bytes (little-endian), for `count` elements.
std::vector<uint8_t> bf16_iota(size_t count, uint16_t first) {
  std::vector<uint8_t> out;
  for (size_t i = 0; i < count; ++i) {
    const auto v = static_cast<uint16_t>(first + i);
    out.push_back(static_cast<uint8_t>(v & 0xff));
    out.push_back(static_cast<uint8_t>(v >> 8));
  }
  return out;
}

ModelSpec tiny_spec() {
  ModelSpec m;
  m.name = "tiny";
  m.family = "qwen2";
  m.hidden = 8;
  m.inter = 16;
  m.hq = 2;
  m.hkv = 1;
  m.head_dim = 4;
  m.vocab = 32;
  m.layers = 2;
  m.qkv_bias = true;
  return m;
}

class SafetensorsTest : public ::testing::Test {
protected:
  std::filesystem::path dir_ =
      std::filesystem::temp_directory_path() / ("hone_safetensors_" + std::to_string(::getpid()));
  void SetUp() override { std::filesystem::create_directories(dir_); }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  template <class F> std::string invalid(F call) { return testing::invalid_message(call); }
};

TEST_F(SafetensorsTest, LayerWeightsComeBackFusedFromTwoShards) {
  const ModelSpec m = tiny_spec();
  const std::string p = "model.layers.1.";
  // Attention in one shard, the MLP and norms in the other; each tensor starts at its own value
  // so that the fused order shows.
  write_file(dir_ / "a.safetensors",
             {{p + "self_attn.q_proj.weight", "BF16", {8, 8}, bf16_iota(64, 1000)},
              {p + "self_attn.k_proj.weight", "BF16", {4, 8}, bf16_iota(32, 2000)},
              {p + "self_attn.v_proj.weight", "BF16", {4, 8}, bf16_iota(32, 3000)},
              {p + "self_attn.q_proj.bias", "BF16", {8}, bf16_iota(8, 4000)},
              {p + "self_attn.k_proj.bias", "BF16", {4}, bf16_iota(4, 4100)},
              {p + "self_attn.v_proj.bias", "BF16", {4}, bf16_iota(4, 4200)},
              {p + "self_attn.o_proj.weight", "BF16", {8, 8}, bf16_iota(64, 5000)}});
  write_file(dir_ / "b.safetensors",
             {{p + "mlp.gate_proj.weight", "BF16", {16, 8}, bf16_iota(128, 6000)},
              {p + "mlp.up_proj.weight", "BF16", {16, 8}, bf16_iota(128, 7000)},
              {p + "mlp.down_proj.weight", "BF16", {8, 16}, bf16_iota(128, 8000)},
              {p + "input_layernorm.weight", "BF16", {8}, bf16_iota(8, 9000)},
              {p + "post_attention_layernorm.weight", "BF16", {8}, bf16_iota(8, 9100)},
              {"model.norm.weight", "F32", {8}, std::vector<uint8_t>(32, 0)}});
  const SafetensorsFile a = SafetensorsFile::open(dir_ / "a.safetensors");
  const SafetensorsFile b = SafetensorsFile::open(dir_ / "b.safetensors");
  EXPECT_EQ(a.names().size(), 7u); // __metadata__ is not a tensor
  ASSERT_NE(b.find("model.norm.weight"), nullptr);
  EXPECT_EQ(b.find("model.norm.weight")->dtype, "F32");

  const LayerWeights w = layer_weights({&a, &b}, m, 1);
  ASSERT_EQ(w.qkv.size(), 16u * 8u); // qkv_width (2 + 2) x 4 = 16 rows of 8
  EXPECT_EQ(w.qkv[0], 1000);
  EXPECT_EQ(w.qkv[63], 1063);
  EXPECT_EQ(w.qkv[64], 2000); // k rows follow q
  EXPECT_EQ(w.qkv[96], 3000); // then v
  ASSERT_EQ(w.qkv_bias.size(), 16u);
  EXPECT_EQ(w.qkv_bias[7], 4007);
  EXPECT_EQ(w.qkv_bias[8], 4100);
  EXPECT_EQ(w.qkv_bias[12], 4200);
  EXPECT_EQ(w.o[0], 5000);
  ASSERT_EQ(w.gate_up.size(), 256u);
  EXPECT_EQ(w.gate_up[127], 6127);
  EXPECT_EQ(w.gate_up[128], 7000); // up rows follow gate
  EXPECT_EQ(w.down[127], 8127);
  EXPECT_EQ(w.norm1[0], 9000);
  EXPECT_EQ(w.norm2[7], 9107);

  // Layer 0 is in neither file: the first missing tensor is named.
  EXPECT_NE(invalid([&] {
              layer_weights({&a, &b}, m, 0);
            }).find("'model.layers.0.self_attn.q_proj.weight' is in none of the 2"),
            std::string::npos);
  EXPECT_NE(invalid([&] {
              layer_weights({&a, &b}, m, 2);
            }).find("layer 2 is outside 0..1"),
            std::string::npos);
}

TEST_F(SafetensorsTest, AWrongShapeOrDtypeIsNamed) {
  ModelSpec m = tiny_spec();
  m.qkv_bias = false;
  const std::string p = "model.layers.0.";
  write_file(dir_ / "c.safetensors",
             {{p + "self_attn.q_proj.weight", "BF16", {8, 4}, bf16_iota(32, 0)}});
  const SafetensorsFile c = SafetensorsFile::open(dir_ / "c.safetensors");
  const std::string shape = invalid([&] { layer_weights({&c}, m, 0); });
  EXPECT_NE(shape.find("shape [8,4], the model's is [8,8]"), std::string::npos) << shape;
  write_file(dir_ / "d.safetensors",
             {{p + "self_attn.q_proj.weight", "F16", {8, 8}, bf16_iota(64, 0)}});
  const SafetensorsFile d = SafetensorsFile::open(dir_ / "d.safetensors");
  EXPECT_NE(invalid([&] { layer_weights({&d}, m, 0); }).find("dtype F16, not BF16"),
            std::string::npos);
}

TEST_F(SafetensorsTest, MalformedFilesAreNamedAndNeverCrash) {
  const auto open = [&](const std::string &file) {
    return invalid([&] { SafetensorsFile::open(dir_ / file); });
  };
  { // shorter than the length field
    std::ofstream(dir_ / "short.safetensors") << "abc";
  }
  EXPECT_NE(open("short.safetensors").find("shorter than its 8-byte header length"),
            std::string::npos);
  { // a header length past the file
    std::ofstream out(dir_ / "long.safetensors", std::ios::binary);
    const char n[8] = {'\xff', '\xff', 0, 0, 0, 0, 0, 0};
    out.write(n, 8);
    out << "{}";
  }
  EXPECT_NE(open("long.safetensors").find("header length 65535 runs past the file"),
            std::string::npos);
  write_file(dir_ / "json.safetensors", {}, "{not json");
  EXPECT_NE(open("json.safetensors").find("header is not valid JSON"), std::string::npos);
  write_file(dir_ / "array.safetensors", {}, "[1, 2]");
  EXPECT_NE(open("array.safetensors").find("not a JSON object"), std::string::npos);
  write_file(dir_ / "dtype.safetensors", {},
             R"({"t": {"dtype": "Q7", "shape": [1],)"
             R"( "data_offsets": [0, 0]}})");
  EXPECT_NE(open("dtype.safetensors").find("tensor 't': unknown dtype 'Q7'"), std::string::npos);
  write_file(dir_ / "offsets.safetensors", {{"t", "BF16", {2}, bf16_iota(2, 0)}},
             R"({"t": {"dtype": "BF16", "shape": [2], "data_offsets": [0, 40]}})");
  EXPECT_NE(open("offsets.safetensors").find("data_offsets [0, 40] lie outside the 4 data bytes"),
            std::string::npos);
  write_file(dir_ / "size.safetensors", {{"t", "BF16", {2}, bf16_iota(2, 0)}},
             R"({"t": {"dtype": "BF16", "shape": [3], "data_offsets": [0, 4]}})");
  EXPECT_NE(open("size.safetensors").find("4 bytes, its dtype BF16 and shape give 6"),
            std::string::npos);
  write_file(dir_ / "neg.safetensors", {},
             R"({"t": {"dtype": "BF16", "shape": [-1],)"
             R"( "data_offsets": [0, 0]}})");
  EXPECT_NE(open("neg.safetensors").find("shape entry -1"), std::string::npos);
  EXPECT_NE(open("missing.safetensors").find("cannot read"), std::string::npos);
  EXPECT_NE(invalid([&] { SafetensorsFile::open(dir_); }).find("is a directory"),
            std::string::npos);
}

} // namespace
} // namespace hone::model
