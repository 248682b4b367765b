// rmsnorm host logic, no device: tactic spelling and its refusals, the default's summation
// order (hidden alone), can_implement reasons, and the float64 reference on a hand-made row.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/kernels/rmsnorm/rmsnorm.h"
#include "cuda/ops/rmsnorm_op.h"
#include "hone/bf16.h"
#include "hone/error.h"

namespace hone::cuda {
namespace {

TEST(RmsnormConfig, TacticRoundTripsAndRefusals) {
  for (const RmsnormConfig &c : rmsnorm_configs())
    EXPECT_EQ(RmsnormConfig::from_tactic(c.to_tactic()), c) << c.to_tactic().str();
  EXPECT_EQ(rmsnorm_default(1, 4096).to_tactic().str(),
            "rmsnorm.bf16:vec=8,threads=128,rows_per_cta=1");
  EXPECT_THROW(RmsnormConfig::from_tactic(Tactic::parse("rmsnorm.bf16:vec=6,threads=128,"
                                                        "rows_per_cta=1")),
               Error);
  EXPECT_THROW(RmsnormConfig::from_tactic(Tactic::parse("rmsnorm.bf16:vec=8,threads=96,"
                                                        "rows_per_cta=1")),
               Error);
  EXPECT_THROW(RmsnormConfig::from_tactic(Tactic::parse("silu_mul.bf16:vec=8,vectors=1,"
                                                        "threads=128")),
               Error);
}

TEST(RmsnormConfig, DefaultOrderFollowsHiddenOnlyAndFits) {
  for (int hidden : {8, 64, 896, 1536, 2048, 3584, 4096, 5120, 8192, 16384, 32768}) {
    const RmsnormConfig d = rmsnorm_default(1, hidden);
    for (int rows : {2, 7, 64, kRmsnormFewRows, kRmsnormFewRows + 1, 4096}) {
      const RmsnormConfig r = rmsnorm_default(rows, hidden);
      EXPECT_EQ(r.lanes(), d.lanes()) << hidden << " rows " << rows;
      if (rows <= kRmsnormFewRows) {
        EXPECT_EQ(r, d) << hidden << " rows " << rows;
      }
      std::string why;
      EXPECT_TRUE(rmsnorm_can_implement(r, rows, hidden, &why)) << hidden << ": " << why;
      EXPECT_LE(r.threads * r.rows_per_cta, kRmsnormMaxThreadsPerCta);
    }
  }
  // A narrow row (hidden 1536: 512 lanes) takes 128 threads of 8-byte vectors at few rows and
  // 64 threads of 16-byte vectors, two rows a CTA, past them; a wide row one form throughout.
  EXPECT_EQ(rmsnorm_default(1, 1536).to_tactic().str(),
            "rmsnorm.bf16:vec=4,threads=128,rows_per_cta=1");
  EXPECT_EQ(rmsnorm_default(kRmsnormFewRows + 1, 1536).to_tactic().str(),
            "rmsnorm.bf16:vec=8,threads=64,rows_per_cta=2");
  EXPECT_EQ(rmsnorm_default(4096, 4096), rmsnorm_default(1, 4096));
}

TEST(RmsnormConfig, CanImplementNamesTheReason) {
  std::string why;
  EXPECT_FALSE(rmsnorm_can_implement({8, 32, 2}, 1, 4096, &why)); // 16 vectors a thread
  EXPECT_NE(why.find("vectors per thread"), std::string::npos) << why;
  EXPECT_FALSE(rmsnorm_can_implement({8, 512, 1}, 1, 1536, &why)); // 4096 lanes > 1536
  EXPECT_NE(why.find("idle threads"), std::string::npos) << why;
  EXPECT_FALSE(rmsnorm_can_implement({8, 128, 1}, 1, 1001, &why));
  EXPECT_NE(why.find("hidden=1001"), std::string::npos) << why;
  EXPECT_FALSE(rmsnorm_can_implement({8, 128, 1}, 0, 4096, &why));
  EXPECT_NE(why.find("rows=0"), std::string::npos) << why;
}

TEST(RmsnormReference, HandMadeRows) {
  // Row (3, 4) has mean square 12.5: out = h / sqrt(12.5 + eps) * w; with the residual (1, 0)
  // added, h = (4, 4).
  const std::vector<uint16_t> x{float_to_bf16(3), float_to_bf16(4)};
  const std::vector<uint16_t> r{float_to_bf16(1), float_to_bf16(0)};
  const std::vector<uint16_t> w{float_to_bf16(1), float_to_bf16(2)};
  const std::vector<double> plain = rmsnorm_reference(x, {}, w, 1, 2, 0.0);
  EXPECT_DOUBLE_EQ(plain[0], 3 / std::sqrt(12.5));
  EXPECT_DOUBLE_EQ(plain[1], 8 / std::sqrt(12.5));
  const std::vector<double> fused = rmsnorm_reference(x, r, w, 1, 2, 0.0);
  EXPECT_DOUBLE_EQ(fused[0], 1.0);
  EXPECT_DOUBLE_EQ(fused[1], 2.0);
}

} // namespace
} // namespace hone::cuda
