// What `hone step` reads before it touches a device: the model spec of a config.json
// (src/model/model_spec, the one parser of config.json), and the --quant and --context
// arguments (tools/hone/step_command).
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "hone/error.h"
#include "hone/step_command.h"
#include "invalid_message.h"
#include "model/model_spec.h"
#include "model/step_bench.h"

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

// A step variant's JSON says which chain fusions it ran (the two fusions on or off, the KV
// prefetch and the twins where on): what a reader of `hone step --json` compares the separate
// SiLU launch or the KV prefetch by.
TEST(StepArguments, VariantJsonNamesItsFusions) {
  model::StepVariantResult v;
  v.name = "tuned+pdl";
  v.launch.pdl = true;
  v.launch.fuse_silu_mul = true;
  v.seconds = 2e-3;
  nlohmann::json j = cli::step_variant_json(v);
  EXPECT_EQ(j.at("name"), "tuned+pdl");
  EXPECT_EQ(j.at("pdl"), true);
  EXPECT_EQ(j.at("fuse_silu_mul"), true);
  EXPECT_EQ(j.at("fuse_rope_append"), true);
  EXPECT_EQ(j.at("fuse_norm"), false);
  EXPECT_FALSE(j.contains("kv_prefetch_kib"));
  EXPECT_FALSE(j.contains("weights_once"));
  EXPECT_FALSE(j.contains("omit_mask"));
  v.name = "tuned+pdl+separate-silu";
  v.launch.fuse_silu_mul = false;
  v.launch.kv_prefetch_kib = 256;
  j = cli::step_variant_json(v);
  EXPECT_EQ(j.at("fuse_silu_mul"), false);
  EXPECT_EQ(j.at("kv_prefetch_kib"), 256);
  v.launch.fuse_norm = true;
  v.launch.omit = 1u << static_cast<int>(model::StepOp::rmsnorm);
  j = cli::step_variant_json(v);
  EXPECT_EQ(j.at("fuse_norm"), true);
  EXPECT_EQ(j.at("omit_mask"), 1);
  EXPECT_FALSE(j.contains("shared_carveout"));
  v.launch.shared_carveout = 100;
  EXPECT_EQ(cli::step_variant_json(v).at("shared_carveout"), 100);
}

// --omit takes the per-op breakdown's names (decode.paged for the attention); an unknown one is
// named, with the kinds listed.
TEST(StepArguments, OmitTakesTheBreakdownsNames) {
  const auto kinds = cli::parse_omit({"rmsnorm", "decode.paged", "lm_head"});
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[0], (std::pair<std::string, int>{"rmsnorm", int(model::StepOp::rmsnorm)}));
  EXPECT_EQ(kinds[1].second, int(model::StepOp::attention));
  EXPECT_EQ(kinds[2].second, int(model::StepOp::lm_head));
  const std::string m = invalid_message([] { cli::parse_omit({"rmsnorm", "norm"}); });
  EXPECT_NE(m.find("--omit"), std::string::npos) << m;
  EXPECT_NE(m.find(quoted("norm")), std::string::npos) << m;
  EXPECT_NE(m.find("silu_mul, down, lm_head"), std::string::npos) << m;
}

// The step's options fuse SiLU x up into the gate/up linear by default, and rope with the K/V
// append: the launches `hone step` times as its default and tuned variants.
TEST(StepArguments, TheStepFusesSiluAndRopeAppendByDefault) {
  const model::StepOptions o = cli::quant_step_options(4, 64, 16, 1);
  EXPECT_TRUE(o.fuse_silu_mul);
  EXPECT_TRUE(o.fuse_rope_append);
  // The norm inside the linear before it is not: measured slower (StepOptions::fuse_norm).
  EXPECT_FALSE(o.fuse_norm);
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

// Every field is checked in either use and named with the file; a flag, a number or an object
// of the wrong type is an error, never a crash.
TEST(ModelSpec, MalformedFieldsAreNamedInEitherUse) {
  const std::string base = R"({"hidden_size": 64, "intermediate_size": 128, )"
                           R"("num_attention_heads": 4, "vocab_size": 100, )";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"("model_type": 3)", "'model_type' must be a string"},
      {R"("tie_word_embeddings": "yes")", "'tie_word_embeddings' must be true or false"},
      {R"("attention_bias": 1)", "'attention_bias' must be true or false"},
      {R"("num_key_value_heads": 0)", "'num_key_value_heads' must be a positive integer"},
      {R"("num_key_value_heads": 3)", "'num_key_value_heads' must divide num_attention_heads 4"},
      {R"("head_dim": 16.5)", "'head_dim' must be a positive integer"},
      {R"("num_hidden_layers": -2)", "'num_hidden_layers' must be a positive integer"},
      {R"("rms_norm_eps": 0)", "'rms_norm_eps' must be a positive number"},
      {R"("rope_theta": "big")", "'rope_theta' must be a positive number"},
      {R"("rope_scaling": 8)", "'rope_scaling' must be an object"},
      {R"("rope_scaling": {"factor": 8})", "'rope_scaling.rope_type' is missing"},
      {R"("rope_scaling": {"rope_type": "llama3", "factor": -1})",
       "'rope_scaling.factor' must be a positive number"}};
  for (const auto &[extra, why] : cases)
    for (model::ModelSpecUse use :
         {model::ModelSpecUse::decode_step, model::ModelSpecUse::op_shapes}) {
      const std::string m = invalid_message(
          [&] { model::parse_model_spec(base + extra + "}", "cfg.json", "m", use); });
      EXPECT_NE(m.find("model config cfg.json: field " + why), std::string::npos) << m;
    }
  // hidden / heads is the head_dim only when it divides.
  const std::string m = invalid_message([] {
    model::parse_model_spec(R"({"hidden_size": 66, "intermediate_size": 128,
        "num_attention_heads": 4, "vocab_size": 100})",
                            "cfg.json", "m", model::ModelSpecUse::op_shapes);
  });
  EXPECT_NE(m.find("field 'head_dim' is missing and hidden_size 66"), std::string::npos) << m;
}

// Read for its op shapes, a config may be of a family, a layer count or a rope scaling the decode
// step does not run; require_decode_step (and the decode_step use) refuses each, by name.
TEST(ModelSpec, OpShapesReadWhatTheStepRefuses) {
  const std::string mistral = R"({"model_type": "mistral", "hidden_size": 64,
      "intermediate_size": 128, "num_attention_heads": 4, "num_key_value_heads": null,
      "vocab_size": 100, "rope_scaling": {"type": "yarn", "factor": 4.0}})";
  const model::ModelSpec m =
      model::parse_model_spec(mistral, "cfg.json", "m", model::ModelSpecUse::op_shapes);
  EXPECT_EQ(m.family, "mistral");
  EXPECT_EQ(m.hkv, 4); // null: absent, so the heads
  EXPECT_EQ(m.layers, 0);
  EXPECT_EQ(m.rope_scaling, "yarn");
  EXPECT_DOUBLE_EQ(m.llama3_factor, 0.0);

  const auto refused = [](const model::ModelSpec &spec) {
    return invalid_message([&] { model::require_decode_step(spec, "cfg.json"); });
  };
  EXPECT_NE(invalid_message([&] {
              model::parse_model_spec(mistral, "cfg.json", "m");
            }).find("model config cfg.json: model_type 'mistral' is not supported"),
            std::string::npos);
  model::ModelSpec llama = m;
  llama.family = "";
  EXPECT_NE(refused(llama).find("field 'model_type' is missing"), std::string::npos);
  llama.family = "llama";
  EXPECT_NE(refused(llama).find("field 'num_hidden_layers' is missing"), std::string::npos);
  llama.layers = 2;
  EXPECT_NE(refused(llama).find("rope_scaling type 'yarn' is not supported"), std::string::npos);
  llama.rope_scaling = "llama3";
  EXPECT_NO_THROW(model::require_decode_step(llama, "cfg.json"));
}

} // namespace
} // namespace hone
