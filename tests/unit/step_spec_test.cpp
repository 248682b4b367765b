// What `hone step` reads before it touches a device: the model spec of a config.json
// (src/model/model_spec), and the --quant and --context arguments (tools/hone/step_command).
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "hone/error.h"
#include "hone/step_command.h"
#include "invalid_message.h"
#include "model/model_spec.h"

namespace hone {
namespace {

// tests/unit/<this file> -> <source root>/models (CMake compiles sources by absolute path).
const std::filesystem::path kModels =
    std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "models";

// `text` in single quotes, as the messages quote a bad value (built by appending: GCC 12 warns
// -Wrestrict, falsely, on "'" + std::string(text) + "'").
std::string quoted(const char *text) {
  std::string out = "'";
  out += text;
  out += '\'';
  return out;
}

using testing::invalid_message;

TEST(StepArguments, QuantAndContextParse) {
  EXPECT_EQ(cli::parse_quant("bf16"), (std::pair<int, int>{16, 0}));
  EXPECT_EQ(cli::parse_quant("int4:g64"), (std::pair<int, int>{4, 64}));
  EXPECT_EQ(cli::parse_quant("int8:g128"), (std::pair<int, int>{8, 128}));
  EXPECT_EQ(cli::parse_tokens("4096", "--context"), 4096);
  EXPECT_EQ(cli::parse_tokens("4k", "--context"), 4096);
  EXPECT_EQ(cli::parse_tokens("32K", "--context"), 32768);
}

TEST(StepArguments, BadValuesAreNamed) {
  for (const char *bad : {"int3:g64", "int4:g48", "fp8", "int4", ""})
    EXPECT_NE(invalid_message([&] { cli::parse_quant(bad); }).find(quoted(bad)), std::string::npos)
        << bad;
  for (const char *bad : {"0", "-1", "4m", "", "1.5k"}) {
    const std::string m = invalid_message([&] { cli::parse_tokens(bad, "--context"); });
    EXPECT_NE(m.find("--context"), std::string::npos) << m;
    EXPECT_NE(m.find(quoted(bad)), std::string::npos) << m;
  }
}

TEST(ModelSpec, LlamaAndQwenConfigsGiveTheStepShapes) {
  const model::ModelSpec llama = model::load_model_spec(kModels / "llama-3.1-8b.json");
  EXPECT_EQ(llama.name, "llama-3.1-8b");
  EXPECT_EQ(llama.family, "llama");
  EXPECT_EQ(llama.hidden, 4096);
  EXPECT_EQ(llama.inter, 14336);
  EXPECT_EQ(llama.hq, 32);
  EXPECT_EQ(llama.hkv, 8);
  EXPECT_EQ(llama.head_dim, 128);
  EXPECT_EQ(llama.layers, 32);
  EXPECT_EQ(llama.vocab, 128256);
  EXPECT_EQ(llama.qkv_width(), 6144);
  EXPECT_FALSE(llama.qkv_bias);
  EXPECT_DOUBLE_EQ(llama.llama3_factor, 8.0);
  EXPECT_DOUBLE_EQ(llama.rope_theta, 500000.0);

  const model::ModelSpec qwen = model::load_model_spec(kModels / "qwen2.5-1.5b.json");
  EXPECT_EQ(qwen.family, "qwen2");
  EXPECT_EQ(qwen.hidden, 1536);
  EXPECT_EQ(qwen.hq, 12);
  EXPECT_EQ(qwen.hkv, 2);
  EXPECT_EQ(qwen.head_dim, 128);
  EXPECT_TRUE(qwen.qkv_bias);
  EXPECT_DOUBLE_EQ(qwen.llama3_factor, 0.0);
}

TEST(ModelSpec, BadConfigsAreNamedAndNeverCrash) {
  const auto parse = [](const std::string &text) {
    return invalid_message([&] { model::parse_model_spec(text, "cfg.json", "m"); });
  };
  EXPECT_NE(parse("{").find("not valid JSON"), std::string::npos);
  EXPECT_NE(parse("[1]").find("not a JSON object"), std::string::npos);
  const std::string base = R"("hidden_size": 64, "intermediate_size": 128, )"
                           R"("num_hidden_layers": 2, "vocab_size": 100, )";
  EXPECT_NE(parse("{" + base + R"("model_type": "gpt2", "num_attention_heads": 4,
                     "num_key_value_heads": 2})")
                .find("model_type 'gpt2'"),
            std::string::npos);
  EXPECT_NE(parse("{" + base + R"("model_type": "llama", "num_attention_heads": 6,
                     "num_key_value_heads": 4})")
                .find("num_attention_heads 6"),
            std::string::npos);
  EXPECT_NE(parse(R"({"model_type": "llama", "hidden_size": -1})").find("cfg.json"),
            std::string::npos);
  EXPECT_NE(invalid_message([] { model::load_model_spec(kModels); }).find(kModels.string()),
            std::string::npos);
}

} // namespace
} // namespace hone
