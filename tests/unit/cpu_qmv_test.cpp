#include "cpu/qmv_affine.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "cpu/bf16.h"
#include "cpu/check_util.h"
#include "cpu/cpu_backend.h"
#include "cpu/qmv_affine_op.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/ops/cpu.h"

namespace hone::cpu {
namespace {

using ops::cpu::AffineQuantized;
using ops::cpu::dequantize_affine;
using ops::cpu::quantize_affine;

std::vector<double> reference(const std::vector<float> &x, const std::vector<float> &w,
                              int64_t rows, int64_t n, int64_t k) {
  std::vector<double> y(static_cast<size_t>(rows * n));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < n; ++c) {
      double s = 0;
      for (int64_t j = 0; j < k; ++j)
        s += double(x[static_cast<size_t>(r * k + j)]) * double(w[static_cast<size_t>(c * k + j)]);
      y[static_cast<size_t>(r * n + c)] = s;
    }
  return y;
}

TEST(Bf16, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
  // 1 + 2^-8 lies halfway between 1 and 1 + 2^-7: ties to the even pattern (1.0).
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f), 0x3f80);
  // 1 + 3 x 2^-8 lies halfway between 1 + 2^-7 and 1 + 2^-6: ties to even (1 + 2^-6).
  EXPECT_EQ(float_to_bf16(1.0f + 3 * 0x1p-8f), 0x3f82);
  EXPECT_EQ(float_to_bf16(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81); // above half: up
  EXPECT_EQ(float_to_bf16(-2.0f), 0xc000);
  EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(std::nanf("")))));
  EXPECT_EQ(float_to_bf16(INFINITY), 0x7f80);
}

TEST(AffineQuant, PacksLowestBitsFirst) {
  // One group of 32 holding 0..15 twice: min 0, max 15, so scale 1, bias 0 and q = w.
  std::vector<float> w(32);
  for (int i = 0; i < 32; ++i)
    w[static_cast<size_t>(i)] = static_cast<float>(i % 16);
  const AffineQuantized q4 = quantize_affine(w.data(), 1, 32, 4, 32);
  ASSERT_EQ(q4.packed.size(), 4u);
  EXPECT_EQ(q4.packed[0], 0x76543210u);
  EXPECT_EQ(q4.packed[1], 0xfedcba98u);
  EXPECT_EQ(bf16_to_float(q4.scales[0]), 1.0f);
  EXPECT_EQ(bf16_to_float(q4.biases[0]), 0.0f);
  const AffineQuantized q8 = quantize_affine(w.data(), 1, 32, 8, 32);
  ASSERT_EQ(q8.packed.size(), 8u);
  EXPECT_EQ(q8.packed[0], 0x33221100u); // scale 15 / 255: q = 17 w
  EXPECT_EQ(dequantize_affine(q4, 1, 32, 4, 32), w);
}

// |w - dequant(quant(w))| <= half a quantization step, plus what rounding scale and bias to
// bf16 (relative 2^-9 each) can add when the top or bottom value is clamped.
TEST(AffineQuant, RoundTripErrorWithinHalfStep) {
  const int64_t n = 16, k = 384;
  std::vector<float> w(static_cast<size_t>(n * k));
  fill_uniform(w, 42, -1.0f, 1.0f);
  for (int bits : {4, 8})
    for (int group : {32, 64, 128}) {
      const AffineQuantized q = quantize_affine(w.data(), n, k, bits, group);
      ASSERT_EQ(q.packed.size(), size_t(n * k * bits / 32));
      ASSERT_EQ(q.scales.size(), size_t(n * k / group));
      const std::vector<float> back = dequantize_affine(q, n, k, bits, group);
      double worst = 0;
      for (int64_t row = 0; row < n; ++row)
        for (int64_t g = 0; g < k / group; ++g) {
          const float *v = w.data() + row * k + g * group;
          const auto [lo, hi] = std::minmax_element(v, v + group);
          const double step = bf16_to_float(q.scales[size_t(row * (k / group) + g)]);
          const double bound = 0.5 * step + 0x1p-8 * (std::abs(*lo) + (*hi - *lo)) + 1e-7;
          for (int i = 0; i < group; ++i) {
            const double err = std::abs(double(v[i]) - back[size_t(row * k + g * group + i)]);
            ASSERT_LE(err, bound) << "bits=" << bits << " group=" << group;
            worst = std::max(worst, err);
          }
        }
      // Values span [-1, 1]: half a step is 1/15 for int4 and 1/255 for int8.
      EXPECT_LT(worst, bits == 4 ? 0.08 : 0.012) << "bits=" << bits << " group=" << group;
      EXPECT_GT(worst, bits == 4 ? 0.03 : 0.001) << "bits=" << bits << " group=" << group;
    }
}

// A constant group has scale 0: every q is 0 and dequantises to the bf16 bias (exactly the
// value when it is representable), never a division by zero.
TEST(AffineQuant, ConstantGroupHasZeroScale) {
  for (float value : {0.375f, -0.3f}) {
    std::vector<float> w(64, value);
    const AffineQuantized q = quantize_affine(w.data(), 1, 64, 4, 32);
    EXPECT_EQ(bf16_to_float(q.scales[0]), 0.0f);
    for (uint32_t word : q.packed)
      EXPECT_EQ(word, 0u) << value;
    for (float back : dequantize_affine(q, 1, 64, 4, 32))
      EXPECT_EQ(back, bf16_to_float(float_to_bf16(value)));
  }
}

TEST(AffineQuant, RejectsBadParameters) {
  std::vector<float> w(256);
  EXPECT_THROW(quantize_affine(w.data(), 1, 100, 4, 64), Error);
  EXPECT_THROW(quantize_affine(w.data(), 1, 128, 3, 64), Error);
  EXPECT_THROW(quantize_affine(w.data(), 1, 128, 4, 48), Error);
}

TEST(QmvAffineOp, ValidateNamesKAndGroup) {
  QmvAffineOp op;
  EXPECT_NO_THROW(op.validate(Shape{{1, 8, 128, 4, 64}, DType::f32}));
  try {
    op.validate(Shape{{1, 8, 100, 4, 64}, DType::f32});
    FAIL() << "k=100 with group=64 accepted";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    const std::string what = e.what();
    EXPECT_NE(what.find("k=100"), std::string::npos) << what;
    EXPECT_NE(what.find("group=64"), std::string::npos) << what;
  }
  for (const Shape &bad :
       {Shape{{1, 8, 128, 3, 64}, DType::f32}, Shape{{1, 8, 128, 4, 48}, DType::f32},
        Shape{{0, 8, 128, 4, 64}, DType::f32}, Shape{{1, 8, 128}, DType::f32}})
    EXPECT_THROW(op.validate(bad), Error);
  try {
    op.validate(Shape{{1, 8, 128, 3, 64}, DType::f32});
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("bits=3"), std::string::npos) << e.what();
  }
}

// Every blocking, dequantisation strategy and thread count, both widths, against the float64
// reference on the dequantised weights; n is no multiple of any block, and k = 384 leaves a
// partial dequantisation chunk. Output starts as NaN.
TEST(QmvAffineKernel, EveryConfigMatchesReferenceOnLeftoverShapes) {
  const int64_t n = 37, k = 384;
  for (int bits : {4, 8})
    for (int group : {32, 128}) {
      std::vector<float> w(static_cast<size_t>(n * k));
      fill_uniform(w, 3 + bits + group);
      const AffineQuantized q = quantize_affine(w.data(), n, k, bits, group);
      const std::vector<float> wd = dequantize_affine(q, n, k, bits, group);
      for (int64_t rows : {1, 3, 8, 17, 32}) {
        std::vector<float> x(static_cast<size_t>(rows * k)), y(static_cast<size_t>(rows * n));
        fill_uniform(x, 5 + rows);
        const std::vector<double> ref = reference(x, wd, rows, n, k);
        for (int rb : {1, 2, 4, 8})
          for (int cb : {1, 2, 4})
            for (int buffer : {0, 1})
              for (int threads : {1, 3}) {
                const QmvConfig c{rb, cb, buffer, threads};
                poison(y);
                qmv_affine_kernel(c, {x.data(), q.packed.data(), q.scales.data(), q.biases.data(),
                                      y.data(), rows, n, k, bits, group});
                const CheckResult r = compare_tolerance(y, ref, f32_dot_bound(k));
                ASSERT_TRUE(r.pass()) << c.tactic().str() << " rows=" << rows << " bits=" << bits
                                      << " group=" << group << ": " << r.reason;
              }
      }
    }
}

TEST(QmvAffineOp, EveryCandidatePassesBothGates) {
  QmvAffineOp op;
  for (int64_t rows : {1, 3, 8, 17, 32})
    for (int bits : {4, 8}) {
      const Shape shape{{rows, 21, 320, bits, 64}, DType::f32};
      const std::optional<Shape> bucket = op.buckets().map(shape);
      ASSERT_TRUE(bucket);
      auto w = op.prepare(shape);
      const std::vector<Tactic> cands = op.candidates(*bucket);
      EXPECT_LE(cands.size(), 16u);
      EXPECT_EQ(cands.front(), op.default_tactic(*bucket));
      std::set<std::string> distinct;
      for (const Tactic &t : cands) {
        distinct.insert(t.str());
        EXPECT_LE(t.param("rows_per_block"), std::max<int64_t>((*bucket)[0], 1));
        const CheckResult tol = w->check(t, Numerics::tolerance);
        EXPECT_TRUE(tol.pass()) << t.str() << " rows=" << rows << ": " << tol.reason;
        // Every qmv.affine tactic keeps the default's summation order.
        const CheckResult inv = w->check(t, Numerics::batch_invariant);
        EXPECT_TRUE(inv.pass()) << t.str() << " rows=" << rows << ": " << inv.reason;
        EXPECT_EQ(inv.error, 0);
      }
      EXPECT_EQ(distinct.size(), cands.size());
    }
}

TEST(QmvAffineOp, WorkloadReportsBytesAndRotates) {
  QmvAffineOp op;
  const Shape shape{{2, 10, 256, 4, 64}, DType::f32};
  auto w = op.prepare(shape);
  // packed + bf16 scales and biases + x + y
  EXPECT_EQ(w->bytes_per_launch(), size_t(10 * 256 / 2 + 2 * 10 * 4 * 2 + (2 * 256 + 2 * 10) * 4));
  w->set_rotation(4);
  EXPECT_EQ(w->rotation(), 4);
  for (int copy = 0; copy < 4; ++copy)
    w->run(op.default_tactic(shape), copy);
  std::string reason;
  EXPECT_EQ(w->can_run(Tactic::parse("qmv.affine:cols_per_block=8"), &reason),
            Status::cannot_implement);
  EXPECT_NE(reason.find("cols_per_block=8"), std::string::npos);
}

TEST(QmvAffineEntry, RunsTheDispatchedTacticOnCallerBuffers) {
  DispatcherOptions options;
  options.use_cache = false;
  Dispatcher d(backend(), options);
  const int64_t rows = 5, n = 19, k = 256;
  std::vector<float> w(n * k), x(rows * k), y(rows * n);
  fill_uniform(w, 11);
  fill_uniform(x, 12);
  const AffineQuantized q = quantize_affine(w.data(), n, k, 8, 128);
  poison(y);
  ops::cpu::qmv_affine(x.data(), q.packed.data(), q.scales.data(), q.biases.data(), y.data(), rows,
                       n, k, 8, 128, d);
  const std::vector<double> ref = reference(x, dequantize_affine(q, n, k, 8, 128), rows, n, k);
  EXPECT_TRUE(compare_tolerance(y, ref, f32_dot_bound(k)).pass());
  EXPECT_THROW(ops::cpu::qmv_affine(x.data(), q.packed.data(), q.scales.data(), q.biases.data(),
                                    y.data(), rows, n, 200, 8, 128, d),
               Error);
}

} // namespace
} // namespace hone::cpu
