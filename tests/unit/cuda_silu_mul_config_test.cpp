// silu_mul host logic, no device: tactic spelling and its refusals, the default, can_implement
// reasons, and the float64 reference on hand-made values.
#include <cmath>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/kernels/silu_mul/silu_mul.h"
#include "cuda/ops/silu_mul_op.h"
#include "hone/bf16.h"
#include "hone/error.h"

namespace hone::cuda {
namespace {

TEST(SiluMulConfig, TacticRoundTripsAndRefusals) {
  for (const SiluMulConfig &c : silu_mul_configs())
    EXPECT_EQ(SiluMulConfig::from_tactic(c.to_tactic()), c) << c.to_tactic().str();
  EXPECT_EQ(silu_mul_default(1, 14336).to_tactic().str(),
            "silu_mul.bf16:vec=4,vectors=1,threads=256");
  EXPECT_EQ(silu_mul_default(256, 14336).to_tactic().str(),
            "silu_mul.bf16:vec=4,vectors=1,threads=256");
  EXPECT_EQ(silu_mul_default(512, 14336).to_tactic().str(),
            "silu_mul.bf16:vec=8,vectors=1,threads=256");
  EXPECT_THROW(SiluMulConfig::from_tactic(Tactic::parse("silu_mul.bf16:vec=8,vectors=3,"
                                                        "threads=128")),
               Error);
  EXPECT_THROW(SiluMulConfig::from_tactic(Tactic::parse("silu_mul.bf16:vec=8,threads=128")), Error);
}

TEST(SiluMulConfig, CanImplementNamesTheReason) {
  std::string why;
  EXPECT_TRUE(silu_mul_can_implement(silu_mul_default(1, 64), 1, 64, &why)) << why;
  EXPECT_FALSE(silu_mul_can_implement({8, 4, 512}, 1, 64, &why));
  EXPECT_NE(why.find("idle threads"), std::string::npos) << why;
  EXPECT_FALSE(silu_mul_can_implement({8, 1, 128}, 1, 100, &why));
  EXPECT_NE(why.find("inter=100"), std::string::npos) << why;
}

TEST(SiluMulReference, HandMadeValues) {
  // Row: gate (0, 2), up (5, 3): silu(0) = 0, silu(2) = 2 / (1 + e^-2).
  const std::vector<uint16_t> gate_up{float_to_bf16(0), float_to_bf16(2), float_to_bf16(5),
                                      float_to_bf16(3)};
  const std::vector<double> out = silu_mul_reference(gate_up, 1, 2);
  EXPECT_DOUBLE_EQ(out[0], 0.0);
  EXPECT_DOUBLE_EQ(out[1], 2 / (1 + std::exp(-2.0)) * 3);
}

} // namespace
} // namespace hone::cuda
