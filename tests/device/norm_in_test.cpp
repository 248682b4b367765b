// rmsnorm_quantized_linear and its SiLU form: a quantized linear that normalises its own input
// rows in its prologue (the NORM_IN twins of qmv.affine, rmsnorm_row::norm_in_rows) gives the
// bits of rmsnorm followed by quantized_linear (or quantized_linear_silu_mul), without a
// residual and after one (h = x + residual formed by rmsnorm's residual_out, whose order the
// fused launch must then follow), at the decode step's shapes, under every CTA size of the
// fused kernels' slot and every rmsnorm order (lanes) that takes the shape. quantized_linear_add
// gives rmsnorm's residual_out bits, beside and in place of the residual. A launch either
// refuses launches nothing.
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/kernels/qmv_affine/qmv_affine.h"
#include "cuda/kernels/rmsnorm/rmsnorm.h"
#include "device_test.h"
#include "hone/dispatcher.h"
#include "hone/op.h"
#include "hone/ops/cuda.h"
#include "step_op_test_util.h"

namespace hone::cuda {
namespace {

using testing::DeviceTest;
using testing::download_bf16;
using testing::expect_invalid_call;
using testing::poisoned;
using testing::random_bf16;
using testing::upload;

class NormInTest : public DeviceTest {};

constexpr int kBits = 4, kGroup = 64;
constexpr float kEps = 1e-5f;

// A dispatcher of the static defaults (no cache), with qmv.affine's (and qmv.affine.silu_mul's)
// and rmsnorm's tactic pinned where given.
DispatcherOptions pinned(const std::string &qmv, const std::string &norm) {
  DispatcherOptions o;
  o.use_cache = false;
  o.settings.use_cache = false;
  if (!qmv.empty()) {
    o.settings.tactics[tactic_env_name("cuda", "qmv.affine")] = qmv;
    o.settings.tactics[tactic_env_name("cuda", "qmv.affine.silu_mul")] = qmv;
  }
  if (!norm.empty())
    o.settings.tactics[tactic_env_name("cuda", "rmsnorm")] = norm;
  return o;
}

// One linear [n, k] of int4 g64 weights (n = 2 inter with SiLU), the norm's input rows x, a
// residual and the norm's weight.
struct Operands {
  int rows, n, k;
  bool silu;
  DeviceBuffer x, residual, q, scales, biases, w;
  Operands(int rows_, int n_, int k_, bool silu_)
      : rows(rows_), n(n_), k(k_), silu(silu_), x(upload(random_bf16(size_t(rows_) * k_))),
        residual(upload(random_bf16(size_t(rows_) * k_))), q(words()),
        scales(upload(random_bf16(size_t(n_) * k_ / kGroup, 0.005f))),
        biases(upload(random_bf16(size_t(n_) * k_ / kGroup, 0.02f))), w(upload(random_bf16(k_))) {}
  DeviceBuffer words() const {
    std::vector<uint32_t> v(size_t(n) * k * kBits / 32);
    for (uint32_t &word : v)
      word = static_cast<uint32_t>(next_random_seed());
    return upload(v);
  }
  size_t outputs() const { return size_t(rows) * (silu ? n / 2 : n); }
  size_t inputs() const { return size_t(rows) * k; }
};

// rmsnorm (after the residual where `residual`) then the linear: y, and h (the norm's input:
// x, or residual_out).
struct Separate {
  std::vector<uint16_t> y;
  DeviceBuffer h;
};
Separate separate(const Operands &o, bool residual, Dispatcher &d) {
  Separate s{{}, poisoned(o.inputs() * 2)};
  DeviceBuffer xn = poisoned(o.inputs() * 2), y = poisoned(o.outputs() * 2);
  ops::cuda::RmsnormTensors t;
  t.x = o.x.data();
  t.residual = residual ? o.residual.data() : nullptr;
  t.residual_out = residual ? s.h.data() : nullptr;
  t.w = o.w.data();
  t.out = xn.data();
  t.rows = o.rows;
  t.hidden = o.k;
  t.eps = kEps;
  ops::cuda::rmsnorm(t, nullptr, d);
  if (!residual)
    HONE_CUDA_CHECK(cudaMemcpy(s.h.data(), o.x.data(), o.inputs() * 2, cudaMemcpyDeviceToDevice));
  if (o.silu) {
    EXPECT_TRUE(ops::cuda::quantized_linear_silu_mul(
        xn.data(), o.q.as<const uint32_t>(), o.scales.data(), o.biases.data(), y.data(), o.rows,
        o.n / 2, o.k, kBits, kGroup, nullptr, d))
        << "the separate gate/up had no SiLU epilogue";
  } else {
    ops::cuda::quantized_linear(xn.data(), o.q.as<const uint32_t>(), o.scales.data(),
                                o.biases.data(), y.data(), o.rows, o.n, o.k, kBits, kGroup, nullptr,
                                d);
  }
  s.y = download_bf16(y, o.outputs());
  return s;
}

// The fused launch of rmsnorm(h) and the linear; false where it refused (and then y is
// unwritten). Its check_only answer must be the launch's.
bool fused(const Operands &o, const DeviceBuffer &h, bool residual, Dispatcher &d,
           std::vector<uint16_t> *y_out) {
  DeviceBuffer y = poisoned(o.outputs() * 2);
  ops::cuda::RmsnormInput in;
  in.h = h.data();
  in.w = o.w.data();
  in.eps = kEps;
  in.residual = residual;
  auto call = [&] {
    return o.silu
               ? ops::cuda::rmsnorm_quantized_linear_silu_mul(
                     in, o.q.as<const uint32_t>(), o.scales.data(), o.biases.data(), y.data(),
                     o.rows, o.n / 2, o.k, kBits, kGroup, nullptr, d)
               : ops::cuda::rmsnorm_quantized_linear(in, o.q.as<const uint32_t>(), o.scales.data(),
                                                     o.biases.data(), y.data(), o.rows, o.n, o.k,
                                                     kBits, kGroup, nullptr, d);
  };
  in.check_only = true;
  const bool would = call();
  in.check_only = false;
  const bool ran = call();
  EXPECT_EQ(would, ran) << "check_only said otherwise";
  *y_out = download_bf16(y, o.outputs());
  if (!ran) {
    for (uint16_t v : *y_out) {
      EXPECT_EQ(v, 0xffffu) << "a refused fused launch wrote y";
    }
  }
  return ran;
}

size_t differing(const std::vector<uint16_t> &a, const std::vector<uint16_t> &b) {
  size_t n = a.size() == b.size() ? 0 : a.size() + b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    n += a[i] != b[i] ? 1 : 0;
  return n;
}

// The static defaults: the decode step's qkv and gate/up shapes (Llama-3.1-8B, Qwen2.5-1.5B and
// -0.5B) at 1-8 rows, with and without the residual. Llama's qkv and gate/up at one row are the
// step's cases and must fuse (gate/up's staged SiLU kernel, qkv's unstaged plain one).
TEST_F(NormInTest, TheDefaultsGiveTheSeparateLaunchesBits) {
  struct Case {
    int n, k;
    bool silu;
  };
  const std::vector<Case> cases =
      testing::reduced_shapes()
          ? std::vector<Case>{{6144, 4096, false},
                              {28672, 4096, true},
                              {2048, 1536, false},
                              {9728, 896, true}}
          : std::vector<Case>{{6144, 4096, false}, {28672, 4096, true}, {2048, 1536, false},
                              {17920, 1536, true}, {1152, 896, false},  {9728, 896, true}};
  Dispatcher d(ops::cuda::dispatcher().backend(), pinned("", ""));
  int ran = 0, count = 0;
  for (const Case &c : cases)
    for (int rows : {1, 2, 5, 8}) {
      const Operands o(rows, c.n, c.k, c.silu);
      for (bool residual : {false, true}) {
        const std::string what = std::to_string(rows) + " x " + std::to_string(c.n) + " x " +
                                 std::to_string(c.k) + (c.silu ? ", SiLU" : "") +
                                 (residual ? ", after the residual" : "");
        const Separate want = separate(o, residual, d);
        std::vector<uint16_t> got;
        const bool fuses = fused(o, want.h, residual, d, &got);
        ++count;
        if (c.k == 4096 && rows == 1) {
          EXPECT_TRUE(fuses) << "the step's linear did not take the norm: " << what;
        }
        if (!fuses)
          continue;
        ++ran;
        EXPECT_EQ(differing(got, want.y), 0u) << what;
      }
    }
  std::printf("%d of %d cases fused\n", ran, count);
  EXPECT_GE(ran, 8);
}

// One config of the NORM_IN slot (8-row CTAs, one m16 tile, ahead=2, register pipeline) a CTA
// size, that takes the shape.
std::vector<QmvAffineConfig> slot_configs(int rows, int n, int k) {
  std::vector<QmvAffineConfig> out;
  std::set<int> warps;
  for (const QmvAffineConfig &c : qmv_affine_configs(kBits))
    if (c.path == KernelPath::mma && c.rows_per_cta == 8 && c.outputs_per_warp == 16 &&
        c.ahead == 2 && c.async == 0 && c.deep == 0 && !warps.count(c.warps) &&
        qmv_affine_can_implement(c, rows, n, k, kBits, kGroup, nullptr)) {
      warps.insert(c.warps);
      out.push_back(c);
    }
  return out;
}

// rmsnorm configs of distinct orders (lanes) that take the shape.
std::vector<RmsnormConfig> norm_orders(int rows, int hidden) {
  std::map<int, RmsnormConfig> by_lanes;
  for (const RmsnormConfig &c : rmsnorm_configs())
    if (rmsnorm_can_implement(c, rows, hidden, nullptr))
      by_lanes.emplace(c.lanes(), c);
  std::vector<RmsnormConfig> out;
  for (const auto &[lanes, c] : by_lanes)
    out.push_back(c);
  return out;
}

// Every CTA size of the slot and every rmsnorm order that takes the shape, pinned, plain and
// SiLU, staged (8192 x 4096: a long slice on a grid of many CTAs at one warp) and not: each
// fused launch the separate ones' bits, and every pair that fits ran fused.
TEST_F(NormInTest, EveryCtaSizeAndOrderGivesTheSeparateLaunchesBits) {
  struct Case {
    int rows, n, k;
    bool silu;
  };
  const std::vector<Case> cases = {
      {1, 2048, 896, false}, {3, 2048, 1536, true}, {1, 8192, 4096, false}, {2, 8192, 4096, true}};
  int ran = 0, staged = 0;
  for (const Case &c : cases) {
    const Operands o(c.rows, c.n, c.k, c.silu);
    for (const QmvAffineConfig &qc : slot_configs(c.rows, c.n, c.k))
      for (const RmsnormConfig &nc : norm_orders(c.rows, c.k)) {
        Dispatcher d(ops::cuda::dispatcher().backend(),
                     pinned(qc.to_tactic().str(), nc.to_tactic().str()));
        // What the prologue takes (rmsnorm_row::norm_in_fits), restated: at most 32 partials a
        // thread, and the rows within 48 KB beside the kernel's shared memory (they are here).
        const int threads = qc.warps * 32, lanes = nc.lanes();
        const int per_thread = lanes >= threads ? lanes / threads : 1;
        const bool fits = per_thread <= 32;
        for (bool residual : {false, true}) {
          const std::string what = qc.to_tactic().str() + ", " + nc.to_tactic().str() + ", " +
                                   std::to_string(c.rows) + " x " + std::to_string(c.n) + " x " +
                                   std::to_string(c.k) + (c.silu ? ", SiLU" : "") +
                                   (residual ? ", after the residual" : "");
          const Separate want = separate(o, residual, d);
          std::vector<uint16_t> got;
          const bool fuses = fused(o, want.h, residual, d, &got);
          EXPECT_EQ(fuses, fits) << what;
          if (!fuses)
            continue;
          ++ran;
          QmvAffineArgs a;
          a.x = want.h.data();
          a.rows = c.rows;
          a.n = c.n;
          a.k = c.k;
          a.scales = o.scales.data();
          a.biases = o.biases.data();
          a.silu_inter = c.silu ? c.n / 2 : 0;
          staged += qmv_affine_stages_parameters(qc, a) ? 1 : 0;
          EXPECT_EQ(differing(got, want.y), 0u) << what;
        }
      }
  }
  std::printf("%d fused launches checked, %d of them staged\n", ran, staged);
  EXPECT_GE(ran, 40);
  EXPECT_GE(staged, 2);
}

// quantized_linear_add: y = bf16(bf16(linear) + residual), rmsnorm's residual_out bits, beside
// the residual and in place of it; the defaults at the decode step's o_proj and down shapes.
TEST_F(NormInTest, TheResidualEpilogueGivesRmsnormsResidualOut) {
  Dispatcher d(ops::cuda::dispatcher().backend(), pinned("", ""));
  int ran = 0;
  for (const auto &[n, k] :
       std::vector<std::pair<int, int>>{{4096, 4096}, {4096, 14336}, {1536, 8960}, {896, 896}})
    for (int rows : {1, 3, 8}) {
      const Operands o(rows, n, k, false);
      const std::vector<uint16_t> r = random_bf16(size_t(rows) * n);
      // The separate launches: the linear, then rmsnorm's residual add.
      DeviceBuffer y = poisoned(o.outputs() * 2), residual = upload(r),
                   h = poisoned(o.outputs() * 2), out = poisoned(o.outputs() * 2),
                   w = upload(random_bf16(n));
      ops::cuda::quantized_linear(o.x.data(), o.q.as<const uint32_t>(), o.scales.data(),
                                  o.biases.data(), y.data(), rows, n, k, kBits, kGroup, nullptr, d);
      ops::cuda::RmsnormTensors t;
      t.x = y.data();
      t.residual = residual.data();
      t.residual_out = h.data();
      t.w = w.data();
      t.out = out.data();
      t.rows = rows;
      t.hidden = n;
      t.eps = kEps;
      ops::cuda::rmsnorm(t, nullptr, d);
      const std::vector<uint16_t> want = download_bf16(h, o.outputs());
      for (bool in_place : {false, true}) {
        DeviceBuffer got = in_place ? upload(r) : poisoned(o.outputs() * 2), res = upload(r);
        const void *res_ptr = in_place ? got.data() : res.data();
        const bool would = ops::cuda::quantized_linear_add(
            o.x.data(), o.q.as<const uint32_t>(), o.scales.data(), o.biases.data(), got.data(),
            rows, n, k, kBits, kGroup, res_ptr, nullptr, d, {}, true);
        const bool did = ops::cuda::quantized_linear_add(
            o.x.data(), o.q.as<const uint32_t>(), o.scales.data(), o.biases.data(), got.data(),
            rows, n, k, kBits, kGroup, res_ptr, nullptr, d);
        EXPECT_EQ(would, did);
        EXPECT_TRUE(did) << rows << " x " << n << " x " << k;
        if (!did)
          continue;
        ++ran;
        EXPECT_EQ(differing(download_bf16(got, o.outputs()), want), 0u)
            << rows << " x " << n << " x " << k << (in_place ? ", in place" : "");
      }
    }
  EXPECT_EQ(ran, 24);
}

// A negative eps is named before any launch.
TEST_F(NormInTest, ABadEpsIsNamed) {
  const Operands o(1, 512, 512, false);
  DeviceBuffer y = poisoned(o.outputs() * 2);
  ops::cuda::RmsnormInput in;
  in.h = o.x.data();
  in.w = o.w.data();
  in.eps = -1.f;
  expect_invalid_call(
      [&] {
        ops::cuda::rmsnorm_quantized_linear(in, o.q.as<const uint32_t>(), o.scales.data(),
                                            o.biases.data(), y.data(), 1, 512, 512, kBits, kGroup,
                                            nullptr, ops::cuda::dispatcher());
      },
      "eps=-1");
}

} // namespace
} // namespace hone::cuda
