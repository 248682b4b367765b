// Model configs: Hugging Face config.json files as a model tune reads them (through the
// library's model::ModelSpec) and the op shapes derived from them.
#include "hone/model_config.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "hone/error.h"
#include "hone/registry.h"
#include "hone/shape_arg.h"

namespace hone::cli {
namespace {

// tests/unit/<this file> -> <source root>/models (CMake compiles sources by absolute path).
const std::filesystem::path kModels =
    std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "models";

// The message of the Error(invalid_argument) that `parse` throws; fails the test otherwise.
template <class F> std::string invalid_message(F parse) {
  try {
    parse();
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    return e.what();
  }
  ADD_FAILURE() << "no error thrown";
  return "";
}

// `text` as a model tune reads it (model::ModelSpecUse::op_shapes), from "test.json".
model::ModelSpec parse(const std::string &text) {
  return model::parse_model_spec(text, "test.json", "test", model::ModelSpecUse::op_shapes);
}

// The decode.paged dimensions of a model file's first decode attention step.
std::vector<int64_t> decode_paged_dims_of(const std::filesystem::path &path) {
  return decode_attention_steps(load_model_config(path), 16).front().dims;
}

TEST(ModelConfig, QwenDerivesFusedShapesAndHeadDim) {
  const model::ModelSpec m = load_model_config(kModels / "qwen2.5-0.5b.json");
  EXPECT_EQ(m.name, "qwen2.5-0.5b");
  EXPECT_EQ(m.hidden, 896);
  EXPECT_EQ(m.inter, 4864);
  EXPECT_EQ(m.hq, 14);
  EXPECT_EQ(m.hkv, 2);
  EXPECT_EQ(m.head_dim, 64); // 896 / 14: no head_dim field
  EXPECT_EQ(m.vocab, 151936);
  EXPECT_TRUE(m.tie_embeddings);

  const std::vector<LinearLayer> layers = linear_layers(m, /*include_lm_head=*/false);
  ASSERT_EQ(layers.size(), 4u);
  EXPECT_EQ(layers[0].name, "qkv");
  EXPECT_EQ(layers[0].n, (14 + 2 * 2) * 64);
  EXPECT_EQ(layers[0].k, 896);
  EXPECT_EQ(layers[1].name, "o_proj");
  EXPECT_EQ(layers[1].n, 896);
  EXPECT_EQ(layers[1].k, 896);
  EXPECT_EQ(layers[2].name, "gate_up");
  EXPECT_EQ(layers[2].n, 2 * 4864);
  EXPECT_EQ(layers[2].k, 896);
  EXPECT_EQ(layers[3].name, "down");
  EXPECT_EQ(layers[3].n, 896);
  EXPECT_EQ(layers[3].k, 4864);
}

TEST(ModelConfig, LlamaUntiedWithLmHead) {
  const model::ModelSpec m = load_model_config(kModels / "llama-3.1-8b.json");
  EXPECT_EQ(m.hidden, 4096);
  EXPECT_EQ(m.inter, 14336);
  EXPECT_EQ(m.hq, 32);
  EXPECT_EQ(m.hkv, 8);
  EXPECT_EQ(m.head_dim, 128);
  EXPECT_EQ(m.vocab, 128256);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_EQ(m.layers, 32);
  // K and V, 8 heads of 128 bf16 values, 32 layers: 128 KiB a token.
  EXPECT_EQ(model_kv_bytes(m, 1), size_t{128} << 10);
  EXPECT_EQ(model_kv_bytes(m, 4096), size_t{512} << 20);
  const std::vector<LinearLayer> layers = linear_layers(m, /*include_lm_head=*/true);
  ASSERT_EQ(layers.size(), 5u);
  EXPECT_EQ(layers[0].n, 6144); // (32 + 16) x 128
  EXPECT_EQ(layers[4].name, "lm_head");
  EXPECT_EQ(layers[4].n, 128256);
  EXPECT_EQ(layers[4].k, 4096);
}

// `hone tune --model` tunes decode attention at batch 1-64 x context 1k-128k with the
// model's heads: 56 steps, each its own decode.paged bucket.
TEST(ModelConfig, DecodeAttentionStepsCoverBatchAndContextWithTheModelsHeads) {
  const model::ModelSpec m = load_model_config(kModels / "llama-3.1-8b.json");
  const std::vector<DecodeAttentionStep> steps = decode_attention_steps(m, 16);
  ASSERT_EQ(steps.size(), 7u * 8u);
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const DecodeAttentionStep &s : steps) {
    EXPECT_EQ(s.dims,
              (std::vector<int64_t>{s.batch, s.context, s.batch * s.context, 32, 8, 128, 16}));
    seen.insert({s.batch, s.context});
  }
  for (int64_t batch = 1; batch <= 64; batch *= 2)
    for (int64_t context = 1024; context <= 131072; context *= 2)
      EXPECT_EQ(seen.count({batch, context}), 1u) << batch << " x " << context;
  EXPECT_EQ(decode_paged_dims_of(kModels / "qwen2.5-0.5b.json"),
            (std::vector<int64_t>{1, 1024, 1024, 14, 2, 64, 16}));

  // The names are decode.paged's dimensions, and every step is a bucket of its own.
  EXPECT_EQ(decode_attention_dim_names(),
            (std::vector<std::string>{"batch", "max_len", "total_len", "hq", "hkv", "head_dim",
                                      "page_size"}));
  const TunableOp *op = Registry::global().find("decode.paged", "cuda");
  if (op == nullptr)
    GTEST_SKIP() << "decode.paged is not built";
  ASSERT_EQ(op->buckets().dims.size(), decode_attention_dim_names().size());
  for (size_t i = 0; i < op->buckets().dims.size(); ++i)
    EXPECT_EQ(op->buckets().dims[i].name, decode_attention_dim_names()[i]);
  std::set<std::string> buckets;
  for (const DecodeAttentionStep &s : steps) {
    const Shape shape(std::span<const int64_t>(s.dims), op->dtype());
    EXPECT_NO_THROW(op->validate(shape)) << s.batch << " x " << s.context;
    buckets.insert(op->buckets().describe(op->buckets().map(shape).value()));
  }
  EXPECT_EQ(buckets.size(), steps.size());
}

// The small ops of the step get the shapes src/model/decode_step.cpp launches them with: rows =
// the step's batch, hidden and intermediate of the model, heads and head_dim of its attention,
// the cache's page size.
TEST(ModelConfig, StepOpShapesAreTheDecodeStepsLaunches) {
  const model::ModelSpec llama = load_model_config(kModels / "llama-3.1-8b.json");
  EXPECT_EQ(rmsnorm_shape(llama, 4, false).dims, (std::vector<int64_t>{4, 4096, 0}));
  EXPECT_EQ(rmsnorm_shape(llama, 4, false).use, "norm");
  EXPECT_EQ(rmsnorm_shape(llama, 4, true).dims, (std::vector<int64_t>{4, 4096, 1}));
  EXPECT_EQ(rmsnorm_shape(llama, 4, true).use, "norm+residual");
  EXPECT_EQ(rope_shape(llama, 16).dims, (std::vector<int64_t>{16, 32, 8, 128}));
  EXPECT_EQ(kv_append_shape(llama, 16, 32).dims, (std::vector<int64_t>{16, 8, 128, 32}));
  EXPECT_EQ(silu_mul_shape(llama, 2).dims, (std::vector<int64_t>{2, 14336}));

  // Qwen2.5-0.5B: head_dim derived (896 / 14), two kv heads.
  const model::ModelSpec qwen = load_model_config(kModels / "qwen2.5-0.5b.json");
  EXPECT_EQ(rmsnorm_shape(qwen, 1, true).dims, (std::vector<int64_t>{1, 896, 1}));
  EXPECT_EQ(rope_shape(qwen, 1).dims, (std::vector<int64_t>{1, 14, 2, 64}));
  EXPECT_EQ(kv_append_shape(qwen, 1, 16).dims, (std::vector<int64_t>{1, 2, 64, 16}));
  EXPECT_EQ(silu_mul_shape(qwen, 8).dims, (std::vector<int64_t>{8, 4864}));

  // A decode batch launches all four (rmsnorm twice); a prefill of 128 rows no kv_append.
  std::vector<std::string> decode, prefill;
  for (const StepOpShape &s : step_op_shapes(llama, kModelDecodeMaxRows, 16))
    decode.push_back(s.op + "/" + s.use);
  for (const StepOpShape &s : step_op_shapes(llama, kModelPrefillMinRows, 16))
    prefill.push_back(s.op + "/" + s.use);
  EXPECT_EQ(decode, (std::vector<std::string>{"rmsnorm/norm", "rmsnorm/norm+residual", "rope/rope",
                                              "kv_append/kv_append", "silu_mul/silu_mul"}));
  EXPECT_EQ(prefill, (std::vector<std::string>{"rmsnorm/norm", "rmsnorm/norm+residual", "rope/rope",
                                               "silu_mul/silu_mul"}));
  for (const StepOpShape &s : step_op_shapes(llama, 128, 16))
    EXPECT_EQ(s.dims.front(), 128) << s.op;

  // The dimension names are the registered ops' own, and each op takes the shapes.
  EXPECT_TRUE(step_op_dim_names("gemv.bf16").empty());
  for (const StepOpShape &s : step_op_shapes(llama, 4, 16)) {
    const std::vector<std::string> &names = step_op_dim_names(s.op);
    ASSERT_EQ(names.size(), s.dims.size()) << s.op;
    const TunableOp *op = Registry::global().find(s.op, "cuda");
    if (op == nullptr)
      continue; // a build without the CUDA backend
    ASSERT_EQ(op->buckets().dims.size(), names.size()) << s.op;
    for (size_t i = 0; i < names.size(); ++i)
      EXPECT_EQ(op->buckets().dims[i].name, names[i]) << s.op;
    EXPECT_NO_THROW(op->validate(Shape(std::span<const int64_t>(s.dims), op->dtype()))) << s.op;
  }
}

// The default rows of a model tune: every decode batch 1-64, then the prefill buckets 128, 256,
// .., 8192, each once; --rows spells the same set.
TEST(ModelConfig, DefaultRowsAreTheDecodeBatchesAndThePrefillBuckets) {
  std::vector<int64_t> expected;
  for (int64_t r = 1; r <= 64; ++r)
    expected.push_back(r);
  for (int64_t r = 128; r <= 8192; r *= 2)
    expected.push_back(r);
  EXPECT_EQ(default_model_rows(), expected);
  EXPECT_EQ(default_model_rows_text(), "1-64,128,256,512,1024,2048,4096,8192");
  EXPECT_EQ(parse_rows(default_model_rows_text()), expected);
}

TEST(ModelConfig, ExplicitHeadDimWins) {
  // Llama-3.2-3B: 24 heads x 128 = 3072 = hidden; an explicit head_dim that differs from
  // hidden / heads must be used as given.
  const model::ModelSpec m = parse(R"({"hidden_size": 2048, "intermediate_size": 6144,
      "num_attention_heads": 16, "num_key_value_heads": 4, "head_dim": 256,
      "vocab_size": 1000})");
  EXPECT_EQ(m.head_dim, 256);
  const std::vector<LinearLayer> layers = linear_layers(m, false);
  EXPECT_EQ(layers[0].n, (16 + 8) * 256);
  EXPECT_EQ(layers[1].n, 2048);
  EXPECT_EQ(layers[1].k, 16 * 256);
}

TEST(ModelConfig, KvHeadsDefaultToHeadsAndNullHeadDimIsAbsent) {
  const model::ModelSpec m = parse(R"({"hidden_size": 512, "intermediate_size": 1024,
      "num_attention_heads": 8, "head_dim": null, "vocab_size": 100})");
  EXPECT_EQ(m.hkv, 8);
  EXPECT_EQ(m.head_dim, 64);
  EXPECT_FALSE(m.tie_embeddings);
  EXPECT_EQ(m.layers, 0); // absent: no K and V estimate, nothing left out
  EXPECT_EQ(model_kv_bytes(m, 1 << 20), 0u);
  EXPECT_EQ(linear_layers(m, false)[0].n, 3 * 512);
}

TEST(ModelConfig, EveryShippedModelParses) {
  int count = 0;
  for (const auto &entry : std::filesystem::directory_iterator(kModels)) {
    if (entry.path().extension() != ".json")
      continue;
    SCOPED_TRACE(entry.path().string());
    const model::ModelSpec m = load_model_config(entry.path());
    for (const LinearLayer &l : linear_layers(m, true)) {
      EXPECT_GT(l.n, 0);
      EXPECT_GT(l.k, 0);
    }
    ++count;
  }
  EXPECT_GE(count, 5);
}

// The tune and the decode step read a config through one parser: for the shipped Llama and
// Qwen2 files the tune's view (ModelSpecUse::op_shapes) is the step's (decode_step) in every
// field, and each shape the tune derives is the one the step launches from the step's spec.
TEST(ModelConfig, TuneAndStepReadTheSameModel) {
  for (const char *file : {"qwen2.5-1.5b.json", "llama-3.1-8b.json", "qwen2.5-0.5b.json"}) {
    SCOPED_TRACE(file);
    const model::ModelSpec tune = load_model_config(kModels / file);
    const model::ModelSpec step = model::load_model_spec(kModels / file);
    EXPECT_EQ(tune.name, step.name);
    EXPECT_EQ(tune.hidden, step.hidden);
    EXPECT_EQ(tune.inter, step.inter);
    EXPECT_EQ(tune.hq, step.hq);
    EXPECT_EQ(tune.hkv, step.hkv);
    EXPECT_EQ(tune.head_dim, step.head_dim);
    EXPECT_EQ(tune.vocab, step.vocab);
    EXPECT_EQ(tune.layers, step.layers);
    EXPECT_EQ(tune.tie_embeddings, step.tie_embeddings);
    EXPECT_TRUE(tune == step) << "the tune reads another spec than the step";

    const std::vector<LinearLayer> layers = linear_layers(tune, /*include_lm_head=*/true);
    ASSERT_EQ(layers.size(), 5u);
    const std::pair<int64_t, int64_t> expected[] = {{step.qkv_width(), step.hidden},
                                                    {step.hidden, step.hq * step.head_dim},
                                                    {2 * step.inter, step.hidden},
                                                    {step.hidden, step.inter},
                                                    {step.vocab, step.hidden}};
    for (size_t i = 0; i < layers.size(); ++i)
      EXPECT_EQ(std::make_pair(layers[i].n, layers[i].k), expected[i]) << layers[i].name;
    EXPECT_EQ(rmsnorm_shape(tune, 2, true).dims, (std::vector<int64_t>{2, step.hidden, 1}));
    EXPECT_EQ(rope_shape(tune, 2).dims,
              (std::vector<int64_t>{2, step.hq, step.hkv, step.head_dim}));
    EXPECT_EQ(kv_append_shape(tune, 2, 16).dims,
              (std::vector<int64_t>{2, step.hkv, step.head_dim, 16}));
    EXPECT_EQ(silu_mul_shape(tune, 2).dims, (std::vector<int64_t>{2, step.inter}));
    EXPECT_EQ(decode_attention_steps(tune, 16).front().dims,
              (std::vector<int64_t>{1, 1024, 1024, step.hq, step.hkv, step.head_dim, 16}));
    // K and V of every layer, bf16.
    EXPECT_EQ(model_kv_bytes(tune, 1), size_t(step.layers * 2 * step.hkv * step.head_dim * 2));
  }
  // The built-in config reads as the step reads the same text.
  EXPECT_TRUE(default_model_config() == model::parse_model_spec(default_model_text(),
                                                                default_model_source(),
                                                                std::string(default_model_name())));
}

TEST(ModelConfig, DefaultModelIsTheShippedQwenFile) {
  const model::ModelSpec m = default_model_config();
  const model::ModelSpec file =
      load_model_config(kModels / (std::string(default_model_name()) + ".json"));
  EXPECT_EQ(m.hidden, file.hidden);
  EXPECT_EQ(m.inter, file.inter);
  EXPECT_EQ(m.vocab, file.vocab);
  EXPECT_EQ(m.name, "qwen2.5-0.5b");
}

TEST(ModelConfig, MissingFileNamesTheFile) {
  const std::string msg = invalid_message([] { load_model_config("/nonexistent/cfg.json"); });
  EXPECT_NE(msg.find("/nonexistent/cfg.json"), std::string::npos) << msg;
}

TEST(ModelConfig, MalformedJsonNamesTheSource) {
  const std::string msg = invalid_message([] { parse(R"({"hidden_size": 64,,})"); });
  EXPECT_NE(msg.find("test.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("not valid JSON"), std::string::npos) << msg;
  EXPECT_NE(invalid_message([] { parse("[1, 2]"); }).find("object"), std::string::npos);
}

TEST(ModelConfig, MissingOrBadFieldIsNamed) {
  std::string msg = invalid_message(
      [] { parse(R"({"hidden_size": 64, "num_attention_heads": 4, "vocab_size": 10})"); });
  EXPECT_NE(msg.find("test.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'intermediate_size' is missing"), std::string::npos) << msg;

  msg = invalid_message([] {
    parse(R"({"hidden_size": "64", "intermediate_size": 128, "num_attention_heads": 4,
              "vocab_size": 10})");
  });
  EXPECT_NE(msg.find("'hidden_size'"), std::string::npos) << msg;

  msg = invalid_message([] {
    parse(R"({"hidden_size": 64, "intermediate_size": -1, "num_attention_heads": 4,
              "vocab_size": 10})");
  });
  EXPECT_NE(msg.find("'intermediate_size'"), std::string::npos) << msg;

  msg = invalid_message([] {
    parse(R"({"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
              "num_key_value_heads": 3, "vocab_size": 10})");
  });
  EXPECT_NE(msg.find("'num_key_value_heads'"), std::string::npos) << msg;

  msg = invalid_message([] {
    parse(R"({"hidden_size": 65, "intermediate_size": 128, "num_attention_heads": 4,
              "vocab_size": 10})");
  });
  EXPECT_NE(msg.find("'head_dim'"), std::string::npos) << msg;

  msg = invalid_message([] {
    parse(R"({"hidden_size": 64, "intermediate_size": 128, "num_attention_heads": 4,
              "vocab_size": 10, "tie_word_embeddings": "yes"})");
  });
  EXPECT_NE(msg.find("'tie_word_embeddings'"), std::string::npos) << msg;
}

} // namespace
} // namespace hone::cli
