// qmv.affine kernel harness: every compiled config against a float64 reference on the
// dequantised weights (fresh random packed words, scales, biases and activations; poisoned
// outputs), bitwise batch invariance of the configs sharing the default's K order (and of the
// stream configs, each against the rows=1 stream config of its K order, row by row), the ring
// configs bitwise against the mma path of their k_slices (the rows=1 default where it is that), and
// (standalone) a cold-L2 timing table of every config with a loads-only read of the same
// packed words.
//
// Under CMake (tests/device) it is a GoogleTest program on small shapes. Standalone, one
// command builds it with the kernels and runs the full check and timing matrix:
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90,code=sm_90 -DHONE_QMV_AFFINE_KERNEL_TEST_MAIN
//     -Iinclude -Isrc -Itests/device tests/device/qmv_affine_kernel_test.cu
//     src/cuda/kernels/qmv_affine/qmv_affine.cu src/cuda/kernels/qmv_affine/qmv_affine_config.cpp
//     src/cuda/kernels/qmv_affine/qmv_affine_ring.cu
//     src/cuda/kernels/common/split_k_launch.cpp src/cuda/kernels/common/config_tactic.cpp
//     src/cuda/kernels/common/split_k_family.cpp src/cuda/kernels/common/kernel_types.cpp
//     src/cuda/kernels/common/weight_stream.cpp src/core/tactic.cpp src/core/error.cpp
//     -o qmv_affine_kernel_test
//   ./qmv_affine_kernel_test [--quick] [--rows 1,8,16] [--shapes 14336x4096,...]
//     [--formats 4x64,4x128,8x64] [--csv FILE] [--shared-params] [--staging auto|off|on]
//   --csv: a line per (cell, config) timed, the config's tactic quoted (its fields hold commas;
//     bare before 2026-12-06, which scripts/fit_k_slices.py reads too)
//   Cold L2 as the tuner's: the copies a batch cycles through span 8 x the L2
//   (cold_copies, kernel_harness.cuh). At 2 x (this harness before 2026-12-06) part of a copy was
//   still in L2 when it came round again: gate_up's default read 15 % faster there than at 8 or 32
//   x, and ranked ahead of a config the cold runs put level
//   (docs/benchmark_results/2026-12-06-h100-3, call9).
//   The scales and biases rotate with the packed words (each copy holds all three), as in a
//   model step where every layer's are cold, and the loads-only ceiling reads all three.
//   --shared-params: one set of scales and biases for every copy (they stay in L2), and the
//     ceiling reads the words alone, as before 2026-12-06.
//   --staging: the group parameters staged in shared memory where the launch's rule says (auto,
//     the default), never (off: the A/B against auto in one build), or wherever a kernel can (on)
//     (QmvAffineArgs::stage_parameters).
//   ./qmv_affine_kernel_test --pattern [--shapes ...]: loads-only reads of the 4-bit words in the
//     kernels' access patterns (run_patterns)
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <initializer_list>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/backend/bf16.h"
#include "cuda/kernels/common/weight_ring.h"
#include "cuda/kernels/qmv_affine/qmv_affine.h"
#include "cuda/kernels/qmv_affine/qmv_affine_shape.h"
#include "kernel_harness.cuh"
#include "path_filter.h"

#ifndef HONE_QMV_AFFINE_KERNEL_TEST_MAIN
#include <gtest/gtest.h>

#include "../unit/invalid_message.h"
#include "device_test.h"
#endif

namespace hone::cuda {
namespace {

using namespace harness; // NOLINT

// Uniform random 32-bit words: every bit pattern is a valid packed q.
__global__ void fill_words_kernel(uint32_t *p, size_t count, uint64_t seed) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < count;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    uint64_t h = (i + 1) * 0x9e3779b97f4a7c15ull ^ seed;
    h ^= h >> 31;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 29;
    p[i] = static_cast<uint32_t>(h >> 16);
  }
}

// One quantized problem in device memory.
struct Problem {
  int rows, n, k, bits, group;
  int chunk_groups = -1;     // QmvAffineArgs::chunk_groups of every launch
  int stage_parameters = -1; // QmvAffineArgs::stage_parameters of every launch
  std::unique_ptr<DeviceMem> x, q, s, b;
  size_t words() const { return elements(n, k) / static_cast<size_t>(32 / bits); }
  size_t groups() const { return elements(n, k / group); }

  Problem(int rows_, int n_, int k_, int bits_, int group_)
      : rows(rows_), n(n_), k(k_), bits(bits_), group(group_) {
    x = std::make_unique<DeviceMem>(elements(rows, k) * 2);
    q = std::make_unique<DeviceMem>(words() * 4);
    s = std::make_unique<DeviceMem>(groups() * 2);
    b = std::make_unique<DeviceMem>(groups() * 2);
    randomize();
  }
  // Scales in [1e-3, 2e-2), biases around -(2^bits / 2) scale: weights of either sign.
  void randomize() {
    fill_random(x->p, elements(rows, k), next_seed());
    fill_words_kernel<<<1024, 256>>>(static_cast<uint32_t *>(q->p), words(), next_seed());
    KT_CHECK(cudaGetLastError());
    std::mt19937_64 rng(next_seed());
    std::uniform_real_distribution<float> scale(1e-3f, 2e-2f), offset(-0.6f, -0.4f);
    std::vector<uint16_t> hs(groups()), hb(groups());
    const float levels = static_cast<float>((1 << bits) - 1);
    for (size_t i = 0; i < groups(); ++i) {
      const float sc = scale(rng);
      hs[i] = float_to_bf16(sc);
      hb[i] = float_to_bf16(offset(rng) * levels * sc);
    }
    KT_CHECK(cudaMemcpy(s->p, hs.data(), groups() * 2, cudaMemcpyHostToDevice));
    KT_CHECK(cudaMemcpy(b->p, hb.data(), groups() * 2, cudaMemcpyHostToDevice));
    KT_CHECK(cudaDeviceSynchronize());
  }

  int launch(const QmvAffineConfig &c, const void *xp, void *y, int r, cudaStream_t st = nullptr,
             const void *qp = nullptr, const void *sp = nullptr, const void *bp = nullptr) const {
    QmvAffineArgs a;
    a.x = xp;
    a.q = static_cast<const uint32_t *>(qp ? qp : q->p);
    a.scales = sp ? sp : s->p;
    a.biases = bp ? bp : b->p;
    a.y = y;
    a.rows = r;
    a.n = n;
    a.k = k;
    a.bits = bits;
    a.group = group;
    a.chunk_groups = chunk_groups;
    a.stage_parameters = stage_parameters;
    return qmv_affine_launch(c, a, st).code();
  }

  // Float64 reference on the dequantised weights, [rows, n]; threads split n.
  std::vector<double> reference() const {
    const std::vector<uint16_t> hx = download(x->p, elements(rows, k));
    std::vector<uint32_t> hq(words());
    KT_CHECK(cudaMemcpy(hq.data(), q->p, words() * 4, cudaMemcpyDeviceToHost));
    const std::vector<uint16_t> hs = download(s->p, groups()), hb = download(b->p, groups());
    std::vector<double> y(elements(rows, n));
    const int per_word = 32 / bits;
    const uint32_t mask = (1u << bits) - 1;
    const int threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        std::vector<double> w(static_cast<size_t>(k));
        for (int m = t; m < n; m += threads) {
          for (int i = 0; i < k; ++i) {
            const uint32_t word = hq[elements(m, k / per_word) + static_cast<size_t>(i / per_word)];
            const double qv = (word >> (bits * (i % per_word))) & mask;
            const size_t gi = elements(m, k / group) + static_cast<size_t>(i / group);
            w[static_cast<size_t>(i)] = qv * bf16_to_float(hs[gi]) + bf16_to_float(hb[gi]);
          }
          for (int r = 0; r < rows; ++r) {
            double sum = 0;
            for (int i = 0; i < k; ++i)
              sum += static_cast<double>(bf16_to_float(hx[elements(r, k) + static_cast<size_t>(i)])) *
                     w[static_cast<size_t>(i)];
            y[elements(r, n) + static_cast<size_t>(m)] = sum;
          }
        }
      });
    for (auto &th : pool)
      th.join();
    return y;
  }
};

// The op's tolerance gate: one bf16 rounding of each dequantised weight (2^-9 relative) and of
// the output, far under 8e-3; an indexing or dequantisation bug gives O(1).
constexpr double kBound = 8e-3;

struct CheckSummary {
  int configs = 0, failed = 0;
  int invariant = 0, variant = 0;
  int stream_invariant = 0;  // stream configs equal to their order's rows=1 run (else `variant`)
  int grouped_invariant = 0; // grouped configs equal to their order's rows=1 run (else `variant`)
  int ring_invariant = 0; // ring configs equal to the mma path of their k_slices (else `variant`)
  double worst_error = 0;
  std::vector<std::string> failures;
};

std::string where(const Problem &p) {
  return " rows=" + std::to_string(p.rows) + " n=" + std::to_string(p.n) +
         " k=" + std::to_string(p.k) + " bits=" + std::to_string(p.bits) +
         " group=" + std::to_string(p.group);
}

// HONE_TEST_PATHS (path_filter.h) restricts the configs checked and timed.
using testing::path_selected;
bool path_selected(const QmvAffineConfig &c) { return path_selected(c.path); }
// HONE_TEST_TACTIC (a tactic string): time only that config beside the default (profiles).
[[maybe_unused]] bool tactic_selected(const QmvAffineConfig &c) {
  const char *v = std::getenv("HONE_TEST_TACTIC");
  return !v || !*v || c.to_tactic().str() == v;
}
// HONE_TEST_TACTIC_HAS (text, e.g. `deep=2`): check only the configs whose tactic holds it (the
// default and the references still run); for compute-sanitizer runs of a few kernels.
bool tactic_filtered() {
  const char *v = std::getenv("HONE_TEST_TACTIC_HAS");
  return v && *v;
}
bool tactic_has(const QmvAffineConfig &c) {
  return !tactic_filtered() ||
         c.to_tactic().str().find(std::getenv("HONE_TEST_TACTIC_HAS")) != std::string::npos;
}

// Every admissible config at the problem's shape against the reference, then bitwise batch
// invariance against the rows=1 default run row by row.
CheckSummary check_problem(const Problem &p) {
  CheckSummary out;
  const std::vector<double> ref = p.reference();
  DeviceMem y(elements(p.rows, p.n) * 2), y1(elements(p.rows, p.n) * 2);
  // `config` run on one activation row at a time, into poisoned outputs.
  auto row_by_row = [&](const QmvAffineConfig &config) {
    KT_CHECK(cudaMemset(y1.p, 0xff, elements(p.rows, p.n) * 2));
    for (int r = 0; r < p.rows; ++r)
      KT_CHECK(static_cast<cudaError_t>(
          p.launch(config, static_cast<const uint16_t *>(p.x->p) + elements(r, p.k),
                   static_cast<uint16_t *>(y1.p) + elements(r, p.n), 1)));
    KT_CHECK(cudaDeviceSynchronize());
    return download(y1.p, elements(p.rows, p.n));
  };
  const QmvAffineConfig single = qmv_affine_default(1, p.n, p.k, p.bits, p.group);
  const std::vector<uint16_t> expected = row_by_row(single);

  // The rows=1 stream config of each stream K order (W consumer warps), run row by row.
  std::vector<std::pair<int, std::vector<uint16_t>>> stream_expected;
  auto stream_reference = [&](const QmvAffineConfig &c) -> const std::vector<uint16_t> & {
    for (const auto &e : stream_expected)
      if (e.first == c.warps_k)
        return e.second;
    // A compiled rows=1 stream config of this order: W consumers, 8 activation rows, the
    // shallowest ring at one CTA per SM (the stream default's 8 stages do not fit at W = 8).
    QmvAffineConfig one{};
    bool found = false;
    for (const QmvAffineConfig &e : qmv_affine_configs(p.bits))
      if (e.path == KernelPath::stream && e.rows_per_cta == 8 && e.warps_k == c.warps_k &&
          e.ctas_per_sm == 1 && (!found || e.stages < one.stages))
        one = e, found = true;
    if (!found) {
      std::fprintf(stderr, "no rows=1 stream config with %d consumers\n", c.warps_k);
      std::exit(1);
    }
    stream_expected.emplace_back(c.warps_k, row_by_row(one));
    return stream_expected.back().second;
  };

  // The rows=1 grouped config of each grouped K order (k_slices), run row by row: 4 rows per
  // CTA, one m16 tile per warp, the order's first compiled CTA shape.
  std::vector<std::pair<int, std::vector<uint16_t>>> grouped_expected;
  auto grouped_reference = [&](const QmvAffineConfig &c) -> const std::vector<uint16_t> & {
    for (const auto &e : grouped_expected)
      if (e.first == qmv_affine_k_slices(c))
        return e.second;
    QmvAffineConfig one{};
    bool found = false;
    for (const QmvAffineConfig &e : qmv_affine_configs(p.bits))
      if (!found && e.path == KernelPath::grouped && e.rows_per_cta == 4 &&
          e.outputs_per_warp == 16 && qmv_affine_k_slices(e) == qmv_affine_k_slices(c) &&
          qmv_affine_can_implement(e, 1, p.n, p.k, p.bits, p.group, nullptr))
        one = e, found = true;
    if (!found) {
      std::fprintf(stderr, "no rows=1 grouped config with k_slices %d\n", qmv_affine_k_slices(c));
      std::exit(1);
    }
    grouped_expected.emplace_back(qmv_affine_k_slices(c), row_by_row(one));
    return grouped_expected.back().second;
  };

  // The mma path at each k_slices, all rows in one launch (its configs are batch-invariant, so any
  // one of an order will do): what a ring or shallow config of that k_slices must give bit for
  // bit (a register-pipeline config is the reference, never a shallow one).
  std::vector<std::pair<int, std::vector<uint16_t>>> mma_expected;
  const std::vector<uint16_t> *default_rows = &expected;
  auto mma_reference = [&](const QmvAffineConfig &c) -> const std::vector<uint16_t> & {
    const int slices = qmv_affine_k_slices(c);
    if (slices == qmv_affine_k_slices(single) && single.path == KernelPath::mma)
      return *default_rows;
    for (const auto &e : mma_expected)
      if (e.first == slices)
        return e.second;
    for (const QmvAffineConfig &e : qmv_affine_configs(p.bits))
      if (e.path == KernelPath::mma && e.shallow == 0 && qmv_affine_k_slices(e) == slices &&
          qmv_affine_can_implement(e, p.rows, p.n, p.k, p.bits, p.group, nullptr)) {
        KT_CHECK(cudaMemset(y1.p, 0xff, elements(p.rows, p.n) * 2));
        KT_CHECK(static_cast<cudaError_t>(p.launch(e, p.x->p, y1.p, p.rows)));
        KT_CHECK(cudaDeviceSynchronize());
        mma_expected.emplace_back(slices, download(y1.p, elements(p.rows, p.n)));
        return mma_expected.back().second;
      }
    std::fprintf(stderr, "no mma config with k_slices %d at%s\n", slices, where(p).c_str());
    std::exit(1);
  };

  std::vector<QmvAffineConfig> all;
  for (const QmvAffineConfig &c : qmv_affine_configs(p.bits))
    if (std::string why; path_selected(c) && tactic_has(c) &&
                         qmv_affine_can_implement(c, p.rows, p.n, p.k, p.bits, p.group, &why) &&
                         !(c.shallow > 0 && p.chunk_groups == 2)) // not compiled two-group
      all.push_back(c);
  all.push_back(qmv_affine_default(p.rows, p.n, p.k, p.bits, p.group));
  for (const QmvAffineConfig &c : all) {
    KT_CHECK(cudaMemset(y.p, 0xff, elements(p.rows, p.n) * 2));
    const int status = p.launch(c, p.x->p, y.p, p.rows);
    KT_CHECK(cudaDeviceSynchronize());
    ++out.configs;
    const std::vector<uint16_t> got = download(y.p, elements(p.rows, p.n));
    const double err = status == 0 ? relative_l2(got, ref) : INFINITY;
    out.worst_error = std::max(out.worst_error, err);
    if (!(err <= kBound)) {
      ++out.failed;
      out.failures.push_back(c.to_tactic().str() + where(p) + " error " + std::to_string(err) +
                             " launch " + std::to_string(status));
      continue;
    }
    if (c.path == KernelPath::stream && c.path != single.path) {
      const bool same = got == stream_reference(c);
      ++(same ? out.stream_invariant : out.variant);
      if (!same)
        out.failures.push_back("stream not batch-invariant: " + c.to_tactic().str() + where(p));
      continue;
    }
    // The ring and the shallow kernels: the register pipeline's bits at their k_slices, whatever
    // the default's.
    if (const bool ring = c.path == KernelPath::ring; ring || c.shallow > 0) {
      const bool same = got == mma_reference(c);
      ++(!same ? out.variant : ring ? out.ring_invariant : out.invariant);
      if (!same)
        out.failures.push_back(
            std::string(ring ? "ring" : "shallow") +
            " differs from the mma path of its k_slices: " + c.to_tactic().str() + where(p));
      continue;
    }
    if (c.path == KernelPath::grouped && c.path != single.path) {
      const bool same = got == grouped_reference(c);
      ++(same ? out.grouped_invariant : out.variant);
      if (!same)
        out.failures.push_back("grouped not batch-invariant: " + c.to_tactic().str() + where(p));
      continue;
    }
    if (c.path == single.path && qmv_affine_k_slices(c) == qmv_affine_k_slices(single)) {
      const bool identical = got == expected;
      ++(identical ? out.invariant : out.variant);
      if (!identical)
        out.failures.push_back("not batch-invariant: " + c.to_tactic().str() + where(p));
    }
  }
  return out;
}

struct Case {
  int rows, n, k, bits, group;
};

// Small shapes with leftovers: N not a multiple of 16 or of a CTA's rows, K not a multiple of
// the 128-value chunk, every format.
// minimal (under racecheck): every config on one shape with leftovers, one per-weight and one
// factored format per bit width, rows 1 and 32.
std::vector<Case> check_cases(bool quick, bool minimal = false) {
  std::vector<Case> out;
  if (minimal) {
    const int formats[][2] = {{4, 64}, {4, 128}, {8, 32}, {8, 128}};
    for (const auto &f : formats)
      for (int r : {1, 32})
        out.push_back({r, 1000, 1152, f[0], f[1]});
    return out;
  }
  const int formats[][2] = {{4, 32}, {4, 64}, {4, 128}, {8, 32}, {8, 64}, {8, 128}};
  const int shapes[][2] = {{1000, 1152}, {72, 4096}, {256, 256 + 128}};
  const std::vector<int> rows = quick ? std::vector<int>{1, 9, 32}
                                      : std::vector<int>{1, 2, 5, 8, 9, 16, 17, 24, 32};
  for (const auto &f : formats)
    for (const auto &s : shapes)
      for (int r : rows)
        if (s[1] % f[1] == 0)
          out.push_back({r, s[0], s[1], f[0], f[1]});
  return out;
}

#ifndef HONE_QMV_AFFINE_KERNEL_TEST_MAIN

class QmvAffineKernel : public testing::DeviceTest {};

// What every checked problem must show: no config off the reference or off its order's bits,
// and (for the paths run) configs that shared the default's order or the mma path's.
// Under HONE_TEST_TACTIC_HAS a problem may hold none of the selected configs, so only the
// failures count (and the test asks that some problem held one).
void expect_clean(const CheckSummary &s, const Problem &p) {
  EXPECT_EQ(s.failed, 0) << (s.failures.empty() ? "" : s.failures.front());
  EXPECT_EQ(s.variant, 0) << (s.failures.empty() ? "" : s.failures.front());
  if (tactic_filtered())
    return;
  EXPECT_GT(s.configs, 1) << where(p);
  if (path_selected(KernelPath::mma))
    EXPECT_GT(s.invariant, 0) << where(p);
  if (path_selected(KernelPath::ring))
    EXPECT_GT(s.ring_invariant, 0) << where(p);
}

TEST_F(QmvAffineKernel, EveryConfigMatchesReferenceAndDefaultOrderIsBatchInvariant) {
  int selected = 0;
  for (const Case &c : check_cases(testing::reduced_shapes(), testing::minimal_shapes())) {
    Problem p(c.rows, c.n, c.k, c.bits, c.group);
    const CheckSummary s = check_problem(p);
    expect_clean(s, p);
    selected += s.configs;
    if (tactic_filtered())
      continue;
    if (path_selected(KernelPath::stream))
      EXPECT_GT(s.stream_invariant, 0) << where(p);
    if (c.bits == 4 && c.k % 128 == 0 &&
        qmv_affine_default(1, c.n, c.k, 4, c.group).path != KernelPath::grouped &&
        path_selected(KernelPath::grouped))
      EXPECT_GT(s.grouped_invariant, 0) << where(p);
  }
  EXPECT_GT(selected, 0) << "no config holds HONE_TEST_TACTIC_HAS";
}

// The two-group chunks of int4 g64 (qmv_affine_chunk_groups 2, not yet the default): every config
// against the reference, and the mma and ring paths at each k_slices bit-identical per row at
// every row count, as the default's form is. They must also differ from the per-weight form, or
// the override did not reach the kernels.
TEST_F(QmvAffineKernel, TwoGroupChunksMatchTheReferenceAndAreBatchInvariant) {
  const bool quick = testing::reduced_shapes() || testing::minimal_shapes();
  const std::vector<int> rows =
      quick ? std::vector<int>{1, 32} : std::vector<int>{1, 2, 5, 8, 9, 16, 17, 24, 32};
  std::vector<std::pair<int, int>> shapes{{1000, 1152}, {72, 4096}, {256, 384}};
  if (testing::minimal_shapes()) // under the sanitizers
    shapes.resize(1);
  for (const auto &[n, k] : shapes)
    for (int r : rows) {
      Problem p(r, n, k, 4, 64);
      p.chunk_groups = 2;
      expect_clean(check_problem(p), p);
      const QmvAffineConfig def = qmv_affine_default(r, n, k, 4, 64);
      DeviceMem y0(elements(r, n) * 2), y2(elements(r, n) * 2);
      p.chunk_groups = 0;
      KT_CHECK(static_cast<cudaError_t>(p.launch(def, p.x->p, y0.p, r)));
      p.chunk_groups = 2;
      KT_CHECK(static_cast<cudaError_t>(p.launch(def, p.x->p, y2.p, r)));
      KT_CHECK(cudaDeviceSynchronize());
      EXPECT_NE(download(y0.p, elements(r, n)), download(y2.p, elements(r, n))) << where(p);
    }
  // The two-group form reads each parameter pair as one 32-bit word: parameter arrays that are
  // not 4-byte aligned are refused by both paths' launchers (nothing runs), not read misaligned.
  Problem p(1, 72, 4096, 4, 64);
  p.chunk_groups = 2;
  const uint16_t *odd = static_cast<const uint16_t *>(p.s->p) + 1;
  DeviceMem y(elements(1, 72) * 2);
  const QmvAffineConfig def = qmv_affine_default(1, 72, 4096, 4, 64);
  EXPECT_EQ(p.launch(def, p.x->p, y.p, 1), 0);
  EXPECT_NE(p.launch(def, p.x->p, y.p, 1, nullptr, nullptr, odd), 0);
  EXPECT_NE(p.launch(def, p.x->p, y.p, 1, nullptr, nullptr, nullptr, odd), 0);
  const QmvAffineConfig ring = qmv_affine_ring_default(1, 72, 4096, 4, 64);
  ASSERT_EQ(ring.path, KernelPath::ring);
  EXPECT_EQ(p.launch(ring, p.x->p, y.p, 1), 0);
  EXPECT_NE(p.launch(ring, p.x->p, y.p, 1, nullptr, nullptr, odd), 0);
  KT_CHECK(cudaDeviceSynchronize());
}

// Staged group parameters (qmv_affine_stages_parameters: J 2 kernels, grids of two CTAs an SM or
// more, long slices): every config against the reference and its order's bits on a shape whose
// default stages them, N not a multiple of a CTA's rows (clamped rows stage the last row's
// parameters), K of 34 chunks (not a power of two); and each config the rule stages bit for bit
// against the same config with staging off. The staged configs must be among those checked.
TEST_F(QmvAffineKernel, StagedParametersMatchTheReferenceAndTheirOrder) {
  int sms = 0;
  KT_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const int n = 2 * sms * 64 + 40, k = 4352;
  for (int r : {1, 8}) {
    Problem p(r, n, k, 4, 64);
    expect_clean(check_problem(p), p);
    DeviceMem y_on(elements(r, n) * 2), y_off(elements(r, n) * 2);
    int staged = 0, staged_async = 0;
    for (const QmvAffineConfig &c : qmv_affine_configs(4)) {
      QmvAffineArgs a;
      a.rows = r, a.n = n, a.k = k, a.bits = 4, a.group = 64;
      a.scales = p.s->p, a.biases = p.b->p;
      if (!qmv_affine_can_implement(c, r, n, k, 4, 64, nullptr) ||
          !qmv_affine_stages_parameters(c, a))
        continue;
      ++staged;
      staged_async += c.async;
      a.stage_parameters = 0;
      EXPECT_FALSE(qmv_affine_stages_parameters(c, a));
      // Poisoned differently, so that outputs left unwritten cannot agree.
      KT_CHECK(cudaMemset(y_on.p, 0xff, elements(r, n) * 2));
      KT_CHECK(cudaMemset(y_off.p, 0x7f, elements(r, n) * 2));
      p.stage_parameters = -1;
      KT_CHECK(static_cast<cudaError_t>(p.launch(c, p.x->p, y_on.p, r)));
      p.stage_parameters = 0;
      KT_CHECK(static_cast<cudaError_t>(p.launch(c, p.x->p, y_off.p, r)));
      KT_CHECK(cudaDeviceSynchronize());
      EXPECT_EQ(download(y_on.p, elements(r, n)), download(y_off.p, elements(r, n)))
          << c.to_tactic().str() << " " << where(p);
    }
    EXPECT_GT(staged, 0) << where(p);
    EXPECT_GT(staged_async, 0) << where(p); // the cp.async ring's twins among them
  }
}

// Staging forced wherever a kernel can (QmvAffineArgs::stage_parameters 1), on the small shapes
// with leftovers at int4 g64: short slices, K split over warps and cluster CTAs, clamped rows.
// Every config against the reference and its order's bits, staged ones among them.
TEST_F(QmvAffineKernel, ForcedStagingMatchesTheReferenceAndItsOrder) {
  for (const Case &c : check_cases(true, testing::minimal_shapes())) {
    if (c.bits != 4 || c.group != 64)
      continue;
    Problem p(c.rows, c.n, c.k, 4, 64);
    p.stage_parameters = 1;
    int staged = 0, staged_async = 0;
    for (const QmvAffineConfig &config : qmv_affine_configs(4)) {
      QmvAffineArgs a;
      a.rows = c.rows, a.n = c.n, a.k = c.k, a.bits = 4, a.group = 64;
      a.scales = p.s->p, a.biases = p.b->p, a.stage_parameters = 1;
      const bool s = qmv_affine_can_implement(config, c.rows, c.n, c.k, 4, 64, nullptr) &&
                     qmv_affine_stages_parameters(config, a);
      staged += s;
      staged_async += s && config.async;
    }
    if (c.rows <= 8 && c.k % 256 == 0) {
      EXPECT_GT(staged, 0) << where(p);
      EXPECT_GT(staged_async, 0) << where(p);
    }
    expect_clean(check_problem(p), p);
  }
}

// The kernels' 32-bit element offsets: a shape of 2^31 packed words or more is refused by name.
TEST(QmvAffineConfig, ShapesOfTwoToTheThirtyOneWordsAreRefused) {
  const QmvAffineConfig def = qmv_affine_default(1, 1 << 16, 1 << 14, 4, 64);
  std::string why;
  EXPECT_TRUE(qmv_affine_can_implement(def, 1, 1 << 16, 1 << 14, 4, 64, &why)) << why; // 2^27
  const QmvAffineConfig big = qmv_affine_default(1, 1 << 20, 1 << 14, 4, 64);
  EXPECT_FALSE(qmv_affine_can_implement(big, 1, 1 << 20, 1 << 14, 4, 64, &why)); // 2^31 words
  EXPECT_NE(why.find("2^31"), std::string::npos) << why;
  EXPECT_NE(why.find("n=1048576"), std::string::npos) << why;
}

// Which dequantisation a launch takes: the shape's by default, a requested one only where the
// shape allows it.
TEST(QmvAffineConfig, ChunkGroupsFollowBitsGroupAndK) {
  EXPECT_EQ(qmv_affine_chunk_groups(4, 128, 4096), 1);
  EXPECT_EQ(qmv_affine_chunk_groups(8, 64, 4096), 1);
  EXPECT_EQ(qmv_affine_chunk_groups(8, 32, 4096), 0);
  EXPECT_EQ(qmv_affine_chunk_groups(4, 32, 4096, true), 0);
  EXPECT_EQ(qmv_affine_chunk_groups(4, 64, 4096, true), 2);
  EXPECT_EQ(qmv_affine_chunk_groups(4, 64, 4096, false), 0);
  EXPECT_EQ(qmv_affine_chunk_groups(4, 64, 4096 + 64, true), 0); // a chunk cut by K
  EXPECT_EQ(qmv_affine_launch_chunk_groups(-1, 4, 64, 4096), qmv_affine_chunk_groups(4, 64, 4096));
  EXPECT_EQ(qmv_affine_launch_chunk_groups(2, 4, 64, 4096), 2);
  EXPECT_EQ(qmv_affine_launch_chunk_groups(2, 4, 64, 4096 + 64), -1);
  EXPECT_EQ(qmv_affine_launch_chunk_groups(2, 8, 32, 4096), -1);
  EXPECT_EQ(qmv_affine_launch_chunk_groups(1, 4, 64, 4096), -1);
  EXPECT_EQ(qmv_affine_launch_chunk_groups(1, 4, 128, 4096), 1);
  EXPECT_EQ(qmv_affine_launch_chunk_groups(0, 4, 128, 4096), 0);
}

TEST(QmvAffineConfig, EveryConfigRoundTripsAndMmaTacticsKeepTheirSpelling) {
  for (int bits : {4, 8}) {
    int stream = 0, grouped = 0, ring = 0;
    for (const QmvAffineConfig &c : qmv_affine_configs(bits)) {
      const std::string t = c.to_tactic().str();
      EXPECT_EQ(QmvAffineConfig::from_tactic(c.to_tactic()), c) << t;
      if (c.path == KernelPath::ring) {
        ++ring;
        EXPECT_EQ(t.rfind("qmv.affine.ring:", 0), 0u) << t;
        EXPECT_NE(t.find("stages="), std::string::npos) << t;
      } else if (c.path == KernelPath::stream) {
        ++stream;
        EXPECT_EQ(t.rfind("qmv.affine.stream:", 0), 0u) << t;
      } else if (c.path == KernelPath::grouped) {
        ++grouped;
        EXPECT_EQ(t.rfind("qmv.affine.grouped:", 0), 0u) << t;
        EXPECT_EQ(bits, 4) << t;
      } else {
        EXPECT_EQ(t.rfind("qmv.affine.mma:", 0), 0u) << t;
        EXPECT_EQ(t.find("stages"), std::string::npos) << t;
      }
    }
    EXPECT_GT(stream, 0) << "bits=" << bits;
    EXPECT_GT(ring, 0) << "bits=" << bits;
    EXPECT_EQ(grouped > 0, bits == 4) << "bits=" << bits;
  }
}

// The deeper register pipelines (`ahead=J`) sit beside their slot's own kernel: every
// one has a twin without `ahead` of the same CTA shape (so the same k_slices, K order and bits),
// none has a cp.async form, and an `ahead` the kernels do not have is refused by name.
TEST(QmvAffineConfig, DeeperPipelinesAreSpelledAheadBesideTheirSlotsOwn) {
  for (int bits : {4, 8}) {
    const std::vector<QmvAffineConfig> &configs = qmv_affine_configs(bits);
    std::set<int> depths;
    for (const QmvAffineConfig &c : configs) {
      if (c.ahead == 0)
        continue;
      const std::string t = c.to_tactic().str();
      depths.insert(c.ahead);
      EXPECT_EQ(c.path, KernelPath::mma) << t;
      EXPECT_EQ(c.async, 0) << t;
      EXPECT_NE(t.find(",ahead=" + std::to_string(c.ahead)), std::string::npos) << t;
      EXPECT_EQ(QmvAffineConfig::from_tactic(c.to_tactic()), c) << t;
      QmvAffineConfig own = c;
      own.ahead = 0;
      own.deep = 0;
      EXPECT_TRUE(std::find(configs.begin(), configs.end(), own) != configs.end()) << t;
      EXPECT_EQ(qmv_affine_k_slices(own), qmv_affine_k_slices(c)) << t;
      if (c.deep == 0) // deep=2 has slice rules of its own (DeepPipelineIsACandidate...)
        EXPECT_TRUE(qmv_affine_can_implement(c, c.rows_per_cta, 28672, 4096, bits, 64, nullptr))
            << t;
    }
    EXPECT_EQ(depths, bits == 4 ? (std::set<int>{2, 4}) : (std::set<int>{4})) << "bits=" << bits;
  }
  // The default spells `ahead=2` for int4 g64 at rows 1-8 with at most 8 K slices (the
  // parameter vectors of its J = 2 kernel): 28672 x 4096 (one slice), 6144 x 4096 (four),
  // 4096 x 4096 and 4096 x 14336 (eight) at rows 1 and 8, not at g128 or 8 bits there; and at
  // rows 9-16 for int4 (g64 and g128) where the 16-row two-m16 CTA's slices hold 12 chunks or
  // more: 28672 x 4096 (32) and 4096 x 14336 (14), not 6144 x 4096 (8) or 4096 x 4096 (4), not
  // at 8 bits, and not past 16 rows.
  if constexpr (kQmvParameterVectors) {
    for (int rows : {1, 8}) {
      EXPECT_EQ(qmv_affine_default(rows, 28672, 4096, 4, 64).ahead, 2) << rows;
      EXPECT_EQ(qmv_affine_default(rows, 6144, 4096, 4, 64).ahead, 2) << rows;
      EXPECT_EQ(qmv_affine_default(rows, 4096, 4096, 4, 64).ahead, 2) << rows;
      EXPECT_EQ(qmv_affine_default(rows, 4096, 14336, 4, 64).ahead, 2) << rows;
    }
  }
  for (int rows : {9, 16})
    for (int group : {64, 128}) {
      const std::string at = "rows=" + std::to_string(rows) + " g" + std::to_string(group);
      for (auto [n, k] : {std::pair{28672, 4096}, std::pair{4096, 14336}}) {
        const QmvAffineConfig d = qmv_affine_default(rows, n, k, 4, group);
        EXPECT_EQ(d.ahead, 2) << at << " " << n << "x" << k;
        EXPECT_EQ(d.rows_per_cta, 16) << at;
        EXPECT_EQ(d.outputs_per_warp, 32) << at;
      }
      EXPECT_EQ(qmv_affine_default(rows, 6144, 4096, 4, group).ahead, 0) << at;
      EXPECT_EQ(qmv_affine_default(rows, 4096, 4096, 4, group).ahead, 0) << at;
      EXPECT_EQ(qmv_affine_default(rows, 28672, 4096, 8, group).ahead, 0) << at;
    }
  EXPECT_EQ(qmv_affine_default(17, 28672, 4096, 4, 64).ahead, 0);
  EXPECT_EQ(qmv_affine_default(1, 28672, 4096, 4, 128).ahead, 0);
  EXPECT_EQ(qmv_affine_default(1, 28672, 4096, 8, 64).ahead, 0);
  const std::string base = "qmv.affine.mma:rows_per_cta=8,warps=4,warps_k=1,outputs_per_warp=16,"
                           "split_k=1";
  const std::string ahead3 = hone::testing::invalid_message(
      [&] { QmvAffineConfig::from_tactic(Tactic::parse(base + ",ahead=3")); });
  EXPECT_NE(ahead3.find("ahead=3 is not 1, 2 or 4"), std::string::npos) << ahead3;
  // A depth with no kernel of that slot: parsed, then refused by can_implement.
  const QmvAffineConfig one_ahead = QmvAffineConfig::from_tactic(Tactic::parse(base + ",ahead=1"));
  std::string reason;
  EXPECT_FALSE(qmv_affine_can_implement(one_ahead, 1, 4096, 4096, 4, 64, &reason));
  EXPECT_NE(reason.find("not a compiled"), std::string::npos) << reason;
  EXPECT_THROW(QmvAffineConfig::from_tactic(Tactic::parse(
                   "qmv.affine.grouped:rows_per_cta=4,warps=4,warps_k=4,outputs_per_warp=16,"
                   "split_k=1,ahead=2")),
               Error);
}

// `deep=2` (two blocks of words ahead, the staged parameters' DEEP twin): a candidate beside the
// same config without it (same CTA, k_slices and bits), only for the int4 one-tile J 2 slot of
// 8-row CTAs, spelled after `ahead=2`; can_implement takes it for int4 g64 where the slices hold an
// even kQmvAffineDeepMinChunks chunks or more and refuses it by name elsewhere.
TEST(QmvAffineConfig, DeepPipelineIsACandidateOfTheOneTileJ2SlotOnly) {
  EXPECT_TRUE(std::none_of(qmv_affine_configs(8).begin(), qmv_affine_configs(8).end(),
                           [](const QmvAffineConfig &c) { return c.deep != 0; }));
  const std::vector<QmvAffineConfig> &configs = qmv_affine_configs(4);
  int deep = 0;
  for (const QmvAffineConfig &c : configs) {
    if (c.deep == 0)
      continue;
    ++deep;
    const std::string t = c.to_tactic().str();
    EXPECT_EQ(c.deep, 2) << t;
    EXPECT_EQ(c.path, KernelPath::mma) << t;
    EXPECT_EQ(c.async, 0) << t;
    EXPECT_EQ(c.ahead, 2) << t;
    EXPECT_EQ(c.rows_per_cta, 8) << t;
    EXPECT_EQ(c.outputs_per_warp, 16) << t;
    EXPECT_NE(t.find(",ahead=2,deep=2"), std::string::npos) << t;
    EXPECT_EQ(QmvAffineConfig::from_tactic(c.to_tactic()), c) << t;
    QmvAffineConfig own = c;
    own.deep = 0;
    EXPECT_TRUE(std::find(configs.begin(), configs.end(), own) != configs.end()) << t;
    const int slices = qmv_affine_k_slices(c);
    // 28672 x 4096 holds 32 chunks a row: deep where a slice keeps 24 or more.
    std::string why;
    EXPECT_EQ(qmv_affine_can_implement(c, 1, 28672, 4096, 4, 64, &why), slices == 1) << t << why;
    if (slices == 1) {
      EXPECT_FALSE(qmv_affine_can_implement(c, 1, 28672, 4096, 4, 128, &why)) << t;
      EXPECT_NE(why.find("int4 g64 only"), std::string::npos) << why;
      EXPECT_FALSE(qmv_affine_can_implement(c, 1, 28672, 2048, 4, 64, &why)) << t;
      EXPECT_NE(why.find("slices of 16 chunks"), std::string::npos) << why;
      EXPECT_FALSE(qmv_affine_can_implement(c, 1, 28672, 4160, 4, 64, &why)) << t;
      EXPECT_NE(why.find("pairs of chunks"), std::string::npos) << why;
      // 4096 x 14336 at one slice stages 112 chunks a row: 14.5 KB a warp, so at most 2 warps
      // fit the 48 KB beside the partials; more are refused by name.
      EXPECT_EQ(qmv_affine_can_implement(c, 8, 4096, 14336, 4, 64, &why), c.warps <= 2)
          << t << why;
      if (c.warps > 2)
        EXPECT_NE(why.find("exceed the register pipeline's 48 KB"), std::string::npos) << why;
      EXPECT_TRUE(qmv_affine_can_implement(c, 16, 28672, 4096, 4, 64, &why)) << t << why;
      EXPECT_FALSE(qmv_affine_can_implement(c, 17, 28672, 4096, 4, 64, &why)) << t;
    }
  }
  EXPECT_GT(deep, 0);
  const std::string base = "qmv.affine.mma:rows_per_cta=8,warps=1,warps_k=1,outputs_per_warp=16,"
                           "split_k=1,ahead=2";
  const std::string deep4 = hone::testing::invalid_message(
      [&] { QmvAffineConfig::from_tactic(Tactic::parse(base + ",deep=4")); });
  EXPECT_NE(deep4.find("deep=4 is not compiled"), std::string::npos) << deep4;
  // Without ahead=2 there is no deep kernel of that slot: parsed, then refused by can_implement.
  const QmvAffineConfig no_ahead = QmvAffineConfig::from_tactic(
      Tactic::parse("qmv.affine.mma:rows_per_cta=8,warps=1,warps_k=1,outputs_per_warp=16,"
                    "split_k=1,deep=2"));
  EXPECT_EQ(no_ahead.deep, 2);
  std::string reason;
  EXPECT_FALSE(qmv_affine_can_implement(no_ahead, 1, 28672, 4096, 4, 64, &reason));
  EXPECT_NE(reason.find("not a compiled"), std::string::npos) << reason;
}

// K slices past the chunk count only where they still shorten the slices, and on the mma path
// only: on K = 896 (7 chunks of 128 values), 8 slices of the mma path (one chunk each, the last
// empty) are a shape like any other and 16 are refused by name, as 8 of the other paths are; on
// K = 4096 (32 chunks) every k_slices fits.
TEST(QmvAffineConfig, SlicesPastTheChunksOnlyWhereTheyShortenTheSlices) {
  int eight = 0, others = 0;
  for (const QmvAffineConfig &c : qmv_affine_configs(4)) {
    const int slices = qmv_affine_k_slices(c);
    const std::string t = c.to_tactic().str();
    std::string why;
    const bool ok = qmv_affine_can_implement(c, 1, 896, 896, 4, 64, &why);
    if (c.path != KernelPath::mma) { // the ring, stream and grouped kernels: a slice a chunk
      if (slices > 7 && slices < 14) {
        EXPECT_FALSE(ok) << t;
        EXPECT_NE(why.find("k_slices=" + std::to_string(slices) +
                           " is more than the 7 128-value K chunks"),
                  std::string::npos)
            << t << ": " << why;
        ++others;
      } else if (slices <= 7) {
        EXPECT_EQ(why.find("K chunks"), std::string::npos) << t << ": " << why;
      }
      continue;
    }
    if (slices >= 14) {
      EXPECT_FALSE(ok) << t;
      EXPECT_NE(why.find("k_slices=" + std::to_string(slices) +
                         " is twice the 7 128-value K chunks or more"),
                std::string::npos)
          << t << ": " << why;
    } else {
      EXPECT_EQ(why.find("K chunks"), std::string::npos) << t << ": " << why;
      eight += ok && slices == 8;
    }
    why.clear();
    qmv_affine_can_implement(c, 1, 4096, 4096, 4, 64, &why);
    EXPECT_EQ(why.find("K chunks"), std::string::npos) << t << ": " << why;
  }
  EXPECT_GT(eight, 0) << "no 8-slice config runs K = 896";
  EXPECT_GT(others, 0) << "no 8-slice config of another path";
}

// `shallow=C` (the shallow kernels: a warp's whole slice at once) is compiled for int4 only, as
// 8-row CTAs of one m16 tile or of its lower half (outputs_per_warp 8) beside the register
// pipeline's own configs of the same CTA (the same k_slices, so the same bits), spelled last;
// can_implement takes shallow=2 for slices of 1-2 chunks and shallow=4 for 3-4, at rows 1-8, per
// weight or factored, and refuses the rest by name.
TEST(QmvAffineConfig, ShallowKernelsTakeSlicesOfUpToFourChunksAtRowsOneToEight) {
  EXPECT_TRUE(std::none_of(qmv_affine_configs(8).begin(), qmv_affine_configs(8).end(),
                           [](const QmvAffineConfig &c) { return c.shallow != 0; }));
  const std::vector<QmvAffineConfig> &configs = qmv_affine_configs(4);
  std::set<int> depths, rows;
  for (const QmvAffineConfig &c : configs) {
    if (c.shallow == 0)
      continue;
    depths.insert(c.shallow);
    rows.insert(c.outputs_per_warp);
    const std::string t = c.to_tactic().str();
    EXPECT_EQ(c.path, KernelPath::mma) << t;
    EXPECT_EQ(c.async + c.ahead + c.deep, 0) << t;
    EXPECT_EQ(c.rows_per_cta, 8) << t;
    EXPECT_NE(t.find(",shallow=" + std::to_string(c.shallow)), std::string::npos) << t;
    EXPECT_EQ(QmvAffineConfig::from_tactic(c.to_tactic()), c) << t;
    QmvAffineConfig own = c; // the register pipeline's config of the same CTA and k_slices
    own.shallow = 0;
    own.outputs_per_warp = 16;
    EXPECT_TRUE(std::find(configs.begin(), configs.end(), own) != configs.end()) << t;
    // 4096 x 4096 holds 32 chunks a row: slices of 2 at 16 K slices, 4 at 8. Its 16-row grid
    // holds 256 x k_slices warps, too many for 8-row warps at 8 slices or more.
    const int slices = qmv_affine_k_slices(c);
    const int slice = (32 + slices - 1) / slices;
    std::string why;
    if (c.outputs_per_warp == 8) {
      // Refused at every k_slices: slices too long for the kernel below 8, the grid from 8.
      EXPECT_EQ(qmv_affine_can_implement(c, 1, 4096, 4096, 4, 64, &why), false) << t;
      if (slices >= 8)
        EXPECT_NE(why.find("outputs_per_warp=8 where the 16-row grid holds " +
                           std::to_string(256 * slices) + " warps"),
                  std::string::npos)
            << why;
      // 896 x 896: 56 m16 tiles, 7 chunks a row; shallow=2 takes slices of 2 (4 K slices) and
      // of 1 (8 K slices, the last one empty); 16 slices are twice the chunks.
      const bool small = qmv_affine_slice_chunks(c, 896, 4) <= c.shallow &&
                         qmv_affine_slice_chunks(c, 896, 4) >= (c.shallow == 2 ? 1 : 3) &&
                         slices < 2 * 7;
      EXPECT_EQ(qmv_affine_can_implement(c, 1, 896, 896, 4, 64, &why), small) << t << why;
      continue;
    }
    const bool fits = slice <= c.shallow && slice >= (c.shallow == 2 ? 1 : 3);
    for (int group : {32, 64, 128})
      EXPECT_EQ(qmv_affine_can_implement(c, 1, 4096, 4096, 4, group, &why), fits)
          << t << " g" << group << " " << why;
    if (!fits) {
      EXPECT_NE(why.find("slices of " + std::to_string(slice) + " chunks"), std::string::npos)
          << why;
      continue;
    }
    EXPECT_TRUE(qmv_affine_can_implement(c, 8, 4096, 4096, 4, 64, &why)) << t << why;
    EXPECT_FALSE(qmv_affine_can_implement(c, 9, 4096, 4096, 4, 64, &why)) << t;
    EXPECT_NE(why.find("rows=9 outside 1..8"), std::string::npos) << why;
  }
  EXPECT_EQ(depths, (std::set<int>{2, 4}));
  EXPECT_EQ(rows, (std::set<int>{8, 16}));
  // Warps of 8 rows are the shallow kernels' alone.
  for (const QmvAffineConfig &c : configs)
    if (c.outputs_per_warp == 8)
      EXPECT_GT(c.shallow, 0) << c.to_tactic().str();
  const std::string base =
      "qmv.affine.mma:rows_per_cta=8,warps=8,warps_k=8,outputs_per_warp=16,split_k=1";
  const std::string three = hone::testing::invalid_message(
      [&] { QmvAffineConfig::from_tactic(Tactic::parse(base + ",shallow=3")); });
  EXPECT_NE(three.find("shallow=3 is not"), std::string::npos) << three;
  const std::string one = hone::testing::invalid_message(
      [&] { QmvAffineConfig::from_tactic(Tactic::parse(base + ",shallow=1")); });
  EXPECT_NE(one.find("shallow=1 is not compiled"), std::string::npos) << one;
  // Parsed at 8 bits, then refused there by name.
  const QmvAffineConfig four = QmvAffineConfig::from_tactic(Tactic::parse(base + ",shallow=4"));
  EXPECT_EQ(four.shallow, 4);
  std::string reason;
  EXPECT_FALSE(qmv_affine_can_implement(four, 1, 4096, 4096, 8, 64, &reason));
  EXPECT_FALSE(reason.empty());
  EXPECT_TRUE(qmv_affine_can_implement(four, 1, 4096, 4096, 4, 128, &reason)) << reason;
}

TEST(QmvAffineConfig, StreamDefaultOrderDoesNotDependOnRowsAndRoundTrips) {
  for (int n : {72, 1000, 4096, 14336})
    for (int k : {64, 1152, 4096, 14336})
      for (int bits : {4, 8}) {
        const int slices = qmv_affine_k_slices(qmv_affine_stream_default(1, n, k, bits, 64));
        for (int rows = 1; rows <= 32; ++rows) {
          const QmvAffineConfig c = qmv_affine_stream_default(rows, n, k, bits, 64);
          EXPECT_EQ(c.path, KernelPath::stream);
          EXPECT_EQ(qmv_affine_k_slices(c), slices) << n << "x" << k << " rows " << rows;
          std::string why;
          EXPECT_TRUE(qmv_affine_can_implement(c, rows, n, k, bits, 64, &why)) << why;
          EXPECT_EQ(QmvAffineConfig::from_tactic(c.to_tactic()), c) << c.to_tactic().str();
        }
      }
}

TEST(QmvAffineConfig, GroupedDefaultOrderDoesNotDependOnRowsAndRoundTrips) {
  for (int n : {72, 1000, 4096, 14336})
    for (int k : {128, 1152, 4096, 14336})
      for (int group : {32, 64, 128}) {
        const int slices = qmv_affine_k_slices(qmv_affine_grouped_default(1, n, k, 4, group));
        for (int rows = 1; rows <= 32; ++rows) {
          const QmvAffineConfig c = qmv_affine_grouped_default(rows, n, k, 4, group);
          EXPECT_EQ(c.path, KernelPath::grouped);
          EXPECT_EQ(qmv_affine_k_slices(c), slices) << n << "x" << k << " rows " << rows;
          std::string why;
          EXPECT_TRUE(qmv_affine_can_implement(c, rows, n, k, 4, group, &why))
              << n << "x" << k << " g" << group << " rows " << rows << ": " << why;
          EXPECT_EQ(QmvAffineConfig::from_tactic(c.to_tactic()), c) << c.to_tactic().str();
        }
      }
  // Not a multiple of the 128-value chunk, or 8 bits: refused with the reason.
  std::string why;
  EXPECT_FALSE(qmv_affine_can_implement(qmv_affine_grouped_default(1, 64, 1088, 4, 64), 1, 64,
                                        1088, 4, 64, &why));
  EXPECT_NE(why.find("k=1088"), std::string::npos) << why;
  EXPECT_FALSE(qmv_affine_can_implement(qmv_affine_grouped_default(1, 64, 1024, 8, 64), 1, 64, 1024,
                                        8, 64, &why));
}

TEST(QmvAffineConfig, RingConfigsFitTheirSharedMemoryAndCoverEveryMmaOrder) {
  for (int bits : {4, 8}) {
    int ring = 0, own_step = 0, wide_pairs = 0, halved_step = 0, three_stages = 0;
    for (const QmvAffineConfig &c : qmv_affine_configs(bits)) {
      if (c.path != KernelPath::ring)
        continue;
      ++ring;
      const std::string t = c.to_tactic().str();
      EXPECT_EQ(c.split_k, 1) << t;
      // Two CTAs per SM past 7 consumers (8 warps), where the kernel's registers let the pair
      // fit the register file (RingPairsFitTheRegisterFile holds each to its kernel).
      wide_pairs += c.ctas_per_sm == 2 && c.warps > 7;
      // At the rule's step, two or three stages only where four do not fit.
      if (c.stages < 4 && c.step_chunks == 0) {
        three_stages += c.stages == 3;
        QmvAffineConfig four = c;
        four.stages = 4;
        EXPECT_FALSE(ring_fits(four, four, qmv_affine_chunk_k(bits))) << t;
      }
      EXPECT_EQ(c.warps % c.warps_k, 0) << t;
      const int chunk_k = qmv_affine_chunk_k(bits); // bf16 activations per row and chunk
      const int step = ring_step_chunks(c, c, chunk_k);
      EXPECT_TRUE(step == 1 || step == 2 || step == 4) << t;
      // The tactic spells its own step, and only then.
      EXPECT_EQ(QmvAffineConfig::from_tactic(c.to_tactic()), c) << t;
      EXPECT_EQ(t.find(",step="), c.step_chunks > 0 ? t.rfind(",step=") : std::string::npos) << t;
      // A tile is one TMA box high (at most 256 rows).
      EXPECT_LE(ring_tile_rows(c), 256) << t;
      // A stage's chunk: every slice's weights of the tile and the CTA's activation rows.
      const int per_chunk =
          c.warps_k * (ring_tile_rows(c) * kRingChunkBytes + c.rows_per_cta * 2 * chunk_k);
      EXPECT_EQ(ring_chunk_bytes(c, chunk_k), per_chunk) << t;
      if (c.step_chunks == 0) {
        // The rule: the most chunks (4, 2, 1) whose step stays within the target.
        EXPECT_EQ(step == 4, 4 * per_chunk <= kRingStepTarget) << t;
        EXPECT_EQ(step >= 2, 2 * per_chunk <= kRingStepTarget) << t;
      } else {
        // Its own: two chunks only where the rule takes one and two stay within the maximum, or
        // where the rule takes four and four stages fit only at two (then in four stages).
        ++own_step;
        EXPECT_EQ(c.step_chunks, 2) << t;
        const int rule = ring_rule_step_chunks(c, chunk_k);
        EXPECT_TRUE(rule == 1 || rule == 4) << t;
        EXPECT_LE(2 * per_chunk, kRingStepMax) << t;
        if (rule == 4) {
          ++halved_step;
          EXPECT_EQ(c.stages, 4) << t;
          QmvAffineConfig at_rule = c;
          at_rule.step_chunks = 0;
          EXPECT_GT(static_cast<size_t>(ring_shared_bytes(at_rule, at_rule, chunk_k)) *
                        c.ctas_per_sm,
                    kStreamMaxSharedBytes)
              << t << ": four stages fit at the rule's step";
        }
      }
      // A launch never takes more chunks per step than a slice has, nor fewer than it needs.
      for (int slice_chunks : {1, 2, 3, 4, 5, 64}) {
        const int launch = ring_launch_step_chunks(c, c, chunk_k, slice_chunks);
        EXPECT_LE(launch, step) << t;
        EXPECT_TRUE(launch <= slice_chunks && (launch == step || 2 * launch > slice_chunks))
            << t << " slice_chunks=" << slice_chunks;
      }
      EXPECT_LE(static_cast<size_t>(ring_shared_bytes(c, c, chunk_k)) * c.ctas_per_sm,
                kStreamMaxSharedBytes)
          << t;
      EXPECT_EQ(ring_shared_bytes(c, c, chunk_k),
                256 + c.warps * c.outputs_per_warp / 16 * c.rows_per_cta / 8 * 512 +
                    c.stages * step * per_chunk)
          << t;
    }
    EXPECT_GT(ring, 0) << "bits=" << bits;
    EXPECT_GT(wide_pairs, 0) << "bits=" << bits << ": no pair of 8 or more consumers";
    EXPECT_GT(three_stages, 0) << "bits=" << bits;
    EXPECT_GT(halved_step, 0) << "bits=" << bits
                              << ": no two-chunk step where four stages of four do not fit";
    // The 8-slice, 32-row tiles of 8 activation rows step one chunk by the rule: they also come
    // with two-chunk steps.
    EXPECT_GT(own_step, 0) << "bits=" << bits;
    // A step other than 1, 2 or 4 chunks is refused by name.
    for (const QmvAffineConfig &c : qmv_affine_configs(bits))
      if (c.path == KernelPath::ring && c.step_chunks == 0) {
        const std::string bad = c.to_tactic().str() + ",step=3";
        try {
          QmvAffineConfig::from_tactic(Tactic::parse(bad));
          ADD_FAILURE() << bad << " was accepted";
        } catch (const Error &e) {
          EXPECT_NE(std::string(e.what()).find("step=3"), std::string::npos) << e.what();
        }
        break;
      }
    // 17-32 rows also with two m16 tiles per warp (the activation fragments serve twice the
    // weights), at up to 4 consumers, for every K order up to 4 slices.
    for (int slices : {1, 2, 4}) {
      int two_tiles = 0;
      for (const QmvAffineConfig &c : qmv_affine_configs(bits))
        if (c.path == KernelPath::ring && c.rows_per_cta == 32 && c.outputs_per_warp == 32 &&
            qmv_affine_k_slices(c) == slices) {
          ++two_tiles;
          EXPECT_LE(c.warps, 4) << c.to_tactic().str();
        }
      EXPECT_GT(two_tiles, 0) << "bits=" << bits << " k_slices=" << slices;
    }
    // Every K order of the mma path up to 8 slices has a ring config at every row count, so a
    // batch-invariant tune can pick the ring path whatever the shape's default order is.
    for (int rows = 1; rows <= 32; ++rows)
      for (int slices : {1, 2, 4, 8}) {
        bool found = false;
        for (const QmvAffineConfig &c : qmv_affine_configs(bits))
          found = found || (c.path == KernelPath::ring && qmv_affine_k_slices(c) == slices &&
                            qmv_affine_can_implement(c, rows, 4096, 4096, bits, 64, nullptr));
        EXPECT_TRUE(found) << "bits=" << bits << " rows=" << rows << " k_slices=" << slices;
      }
  }
  // Weights once: all rows in the CTA, so a config of fewer rows is refused with the reason.
  for (const QmvAffineConfig &c : qmv_affine_configs(4))
    if (c.path == KernelPath::ring && c.rows_per_cta == 8) {
      std::string why;
      EXPECT_FALSE(qmv_affine_can_implement(c, 9, 4096, 4096, 4, 64, &why));
      EXPECT_NE(why.find("ring path reads the weights once"), std::string::npos) << why;
      // No K guard in the kernel: K must be a multiple of the chunk.
      EXPECT_FALSE(qmv_affine_can_implement(c, 1, 4096, 1088, 4, 64, &why));
      EXPECT_NE(why.find("k=1088 is not a multiple of 128"), std::string::npos) << why;
      EXPECT_TRUE(qmv_affine_can_implement(c, 1, 4096, 1152, 4, 64, &why)) << why;
      break;
    }
}

// Two CTAs of ring_pair_consumers(r) consumers and their producers fit the 64 K registers at r
// registers a thread as allocated (steps of 8), and one consumer more would not.
TEST(QmvAffineConfig, RingPairConsumersFillTheRegisterFile) {
  for (int registers = 24; registers <= 255; ++registers) {
    const int allocated = (registers + 7) / 8 * 8;
    const int c = ring_pair_consumers(registers);
    EXPECT_LE(2 * (c + 1) * 32 * allocated, 65536) << registers << " registers";
    EXPECT_GT(2 * (c + 2) * 32 * allocated, 65536) << registers << " registers";
  }
}

// The ring twin of an mma config (ChainLaunch::weights_once) computes its K order: the ring
// path at the same k_slices, and one that can run the shape; none for the other paths or where
// the ring's chunk does not divide K.
TEST(QmvAffineConfig, RingTwinKeepsTheMmaConfigsOrder) {
  int twins = 0;
  for (int bits : {4, 8})
    for (int rows : {1, 8, 9, 16, 24, 32})
      for (const auto &[n, k] : {std::pair{4096, 4096}, std::pair{28672, 4096},
                                 std::pair{4096, 14336}, std::pair{1536, 8960}}) {
        for (const QmvAffineConfig &c : qmv_affine_configs(bits)) {
          if (c.path != KernelPath::mma ||
              !qmv_affine_can_implement(c, rows, n, k, bits, 64, nullptr))
            continue;
          const std::optional<QmvAffineConfig> twin = qmv_affine_ring_twin(c, rows, n, k, bits, 64);
          if (!twin)
            continue;
          ++twins;
          EXPECT_EQ(twin->path, KernelPath::ring) << c.to_tactic().str();
          EXPECT_EQ(qmv_affine_k_slices(*twin), qmv_affine_k_slices(c)) << c.to_tactic().str();
          EXPECT_TRUE(qmv_affine_can_implement(*twin, rows, n, k, bits, 64, nullptr))
              << twin->to_tactic().str() << " rows=" << rows << " n=" << n << " k=" << k;
        }
        // The step's linears at one row with no cache run the default, which has one.
        if (rows == 1 && n != 1536)
          EXPECT_TRUE(
              qmv_affine_ring_twin(qmv_affine_default(1, n, k, bits, 64), 1, n, k, bits, 64))
              << "bits=" << bits << " n=" << n << " k=" << k;
      }
  EXPECT_GT(twins, 0);
  const QmvAffineConfig ring = qmv_affine_ring_default(1, 72, 4096, 4, 64);
  EXPECT_EQ(qmv_affine_ring_twin(ring, 1, 4096, 4096, 4, 64), ring);
  EXPECT_FALSE(
      qmv_affine_ring_twin(qmv_affine_stream_default(1, 4096, 4096, 4, 64), 1, 4096, 4096, 4, 64));
  EXPECT_FALSE(
      qmv_affine_ring_twin(qmv_affine_grouped_default(1, 4096, 4096, 4, 64), 1, 4096, 4096, 4, 64));
  // K = 1088: a multiple of the group, not of the ring's 128-value chunk.
  EXPECT_FALSE(
      qmv_affine_ring_twin(qmv_affine_default(1, 4096, 1088, 4, 64), 1, 4096, 1088, 4, 64));
}

TEST(QmvAffineConfig, RingDefaultKeepsTheMmaDefaultOrderAndRuns) {
  for (int n : {72, 1000, 4096, 14336, 28672})
    for (int k : {1152, 4096, 14336})
      for (int bits : {4, 8})
        for (int group : {64, 128}) {
          const QmvAffineConfig mma = qmv_affine_default(1, n, k, bits, group);
          for (int rows = 1; rows <= 32; ++rows) {
            const QmvAffineConfig c = qmv_affine_ring_default(rows, n, k, bits, group);
            const std::string t = c.to_tactic().str();
            EXPECT_EQ(c.path, KernelPath::ring) << t;
            // The mma default's order, so the same bits: the switch changes speed only.
            EXPECT_EQ(qmv_affine_k_slices(c), qmv_affine_k_slices(mma)) << t << " rows " << rows;
            EXPECT_EQ(QmvAffineConfig::from_tactic(c.to_tactic()), c) << t;
            std::string why;
            const int most = c.rows_per_cta == 8 ? 16 : 8; // consumers of its kernel
            EXPECT_EQ(qmv_affine_can_implement(c, rows, n, k, bits, group, &why),
                      qmv_affine_k_slices(c) <= most)
                << t << " rows " << rows << ": " << why;
          }
        }
}

TEST(QmvAffineConfig, DefaultOrderDoesNotDependOnRows) {
  for (int n : {72, 896, 1000, 4096, 14336})
    for (int k : {896, 1152, 4096, 14336})
      for (int bits : {4, 8}) {
        const int slices = qmv_affine_k_slices(qmv_affine_default(1, n, k, bits, 64));
        for (int rows = 2; rows <= 32; ++rows) {
          const QmvAffineConfig c = qmv_affine_default(rows, n, k, bits, 64);
          EXPECT_EQ(qmv_affine_k_slices(c), slices) << n << "x" << k << " rows " << rows;
          std::string why;
          EXPECT_TRUE(qmv_affine_can_implement(c, rows, n, k, bits, 64, &why)) << why;
        }
      }
}

// The default's k_slices of (n, k, bits) at group 64, the same at rows 1, 16 and 32.
struct DefaultSlices {
  int n, k, bits, slices;
};
void expect_default_slices(std::initializer_list<DefaultSlices> cases) {
  for (const DefaultSlices &c : cases)
    for (int rows : {1, 16, 32})
      EXPECT_EQ(qmv_affine_k_slices(qmv_affine_default(rows, c.n, c.k, c.bits, 64)), c.slices)
          << c.n << "x" << c.k << " " << c.bits << " bits rows=" << rows;
}

// A small matrix splits K until its launch has about 4 warps per SM (the fill floor, down to
// one chunk per slice); a large one keeps the fitted rule's split.
TEST(QmvAffineConfig, SmallMatricesSplitKUntilTheLaunchFillsTheGpu) {
  expect_default_slices({
      {896, 896, 4, 4},   // 7 chunks of 128: 2 slices under the 3-chunk minimum; 224 warps at 4
      {896, 896, 8, 8},   // 14 chunks of 64: 4 under the minimum; 448 warps at 8
      {1152, 896, 4, 4},  // 72 m16 tiles: 8 slices would be 576 warps
      {896, 4864, 4, 8},  // the fitted rule's split, already at the floor
      {4096, 4096, 4, 8}, // the fitted rule's split is above the floor
      {28672, 4096, 4, 1},
  });
}

// The fitted rule's slices of at least 3 chunks: 9728 x 896 (7 chunks) splits K in 2, where
// slices of 4 chunks left it unsplit, 1.29-1.36x the fastest split at one row on an H100
// (docs/notes/qmv_affine.md v28); the matrices of more rows keep their split.
TEST(QmvAffineConfig, MidSizeMatricesOfShortKSplitK) {
  expect_default_slices({
      {9728, 896, 4, 2},   // 608 m16 tiles, 7 chunks: 2 slices of 3.5
      {17920, 1536, 4, 1}, // 1120 tiles: 2240 warps at 2 slices, over the target
      {8960, 1536, 4, 2},  // 560 tiles: 2240 warps at 4
      {14336, 4096, 4, 2}, // 4 slices would be 3584 warps
      {6144, 4096, 4, 4},
      {28672, 4096, 4, 1},
      {1536, 1536, 8, 8}, // 24 chunks of 64 values: 8 slices of 3
  });
}

// Past 8 rows the default's CTA follows the weight size (the K order does not change): small
// matrices run the rows in groups with one m16 tile per warp, larger ones all the rows in one CTA
// with two; where that has no kernel (16 K slices) it keeps the cp.async-ring CTA of 16 rows.
TEST(QmvAffineConfig, PastEightRowsTheDefaultCtaFollowsTheWeightSize) {
  const struct {
    int rows, n, k, bits, rows_per_cta, outputs_per_warp, async;
  } cases[] = {
      {16, 896, 896, 4, 8, 16, 0},     // 0.4 MB: two groups of 8 rows
      {32, 896, 896, 4, 16, 16, 0},    // two groups of 16
      {16, 17920, 1536, 4, 8, 16, 0},  // 13.8 MB, but K of 1536
      {16, 4096, 4096, 4, 16, 32, 1},  // 8.4 MB: one CTA of 16 rows, two m16 tiles a warp
                                       // (int4 g64: the cp.async kernel)
      {32, 28672, 4096, 4, 32, 32, 1}, // one CTA of 32 rows
      {24, 4096, 14336, 8, 32, 32, 0}, // 17-32 rows take the 32-row CTA
      {16, 1536, 8960, 4, 16, 32, 1},  // 16 K slices: the ring CTA
      {1, 28672, 4096, 4, 8, 16, 0},   // up to 8 rows: unchanged
  };
  for (const auto &c : cases) {
    const QmvAffineConfig d = qmv_affine_default(c.rows, c.n, c.k, c.bits, 64);
    EXPECT_EQ(d.rows_per_cta, c.rows_per_cta) << c.n << "x" << c.k << " rows=" << c.rows;
    EXPECT_EQ(d.outputs_per_warp, c.outputs_per_warp) << c.n << "x" << c.k << " rows=" << c.rows;
    EXPECT_EQ(d.async, c.async) << c.n << "x" << c.k << " rows=" << c.rows;
    EXPECT_EQ(qmv_affine_k_slices(d),
              qmv_affine_k_slices(qmv_affine_default(1, c.n, c.k, c.bits, 64)));
  }
}

// At one K slice the register pipeline's default CTA is one warp, at every row count, bits and
// group; split K keeps the CTA of its slices.
TEST(QmvAffineConfig, AtOneKSliceTheDefaultCtaIsOneWarp) {
  for (int bits : {4, 8})
    for (int group : {64, 128})
      for (int rows : {1, 4, 8, 9, 16, 24, 32}) {
        const QmvAffineConfig big = qmv_affine_default(rows, 28672, 4096, bits, group);
        EXPECT_EQ(qmv_affine_k_slices(big), 1);
        EXPECT_EQ(big.warps, 1) << bits << " bits g" << group << " rows=" << rows;
        std::string why;
        EXPECT_TRUE(qmv_affine_can_implement(big, rows, 28672, 4096, bits, group, &why)) << why;
        const QmvAffineConfig split = qmv_affine_default(rows, 4096, 4096, bits, group);
        EXPECT_EQ(split.warps, split.warps_k) << bits << " bits g" << group << " rows=" << rows;
        EXPECT_GT(split.warps, 1);
      }
}

// Up to 8 rows, int4 g128 (one group a chunk) takes two m16 tiles a warp on weights of 20 MB or
// more and one below; g64 keeps its J 2 one-tile kernel. The K order is the one-tile CTA's.
TEST(QmvAffineConfig, FactoredLargeWeightsTakeTwoTilesUpToEightRows) {
  const struct {
    int n, k, group, outputs_per_warp;
  } cases[] = {
      {28672, 4096, 128, 32}, // 58.7 MB
      {4096, 14336, 128, 32}, // 29.4 MB
      {6144, 4096, 128, 16},  // 12.6 MB
      {4096, 4096, 128, 16},  {28672, 4096, 64, 16},
  };
  for (const auto &c : cases)
    for (int rows : {1, 4, 8}) {
      const QmvAffineConfig d = qmv_affine_default(rows, c.n, c.k, 4, c.group);
      EXPECT_EQ(d.rows_per_cta, 8);
      EXPECT_EQ(d.outputs_per_warp, c.outputs_per_warp)
          << c.n << "x" << c.k << " g" << c.group << " rows=" << rows;
      EXPECT_EQ(qmv_affine_k_slices(d),
                qmv_affine_k_slices(qmv_affine_default(16, c.n, c.k, 4, c.group)));
      std::string why;
      EXPECT_TRUE(qmv_affine_can_implement(d, rows, c.n, c.k, 4, c.group, &why)) << why;
    }
}

// Past 8 rows, int4 g64's two-tile CTA takes its cp.async kernel (the same K order) where its
// slices hold an even 4 chunks or more, unless the 16-row CTA takes its J 2 kernel; g128 keeps the
// register pipeline.
TEST(QmvAffineConfig, PastEightRowsInt4G64TakesTheCpAsyncKernel) {
  const struct {
    int rows, n, k, group, async, ahead;
  } cases[] = {
      {16, 4096, 4096, 64, 1, 0},                             // 8 slices of 4 chunks
      {16, 6144, 4096, 64, 1, 0},                             // 4 slices of 8
      {32, 4096, 14336, 64, 1, 0},                            // 8 slices of 14
      {24, 28672, 4096, 64, 1, 0},                            // one slice of 32, one warp
      {16, 4096, 14336, 64, 0, 2},                            // the J 2 kernel at 14 chunks
      {16, 28672, 4096, 64, 0, 2},                            // and at 32
      {16, 4096, 4096, 128, 0, 0},                            // factored
      {32, 4096, 14336, 128, 0, 0}, {16, 896, 896, 64, 0, 0}, // small: one m16 tile a warp
  };
  for (const auto &c : cases) {
    const QmvAffineConfig d = qmv_affine_default(c.rows, c.n, c.k, 4, c.group);
    EXPECT_EQ(d.async, c.async) << c.n << "x" << c.k << " g" << c.group << " rows=" << c.rows;
    EXPECT_EQ(d.ahead, c.ahead) << c.n << "x" << c.k << " g" << c.group << " rows=" << c.rows;
    EXPECT_EQ(qmv_affine_k_slices(d),
              qmv_affine_k_slices(qmv_affine_default(1, c.n, c.k, 4, c.group)));
    std::string why;
    EXPECT_TRUE(qmv_affine_can_implement(d, c.rows, c.n, c.k, 4, c.group, &why)) << why;
  }
}

// Every ring config offered at two CTAs per SM fits twice in the register file at its compiled
// kernel's registers (as allocated, in steps of 8): the kernel tables' REGISTERS are ptxas's
// counts, so a kernel that grew since fails here rather than timing as its one-CTA twin.
TEST_F(QmvAffineKernel, RingPairsFitTheRegisterFile) {
  int pairs = 0;
  for (int bits : {4, 8})
    for (const QmvAffineConfig &c : qmv_affine_configs(bits))
      if (c.path == KernelPath::ring && c.ctas_per_sm == 2) {
        ++pairs;
        const int allocated = (qmv_affine_resources(c, bits).registers + 7) / 8 * 8;
        EXPECT_LE(2 * (c.warps + 1) * 32 * allocated, 65536)
            << c.to_tactic().str() << ": " << allocated << " registers a thread";
      }
  EXPECT_GT(pairs, 0);
}

TEST_F(QmvAffineKernel, NoCompiledConfigSpills) {
  for (int bits : {4, 8})
    for (const QmvAffineConfig &c : qmv_affine_configs(bits)) {
      const KernelResources r = qmv_affine_resources(c, bits);
      EXPECT_GT(r.registers, 0) << c.to_tactic().str();
      EXPECT_EQ(r.local_bytes, 0u) << c.to_tactic().str();
    }
}

#else // standalone: checks, then the timing matrix

// The bytes a launch must read: the packed words and the bf16 scales and biases.
size_t weight_bytes(const Problem &p) { return p.words() * 4 + p.groups() * 4; }

std::string short_name(const QmvAffineConfig &c) {
  char buf[64];
  if (c.path == KernelPath::stream)
    std::snprintf(buf, sizeof buf, "stream r%d w%d st%d c%d", c.rows_per_cta, c.warps_k, c.stages,
                  c.ctas_per_sm);
  else if (c.path == KernelPath::ring)
    std::snprintf(buf, sizeof buf, "ring r%d w%d k%d o%d st%d c%d", c.rows_per_cta, c.warps,
                  c.warps_k, c.outputs_per_warp, c.stages, c.ctas_per_sm);
  else if (c.path == KernelPath::grouped)
    std::snprintf(buf, sizeof buf, "grouped r%d w%d k%d o%d s%d", c.rows_per_cta, c.warps,
                  c.warps_k, c.outputs_per_warp, c.split_k);
  else
    std::snprintf(buf, sizeof buf, "r%d w%d k%d o%d s%d%s%s%s%s", c.rows_per_cta, c.warps,
                  c.warps_k, c.outputs_per_warp, c.split_k, c.async ? " a" : "",
                  c.ahead ? (" j" + std::to_string(c.ahead)).c_str() : "", c.deep ? " deep" : "",
                  c.shallow ? (" sh" + std::to_string(c.shallow)).c_str() : "");
  return buf;
}

// --pattern: loads-only reads of the packed words in the kernels' own access patterns, to tell
// the access pattern and the bytes in flight apart from the arithmetic. Each warp takes one
// 16-row tile over all of K.
//   tile<J>: lane (g, t) reads words 4t..4t+3 of each 16-word chunk of rows g and g + 8 (the
//            mma and grouped kernels' fragment loads), J chunks in flight;
//   row<J>:  lane l reads bytes 16 l.. of each 512-byte step of every row of the tile (one
//            contiguous 512 bytes per warp instruction), J steps of all 16 rows in flight.
// The loads-only ceiling graphs of `bytes` at each of `copies` rotated copies: 2, 4 and 8 CTAs
// per SM (the ceiling is the best of them).
void add_ceiling_graphs(std::vector<std::unique_ptr<GraphBatch>> &graphs,
                        const std::vector<std::unique_ptr<DeviceMem>> &qs, size_t bytes,
                        uint32_t *sink, int batch, cudaStream_t stream) {
  const int copies = static_cast<int>(qs.size());
  for (int per_sm : {2, 4, 8})
    graphs.push_back(std::make_unique<GraphBatch>(
        [&qs, bytes, sink, per_sm](int copy, cudaStream_t st) {
          load_only(qs[static_cast<size_t>(copy)]->p, bytes, per_sm, sink, st);
        },
        batch, copies, stream));
}

// The xor of a loaded vector. With the loop not unrolled and __launch_bounds__(256, 1) (ptxas
// otherwise interleaves loads and uses to save registers), the SASS issues a pattern's loads of
// one step back to back before the first use (nvdisasm: tile J issues 2 J LDG.128, row J 16 J).
__device__ __forceinline__ uint32_t fold(const uint4 &v) {
  uint32_t r;
  asm volatile("{\n\t.reg .b32 a;\n\txor.b32 a, %1, %2;\n\txor.b32 a, a, %3;\n\txor.b32 %0, a, %4;\n\t}"
               : "=r"(r)
               : "r"(v.x), "r"(v.y), "r"(v.z), "r"(v.w));
  return r;
}

template <int J, bool ROW>
__global__ void __launch_bounds__(256, 1)
    pattern_kernel(const uint32_t *q, int n, int words_per_row, uint32_t *sink) {
  const int lane = static_cast<int>(threadIdx.x) & 31;
  const int tile = static_cast<int>(blockIdx.x) * static_cast<int>(blockDim.x / 32) +
                   static_cast<int>(threadIdx.x / 32);
  if (tile * 16 >= n)
    return;
  uint32_t acc = 0;
  if constexpr (!ROW) {
    const int g = lane >> 2, t = lane & 3;
    const uint32_t *p0 = q + static_cast<size_t>(min(tile * 16 + g, n - 1)) * words_per_row + 4 * t;
    const uint32_t *p1 =
        q + static_cast<size_t>(min(tile * 16 + g + 8, n - 1)) * words_per_row + 4 * t;
    const int chunks = words_per_row / 16;
#pragma unroll 1
    for (int c = 0; c + J <= chunks; c += J) {
      uint4 v[J][2];
#pragma unroll
      for (int j = 0; j < J; ++j) {
        v[j][0] = ld_stream(p0 + (c + j) * 16);
        v[j][1] = ld_stream(p1 + (c + j) * 16);
      }
#pragma unroll
      for (int j = 0; j < J; ++j)
        acc ^= fold(v[j][0]) ^ fold(v[j][1]);
    }
  } else {
    const uint32_t *p = q + static_cast<size_t>(tile) * 16 * words_per_row + 4 * lane;
    const int steps = words_per_row / 128;
#pragma unroll 1
    for (int c = 0; c + J <= steps; c += J) {
      uint4 v[J][16];
#pragma unroll
      for (int j = 0; j < J; ++j)
#pragma unroll
        for (int r = 0; r < 16; ++r)
          v[j][r] = ld_stream(
              p + static_cast<size_t>(min(tile * 16 + r, n - 1) - tile * 16) * words_per_row +
              (c + j) * 128);
#pragma unroll
      for (int j = 0; j < J; ++j)
#pragma unroll
        for (int r = 0; r < 16; ++r)
          acc ^= fold(v[j][r]);
    }
  }
  if (acc == 0x9e3779b9u) // keeps every load alive
    *sink = acc;
}

// The pattern table: per 4-bit shape, each pattern at 4 and 8 warps per CTA against the
// loads-only ceiling of the same rotated words.
int run_patterns(const std::vector<int> &shape_list) {
  cudaDeviceProp prop{};
  KT_CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t stream{};
  cudaEvent_t e0{}, e1{};
  KT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  KT_CHECK(cudaEventCreate(&e0));
  KT_CHECK(cudaEventCreate(&e1));
  using Fn = void (*)(const uint32_t *, int, int, uint32_t *);
  struct Pattern {
    const char *name;
    Fn fn;
  };
  const Pattern patterns[] = {
      {"tile1", pattern_kernel<1, false>}, {"tile2", pattern_kernel<2, false>},
      {"tile4", pattern_kernel<4, false>}, {"tile8", pattern_kernel<8, false>},
      {"row1", pattern_kernel<1, true>},   {"row2", pattern_kernel<2, true>},
  };
  std::printf("%-11s %8s %8s", "n x k", "words MB", "ceiling");
  for (const Pattern &pt : patterns)
    std::printf(" %7s/4 %7s/8", pt.name, pt.name);
  std::printf("   (us; /W: W warps per CTA; ceiling: best loads-only of 2/4/8 CTAs per SM)\n");
  for (size_t si = 0; si + 1 < shape_list.size(); si += 2) {
    const int n = shape_list[si], k = shape_list[si + 1];
    const int words_per_row = k / 8;
    if (k % 1024 != 0 || n % 16 != 0)
      continue; // whole 512-byte steps and tiles only
    const size_t q_bytes = static_cast<size_t>(n) * words_per_row * 4;
    const int copies = cold_copies(static_cast<size_t>(prop.l2CacheSize), q_bytes);
    std::vector<std::unique_ptr<DeviceMem>> qs;
    for (int c = 0; c < copies; ++c) {
      qs.push_back(std::make_unique<DeviceMem>(q_bytes));
      fill_words_kernel<<<1024, 256>>>(static_cast<uint32_t *>(qs.back()->p), q_bytes / 4,
                                       next_seed());
      KT_CHECK(cudaGetLastError());
    }
    DeviceMem sink(16);
    KT_CHECK(cudaDeviceSynchronize());
    const int batch = 50;
    std::vector<std::unique_ptr<GraphBatch>> graphs;
    add_ceiling_graphs(graphs, qs, q_bytes, static_cast<uint32_t *>(sink.p), batch, stream);
    for (const Pattern &pt : patterns)
      for (int warps : {4, 8})
        graphs.push_back(std::make_unique<GraphBatch>(
            [&, pt, warps](int copy, cudaStream_t st) {
              const int ctas = (n / 16 + warps - 1) / warps;
              pt.fn<<<ctas, warps * 32, 0, st>>>(
                  static_cast<const uint32_t *>(qs[static_cast<size_t>(copy)]->p), n,
                  words_per_row, static_cast<uint32_t *>(sink.p));
              KT_CHECK(cudaGetLastError());
            },
            batch, copies, stream));
    for (auto &g : graphs)
      g->time(stream, e0, e1);
    std::vector<std::vector<double>> t(graphs.size());
    for (int i = 0; i < 7; ++i)
      for (size_t j = 0; j < graphs.size(); ++j) {
        const size_t g = (j + static_cast<size_t>(i)) % graphs.size();
        t[g].push_back(graphs[g]->time(stream, e0, e1) / batch);
      }
    const double ceiling = std::min({median(t[0]), median(t[1]), median(t[2])});
    std::printf("%5dx%-5d %8.1f %8.2f", n, k, q_bytes * 1e-6, ceiling * 1e6);
    for (size_t g = 3; g < t.size(); ++g)
      std::printf(" %9.2f", median(t[g]) * 1e6);
    std::printf("\n");
    std::fflush(stdout);
  }
  return 0;
}

int run_main(int argc, char **argv) {
  bool quick = false;
  std::vector<int> rows_list{1, 2, 4, 8, 12, 16, 24, 32};
  std::vector<int> shape_list{4096, 4096, 14336, 4096, 4096, 14336, 8960, 1536, 1536, 8960};
  std::vector<int> format_list{4, 64, 4, 128, 8, 64};
  const char *csv_path = nullptr;
  bool pattern = false, cold_params = true;
  int stage_parameters = -1; // --staging auto|off|on: QmvAffineArgs::stage_parameters
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--rows") && i + 1 < argc)
      rows_list = parse_list(argv[++i]);
    else if (!std::strcmp(argv[i], "--shapes") && i + 1 < argc)
      shape_list = parse_list(argv[++i]);
    else if (!std::strcmp(argv[i], "--formats") && i + 1 < argc)
      format_list = parse_list(argv[++i]);
    else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc)
      csv_path = argv[++i];
    else if (!std::strcmp(argv[i], "--pattern"))
      pattern = true;
    else if (!std::strcmp(argv[i], "--no-check"))
      quick = true, setenv("HONE_NO_CHECK", "1", 1);
    else if (!std::strcmp(argv[i], "--shared-params"))
      cold_params = false;
    else if (!std::strcmp(argv[i], "--cold-params")) // the default; kept for older scripts
      cold_params = true;
    else if (!std::strcmp(argv[i], "--staging") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (v != "auto" && v != "off" && v != "on") {
        std::fprintf(stderr, "--staging %s: expected auto, off or on\n", v.c_str());
        return 2;
      }
      stage_parameters = v == "auto" ? -1 : v == "off" ? 0 : 1;
    }
  }
  if (pattern)
    return run_patterns(shape_list);
  cudaDeviceProp prop{};
  KT_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB, %zu + %zu configs (4/8 bits)\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, qmv_affine_configs(4).size(),
              qmv_affine_configs(8).size());
  if (!std::getenv("HONE_NO_CHECK")) {
    CheckSummary total;
    for (const Case &c : check_cases(quick)) {
      Problem p(c.rows, c.n, c.k, c.bits, c.group);
      p.stage_parameters = stage_parameters;
      const CheckSummary s = check_problem(p);
      total.configs += s.configs;
      total.failed += s.failed;
      total.invariant += s.invariant;
      total.variant += s.variant;
      total.stream_invariant += s.stream_invariant;
      total.grouped_invariant += s.grouped_invariant;
      total.ring_invariant += s.ring_invariant;
      total.worst_error = std::max(total.worst_error, s.worst_error);
      total.failures.insert(total.failures.end(), s.failures.begin(), s.failures.end());
    }
    std::printf("check: %d config runs, %d failed the %.0e gate (worst rel L2 %.2e); batch "
                "invariance: %d identical, %d stream and %d grouped identical to their order's "
                "rows=1 run, %d ring identical to the mma path of their k_slices, %d differ\n",
                total.configs, total.failed, kBound, total.worst_error, total.invariant,
                total.stream_invariant, total.grouped_invariant, total.ring_invariant,
                total.variant);
    for (size_t i = 0; i < total.failures.size() && i < 10; ++i)
      std::printf("  FAIL %s\n", total.failures[i].c_str());
    if (total.failed || total.variant)
      return 1;
  }

  cudaStream_t stream{};
  cudaEvent_t e0{}, e1{};
  KT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  KT_CHECK(cudaEventCreate(&e0));
  KT_CHECK(cudaEventCreate(&e1));
  const double bandwidth = measure_read_bandwidth(stream, e0, e1);
  std::printf("read bandwidth: %.0f GB/s\n", bandwidth * 1e-9);
  std::printf(cold_params ? "cold parameters: scales and biases rotate with the words; the "
                            "ceiling reads all three\n"
                          : "shared parameters: one set of scales and biases for every copy; the "
                            "ceiling reads the words alone\n");
  FILE *csv = csv_path ? std::fopen(csv_path, "w") : nullptr;
  if (csv)
    std::fprintf(csv, "bits,group,n,k,rows,candidate,us,default\n");
  std::printf("%-5s %-11s %4s %8s %6s %8s %6s %8s %6s %8s %8s %5s %8s %5s %8s %5s %8s %5s  %s\n",
              "fmt", "n x k", "rows", "default", "%bw", "inv.best", "%bw", "best", "%bw", "ceiling",
              "old", "ceil", "stream", "ceil", "grouped", "ceil", "ring", "ceil",
              "best config / old best / stream best / grouped best / ring best");
  const int samples = 7;
  for (size_t fi = 0; fi + 1 < format_list.size(); fi += 2)
    for (size_t si = 0; si + 1 < shape_list.size(); si += 2) {
      const int bits = format_list[fi], group = format_list[fi + 1];
      const int n = shape_list[si], k = shape_list[si + 1];
      const int max_rows = *std::max_element(rows_list.begin(), rows_list.end());
      Problem base(max_rows, n, k, bits, group);
      base.stage_parameters = stage_parameters;
      // Cold L2: rotate among copies of the packed weights, each with its own scales and
      // biases (the base's, 16-byte aligned after the words), and the ceiling reads the whole
      // copy. With --shared-params the copies share the base's (1/16 of the bytes or less,
      // counted in the bandwidth all the same).
      const size_t words_bytes = base.words() * 4;
      const size_t param_bytes = (base.groups() * 2 + 15) / 16 * 16;
      const size_t q_bytes = cold_params ? words_bytes + 2 * param_bytes : words_bytes;
      const int copies = cold_copies(static_cast<size_t>(prop.l2CacheSize), q_bytes);
      std::vector<std::unique_ptr<DeviceMem>> qs;
      for (int c = 0; c < copies; ++c) {
        qs.push_back(std::make_unique<DeviceMem>(q_bytes));
        fill_words_kernel<<<1024, 256>>>(static_cast<uint32_t *>(qs.back()->p), base.words(),
                                         next_seed());
        KT_CHECK(cudaGetLastError());
        if (cold_params) {
          auto *params = static_cast<uint8_t *>(qs.back()->p) + words_bytes;
          KT_CHECK(cudaMemcpy(params, base.s->p, base.groups() * 2, cudaMemcpyDeviceToDevice));
          KT_CHECK(cudaMemcpy(params + param_bytes, base.b->p, base.groups() * 2,
                              cudaMemcpyDeviceToDevice));
        }
      }
      // The scales and biases a launch on copy `copy` reads.
      auto copy_params = [&](int copy) -> std::pair<const void *, const void *> {
        if (!cold_params)
          return {base.s->p, base.b->p};
        const auto *params =
            static_cast<const uint8_t *>(qs[static_cast<size_t>(copy)]->p) + words_bytes;
        return {params, params + param_bytes};
      };
      DeviceMem y(elements(max_rows, n) * 2), sink(16);
      KT_CHECK(cudaDeviceSynchronize());
      for (int rows : rows_list) {
        const QmvAffineConfig def = qmv_affine_default(rows, n, k, bits, group);
        std::vector<QmvAffineConfig> field{def};
        for (const QmvAffineConfig &c : qmv_affine_configs(bits))
          if (std::string why; !(c == def) && path_selected(c) && tactic_selected(c) &&
                               qmv_affine_can_implement(c, rows, n, k, bits, group, &why))
            field.push_back(c);
        // HONE_TEST_CHUNK_GROUPS=2 (int4 g64, K a multiple of 128): every mma and ring config
        // of the field is timed a second time in the two-group chunks (not yet the default),
        // interleaved with the rest; reported on a line of its own.
        std::vector<QmvAffineConfig> twins;
        if (const char *v = std::getenv("HONE_TEST_CHUNK_GROUPS");
            v && std::string(v) == "2" && qmv_affine_chunk_groups(bits, group, k, true) == 2)
          for (const QmvAffineConfig &c : field)
            if (c.path == KernelPath::mma || c.path == KernelPath::ring)
              twins.push_back(c);
        std::vector<std::unique_ptr<GraphBatch>> graphs;
        const double ideal = static_cast<double>(weight_bytes(base)) / bandwidth + 2e-6;
        const int batch = std::clamp(static_cast<int>(5e-4 / ideal), 8, 200);
        auto add_graph = [&](const QmvAffineConfig &c, int chunk_groups) {
          graphs.push_back(std::make_unique<GraphBatch>(
              [&, c, chunk_groups](int copy, cudaStream_t st) {
                Problem &b = base;
                b.chunk_groups = chunk_groups;
                const auto [sp, bp] = copy_params(copy);
                KT_CHECK(static_cast<cudaError_t>(
                    b.launch(c, b.x->p, y.p, rows, st, qs[static_cast<size_t>(copy)]->p, sp, bp)));
                b.chunk_groups = -1;
              },
              batch, copies, stream));
        };
        for (const QmvAffineConfig &c : field)
          add_graph(c, -1);
        for (const QmvAffineConfig &c : twins)
          add_graph(c, 2);
        const size_t first_ceiling = graphs.size();
        // The loads-only ceiling of the same words, scales and biases (with --shared-params of
        // the words alone, as the kernels then read the parameters from L2).
        add_ceiling_graphs(graphs, qs, q_bytes, static_cast<uint32_t *>(sink.p), batch, stream);
        for (auto &g : graphs)
          g->time(stream, e0, e1);
        std::vector<std::vector<double>> t(graphs.size());
        for (int i = 0; i < samples; ++i) // interleaved, start rotated every round
          for (size_t j = 0; j < graphs.size(); ++j) {
            const size_t g = (j + static_cast<size_t>(i)) % graphs.size();
            t[g].push_back(graphs[g]->time(stream, e0, e1) / batch);
          }
        double best = 1e9, best_inv = 1e9, old = 1e9, streamed = 1e9, grouped = 1e9, ringed = 1e9,
               ceiling = 1e9;
        std::string best_name, best_inv_name, old_name, stream_name, grouped_name, ring_name;
        for (size_t g = first_ceiling; g < t.size(); ++g)
          ceiling = std::min(ceiling, median(t[g]));
        for (size_t g = 0; g < field.size(); ++g) {
          const double m = median(t[g]);
          if (field[g].path == KernelPath::stream && m < streamed)
            streamed = m, stream_name = short_name(field[g]);
          if (field[g].path == KernelPath::grouped && m < grouped)
            grouped = m, grouped_name = short_name(field[g]);
          if (field[g].path == KernelPath::ring && m < ringed)
            ringed = m, ring_name = short_name(field[g]);
          if (field[g].path == KernelPath::mma && m < old)
            old = m, old_name = short_name(field[g]);
          if (csv)
            std::fprintf(csv, "%d,%d,%d,%d,%d,\"%s\",%.3f,%d\n", bits, group, n, k, rows,
                         field[g].to_tactic().str().c_str(), m * 1e6, field[g] == def ? 1 : 0);
          if (m < best)
            best = m, best_name = short_name(field[g]);
          // The ring path has the mma path's order: it counts as the default's where it is mma.
          const bool same_path = field[g].path == def.path ||
                                 (field[g].path == KernelPath::ring && def.path == KernelPath::mma);
          if (same_path && qmv_affine_k_slices(field[g]) == qmv_affine_k_slices(def) &&
              m < best_inv)
            best_inv = m, best_inv_name = short_name(field[g]);
        }
        const double d = median(t[0]);
        auto pct = [&](double s) { return 100.0 * weight_bytes(base) / s / bandwidth; };
        char fmt[16], nk[24];
        std::snprintf(fmt, sizeof fmt, "%dx%d", bits, group);
        std::snprintf(nk, sizeof nk, "%dx%d", n, k);
        std::printf("%-5s %-11s %4d %8.2f %6.1f %8.2f %6.1f %8.2f %6.1f %8.2f %8.2f %5.3f %8.2f "
                    "%5.3f %8.2f %5.3f %8.2f %5.3f  %s / %s / %s / %s / %s (default %s)\n",
                    fmt, nk, rows, d * 1e6, pct(d), best_inv * 1e6, pct(best_inv), best * 1e6,
                    pct(best), ceiling * 1e6, old * 1e6, ceiling / old, streamed * 1e6,
                    ceiling / streamed, grouped * 1e6, ceiling / grouped, ringed * 1e6,
                    ceiling / ringed, best_name.c_str(), old_name.c_str(), stream_name.c_str(),
                    grouped_name.c_str(), ring_name.c_str(), short_name(def).c_str());
        if (!twins.empty()) {
          // twins[0] is the default (field[0]) in the two-group chunks where it is mma or ring.
          double two_best = 1e9;
          std::string two_name;
          for (size_t i = 0; i < twins.size(); ++i) {
            const double m = median(t[field.size() + i]);
            if (csv)
              std::fprintf(csv, "%d,%d,%d,%d,%d,\"%s chunk_groups=2\",%.3f,0\n", bits, group, n, k,
                           rows, twins[i].to_tactic().str().c_str(), m * 1e6);
            if (m < two_best)
              two_best = m, two_name = short_name(twins[i]);
          }
          const bool default_twin = def.path == KernelPath::mma || def.path == KernelPath::ring;
          const double two_def = default_twin ? median(t[field.size()]) : NAN;
          std::printf("      two-group chunks: default %8.2f (%5.3f of the default's time, %5.3f "
                      "of ceiling), best %8.2f (%5.3f of ceiling) %s\n",
                      two_def * 1e6, two_def / d, ceiling / two_def, two_best * 1e6,
                      ceiling / two_best, two_name.c_str());
        }
        std::fflush(stdout);
      }
    }
  if (csv)
    std::fclose(csv);
  return 0;
}

#endif

} // namespace
} // namespace hone::cuda

#ifdef HONE_QMV_AFFINE_KERNEL_TEST_MAIN
int main(int argc, char **argv) { return hone::cuda::run_main(argc, argv); }
#endif
