// quantized_linear_rmsnorm: a quantized linear whose last CTA normalises its output rows (the
// NORM twin of qmv.affine, rmsnorm_row::grid_norm_rows) gives the bits of quantized_linear
// followed by rmsnorm: y, out and residual_out, without a residual, with one beside it and with
// one updated in place, at the decode step's hidden sizes, under every CTA size of the fused
// kernel and every rmsnorm order (lanes) that takes the shape. A second fused launch gives the
// same bits again (the last CTA leaves the counter at 0). A launch it refuses launches nothing.
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

class LinearNormTest : public DeviceTest {};

constexpr int kBits = 4, kGroup = 64;
constexpr float kEps = 1e-5f;

enum class Residual { none, apart, in_place };
const char *name(Residual r) {
  return r == Residual::none ? "no residual" : r == Residual::apart ? "residual" : "in place";
}

// A dispatcher of the static defaults (no cache), with qmv.affine's and rmsnorm's tactic pinned
// where given.
DispatcherOptions pinned(const std::string &qmv, const std::string &norm) {
  DispatcherOptions o;
  o.use_cache = false;
  o.settings.use_cache = false;
  if (!qmv.empty())
    o.settings.tactics[tactic_env_name("cuda", "qmv.affine")] = qmv;
  if (!norm.empty())
    o.settings.tactics[tactic_env_name("cuda", "rmsnorm")] = norm;
  return o;
}

// One linear [n, k] of int4 g64 weights, its input rows, the norm's weight and residual.
struct Operands {
  int rows, n, k;
  DeviceBuffer x, q, scales, biases, w;
  std::vector<uint16_t> residual;
  Operands(int rows_, int n_, int k_)
      : rows(rows_), n(n_), k(k_), x(upload(random_bf16(size_t(rows_) * k_))), q(words()),
        scales(upload(random_bf16(size_t(n_) * k_ / kGroup, 0.005f))),
        biases(upload(random_bf16(size_t(n_) * k_ / kGroup, 0.02f))), w(upload(random_bf16(n_))),
        residual(random_bf16(size_t(rows_) * n_)) {}
  DeviceBuffer words() const {
    std::vector<uint32_t> v(size_t(n) * k * kBits / 32);
    for (uint32_t &word : v)
      word = static_cast<uint32_t>(next_random_seed());
    return upload(v);
  }
  size_t outputs() const { return size_t(rows) * n; }
};

// y, out and residual_out of one run.
struct Outputs {
  std::vector<uint16_t> y, out, residual_out;
};

ops::cuda::RmsnormTensors norm_of(const Operands &o, const DeviceBuffer &y, Residual mode,
                                  const DeviceBuffer &residual, const DeviceBuffer &residual_out,
                                  const DeviceBuffer &out) {
  ops::cuda::RmsnormTensors t;
  t.x = y.data();
  t.residual = mode == Residual::none ? nullptr : residual.data();
  t.residual_out = mode == Residual::none       ? nullptr
                   : mode == Residual::in_place ? residual.data()
                                                : residual_out.data();
  t.w = o.w.data();
  t.out = out.data();
  t.rows = o.rows;
  t.hidden = o.n;
  t.eps = kEps;
  return t;
}

// quantized_linear, then rmsnorm of its output.
Outputs separate(const Operands &o, Residual mode, Dispatcher &d) {
  DeviceBuffer y = poisoned(o.outputs() * 2), out = poisoned(o.outputs() * 2),
               ro = poisoned(o.outputs() * 2), residual = upload(o.residual);
  ops::cuda::quantized_linear(o.x.data(), o.q.as<const uint32_t>(), o.scales.data(),
                              o.biases.data(), y.data(), o.rows, o.n, o.k, kBits, kGroup, nullptr,
                              d);
  ops::cuda::rmsnorm(norm_of(o, y, mode, residual, ro, out), nullptr, d);
  return {download_bf16(y, o.outputs()), download_bf16(out, o.outputs()),
          mode == Residual::none
              ? std::vector<uint16_t>{}
              : download_bf16(mode == Residual::in_place ? residual : ro, o.outputs())};
}

// The fused launch, twice on fresh poison (the second run starts from the counter the first
// left); false where it refused (and then nothing was written).
bool fused(const Operands &o, Residual mode, Dispatcher &d, DeviceBuffer &counter, Outputs *first,
           Outputs *second) {
  for (Outputs *got : {first, second}) {
    DeviceBuffer y = poisoned(o.outputs() * 2), out = poisoned(o.outputs() * 2),
                 ro = poisoned(o.outputs() * 2), residual = upload(o.residual);
    const bool ran = ops::cuda::quantized_linear_rmsnorm(
        o.x.data(), o.q.as<const uint32_t>(), o.scales.data(), o.biases.data(), y.data(), o.rows,
        o.n, o.k, kBits, kGroup, norm_of(o, y, mode, residual, ro, out), counter.as<unsigned>(),
        nullptr, d);
    got->y = download_bf16(y, o.outputs());
    got->out = download_bf16(out, o.outputs());
    if (mode != Residual::none)
      got->residual_out = download_bf16(mode == Residual::in_place ? residual : ro, o.outputs());
    if (!ran) {
      for (uint16_t v : got->y)
        EXPECT_EQ(v, 0xffffu) << "a refused fused launch wrote y";
      for (uint16_t v : got->out)
        EXPECT_EQ(v, 0xffffu) << "a refused fused launch wrote out";
      return false;
    }
  }
  unsigned left = 1;
  HONE_CUDA_CHECK(cudaMemcpy(&left, counter.data(), sizeof left, cudaMemcpyDeviceToHost));
  EXPECT_EQ(left, 0u) << "the last CTA left the counter at " << left;
  return true;
}

size_t differing(const std::vector<uint16_t> &a, const std::vector<uint16_t> &b) {
  size_t n = a.size() == b.size() ? 0 : a.size() + b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i)
    n += a[i] != b[i] ? 1 : 0;
  return n;
}

void expect_same(const Outputs &got, const Outputs &want, const std::string &what) {
  EXPECT_EQ(differing(got.y, want.y), 0u) << "y, " << what;
  EXPECT_EQ(differing(got.out, want.out), 0u) << "out, " << what;
  EXPECT_EQ(differing(got.residual_out, want.residual_out), 0u) << "residual_out, " << what;
}

// One config of the NORM slot (8-row CTAs, one m16 tile, ahead=2, register pipeline) a CTA
// size, that takes the shape.
std::vector<QmvAffineConfig> norm_slot_configs(int rows, int n, int k) {
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

// The static defaults: the decode step's o_proj and down shapes (Llama-3.1-8B, Qwen2.5-1.5B and
// -0.5B) at 1-8 rows. The o_proj of Llama at one row is the step's case and must fuse.
TEST_F(LinearNormTest, TheDefaultsGiveTheSeparateLaunchesBits) {
  struct Shape3 {
    int n, k;
  };
  const std::vector<Shape3> shapes =
      testing::reduced_shapes() ? std::vector<Shape3>{{4096, 4096}, {896, 896}}
                                : std::vector<Shape3>{{4096, 4096}, {4096, 14336}, {1536, 1536},
                                                      {1536, 8960}, {896, 896},    {896, 4864}};
  DeviceBuffer counter(sizeof(unsigned));
  HONE_CUDA_CHECK(cudaMemset(counter.data(), 0, sizeof(unsigned)));
  Dispatcher d(ops::cuda::dispatcher().backend(), pinned("", ""));
  int ran = 0, cases = 0;
  for (const Shape3 &s : shapes)
    for (int rows : {1, 2, 5, 8}) {
      const Operands o(rows, s.n, s.k);
      for (Residual mode : {Residual::none, Residual::apart, Residual::in_place}) {
        const std::string what = std::to_string(rows) + " x " + std::to_string(s.n) + " x " +
                                 std::to_string(s.k) + ", " + name(mode);
        const Outputs want = separate(o, mode, d);
        Outputs first, second;
        const bool fuses = fused(o, mode, d, counter, &first, &second);
        ++cases;
        if (s.n == 4096 && s.k == 4096 && rows == 1) {
          EXPECT_TRUE(fuses) << "the step's o_proj did not fuse: " << what;
        }
        if (!fuses)
          continue;
        ++ran;
        expect_same(first, want, what);
        expect_same(second, want, what + ", second launch");
      }
    }
  std::printf("%d of %d cases fused\n", ran, cases);
  EXPECT_GE(ran, 3);
}

// Every CTA size of the NORM slot, every rmsnorm order that takes the shape (1-8 partials a
// thread, and idle threads where lanes < threads), pinned: each fused launch the separate ones'
// bits, and every pair one that fits ran fused.
TEST_F(LinearNormTest, EveryCtaSizeAndOrderGivesTheSeparateLaunchesBits) {
  DeviceBuffer counter(sizeof(unsigned));
  HONE_CUDA_CHECK(cudaMemset(counter.data(), 0, sizeof(unsigned)));
  int ran = 0;
  for (int hidden : {896, 1536, 4096}) {
    const int rows = hidden == 1536 ? 3 : 1, k = 1024;
    const Operands o(rows, hidden, k);
    for (const QmvAffineConfig &qc : norm_slot_configs(rows, hidden, k))
      for (const RmsnormConfig &nc : norm_orders(rows, hidden)) {
        Dispatcher d(ops::cuda::dispatcher().backend(),
                     pinned(qc.to_tactic().str(), nc.to_tactic().str()));
        // What the fused kernel takes (rmsnorm_row::grid_norm_fits), restated: at most 8
        // partials a thread, at most 8 strides of lanes a row.
        const int threads = qc.warps * 32, lanes = nc.lanes();
        const int per_thread = lanes >= threads ? lanes / threads : 1;
        const bool fits = per_thread <= 8 && hidden <= 8 * lanes;
        for (Residual mode : {Residual::none, Residual::in_place}) {
          const std::string what = qc.to_tactic().str() + ", " + nc.to_tactic().str() + ", " +
                                   std::to_string(rows) + " x " + std::to_string(hidden) + ", " +
                                   name(mode);
          const Outputs want = separate(o, mode, d);
          Outputs first, second;
          const bool fuses = fused(o, mode, d, counter, &first, &second);
          EXPECT_EQ(fuses, fits) << what;
          if (!fuses)
            continue;
          ++ran;
          expect_same(first, want, what);
          expect_same(second, want, what + ", second launch");
        }
      }
  }
  std::printf("%d fused launches checked\n", ran);
  EXPECT_GE(ran, 20);
}

// A norm that is not the linear's output's is refused by name, before any launch.
TEST_F(LinearNormTest, ABadNormIsNamed) {
  const Operands o(1, 512, 512);
  DeviceBuffer y = poisoned(o.outputs() * 2), out = poisoned(o.outputs() * 2),
               other = poisoned(o.outputs() * 2), counter(sizeof(unsigned));
  ops::cuda::RmsnormTensors t = norm_of(o, y, Residual::none, other, other, out);
  auto call = [&](const ops::cuda::RmsnormTensors &n) {
    ops::cuda::quantized_linear_rmsnorm(o.x.data(), o.q.as<const uint32_t>(), o.scales.data(),
                                        o.biases.data(), y.data(), o.rows, o.n, o.k, kBits, kGroup,
                                        n, counter.as<unsigned>(), nullptr);
  };
  ops::cuda::RmsnormTensors bad = t;
  bad.x = other.data();
  expect_invalid_call([&] { call(bad); }, "norm.x is not y");
  bad = t;
  bad.hidden = 256;
  expect_invalid_call([&] { call(bad); }, "hidden=256");
  bad = t;
  bad.eps = -1.f;
  expect_invalid_call([&] { call(bad); }, "eps=");
}

} // namespace
} // namespace hone::cuda
