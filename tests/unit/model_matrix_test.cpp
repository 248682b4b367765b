// The tuning matrix of a model: which ops a model run takes, and the buckets each gets from the
// config and the rows, each bucket once.
#include "hone/model_matrix.h"

#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "h200_facts.h"
#include "hone/chain_tactic.h"
#include "hone/registry.h"
#include "invalid_message.h"

namespace hone::cli {
namespace {

using hone::testing::H200Facts;
using hone::testing::invalid_message;

const std::filesystem::path kModels =
    std::filesystem::path(__FILE__).parent_path().parent_path().parent_path() / "models";

bool cuda_built() { return Registry::global().find("gemv.bf16", "cuda") != nullptr; }

std::map<std::string, int> counts_by_op(const std::vector<Problem> &problems) {
  std::map<std::string, int> counts;
  for (const Problem &p : problems)
    ++counts[std::string(p.op->name())];
  return counts;
}

const Problem *find_bucket(const std::vector<Problem> &problems, std::string_view op,
                           std::string_view bucket) {
  for (const Problem &p : problems)
    if (p.op->name() == op && p.bucket_text == bucket)
      return &p;
  return nullptr;
}

// Llama-3.1-8B with the default rows: the decode ops take rows 1-32 as their buckets (1..8, 16,
// 32), qmm.affine and quantized_linear also 33..64 (one bucket, 64) and the seven prefill
// buckets, the small ops 1..8, 16, 32, 64 and the prefill buckets (kv_append only the decode
// batches), decode.paged its 7 x 8 batch x context steps but the 6 whose K and V over all 32
// layers (128 KiB a token) exceed the 140 GiB free: batch 16 x 128k, 32 x 64k and 128k, 64 x 32k
// to 128k. No bucket is listed twice.
TEST(ModelMatrix, LlamaDefaultMatrixHasEveryBucketOnce) {
  if (!cuda_built())
    GTEST_SKIP() << "no CUDA backend in this build";
  const H200Facts h200;
  const model::ModelSpec llama = load_model_config(kModels / "llama-3.1-8b.json");
  // NOTE: qmm.affine's workload size asks the device for its SM count (CUTLASS's stream-K
  // workspace), so without a GPU its ops are left out and only their row buckets are checked.
  const bool device = available_backends().front() == "cuda";
  const ModelOps ops = select_model_ops(
      h200,
      device ? ""
             : "gemv.bf16,qmv.affine,qmv.affine.silu_mul,rmsnorm,rope,kv_append,silu_mul,"
               "decode.paged",
      4, 64);
  const std::vector<Problem> problems = model_problems(llama, ops, {}, h200);
  for (const char *name : {"qmm.affine", "quantized_linear"})
    if (const TunableOp *op = Registry::global().find(name, "cuda")) {
      std::set<int64_t> rows;
      for (int64_t r : default_model_rows())
        rows.insert(op->buckets().dims[0].map(r).value());
      EXPECT_EQ(rows.size(), 40u) << name << ": rows 1..32, 64 and 128..8192";
      EXPECT_EQ(*rows.rbegin(), 8192) << name;
    }

  // qmv.affine.silu_mul: the gate/up linear alone, at the 8 rows its epilogue takes.
  const std::map<std::string, int> expected = {{"gemv.bf16", 4 * 10},
                                               {"qmv.affine", 4 * 10},
                                               {"qmv.affine.silu_mul", 8},
                                               {"qmm.affine", 4 * 40},
                                               {"quantized_linear", 4 * 40},
                                               {"rmsnorm", 2 * 18},
                                               {"rope", 18},
                                               {"kv_append", 11},
                                               {"silu_mul", 18},
                                               {"decode.paged", 50}};
  const std::map<std::string, int> counts = counts_by_op(problems);
  for (const auto &[op, n] : counts) {
    ASSERT_TRUE(expected.count(op)) << "unexpected op " << op;
    EXPECT_EQ(n, expected.at(op)) << op;
  }
  for (const char *op : {"gemv.bf16", "qmv.affine", "qmv.affine.silu_mul", "rmsnorm", "rope",
                         "kv_append", "silu_mul", "decode.paged"})
    EXPECT_TRUE(counts.count(op)) << op << " is not in the matrix";
  const Problem *fused =
      find_bucket(problems, "qmv.affine.silu_mul", "rows=1,inter=14336,k=4096,bits=4,group=64");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->layers, (std::vector<std::string>{"gate_up"}));
  EXPECT_EQ(
      find_bucket(problems, "qmv.affine.silu_mul", "rows=9,inter=14336,k=4096,bits=4,group=64"),
      nullptr);

  std::set<std::string> keys;
  for (const Problem &p : problems)
    EXPECT_TRUE(keys.insert(p.key).second) << "bucket listed twice: " << p.key;

  // Rows 33..64 of qkv are one qmm.affine bucket, rows=64, first seen at 33, named once.
  if (counts.count("qmm.affine")) {
    const Problem *p = find_bucket(problems, "qmm.affine", "rows=64,n=6144,k=4096,bits=4,group=64");
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(p->shape[0], 33);
    EXPECT_EQ(p->layers, (std::vector<std::string>{"qkv"}));
    EXPECT_NE(find_bucket(problems, "qmm.affine", "rows=8192,n=28672,k=4096,bits=4,group=64"),
              nullptr);
  }
  // The largest step a 140 GiB device can hold for this model is kept, the next one is not.
  const std::string attn = ",hq=32,hkv=8,head_dim=128,page_size=16";
  EXPECT_NE(
      find_bucket(problems, "decode.paged", "batch=64,max_len=16384,total_len=1048576" + attn),
      nullptr);
  EXPECT_EQ(
      find_bucket(problems, "decode.paged", "batch=64,max_len=32768,total_len=2097152" + attn),
      nullptr);
  EXPECT_EQ(find_bucket(problems, "gemv.bf16", "rows=64,n=6144,k=4096"), nullptr);
  EXPECT_NE(find_bucket(problems, "gemv.bf16", "rows=32,n=6144,k=4096"), nullptr);
  // The small ops at the step's shapes.
  EXPECT_NE(find_bucket(problems, "rmsnorm", "rows=8192,hidden=4096,residual=1"), nullptr);
  EXPECT_NE(find_bucket(problems, "rmsnorm", "rows=1,hidden=4096,residual=0"), nullptr);
  EXPECT_NE(find_bucket(problems, "rope", "rows=16,hq=32,hkv=8,head_dim=128"), nullptr);
  EXPECT_NE(find_bucket(problems, "silu_mul", "rows=4096,inter=14336"), nullptr);
  EXPECT_NE(find_bucket(problems, "kv_append", "batch=64,hkv=8,head_dim=128,page_size=16"),
            nullptr);
  EXPECT_EQ(find_bucket(problems, "kv_append", "batch=128,hkv=8,head_dim=128,page_size=16"),
            nullptr);
  const Problem *norm = find_bucket(problems, "rmsnorm", "rows=64,hidden=4096,residual=1");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->shape[0], 33); // rows 33..64: one bucket
  EXPECT_EQ(norm->layers, (std::vector<std::string>{"norm+residual"}));
}

// --ops names the ops; a small op or decode attention alone is a matrix, and the chain op
// (registered) is selected with the rest, or alone.
TEST(ModelMatrix, SelectedOpsAreSortedByKind) {
  if (!cuda_built())
    GTEST_SKIP() << "no CUDA backend in this build";
  const H200Facts h200;
  const ModelOps all = select_model_ops(h200, "", 4, 64);
  EXPECT_FALSE(all.named);
  ASSERT_NE(all.chain, nullptr);
  EXPECT_EQ(all.chain->name(), kChainOpName);
  EXPECT_EQ(all.step.size(), 4u);
  EXPECT_EQ(all.attention.size(), 1u);
  ASSERT_EQ(all.gate_up.size(), 1u);
  EXPECT_EQ(all.gate_up[0]->name(), "qmv.affine.silu_mul");

  const ModelOps some = select_model_ops(h200, "rope,decode.paged,chain.decode_step", 4, 64);
  EXPECT_TRUE(some.named);
  EXPECT_TRUE(some.linear.empty());
  ASSERT_EQ(some.step.size(), 1u);
  EXPECT_EQ(some.step[0]->name(), "rope");
  EXPECT_EQ(some.attention.size(), 1u);
  EXPECT_NE(some.chain, nullptr);

  const model::ModelSpec qwen = load_model_config(kModels / "qwen2.5-0.5b.json");
  ModelMatrixOptions o;
  o.rows = {1, 2, 3};
  const std::vector<Problem> rope =
      model_problems(qwen, select_model_ops(h200, "rope", 4, 64), o, h200);
  ASSERT_EQ(rope.size(), 3u);
  EXPECT_EQ(rope[2].bucket_text, "rows=3,hq=14,hkv=2,head_dim=64");

  // The fused gate/up linear has no 8-bit epilogue: left out with a note, an error when named.
  ModelMatrixOptions one;
  one.rows = {1};
  one.bits = 8;
  ModelOps unnamed; // as select_model_ops("") sorts them, without the ops that need a device
  unnamed.linear = {Registry::global().find("qmv.affine", "cuda")};
  unnamed.gate_up = {Registry::global().find("qmv.affine.silu_mul", "cuda")};
  const std::vector<Problem> eight = model_problems(qwen, unnamed, one, h200);
  EXPECT_EQ(counts_by_op(eight).count("qmv.affine.silu_mul"), 0u);
  EXPECT_EQ(counts_by_op(eight).count("qmv.affine"), 1u);
  const std::string named = invalid_message([&] {
    model_problems(qwen, select_model_ops(h200, "qmv.affine.silu_mul", 8, 64), one, h200);
  });
  EXPECT_NE(named.find("bits=8 has no SiLU epilogue"), std::string::npos) << named;
  one.bits = 4;
  const std::vector<Problem> four =
      model_problems(qwen, select_model_ops(h200, "qmv.affine.silu_mul", 4, 64), one, h200);
  ASSERT_EQ(four.size(), 1u);
  EXPECT_EQ(four[0].bucket_text, "rows=1,inter=4864,k=896,bits=4,group=64");

  const std::string msg = invalid_message([&] { select_model_ops(h200, "gemv.f32", 4, 64); });
  EXPECT_NE(msg.find("unknown op 'gemv.f32'"), std::string::npos) << msg;
  o.rows = {100000};
  const std::string none = invalid_message(
      [&] { model_problems(qwen, select_model_ops(h200, "rmsnorm,rope", 4, 64), o, h200); });
  EXPECT_NE(none.find("no op to tune takes these row counts"), std::string::npos) << none;
}

} // namespace
} // namespace hone::cli
