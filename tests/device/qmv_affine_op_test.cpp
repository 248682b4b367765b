// qmv.affine (cuda): every tactic against the float64 reference on fresh random quantized
// weights (bits 4 and 8, groups 32/64/128, leftover N and K), validation messages, the spill
// rule, batch invariance of the default and the structural summation-order gate, the device
// dequantisation and the cublas.dequant peer, the public entry point, and the tuner end to
// end (tune, cache, reload, hit).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/backend/bf16.h"
#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/gate/bf16_compare.h"
#include "cuda/ops/affine_dequantize.h"
#include "cuda/ops/gemv_bf16_reference.h"
#include "cuda/ops/qmv_affine_op.h"
#include "cuda/ops/qmv_affine_reference.h"
#include "cuda/peers/cublas_dequant_affine_linear_peer.h"
#include "device_test.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/ops/cuda.h"
#include "hone/registry.h"
#include "hone/tune.h"
#include "op_test_helpers.h"
#include "step_op_test_util.h"

namespace hone::cuda {
namespace {

using testing::CacheDirTest;
using testing::check_every_tactic;
using testing::DeviceTest;
using testing::expect_defaults_batch_invariant;
using testing::expect_invalid;
using testing::expect_served_from_cache;
using testing::expect_spill_rule;
using testing::ForeignWorkload;
using testing::reduced_shapes;
using testing::registered_op;
using testing::tune_and_check;

// One quantized weight matrix: N x K in `bits`-bit groups of `group` along K.
struct Format {
  int n, k, bits, group;
};

std::string describe(const Format &f) {
  return "n=" + std::to_string(f.n) + " k=" + std::to_string(f.k) +
         " bits=" + std::to_string(f.bits) + " group=" + std::to_string(f.group);
}

// Every (bits, group) on N = 1000 (not a multiple of any tile) and K = 1152 (9 chunks of 128
// 4-bit values, 18 of 64 8-bit ones); decode shapes; K = 1056, which leaves a partial chunk
// at both widths; and a tiny N.
std::vector<Format> matrix_formats() {
  if (reduced_shapes())
    return {{264, 1152, 4, 64}, {77, 256, 8, 32}};
  std::vector<Format> out;
  for (int bits : {4, 8})
    for (int group : {32, 64, 128})
      out.push_back({1000, 1152, bits, group});
  for (Format f : {Format{4096, 4096, 4, 64}, Format{4096, 4096, 8, 64}, Format{1536, 8960, 4, 128},
                   Format{1000, 1056, 4, 32}, Format{1000, 1056, 8, 32}, Format{77, 2048, 8, 32}})
    out.push_back(f);
  return out;
}
std::vector<int> matrix_rows() {
  return reduced_shapes() ? std::vector<int>{1, 5, 32} : std::vector<int>{1, 3, 8, 16, 32};
}

Shape shape_of(int rows, const Format &f) {
  return Shape{{rows, f.n, f.k, f.bits, f.group}, DType::bf16};
}

const TunableOp &qmv_op() { return registered_op("qmv.affine"); }

uint16_t bf16(float v) { return float_to_bf16(v); }

class QmvAffineOpTest : public DeviceTest {};

// --- host -----------------------------------------------------------------------------------

TEST(QmvAffineOpHostTest, OpIdentityAndBuckets) {
  const TunableOp &op = qmv_op();
  EXPECT_EQ(op.name(), "qmv.affine");
  EXPECT_EQ(op.backend(), "cuda");
  EXPECT_EQ(op.version(), 4); // 4: the deep=2 candidates (3: the fill floor of the K split)
  EXPECT_EQ(op.default_numerics(), Numerics::batch_invariant);
  const BucketSpec &spec = op.buckets();
  const Shape b = spec.map(shape_of(12, {4096, 4096, 4, 64})).value();
  EXPECT_EQ(spec.describe(b), "rows=16,n=4096,k=4096,bits=4,group=64");
  EXPECT_EQ(spec.map(shape_of(6, {4096, 4096, 4, 64})).value()[0], 6);
  EXPECT_EQ(spec.map(shape_of(24, {4096, 4096, 4, 64})).value()[0], 32);
  EXPECT_EQ(spec.map(shape_of(1, {14337, 4096, 8, 128})).value()[1], 14337);
  EXPECT_FALSE(spec.map(shape_of(33, {4096, 4096, 4, 64})).has_value());
  EXPECT_FALSE(spec.map(shape_of(1, {4096, 4096, 3, 64})).has_value());
  EXPECT_FALSE(spec.map(shape_of(1, {4096, 4096, 4, 16})).has_value());
}

TEST(QmvAffineOpHostTest, CandidatesAreCompiledConfigsWithTheDefaultFirst) {
  const TunableOp &op = qmv_op();
  for (int bits : {4, 8})
    for (int rows : {1, 8, 16, 32}) {
      const Shape b = op.buckets().map(shape_of(rows, {4096, 4096, bits, 64})).value();
      const std::vector<Tactic> c = op.candidates(b);
      ASSERT_FALSE(c.empty());
      EXPECT_EQ(c.front(), op.default_tactic(b));
      const std::vector<QmvAffineConfig> &compiled = qmv_affine_configs(bits);
      for (size_t i = 0; i < c.size(); ++i) {
        const QmvAffineConfig config = QmvAffineConfig::from_tactic(c[i]);
        EXPECT_NE(std::find(compiled.begin(), compiled.end(), config), compiled.end())
            << c[i].str() << " is not compiled for bits=" << bits;
        for (size_t j = i + 1; j < c.size(); ++j)
          EXPECT_NE(c[i], c[j]) << "duplicate candidate " << c[i].str();
      }
    }
}

TEST(QmvAffineOpHostTest, ValidateNamesTheBadValue) {
  const TunableOp &op = qmv_op();
  expect_invalid(op, shape_of(4, {4096, 1000, 4, 64}), "k=1000");
  expect_invalid(op, shape_of(4, {4096, 4096, 3, 64}), "bits=3");
  expect_invalid(op, shape_of(4, {4096, 4096, 4, 16}), "group=16");
  expect_invalid(op, shape_of(33, {4096, 4096, 4, 64}), "rows=33");
  expect_invalid(op, shape_of(0, {4096, 4096, 4, 64}), "rows=0");
  expect_invalid(op, shape_of(4, {0, 4096, 4, 64}), "n=0");
  expect_invalid(op, shape_of(4, {4096, 32, 4, 64}), "k=32");
  expect_invalid(op, Shape{{4, 4096, 4096, 4, 64}, DType::f32}, "f32");
  expect_invalid(op, Shape{{4, 4096, 4096}, DType::bf16}, "5 dimensions");
  EXPECT_NO_THROW(op.validate(shape_of(32, {1000, 1056, 8, 32})));
  EXPECT_NO_THROW(op.validate(shape_of(1, {14336, 4096, 4, 128})));
}

// Hand-made weights: row 0 has scale 0.5, bias -1 and q_i = i mod 2^bits; row 1 scale 2^-7
// and bias 3 with q_i = (2^bits - 1) - q_i of row 0. X = 1 in row 0 and (-1)^i in row 1.
TEST(QmvAffineOpHostTest, ReferenceIsExactOnHandMadeWeights) {
  for (int bits : {4, 8}) {
    const QmvAffineProblem p{2, 2, 256, bits, 128};
    const int per_word = 32 / bits;
    const uint32_t q_max = (1u << bits) - 1u;
    std::vector<uint32_t> q(static_cast<size_t>(p.n * p.k / per_word), 0u);
    std::vector<uint16_t> scales, biases, x;
    for (int j = 0; j < p.n; ++j)
      for (int i = 0; i < p.k; ++i) {
        const uint32_t v = j == 0 ? i % (q_max + 1) : q_max - i % (q_max + 1);
        q[static_cast<size_t>((j * p.k + i) / per_word)] |= v << ((i % per_word) * bits);
      }
    for (int g = 0; g < p.k / p.group; ++g) {
      scales.push_back(bf16(0.5f));
      biases.push_back(bf16(-1.0f));
    }
    for (int g = 0; g < p.k / p.group; ++g) {
      scales.push_back(bf16(1.0f / 128));
      biases.push_back(bf16(3.0f));
    }
    for (int r = 0; r < p.rows; ++r)
      for (int i = 0; i < p.k; ++i)
        x.push_back(bf16(r == 0 || i % 2 == 0 ? 1.0f : -1.0f));

    std::vector<double> expected(4, 0.0);
    for (int r = 0; r < p.rows; ++r)
      for (int j = 0; j < p.n; ++j)
        for (int i = 0; i < p.k; ++i) {
          const double v = j == 0 ? i % (q_max + 1) : q_max - i % (q_max + 1);
          const double w = j == 0 ? v * 0.5 - 1.0 : v / 128 + 3.0;
          expected[static_cast<size_t>(r * p.n + j)] += (r == 0 || i % 2 == 0 ? 1.0 : -1.0) * w;
        }
    EXPECT_EQ(qmv_affine_reference(x, q, scales, biases, p), expected) << "bits=" << bits;
  }
}

// --- device: tolerance gate ---------------------------------------------------------------------

TEST_F(QmvAffineOpTest, EveryTacticMatchesTheReference) {
  const TunableOp &op = qmv_op();
  for (const Format &f : matrix_formats())
    for (int rows : matrix_rows())
      EXPECT_GT(check_every_tactic(op, shape_of(rows, f), kQmvAffineRelativeL2Bound), 0)
          << "no tactic ran " << describe(f) << " rows=" << rows;
}

// The gate must be able to fail: the default's output on copy 0 passes against copy 0's
// reference and fails, by far, against references with the wrong weights (another copy, the
// nibbles of each word reversed, the scale of the next group).
TEST_F(QmvAffineOpTest, GateDiscriminatesWrongWeights) {
  const TunableOp &op = qmv_op();
  for (int bits : {4, 8}) {
    const Format f{1000, 1152, bits, 64};
    const Shape shape = shape_of(3, f);
    std::unique_ptr<Workload> w = op.prepare(shape);
    auto &qw = dynamic_cast<QmvAffineWorkload &>(*w);
    qw.set_rotation(2);
    const Tactic def = op.default_tactic(op.buckets().map(shape).value());
    qw.poison_output();
    qw.run(def, 0);
    HONE_CUDA_CHECK(cudaStreamSynchronize(qw.stream()));
    const std::vector<uint16_t> y = qw.download_y();
    EXPECT_LE(compare_bf16(y, qw.reference(0)).relative_l2, kQmvAffineRelativeL2Bound);
    EXPECT_GT(compare_bf16(y, qw.reference(1)).relative_l2, 0.5);

    const std::vector<uint16_t> x = qw.download_x(0);
    std::vector<uint32_t> q = qw.download_q(0);
    std::vector<uint16_t> scales = qw.download_scales(0);
    const std::vector<uint16_t> biases = qw.download_biases(0);
    std::vector<uint32_t> reversed = q;
    const int per_word = 32 / bits;
    const uint32_t mask = (1u << bits) - 1u;
    for (uint32_t &word : reversed) {
      uint32_t out = 0;
      for (int j = 0; j < per_word; ++j)
        out |= ((word >> (j * bits)) & mask) << ((per_word - 1 - j) * bits);
      word = out;
    }
    const QmvAffineProblem p = qw.problem();
    EXPECT_GT(compare_bf16(y, qmv_affine_reference(x, reversed, scales, biases, p)).relative_l2,
              0.1)
        << "bits=" << bits;
    std::rotate(scales.begin(), scales.begin() + 1, scales.end());
    EXPECT_GT(compare_bf16(y, qmv_affine_reference(x, q, scales, biases, p)).relative_l2, 0.1)
        << "bits=" << bits;
  }
}

TEST_F(QmvAffineOpTest, PoisonedOutputSurvivesWithoutALaunch) {
  const TunableOp &op = qmv_op();
  std::unique_ptr<Workload> w = op.prepare(shape_of(4, {256, 512, 4, 64}));
  auto &qw = dynamic_cast<QmvAffineWorkload &>(*w);
  qw.randomize_inputs();
  qw.poison_output();
  const std::vector<uint16_t> y = qw.download_y();
  EXPECT_EQ(compare_bf16(y, qw.reference()).nan_count, y.size());
  for (uint16_t v : y)
    ASSERT_EQ(v, kBf16Poison);
}

TEST_F(QmvAffineOpTest, InputsAreRandomRealisticAndFreshPerCheck) {
  const TunableOp &op = qmv_op();
  for (int bits : {4, 8}) {
    const Shape shape = shape_of(2, {128, 1024, bits, 32});
    std::unique_ptr<Workload> w = op.prepare(shape);
    auto &qw = dynamic_cast<QmvAffineWorkload &>(*w);
    EXPECT_EQ(w->bytes_per_launch(),
              size_t{128} * 1024 * bits / 8 + 2 * 2 * 128 * (1024 / 32) + 2 * (2 * 1024 + 2 * 128));
    EXPECT_EQ(qw.weight_bytes(), size_t{128} * 1024 * bits / 8 + 2 * 2 * 128 * (1024 / 32));
    qw.set_rotation(2);
    const std::vector<uint32_t> q0 = qw.download_q(0);
    EXPECT_NE(q0, qw.download_q(1)) << "rotation copies must be independent";
    EXPECT_NE(qw.download_scales(0), qw.download_scales(1));
    EXPECT_NE(qw.download_biases(0), qw.download_biases(1));
    EXPECT_NE(qw.download_x(0), qw.download_x(1));
    // Every bit of the packed words varies.
    uint32_t ones = 0, zeros = 0;
    for (uint32_t word : q0) {
      ones |= word;
      zeros |= ~word;
    }
    EXPECT_EQ(ones, 0xffffffffu);
    EXPECT_EQ(zeros, 0xffffffffu);
    // Scales span a weight range of 0.015..0.3 per group; biases centre it near zero.
    const std::vector<uint16_t> scales = qw.download_scales(0);
    const std::vector<uint16_t> biases = qw.download_biases(0);
    const double q_max = (1 << bits) - 1;
    for (size_t i = 0; i < scales.size(); ++i) {
      const double range = bf16_to_float(scales[i]) * q_max;
      ASSERT_GT(range, 0.014) << i;
      ASSERT_LT(range, 0.31) << i;
      const double bias = bf16_to_float(biases[i]);
      ASSERT_LT(bias, -0.39 * range) << i;
      ASSERT_GT(bias, -0.61 * range) << i;
    }
    ASSERT_TRUE(
        w->check(op.default_tactic(op.buckets().map(shape).value()), Numerics::tolerance).pass());
    EXPECT_NE(qw.download_q(0), q0) << "check() draws fresh inputs";
  }
}

TEST_F(QmvAffineOpTest, SpillingConfigsAreRejectedWithResources) {
  const TunableOp &op = qmv_op();
  for (int bits : {4, 8}) {
    std::unique_ptr<Workload> w = op.prepare(shape_of(8, {4096, 4096, bits, 64}));
    int spilling = 0;
    for (const QmvAffineConfig &c : qmv_affine_configs(bits)) {
      const KernelResources res = qmv_affine_resources(c, bits);
      EXPECT_GT(res.registers, 0) << c.to_tactic().str();
      spilling += expect_spill_rule(*w, c.to_tactic(), res) ? 1 : 0;
    }
    std::printf("bits=%d: %zu configs compiled, %d spill\n", bits, qmv_affine_configs(bits).size(),
                spilling);
  }
}

TEST_F(QmvAffineOpTest, ForeignTacticCannotRun) {
  const TunableOp &op = qmv_op();
  std::unique_ptr<Workload> w = op.prepare(shape_of(1, {256, 256, 4, 64}));
  std::string reason;
  EXPECT_EQ(w->can_run(Tactic{"gemv.bf16.mma", {{"rows_per_cta", 8}}}, &reason),
            Status::cannot_implement);
  EXPECT_FALSE(reason.empty());
  // A well-formed qmv.affine tactic that no kernel was compiled for.
  QmvAffineConfig odd;
  odd.rows_per_cta = 8;
  odd.warps = 3;
  odd.warps_k = 3;
  reason.clear();
  EXPECT_EQ(w->can_run(odd.to_tactic(), &reason), Status::cannot_implement);
  EXPECT_NE(reason.find("not a compiled"), std::string::npos) << reason;
}

// --- device: batch invariance -----------------------------------------------------------------

// The dispatcher serves the bucket's default; every row of its output must equal the rows=1
// default's result bit for bit, at every row count.
TEST_F(QmvAffineOpTest, DefaultIsBatchInvariantForRows1To32) {
  const TunableOp &op = qmv_op();
  const std::vector<Format> formats = reduced_shapes() ? std::vector<Format>{{512, 1024, 4, 64}}
                                                       : std::vector<Format>{{4096, 4096, 4, 64},
                                                                             {1536, 8960, 8, 128},
                                                                             {1000, 1056, 4, 32},
                                                                             {14336, 4096, 8, 64}};
  for (const Format &f : formats) {
    for (int rows = 1; rows <= 32; ++rows)
      expect_defaults_batch_invariant(
          op, shape_of(rows, f), qmv_affine_default(rows, f.n, f.k, f.bits, f.group).to_tactic());
  }
}

// A config with another K order (other K slicing, or another path: the stream kernels) is
// gated out of batch-invariant mode by its order alone, whatever one random input shows; it
// stays admissible in tolerance mode. Configs sharing the default's path and k_slices must
// pass the bitwise comparison.
TEST_F(QmvAffineOpTest, OtherSummationOrderIsGatedInBatchInvariantMode) {
  const TunableOp &op = qmv_op();
  for (int bits : {4, 8}) {
    const Format f{1152, 2048, bits, 64};
    const Shape shape = shape_of(2, f);
    std::unique_ptr<Workload> w = op.prepare(shape);
    const QmvAffineConfig single = qmv_affine_default(1, f.n, f.k, f.bits, f.group);
    int other_order = 0, same_order = 0;
    for (const Tactic &t : op.candidates(op.buckets().map(shape).value())) {
      if (std::string why; w->can_run(t, &why) != Status::ok)
        continue;
      const QmvAffineConfig c = QmvAffineConfig::from_tactic(t);
      const CheckResult r = w->check(t, Numerics::batch_invariant);
      // The ring path computes the mma path's order: the same order where k_slices match.
      const KernelPath family = c.path == KernelPath::ring ? KernelPath::mma : c.path;
      if (family == single.path && qmv_affine_k_slices(c) == qmv_affine_k_slices(single)) {
        ++same_order;
        EXPECT_TRUE(r.pass()) << t.str() << ": " << r.reason;
        continue;
      }
      ++other_order;
      EXPECT_EQ(r.status, Status::gate_failed) << t.str();
      EXPECT_NE(r.reason.find("summation order"), std::string::npos) << r.reason;
      EXPECT_TRUE(w->check(t, Numerics::tolerance).pass()) << t.str();
    }
    EXPECT_GT(other_order, 0) << "bits=" << bits;
    EXPECT_GT(same_order, 0) << "bits=" << bits;
  }
}

// --- device: dequantisation and the cublas.dequant peer -----------------------------------------

TEST_F(QmvAffineOpTest, DeviceDequantizationMatchesTheHostBitForBit) {
  const TunableOp &op = qmv_op();
  for (const Format &f : {Format{1000, 1152, 4, 32}, Format{333, 1024, 8, 128},
                          Format{64, 4096, 4, 128}, Format{64, 256, 8, 64}}) {
    std::unique_ptr<Workload> w = op.prepare(shape_of(1, f));
    auto &qw = dynamic_cast<QmvAffineWorkload &>(*w);
    DeviceBuffer wd(static_cast<size_t>(f.n) * f.k * sizeof(uint16_t));
    HONE_CUDA_CHECK(cudaMemsetAsync(wd.data(), 0xff, wd.size(), qw.stream()));
    affine_dequantize_bf16(qw.q(0), qw.scales(0), qw.biases(0), wd.data(), f.n, f.k, f.bits,
                           f.group, qw.stream());
    std::vector<uint16_t> got(static_cast<size_t>(f.n) * f.k);
    HONE_CUDA_CHECK(
        cudaMemcpyAsync(got.data(), wd.data(), wd.size(), cudaMemcpyDeviceToHost, qw.stream()));
    HONE_CUDA_CHECK(cudaStreamSynchronize(qw.stream()));
    const std::vector<uint32_t> q = qw.download_q(0);
    const std::vector<uint16_t> scales = qw.download_scales(0);
    const std::vector<uint16_t> biases = qw.download_biases(0);
    const int per_word = 32 / f.bits;
    const uint32_t mask = (1u << f.bits) - 1u;
    size_t mismatches = 0;
    for (int j = 0; j < f.n; ++j)
      for (int i = 0; i < f.k; ++i) {
        const size_t flat = static_cast<size_t>(j) * f.k + i;
        const size_t g = static_cast<size_t>(j) * (f.k / f.group) + i / f.group;
        const auto v = static_cast<float>((q[flat / per_word] >> ((i % per_word) * f.bits)) & mask);
        const uint16_t expected =
            bf16(std::fma(v, bf16_to_float(scales[g]), bf16_to_float(biases[g])));
        mismatches += got[flat] != expected ? 1 : 0;
      }
    EXPECT_EQ(mismatches, 0u) << describe(f);
  }
  EXPECT_THROW(affine_dequantize_bf16(nullptr, nullptr, nullptr, nullptr, 4, 100, 4, 32, nullptr),
               Error);
}

TEST(QmvAffinePeerRegistryTest, PeerIsFindableThroughTheRegistry) {
  const TunableOp &op = qmv_op();
  EXPECT_NE(Registry::global().find_peer(op, "cublas.dequant"), nullptr);
  EXPECT_EQ(Registry::global().find_peer(op, "cublas"), nullptr)
      << "bf16 cuBLAS on dequantised weights is a representation change, never 'cublas'";
  const std::vector<std::string> peers = Registry::global().peers(op);
  EXPECT_NE(std::find(peers.begin(), peers.end(), "cublas.dequant"), peers.end());
}

TEST(QmvAffinePeerRegistryTest, RejectsAWorkloadOfAnotherOp) {
  ForeignWorkload foreign;
  try {
    make_cublas_dequant_affine_linear_peer(foreign);
    FAIL() << "expected invalid_argument";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
  }
}

TEST_F(QmvAffineOpTest, CublasDequantPeerMatchesTheReferenceOnEveryRotationCopy) {
  const TunableOp &op = qmv_op();
  const PeerFactory &factory = *Registry::global().find_peer(op, "cublas.dequant");
  const std::vector<Format> formats =
      reduced_shapes()
          ? std::vector<Format>{{512, 1024, 4, 64}}
          : std::vector<Format>{{4096, 4096, 4, 64}, {1000, 1152, 8, 32}, {1536, 8960, 4, 128}};
  for (const Format &f : formats)
    for (int rows : {1, 3, 8, 32}) {
      std::unique_ptr<Workload> w = op.prepare(shape_of(rows, f));
      auto &qw = dynamic_cast<QmvAffineWorkload &>(*w);
      qw.set_rotation(2);
      std::unique_ptr<Peer> peer = factory(*w);
      EXPECT_EQ(peer->name(), "cublas.dequant");
      for (int copy : {0, 1}) {
        qw.poison_output();
        peer->run(copy);
        HONE_CUDA_CHECK(cudaStreamSynchronize(qw.stream()));
        const Bf16Comparison cmp = compare_bf16(qw.download_y(), qw.reference(copy));
        EXPECT_EQ(cmp.nan_count, 0u) << describe(f) << " rows=" << rows;
        EXPECT_LE(cmp.relative_l2, kQmvAffineRelativeL2Bound)
            << describe(f) << " rows=" << rows << " copy=" << copy;
      }
      EXPECT_THROW(peer->run(2), Error) << "copy 2 was never dequantised";
    }
}

// The gate/up linear with SiLU x up in its epilogue (ops::cuda::qmv_affine_silu_mul) gives the
// bits of qmv_affine on the [gate; up] weights followed by silu_mul, for every config that has
// the epilogue (4 bits, the mma path's register pipeline at rows_per_cta 8), in each of the three
// dequantisation forms (per weight at g32, one group per chunk at g128, two at g64), into a
// poisoned output; every other config, and 8 bits, launches nothing and says so.
TEST_F(QmvAffineOpTest, SiluEpilogueGivesTheLinearThenSiluMulBitForBit) {
  const std::vector<Format> formats = {
      {2 * 264, 1024, 4, 64}, {2 * 40, 1024, 4, 128}, {2 * 264, 1152, 4, 32}, {2 * 40, 256, 8, 64}};
  int fused = 0;
  for (const Format &f : formats)
    for (int rows : {1, 5, 8}) {
      const int inter = f.n / 2;
      std::unique_ptr<Workload> w = qmv_op().prepare(shape_of(rows, f));
      auto &qw = dynamic_cast<QmvAffineWorkload &>(*w);
      qw.randomize_inputs();
      HONE_CUDA_CHECK(cudaStreamSynchronize(qw.stream()));
      const size_t out = static_cast<size_t>(rows) * inter;
      for (const QmvAffineConfig &config : qmv_affine_configs(f.bits)) {
        if (!qmv_affine_can_implement(config, rows, f.n, f.k, f.bits, f.group, nullptr))
          continue;
        const std::string where =
            config.to_tactic().str() + " " + describe(f) + " rows=" + std::to_string(rows);
        DispatcherOptions options;
        options.use_cache = false;
        options.settings.use_cache = false;
        // The fused launch resolves its own op (qmv.affine.silu_mul); the separate linear below
        // runs the same config through qmv.affine.
        options.settings.tactics[tactic_env_name("cuda", "qmv.affine.silu_mul")] =
            config.to_tactic().str();
        options.settings.tactics[tactic_env_name("cuda", "qmv.affine")] = config.to_tactic().str();
        Dispatcher d(backend(), options);
        DeviceBuffer y = testing::poisoned(out * 2);
        const bool ran =
            ops::cuda::qmv_affine_silu_mul(qw.x(0), qw.q(0), qw.scales(0), qw.biases(0), y.data(),
                                           rows, inter, f.k, f.bits, f.group, nullptr, d);
        const std::vector<uint16_t> got = testing::download_bf16(y, out);
        // The register pipeline's 8-row kernels have the epilogue; the shallow ones do not.
        const bool has = f.bits == 4 && config.path == KernelPath::mma && !config.async &&
                         config.rows_per_cta == 8 && config.shallow == 0;
        if (!has) {
          EXPECT_FALSE(ran) << where;
          EXPECT_EQ(static_cast<size_t>(std::count(got.begin(), got.end(), kBf16Poison)), out)
              << where;
          continue;
        }
        ASSERT_TRUE(ran) << where;
        DeviceBuffer gate_up = testing::poisoned(static_cast<size_t>(rows) * f.n * 2);
        ops::cuda::qmv_affine(qw.x(0), qw.q(0), qw.scales(0), qw.biases(0), gate_up.data(), rows,
                              f.n, f.k, f.bits, f.group, nullptr, d);
        const std::vector<uint16_t> want = testing::separate_silu_mul(gate_up.data(), rows, inter);
        EXPECT_EQ(std::count(want.begin(), want.end(), kBf16Poison), 0) << where;
        EXPECT_EQ(got, want) << where;
        ++fused;
      }
    }
  EXPECT_GT(fused, 0);
  std::printf("%d fused config x shape cells checked\n", fused);
}

// qmv.affine.silu_mul's workload gates the fused launch: every candidate against the float64
// SiLU x up of the linear in tolerance mode, and the default and its order bitwise per row in
// batch-invariant mode; a config without the epilogue cannot run, and the gate fails on the
// wrong weights (another copy's reference).
TEST_F(QmvAffineOpTest, SiluMulOpGatesTheFusedLaunch) {
  const QmvAffineSiluMulOp op;
  int checked = 0;
  for (const auto &[inter, k, group] :
       std::vector<std::tuple<int, int, int>>{{264, 1024, 64}, {40, 1024, 128}, {264, 1152, 32}})
    for (int rows : {1, 5, 8}) {
      const Shape shape{{rows, inter, k, 4, group}, DType::bf16};
      const std::string where = "inter=" + std::to_string(inter) + ",k=" + std::to_string(k) +
                                ",group=" + std::to_string(group) + " rows=" + std::to_string(rows);
      std::unique_ptr<Workload> w = op.prepare(shape);
      const Tactic def = op.default_tactic(shape);
      EXPECT_TRUE(w->check(def, Numerics::batch_invariant).pass()) << where;
      for (const Tactic &t : op.candidates(shape)) {
        const CheckResult r = w->check(t, Numerics::tolerance);
        if (r.status == Status::rejected) // a spilling epilogue kernel is never launched
          continue;
        EXPECT_TRUE(r.pass()) << t.str() << " " << where << ": " << r.reason;
        ++checked;
      }
      const Tactic async = Tactic::parse(
          "qmv.affine.mma:rows_per_cta=8,warps=8,warps_k=8,outputs_per_warp=16,split_k=1,async=1");
      if (std::string why; qmv_affine_can_implement(QmvAffineConfig::from_tactic(async), rows,
                                                    2 * inter, k, 4, group, &why)) {
        const CheckResult r = w->check(async, Numerics::tolerance);
        EXPECT_EQ(r.status, Status::cannot_implement) << where;
        EXPECT_NE(r.reason.find("no SiLU x up epilogue"), std::string::npos) << r.reason;
      }
    }
  EXPECT_GT(checked, 0);
  // The gate can fail: the default's output against another rotation copy's reference.
  const Shape shape{{4, 264, 1024, 4, 64}, DType::bf16};
  std::unique_ptr<Workload> w = op.prepare(shape);
  auto &qw = dynamic_cast<QmvAffineWorkload &>(*w);
  w->set_rotation(2);
  ASSERT_TRUE(w->check(op.default_tactic(shape), Numerics::tolerance).pass());
  const std::vector<uint16_t> y = qw.download_y();
  const Bf16Comparison right = compare_bf16(y, qw.reference(0));
  const Bf16Comparison wrong = compare_bf16(y, qw.reference(1));
  EXPECT_LE(right.relative_l2, kQmvAffineRelativeL2Bound);
  EXPECT_GT(wrong.relative_l2, 0.5);
}

// --- device: the public entry point -------------------------------------------------------------

TEST_F(QmvAffineOpTest, PublicEntryPointMatchesTheReferenceAndTheDefault) {
  unsetenv("HONE_TACTIC_QMV_AFFINE");
  DispatcherOptions options;
  options.use_cache = false; // the default tactic, whatever the machine's cache holds
  Dispatcher d(backend(), options);
  const TunableOp &op = qmv_op();
  for (const Format &f : {Format{1000, 1152, 4, 64}, Format{4096, 4096, 8, 128}})
    for (int rows : {1, 5, 32}) {
      const Shape shape = shape_of(rows, f);
      std::unique_ptr<Workload> w = op.prepare(shape);
      auto &qw = dynamic_cast<QmvAffineWorkload &>(*w);
      DeviceBuffer y(static_cast<size_t>(rows) * f.n * sizeof(uint16_t));
      HONE_CUDA_CHECK(cudaMemsetAsync(y.data(), 0xff, y.size(), qw.stream()));
      ops::cuda::qmv_affine(qw.x(0), qw.q(0), qw.scales(0), qw.biases(0), y.data(), rows, f.n, f.k,
                            f.bits, f.group, qw.stream(), d);
      std::vector<uint16_t> got(static_cast<size_t>(rows) * f.n);
      HONE_CUDA_CHECK(
          cudaMemcpyAsync(got.data(), y.data(), y.size(), cudaMemcpyDeviceToHost, qw.stream()));
      HONE_CUDA_CHECK(cudaStreamSynchronize(qw.stream()));
      const Bf16Comparison cmp = compare_bf16(got, qw.reference(0));
      EXPECT_EQ(cmp.nan_count, 0u) << describe(f) << " rows=" << rows;
      EXPECT_LE(cmp.relative_l2, kQmvAffineRelativeL2Bound) << describe(f) << " rows=" << rows;
      // The dispatcher served the bucket's default: bit-identical to running it directly.
      qw.poison_output();
      qw.run(op.default_tactic(op.buckets().map(shape).value()), 0);
      EXPECT_EQ(qw.download_y(), got) << describe(f) << " rows=" << rows;
    }
}

TEST_F(QmvAffineOpTest, PublicEntryPointRejectsBadInputNamingTheValue) {
  DispatcherOptions options;
  options.use_cache = false;
  Dispatcher d(backend(), options);
  DeviceBuffer x(4096), q(4096), s(4096), b(4096), y(4096);
  const auto call = [&](const void *xp, int64_t rows, int64_t k, int bits, int group) {
    ops::cuda::qmv_affine(xp, q.as<const uint32_t>(), s.data(), b.data(), y.data(), rows, 16, k,
                          bits, group, nullptr, d);
  };
  const auto expect_invalid_call = [&](const std::string &needle, const auto &fn) {
    try {
      fn();
      ADD_FAILURE() << "expected invalid_argument naming " << needle;
    } catch (const Error &e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_invalid_call("bits=3", [&] { call(x.data(), 1, 64, 3, 32); });
  expect_invalid_call("group=48", [&] { call(x.data(), 1, 96, 4, 48); });
  expect_invalid_call("k=96", [&] { call(x.data(), 1, 96, 4, 64); });
  expect_invalid_call("rows=40", [&] { call(x.data(), 40, 64, 4, 32); });
  expect_invalid_call("16-byte aligned", [&] { call(x.as<char>() + 2, 1, 64, 4, 32); });
  HONE_CUDA_CHECK(cudaDeviceSynchronize());
}

// --- device: the tuner end to end
// -----------------------------------------------------------------

class QmvAffineTuneEndToEndTest : public CacheDirTest {
protected:
  QmvAffineTuneEndToEndTest() : CacheDirTest("hone-qmv-device-test-", "HONE_TACTIC_QMV_AFFINE") {}
};

TEST_F(QmvAffineTuneEndToEndTest, TunedPickIsServedFromTheCache) {
  Backend &be = backend();
  const TunableOp &op = qmv_op();
  // rows=12 lies in the rows=16 bucket: the tune covers the bucket, the lookup the shape.
  const Shape shape = shape_of(12, {4096, 4096, 4, 64});
  const Shape bucket = op.buckets().map(shape).value();
  EXPECT_EQ(bucket[0], 16);

  const TuneReport report = tune_and_check(be, op, bucket);
  // Batch-invariant mode keeps every candidate of another K order out.
  const QmvAffineConfig single = qmv_affine_default(1, 4096, 4096, 4, 64);
  for (const CandidateReport &c : report.result.candidates) {
    if (qmv_affine_k_slices(QmvAffineConfig::from_tactic(c.tactic)) !=
        qmv_affine_k_slices(single)) {
      EXPECT_NE(c.status, Status::ok) << c.tactic.str();
    }
  }
  expect_served_from_cache(be, op, shape, report, dir_);
}

} // namespace
} // namespace hone::cuda
