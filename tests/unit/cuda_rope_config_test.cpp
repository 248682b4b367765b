// rope host logic, no device: tactic spelling and its refusals, can_implement reasons, the
// frequencies (plain, Llama-3.1 scaling, bad values named), and the float64 reference on
// hand-made heads.
#include <cmath>
#include <numbers>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/kernels/rope/rope.h"
#include "cuda/ops/rope_op.h"
#include "hone/bf16.h"
#include "hone/error.h"

namespace hone::cuda {
namespace {

TEST(RopeConfig, TacticRoundTripsAndRefusals) {
  for (const RopeConfig &c : rope_configs())
    EXPECT_EQ(RopeConfig::from_tactic(c.to_tactic()), c) << c.to_tactic().str();
  EXPECT_EQ(rope_default(1, 32, 8, 128).to_tactic().str(), "rope.neox:vec=8,threads=128");
  EXPECT_EQ(rope_default(1, 32, 8, 8).vec, 4);
  EXPECT_THROW(RopeConfig::from_tactic(Tactic::parse("rope.neox:vec=2,threads=128")), Error);
  EXPECT_THROW(RopeConfig::from_tactic(Tactic::parse("rope.gptj:vec=8,threads=128")), Error);
}

TEST(RopeConfig, CanImplementNamesTheReason) {
  std::string why;
  EXPECT_FALSE(rope_can_implement({8, 128}, 1, 4, 1, 8, &why)); // half of 8 is 4
  EXPECT_NE(why.find("vec=8"), std::string::npos) << why;
  EXPECT_FALSE(rope_can_implement({4, 128}, 1, 4, 1, 512, &why));
  EXPECT_NE(why.find("head_dim=512"), std::string::npos) << why;
}

TEST(RopeFrequencies, PlainScaledAndBad) {
  const std::vector<double> plain = rope_inv_freq(RopeFrequencies{10000.0}, 8);
  ASSERT_EQ(plain.size(), 4u);
  EXPECT_DOUBLE_EQ(plain[0], 1.0);
  EXPECT_DOUBLE_EQ(plain[2], std::pow(10000.0, -0.5));
  // Llama-3.1: the lowest frequency (longest wavelength) divided by the factor, the highest
  // kept.
  const std::vector<double> scaled = rope_inv_freq(RopeFrequencies{500000.0, 8, 1, 4, 8192}, 128);
  EXPECT_DOUBLE_EQ(scaled[0], 1.0);
  EXPECT_DOUBLE_EQ(scaled[63], std::pow(500000.0, -126.0 / 128) / 8);
  try {
    rope_inv_freq(RopeFrequencies{0.5}, 128);
    ADD_FAILURE() << "theta=0.5 accepted";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("theta=0.5"), std::string::npos) << e.what();
  }
  EXPECT_THROW(rope_inv_freq(RopeFrequencies{10000.0}, 7), Error);
  EXPECT_THROW(rope_inv_freq(RopeFrequencies{10000.0, 8, 4, 1, 8192}, 128), Error); // low > high
}

TEST(RopeReference, HandMadeHead) {
  // head_dim 2: (x1, x2) = (1, 0) turned by angle pos x 1.
  const std::vector<uint16_t> x{float_to_bf16(1), float_to_bf16(0)};
  const std::vector<double> inv{1.0};
  const std::vector<int32_t> at0{0}, at1{1};
  std::vector<double> y = rope_reference(x, at0, inv, 1, 1, 2);
  EXPECT_DOUBLE_EQ(y[0], 1.0);
  EXPECT_DOUBLE_EQ(y[1], 0.0);
  y = rope_reference(x, at1, inv, 1, 1, 2);
  EXPECT_DOUBLE_EQ(y[0], std::cos(1.0));
  EXPECT_DOUBLE_EQ(y[1], std::sin(1.0));
}

} // namespace
} // namespace hone::cuda
