// qmv.affine.silu_mul host logic, no device: the op in the registry, its refusals naming the
// bad value, its candidates (qmv.affine's configs that have the SiLU epilogue, the default
// first) and its default (qmv.affine's of the gate/up shape).
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/kernels/qmv_affine/qmv_affine.h"
#include "cuda/ops/qmv_affine_op.h"
#include "hone/registry.h"
#include "hone/settings.h"
#include "invalid_message.h"

namespace hone::cuda {
namespace {

using hone::testing::invalid_message;

Shape silu_shape(int64_t rows, int64_t inter, int64_t k, int64_t bits = 4, int64_t group = 64) {
  return Shape{{rows, inter, k, bits, group}, DType::bf16};
}

TEST(QmvAffineSiluMulOp, IsRegisteredWithTheCudaOps) {
  const TunableOp *op = Registry::global().find("qmv.affine.silu_mul", "cuda");
  ASSERT_NE(op, nullptr);
  const std::vector<DimSpec> &dims = op->buckets().dims;
  ASSERT_EQ(dims.size(), 5u);
  EXPECT_EQ(dims[0].name, "rows");
  EXPECT_EQ(dims[1].name, "inter");
  EXPECT_EQ(dims[2].name, "k");
  EXPECT_EQ(dims[0].hi, 8);
  EXPECT_EQ(op->default_numerics(), Numerics::batch_invariant);
  EXPECT_EQ(op->version(), 2); // 2: the deep=2 configs' SiLU twins joined the candidates
}

TEST(QmvAffineSiluMulOp, RefusalsNameTheBadValue) {
  const QmvAffineSiluMulOp op;
  EXPECT_NO_THROW(op.validate(silu_shape(1, 14336, 4096)));
  EXPECT_NO_THROW(op.validate(silu_shape(8, 8960, 1536, 4, 128)));
  const auto message = [&](const Shape &s) { return invalid_message([&] { op.validate(s); }); };
  EXPECT_NE(message(silu_shape(9, 14336, 4096)).find("rows=9 outside 1..8"), std::string::npos);
  EXPECT_NE(message(silu_shape(0, 14336, 4096)).find("rows=0"), std::string::npos);
  EXPECT_NE(message(silu_shape(1, 12, 4096)).find("inter=12 is not a multiple of 8"),
            std::string::npos);
  EXPECT_NE(message(silu_shape(1, 14336, 4096, 8)).find("bits=8 has no SiLU epilogue"),
            std::string::npos);
  // The linear's own checks, through qmv.affine's validation of the gate/up shape.
  EXPECT_NE(message(silu_shape(1, 14336, 4000, 4, 64)).find("k=4000 is not a multiple of group=64"),
            std::string::npos);
  EXPECT_NE(message(silu_shape(1, 14336, 4096, 4, 48)).find("group=48"), std::string::npos);
  EXPECT_NE(message(Shape{{1, 14336, 4096, 4}, DType::bf16}).find("takes 5 dimensions"),
            std::string::npos);
  EXPECT_NE(message(Shape{{1, 14336, 4096, 4, 64}, DType::f32}).find("dtype bf16"),
            std::string::npos);
}

// Every candidate is a qmv.affine candidate of the gate/up shape whose epilogue is compiled,
// the default first; the configs without it (the cp.async ones among them) are left out.
TEST(QmvAffineSiluMulOp, CandidatesAreTheLinearsConfigsWithTheEpilogue) {
  const QmvAffineSiluMulOp silu;
  const QmvAffineOp linear;
  for (int64_t rows : {1, 4, 8}) {
    const Shape bucket = silu_shape(rows, 14336, 4096);
    const Shape gate_up{{rows, 2 * 14336, 4096, 4, 64}, DType::bf16};
    const std::vector<Tactic> fused = silu.candidates(bucket);
    const std::vector<Tactic> all = linear.candidates(gate_up);
    ASSERT_FALSE(fused.empty());
    EXPECT_EQ(fused.front(), silu.default_tactic(bucket));
    EXPECT_EQ(silu.default_tactic(bucket), linear.default_tactic(gate_up)) << "rows " << rows;
    EXPECT_LT(fused.size(), all.size()) << "rows " << rows;
    bool async_left_out = false;
    for (const Tactic &t : all) {
      const QmvAffineConfig c = QmvAffineConfig::from_tactic(t);
      const bool has = qmv_affine_silu_epilogue_compiled(c, 4, 64, 4096, 14336);
      const bool listed = std::find(fused.begin(), fused.end(), t) != fused.end();
      EXPECT_EQ(listed, has) << t.str();
      async_left_out = async_left_out || (c.async && !listed);
    }
    EXPECT_TRUE(async_left_out) << "rows " << rows;
    for (const Tactic &t : fused) {
      const QmvAffineConfig c = QmvAffineConfig::from_tactic(t);
      EXPECT_EQ(c.path, KernelPath::mma) << t.str();
      EXPECT_EQ(c.rows_per_cta, 8) << t.str();
      EXPECT_NO_THROW(silu.compile(t)) << t.str();
    }
  }
}

// Its tactics are qmv.affine's configs: a cached pick of another candidate is runnable, the
// environment's tactic for the op is accepted, and a foreign kernel is refused naming the op.
TEST(QmvAffineSiluMulOp, OwnsTheLinearsTactics) {
  const QmvAffineSiluMulOp op;
  const Shape bucket = silu_shape(1, 14336, 4096);
  const std::vector<Tactic> candidates = op.candidates(bucket);
  ASSERT_GE(candidates.size(), 2u);
  EXPECT_TRUE(op.owns_kernel(candidates[1].kernel)) << candidates[1].str();
  EXPECT_EQ(op.unrunnable_reason(candidates[1], bucket), std::nullopt) << candidates[1].str();
  EXPECT_FALSE(op.owns_kernel("gemv.bf16.mma"));
  EXPECT_FALSE(op.owns_kernel("qmv.affine"));
  Settings settings;
  settings.tactics[tactic_env_name("cuda", "qmv.affine.silu_mul")] = candidates[1].str();
  const std::optional<Tactic> forced = op.env_override(bucket, settings);
  ASSERT_TRUE(forced.has_value());
  EXPECT_EQ(*forced, candidates[1]);
  settings.tactics[tactic_env_name("cuda", "qmv.affine.silu_mul")] =
      "gemv.bf16.mma:rows_per_cta=8,warps=4,warps_k=1,outputs_per_warp=16,split_k=1";
  EXPECT_NE(invalid_message([&] {
              op.env_override(bucket, settings);
            }).find("is not a cuda qmv.affine.silu_mul tactic"),
            std::string::npos);
}

TEST(QmvAffineSiluMulOp, WorkloadBytesCountTheFusedOutput) {
  const QmvAffineSiluMulOp silu;
  const QmvAffineOp linear;
  const std::optional<WorkloadBytes> fused = silu.workload_bytes(silu_shape(4, 14336, 4096));
  const std::optional<WorkloadBytes> all =
      linear.workload_bytes(Shape{{4, 2 * 14336, 4096, 4, 64}, DType::bf16});
  ASSERT_TRUE(fused && all);
  EXPECT_EQ(fused->per_copy, all->per_copy); // the same weights and activations
  EXPECT_EQ(2 * fused->fixed, all->fixed);   // half the outputs
}

} // namespace
} // namespace hone::cuda
