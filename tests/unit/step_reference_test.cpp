// The float64 reference of a decode step (src/model/step_reference) and the bound a bf16 step
// is held to against it (step_reference_bound): on the small Llama-like and Qwen2-like models of
// the device test, a step rounded to bf16 wherever DecodeStep's kernels round stays well inside
// the bound, while a step with a wrong rope position, swapped K and V, a wrong attention scale,
// a negated weight or a negated cache lands far outside it. The appended K and V (the new
// token's, per layer) are what catch a rope off by one position; the logits alone move by about
// the bound. A prefill step of M tokens per request is, row by row and exactly, M decode steps
// that each append one token (the causal mask), and its bf16 chain stays inside the same bound.
#include "model/step_reference.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <ostream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "hone/bf16.h"
#include "invalid_message.h"
#include "random_host_step.h"

namespace hone::model {
namespace {

using testing::llama_like;
using testing::qwen2_like;
using testing::random_host_step;

// The largest relative L2 error over the logits and every layer's appended K and V.
double worst_error(const StepReferenceOutput &got, const StepReferenceOutput &want) {
  double worst = output_error(got.logits, want.logits).rel_l2;
  worst = std::max(worst, output_error(got.hidden, want.hidden).rel_l2);
  for (size_t i = 0; i < want.appended_k.size(); ++i) {
    worst = std::max(worst, output_error(got.appended_k[i], want.appended_k[i]).rel_l2);
    worst = std::max(worst, output_error(got.appended_v[i], want.appended_v[i]).rel_l2);
  }
  return worst;
}

// One output of the bf16 chain against float64: inside half the bound, yet rounded (above a
// tenth of it), and no element further than the bound times the largest |value|.
void expect_rounded_inside_bound(const char *name, const std::vector<double> &got,
                                 const std::vector<double> &want, double bound) {
  const OutputError e = output_error(got, want);
  EXPECT_LT(e.rel_l2, 0.5 * bound) << name;
  EXPECT_GT(e.rel_l2, 0.1 * bound) << name << ": the rounding model rounds nothing?";
  EXPECT_LT(e.max_abs, bound * e.want_max_abs) << name << " element " << e.worst;
}

struct Case {
  ModelSpec spec;
  int bits;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.spec.name << ", bits " << c.bits; }

class StepReferenceTest : public ::testing::TestWithParam<Case> {};

TEST_P(StepReferenceTest, Bf16RoundingStaysInsideTheBoundAndFaultsFallOutside) {
  const Case c = GetParam();
  const ModelSpec &m = c.spec;
  const HostStep step = random_host_step(m, 2, 100, c.bits, 64, 7);
  const StepReferenceOutput exact = reference_decode_step(step);
  const double bound = step_reference_bound(m.layers);
  ASSERT_GT(bound, 0.01);
  ASSERT_LT(bound, 0.03);

  // The bf16 chain: about a third of the bound (docs/notes/decode_step.md).
  const StepReferenceOutput rounded = reference_decode_step(step, {.bf16_rounding = true});
  for (const auto &[name, got, want] :
       {std::tuple{"hidden", &rounded.hidden, &exact.hidden},
        std::tuple{"logits", &rounded.logits, &exact.logits},
        std::tuple{"appended_k[last]", &rounded.appended_k.back(), &exact.appended_k.back()}})
    expect_rounded_inside_bound(name, *got, *want, bound);

  const auto fault = [&](const std::string &what, auto &&change) {
    HostStep broken = step;
    change(broken);
    const double e = worst_error(reference_decode_step(broken), exact);
    EXPECT_GT(e, 3 * bound) << what;
  };
  fault("rope one position on", [](HostStep &s) {
    for (int32_t &p : s.inputs.positions)
      p += 1;
  });
  fault("rope at position 0", [](HostStep &s) {
    for (int32_t &p : s.inputs.positions)
      p = 0;
  });
  fault("K and V caches swapped", [](HostStep &s) {
    for (HostLayer &l : s.layers)
      std::swap(l.k_cache, l.v_cache);
  });
  fault("the last layer's V cache negated", [](HostStep &s) {
    for (uint16_t &v : s.layers.back().v_cache)
      v ^= 0x8000;
  });
  fault("the first layer's norms swapped",
        [](HostStep &s) { std::swap(s.layers[0].norm1, s.layers[0].norm2); });
  if (c.bits == 16) {
    const int64_t q_rows = m.hq * m.head_dim, kv_rows = m.hkv * m.head_dim;
    fault("k and v projections swapped", [&](HostStep &s) {
      for (HostLayer &l : s.layers)
        std::swap_ranges(l.qkv.w.begin() + q_rows * m.hidden,
                         l.qkv.w.begin() + (q_rows + kv_rows) * m.hidden,
                         l.qkv.w.begin() + (q_rows + kv_rows) * m.hidden);
    });
    // q x 2 is the attention scale 2 / sqrt(head_dim): a scale off by a factor of two.
    fault("attention scale doubled", [&](HostStep &s) {
      for (HostLayer &l : s.layers)
        for (int64_t i = 0; i < q_rows * m.hidden; ++i)
          l.qkv.w[static_cast<size_t>(i)] += 0x0080; // exponent + 1
    });
    fault("the first layer's o projection negated", [](HostStep &s) {
      for (uint16_t &w : s.layers[0].o.w)
        w ^= 0x8000;
    });
  }
}

INSTANTIATE_TEST_SUITE_P(Models, StepReferenceTest,
                         ::testing::Values(Case{llama_like(), 16}, Case{qwen2_like(), 16},
                                           Case{llama_like(), 4}),
                         [](const ::testing::TestParamInfo<Case> &info) {
                           return (info.param.spec.family == "llama" ? std::string("llama")
                                                                     : std::string("qwen2")) +
                                  (info.param.bits == 16 ? "_bf16" : "_int4");
                         });

// got[got_first + i] == want[want_first + i] for i < count, exactly; else how many differ and
// the largest difference (its index, both values).
void expect_equal_run(const std::vector<double> &got, size_t got_first,
                      const std::vector<double> &want, size_t want_first, size_t count,
                      const std::string &what) {
  ASSERT_LE(got_first + count, got.size()) << what;
  ASSERT_LE(want_first + count, want.size()) << what;
  size_t differ = 0, worst = 0;
  double worst_diff = 0;
  for (size_t i = 0; i < count; ++i) {
    const double d = std::abs(got[got_first + i] - want[want_first + i]);
    if (!(d == 0) && differ++ == 0)
      worst = i;
    if (d > worst_diff) {
      worst_diff = d;
      worst = i;
    }
  }
  char worst_text[96];
  std::snprintf(worst_text, sizeof worst_text, "%.17g against %.17g", got[got_first + worst],
                want[want_first + worst]);
  EXPECT_EQ(differ, 0u) << what << ": " << differ << " of " << count
                        << " elements differ, the most at " << worst << " (" << worst_text << ")";
}

// `cache` [batch, tokens, width] with `token` [batch, width] appended to every request as bf16:
// [batch, tokens + 1, width]. REQUIRES: every value of `token` is a bf16 value (asserted).
std::vector<uint16_t> with_token(const std::vector<uint16_t> &cache,
                                 const std::vector<double> &token, int64_t batch, int64_t tokens,
                                 int64_t width) {
  std::vector<uint16_t> out;
  for (int64_t b = 0; b < batch; ++b) {
    out.insert(out.end(), cache.begin() + b * tokens * width,
               cache.begin() + (b + 1) * tokens * width);
    for (int64_t i = 0; i < width; ++i) {
      const double v = token[static_cast<size_t>(b * width + i)];
      const uint16_t bits = bf16_nearest(v);
      EXPECT_EQ(double(bf16_to_float(bits)), v) << "request " << b << ", element " << i;
      out.push_back(bits);
    }
  }
  return out;
}

struct PrefillCase {
  ModelSpec spec;
  int bits;
  int64_t context, new_tokens;
};

std::string describe(const PrefillCase &c) {
  return c.spec.name + ", bits " + std::to_string(c.bits) + ", context " +
         std::to_string(c.context) + ", prefill " + std::to_string(c.new_tokens);
}

// Token j of every request, run as a decode step at context C + j whose cache holds the C cached
// tokens and what the decodes of tokens 0 .. j - 1 appended, is row j of the prefill: the same
// K and V appended in every layer, and after the last token the same hidden state and logits.
// Exact in float64 with the reference's bf16 rounding on, where every appended K and V is a bf16
// value (the cache's type), and every sum runs in the same order.
TEST(StepReference, APrefillIsOneDecodeStepPerTokenRowByRow) {
  for (const PrefillCase &c :
       {PrefillCase{llama_like(), 16, 20, 5}, PrefillCase{qwen2_like(), 16, 0, 4},
        PrefillCase{llama_like(), 4, 3, 3}}) {
    SCOPED_TRACE(describe(c));
    const ModelSpec &m = c.spec;
    const int64_t B = 2, C = c.context, M = c.new_tokens, kv_width = m.hkv * m.head_dim;
    const StepReferenceOptions rounded{.bf16_rounding = true};
    const HostStep prefill = random_host_step(m, B, C, c.bits, 64, 13, M);
    const StepReferenceOutput want = reference_decode_step(prefill, rounded);
    ASSERT_EQ(want.appended_k.size(), size_t(m.layers));
    ASSERT_EQ(want.appended_k[0].size(), size_t(B * M * kv_width));
    ASSERT_EQ(want.hidden.size(), size_t(B * m.hidden));

    HostStep decode = prefill;
    decode.new_tokens = 1;
    StepReferenceOutput got;
    for (int64_t j = 0; j < M; ++j) {
      decode.context = C + j;
      decode.inputs.input.clear();
      decode.inputs.positions.clear();
      for (int64_t b = 0; b < B; ++b) {
        const auto row = prefill.inputs.input.begin() + (b * M + j) * m.hidden;
        decode.inputs.input.insert(decode.inputs.input.end(), row, row + m.hidden);
        decode.inputs.positions.push_back(int32_t(C + j));
      }
      got = reference_decode_step(decode, rounded);
      for (size_t l = 0; l < size_t(m.layers); ++l)
        for (int64_t b = 0; b < B; ++b) {
          const std::string at = "layer " + std::to_string(l) + ", request " + std::to_string(b) +
                                 ", token " + std::to_string(j);
          const auto first = size_t(b * kv_width), row = size_t((b * M + j) * kv_width);
          expect_equal_run(got.appended_k[l], first, want.appended_k[l], row, size_t(kv_width),
                           at + " appended K");
          expect_equal_run(got.appended_v[l], first, want.appended_v[l], row, size_t(kv_width),
                           at + " appended V");
        }
      for (size_t l = 0; l < size_t(m.layers); ++l) {
        HostLayer &layer = decode.layers[l];
        layer.k_cache = with_token(layer.k_cache, got.appended_k[l], B, C + j, kv_width);
        layer.v_cache = with_token(layer.v_cache, got.appended_v[l], B, C + j, kv_width);
      }
    }
    expect_equal_run(got.hidden, 0, want.hidden, 0, want.hidden.size(), "hidden");
    expect_equal_run(got.logits, 0, want.logits, 0, want.logits.size(), "logits");
  }
}

// The bound holds for prefill steps as for decode steps (every row rounds as often), and a rope
// one position on, the device test's deliberate fault, still lands outside it.
TEST(StepReference, APrefillsBf16ChainStaysInsideTheBound) {
  for (const PrefillCase &c :
       {PrefillCase{llama_like(), 16, 20, 5}, PrefillCase{qwen2_like(), 16, 20, 5},
        PrefillCase{llama_like(), 16, 0, 40}, PrefillCase{qwen2_like(), 4, 0, 40}}) {
    SCOPED_TRACE(describe(c));
    const HostStep step = random_host_step(c.spec, 2, c.context, c.bits, 64, 17, c.new_tokens);
    const StepReferenceOutput exact = reference_decode_step(step);
    const StepReferenceOutput rounded = reference_decode_step(step, {.bf16_rounding = true});
    const double bound = step_reference_bound(c.spec.layers);
    for (const auto &[name, got, want] :
         {std::tuple{"hidden", &rounded.hidden, &exact.hidden},
          std::tuple{"logits", &rounded.logits, &exact.logits},
          std::tuple{"appended_k[last]", &rounded.appended_k.back(), &exact.appended_k.back()},
          std::tuple{"appended_v[last]", &rounded.appended_v.back(), &exact.appended_v.back()}})
      expect_rounded_inside_bound(name, *got, *want, bound);
    HostStep broken = step;
    for (int32_t &p : broken.inputs.positions)
      p += 1;
    EXPECT_GT(worst_error(reference_decode_step(broken), exact), 3 * bound)
        << "rope one position on";
  }
}

TEST(StepReference, AtPositionZeroTheAppendedKIsTheProjection) {
  // rope at position 0 rotates by nothing: the appended K is the k rows of W_qkv x rmsnorm(x).
  ModelSpec m = llama_like();
  m.layers = 1;
  HostStep s = random_host_step(m, 1, 3, 16, 0, 11);
  s.inputs.positions = {0};
  const StepReferenceOutput out = reference_decode_step(s);
  const std::vector<double> x = bf16_values(s.inputs.input);
  double ms = 0;
  for (double v : x)
    ms += v * v / double(m.hidden);
  const double rstd = 1 / std::sqrt(ms + m.rms_eps);
  const int64_t q_rows = m.hq * m.head_dim;
  for (int64_t j = 0; j < m.hkv * m.head_dim; ++j) {
    double want = 0;
    for (int64_t i = 0; i < m.hidden; ++i)
      want += bf16_to_float(s.layers[0].qkv.w[static_cast<size_t>((q_rows + j) * m.hidden + i)]) *
              x[static_cast<size_t>(i)] * rstd *
              bf16_to_float(s.layers[0].norm1[static_cast<size_t>(i)]);
    EXPECT_NEAR(out.appended_k[0][static_cast<size_t>(j)], want, 1e-12) << j;
  }
}

TEST(StepReference, AffineWeightsAreQTimesScalePlusBiasExactly) {
  HostLinear l;
  l.n = 1;
  l.k = 32;
  l.bits = 4;
  l.group = 32;
  l.q = {0x76543210u, 0xfedcba98u, 0, 0};
  l.scales = {float_to_bf16(0.375f)};
  l.biases = {float_to_bf16(-1.5f)};
  const std::vector<double> w = l.values();
  ASSERT_EQ(w.size(), 32u);
  for (int i = 0; i < 16; ++i)
    EXPECT_EQ(w[static_cast<size_t>(i)], i * 0.375 - 1.5) << i;
  EXPECT_EQ(w[16], -1.5);
  EXPECT_EQ(l.bf16()[15], float_to_bf16(15 * 0.375f - 1.5f));
  l.scales.clear();
  EXPECT_NE(testing::invalid_message([&] { l.values(); }).find("do not have those sizes"),
            std::string::npos);
}

TEST(StepReference, Bf16NearestRoundsOnceFromFloat64) {
  // 1 + 2^-8 + 2^-30 lies above the midpoint of 1 and 1 + 2^-7; through float32 it would become
  // the midpoint itself and round to even (1).
  EXPECT_EQ(bf16_nearest(1 + 0x1p-8 + 0x1p-30), float_to_bf16(1 + 0x1p-7f));
  EXPECT_EQ(bf16_nearest(1 + 0x1p-8), float_to_bf16(1.0f)); // a tie: to even
  EXPECT_EQ(bf16_nearest(-3.0), float_to_bf16(-3.0f));
  EXPECT_EQ(bf16_nearest(0.0), 0);
}

TEST(StepReference, AWrongBufferIsNamed) {
  HostStep s = random_host_step(qwen2_like(), 2, 5, 16, 0, 3);
  s.layers[1].v_cache.pop_back();
  EXPECT_NE(testing::invalid_message([&] {
              reference_decode_step(s);
            }).find("layer 1 v cache holds 2559 elements, the step's shape gives 2560"),
            std::string::npos);
  s = random_host_step(qwen2_like(), 2, 5, 16, 0, 3);
  s.layers[0].qkv_bias.clear();
  EXPECT_NE(testing::invalid_message([&] {
              reference_decode_step(s);
            }).find("layer 0 qkv bias holds 0 elements, the step's shape gives 1024"),
            std::string::npos);
  // A prefill of 3 tokens per request: a position per row.
  s = random_host_step(qwen2_like(), 2, 5, 16, 0, 3, 3);
  s.inputs.positions.resize(2);
  EXPECT_NE(testing::invalid_message([&] {
              reference_decode_step(s);
            }).find("the positions holds 2 elements, the step's shape gives 6"),
            std::string::npos);
  s.inputs.positions.resize(6);
  s.new_tokens = 0;
  EXPECT_NE(testing::invalid_message([&] { reference_decode_step(s); }).find("0 new tokens"),
            std::string::npos);
}

} // namespace
} // namespace hone::model
