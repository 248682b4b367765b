// gemv.bf16 kernel harness: every compiled config against a float64 reference on fresh random
// inputs with poisoned outputs, bitwise batch invariance of the configs that share the
// default's K order (and of the stream configs among themselves: each against the rows=1
// stream config of its K order, row by row), and (standalone) a cold-L2 timing table against
// cuBLASLt and a loads-only read of the same weights.
//
// Under CMake (tests/device) it is a GoogleTest program on small shapes. Standalone, one
// command builds it with the kernels and runs the full check and timing matrix:
//   nvcc -std=c++20 -O3 -gencode=arch=compute_90,code=sm_90 -DHONE_GEMV_BF16_KERNEL_TEST_MAIN
//     -Iinclude -Isrc -Itests/device tests/device/gemv_bf16_kernel_test.cu
//     src/cuda/kernels/gemv_bf16/gemv_bf16.cu src/cuda/kernels/gemv_bf16/gemv_bf16_config.cpp
//     src/cuda/kernels/common/config_tactic.cpp src/cuda/kernels/common/kernel_types.cpp
//     src/cuda/kernels/common/split_k_family.cpp src/cuda/kernels/common/split_k_launch.cpp
//     src/cuda/kernels/common/weight_stream.cpp src/core/tactic.cpp src/core/error.cpp
//     src/cuda/kernels/gemv_bf16/gemv_bf16_ring.cu
//     -lcublasLt -o gemv_bf16_kernel_test
//   ./gemv_bf16_kernel_test [--quick] [--no-check] [--csv FILE] [--rows 1,8,16]
//     [--shapes 14336x4096,...]
//     --csv: a line per (cell, config) timed, the config's tactic quoted (its fields hold commas).
//     --quick: fewer row counts checked; --no-check: timing only; --rows / --shapes: restrict
//     the timing table. Per cell it prints cuBLASLt, the default, the best old-path (mma/fma)
//     config, the best stream config and the loads-only read of the same weight copies, each
//     stream and old best also as a fraction of that read ("ceil").
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/backend/bf16.h"
#include "cuda/kernels/common/weight_ring.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16_shape.h"
#include "kernel_harness.cuh"
#include "path_filter.h"

#ifdef HONE_GEMV_BF16_KERNEL_TEST_MAIN
#include <cublasLt.h>
#else
#include <gtest/gtest.h>

#include "device_test.h"
#endif

namespace hone::cuda {
namespace {

using namespace harness; // NOLINT

// Float64 reference, [rows, n]; threads split n.
std::vector<double> reference(const std::vector<uint16_t> &x, const std::vector<uint16_t> &w,
                              int rows, int n, int k) {
  std::vector<double> xf(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    xf[i] = bf16_to_float(x[i]);
  std::vector<double> y(elements(rows, n));
  const int threads = std::max(1u, std::min(16u, std::thread::hardware_concurrency()));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      std::vector<double> wr(static_cast<size_t>(k));
      for (int m = t; m < n; m += threads) {
        for (int i = 0; i < k; ++i)
          wr[static_cast<size_t>(i)] = bf16_to_float(w[elements(m, k) + static_cast<size_t>(i)]);
        for (int r = 0; r < rows; ++r) {
          double s = 0;
          const double *xr = &xf[elements(r, k)];
          for (int i = 0; i < k; ++i)
            s += xr[i] * wr[static_cast<size_t>(i)];
          y[elements(r, n) + static_cast<size_t>(m)] = s;
        }
      }
    });
  for (auto &th : pool)
    th.join();
  return y;
}

constexpr double kBound = 8e-3; // the op's tolerance gate (gemv_bf16_op.h)

int launch(const GemvBf16Config &c, const void *x, const void *w, void *y, int rows, int n, int k,
           cudaStream_t stream = nullptr) {
  GemvBf16Args a;
  a.x = x;
  a.w = w;
  a.y = y;
  a.rows = rows;
  a.n = n;
  a.k = k;
  return gemv_bf16_launch(c, a, stream).code();
}

// The ring path keeps the mma path's order (gemv_bf16_ring.cuh).
KernelPath order_path(KernelPath p) { return p == KernelPath::ring ? KernelPath::mma : p; }
bool same_order(const GemvBf16Config &a, const GemvBf16Config &b) {
  return order_path(a.path) == order_path(b.path) && gemv_bf16_k_slices(a) == gemv_bf16_k_slices(b);
}

// The rows=1 stream config of `c`'s K order (the stream default with c's consumer warps).
GemvBf16Config stream_single_row(const GemvBf16Config &c, int n, int k) {
  GemvBf16Config s = gemv_bf16_stream_default(1, n, k);
  s.warps = c.warps_k;
  s.warps_k = c.warps_k;
  return s;
}

struct CheckSummary {
  int configs = 0, failed = 0;    // tolerance gate
  int invariant = 0, variant = 0; // bitwise against the rows=1 default, same-order configs
  int stream_invariant = 0;       // stream configs bitwise equal to their order's rows=1 run
                                  // (a difference counts in `variant`)
  int ring_invariant = 0;         // ring configs bitwise equal to the mma path of their k_slices
                                  // (a difference counts in `variant`)
  int other_order_identical = 0;  // configs of another order that happen to match
  double worst_error = 0;
  std::vector<std::string> failures;
};

// Every compiled config at (rows, n, k) against the reference, then bitwise batch invariance.
CheckSummary check_shape(int rows, int n, int k) {
  CheckSummary out;
  DeviceMem x(elements(rows, k) * 2), w(elements(n, k) * 2), y(elements(rows, n) * 2),
      y1(elements(rows, n) * 2);
  fill_random(x.p, elements(rows, k), next_seed());
  fill_random(w.p, elements(n, k), next_seed());
  KT_CHECK(cudaDeviceSynchronize());
  const std::vector<double> ref =
      reference(download(x.p, elements(rows, k)), download(w.p, elements(n, k)), rows, n, k);

  // Rows=1 default, one launch per row: the batch-invariance reference.
  const GemvBf16Config single = gemv_bf16_default(1, n, k);
  KT_CHECK(cudaMemset(y1.p, 0xff, elements(rows, n) * 2));
  for (int r = 0; r < rows; ++r)
    KT_CHECK(
        static_cast<cudaError_t>(launch(single, static_cast<uint16_t *>(x.p) + elements(r, k), w.p,
                                        static_cast<uint16_t *>(y1.p) + elements(r, n), 1, n, k)));
  KT_CHECK(cudaDeviceSynchronize());
  const std::vector<uint16_t> expected = download(y1.p, elements(rows, n));

  // The same for each stream K order (k_slices = consumer warps), computed at first use.
  std::vector<std::pair<int, std::vector<uint16_t>>> stream_expected;
  auto stream_reference = [&](const GemvBf16Config &c) -> const std::vector<uint16_t> & {
    for (const auto &e : stream_expected)
      if (e.first == c.warps_k)
        return e.second;
    const GemvBf16Config one = stream_single_row(c, n, k);
    KT_CHECK(cudaMemset(y1.p, 0xff, elements(rows, n) * 2));
    for (int r = 0; r < rows; ++r)
      KT_CHECK(static_cast<cudaError_t>(
          launch(one, static_cast<uint16_t *>(x.p) + elements(r, k), w.p,
                 static_cast<uint16_t *>(y1.p) + elements(r, n), 1, n, k)));
    KT_CHECK(cudaDeviceSynchronize());
    stream_expected.emplace_back(c.warps_k, download(y1.p, elements(rows, n)));
    return stream_expected.back().second;
  };

  // The mma path at each k_slices, all rows in one launch (its configs are batch-invariant): what
  // a ring config of that k_slices must give bit for bit.
  std::vector<std::pair<int, std::vector<uint16_t>>> mma_expected;
  const std::vector<uint16_t> *default_rows = &expected;
  auto mma_reference = [&](const GemvBf16Config &c) -> const std::vector<uint16_t> & {
    const int slices = gemv_bf16_k_slices(c);
    if (single.path == KernelPath::mma && slices == gemv_bf16_k_slices(single))
      return *default_rows;
    for (const auto &e : mma_expected)
      if (e.first == slices)
        return e.second;
    for (const GemvBf16Config &e : gemv_bf16_configs())
      if (e.path == KernelPath::mma && gemv_bf16_k_slices(e) == slices) {
        KT_CHECK(cudaMemset(y1.p, 0xff, elements(rows, n) * 2));
        KT_CHECK(static_cast<cudaError_t>(launch(e, x.p, w.p, y1.p, rows, n, k)));
        KT_CHECK(cudaDeviceSynchronize());
        mma_expected.emplace_back(slices, download(y1.p, elements(rows, n)));
        return mma_expected.back().second;
      }
    std::fprintf(stderr, "no mma config with k_slices %d\n", slices);
    std::exit(1);
  };

  std::vector<GemvBf16Config> all = gemv_bf16_configs();
  all.push_back(gemv_bf16_default(rows, n, k));
  for (const GemvBf16Config &c : all) {
    // A stream config runs only where it can (all rows in one CTA, K slices not empty); the
    // other paths run every compiled config, pruned or not.
    if (std::string why; (c.path == KernelPath::stream || c.path == KernelPath::ring) &&
                         !gemv_bf16_can_implement(c, rows, n, k, &why))
      continue;
    // HONE_TEST_PATHS (path_filter.h): the default always runs.
    if (!testing::path_selected(c.path) && !(c == all.back()))
      continue;
    KT_CHECK(cudaMemset(y.p, 0xff, elements(rows, n) * 2));
    const int status = launch(c, x.p, w.p, y.p, rows, n, k);
    KT_CHECK(cudaDeviceSynchronize());
    ++out.configs;
    const std::vector<uint16_t> got = download(y.p, elements(rows, n));
    const double err = status == 0 ? relative_l2(got, ref) : INFINITY;
    out.worst_error = std::max(out.worst_error, err);
    if (!(err <= kBound)) {
      ++out.failed;
      out.failures.push_back(c.to_tactic().str() + " rows=" + std::to_string(rows) +
                             " n=" + std::to_string(n) + " k=" + std::to_string(k) + " error " +
                             std::to_string(err) + " launch " + std::to_string(status));
      continue;
    }
    if (c.path == KernelPath::ring) {
      const bool same = got == mma_reference(c);
      ++(same ? out.ring_invariant : out.variant);
      if (!same)
        out.failures.push_back("ring differs from the mma path of its k_slices: " +
                               c.to_tactic().str() + " rows=" + std::to_string(rows) +
                               " n=" + std::to_string(n) + " k=" + std::to_string(k));
      continue;
    }
    if (c.path == KernelPath::stream && !same_order(c, single)) {
      const bool same = got == stream_reference(c);
      ++(same ? out.stream_invariant : out.variant);
      if (!same)
        out.failures.push_back("stream not batch-invariant: " + c.to_tactic().str() +
                               " rows=" + std::to_string(rows) + " n=" + std::to_string(n) +
                               " k=" + std::to_string(k));
      continue;
    }
    const bool identical = got == expected;
    if (same_order(c, single)) {
      ++(identical ? out.invariant : out.variant);
      if (!identical)
        out.failures.push_back("not batch-invariant: " + c.to_tactic().str() +
                               " rows=" + std::to_string(rows) + " n=" + std::to_string(n) +
                               " k=" + std::to_string(k));
    } else if (identical) {
      ++out.other_order_identical;
    }
  }
  return out;
}

#ifdef HONE_GEMV_BF16_KERNEL_TEST_MAIN

// --- timing (standalone only) -------------------------------------------------------------

#define KT_CUBLAS(call)                                                                            \
  do {                                                                                             \
    cublasStatus_t s_ = (call);                                                                    \
    if (s_ != CUBLAS_STATUS_SUCCESS) {                                                             \
      std::fprintf(stderr, "%s:%d: %s: status %d\n", __FILE__, __LINE__, #call, int(s_));          \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

// Y^T [n, rows] = W^T' . X^T in cuBLASLt's column-major view (the peer's formulation).
struct CublasGemm {
  cublasLtHandle_t handle{};
  cublasLtMatmulDesc_t desc{};
  cublasLtMatrixLayout_t a{}, b{}, c{};
  cublasLtMatmulAlgo_t algo{};
  DeviceMem workspace{size_t{32} << 20};
  CublasGemm(int rows, int n, int k) {
    KT_CUBLAS(cublasLtCreate(&handle));
    KT_CUBLAS(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    KT_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    KT_CUBLAS(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    KT_CUBLAS(cublasLtMatrixLayoutCreate(&a, CUDA_R_16BF, k, n, k));
    KT_CUBLAS(cublasLtMatrixLayoutCreate(&b, CUDA_R_16BF, k, rows, k));
    KT_CUBLAS(cublasLtMatrixLayoutCreate(&c, CUDA_R_16BF, n, rows, n));
    cublasLtMatmulPreference_t pref{};
    KT_CUBLAS(cublasLtMatmulPreferenceCreate(&pref));
    const size_t ws = size_t{32} << 20;
    KT_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                   &ws, sizeof ws));
    cublasLtMatmulHeuristicResult_t h{};
    int found = 0;
    KT_CUBLAS(cublasLtMatmulAlgoGetHeuristic(handle, desc, a, b, c, c, pref, 1, &h, &found));
    if (found < 1) {
      std::fprintf(stderr, "cuBLASLt: no algorithm\n");
      std::exit(1);
    }
    algo = h.algo;
    cublasLtMatmulPreferenceDestroy(pref);
  }
  ~CublasGemm() {
    cublasLtMatrixLayoutDestroy(c);
    cublasLtMatrixLayoutDestroy(b);
    cublasLtMatrixLayoutDestroy(a);
    cublasLtMatmulDescDestroy(desc);
    cublasLtDestroy(handle);
  }
  void run(const void *x, const void *w, void *y, cudaStream_t s) {
    const float alpha = 1, beta = 0;
    KT_CUBLAS(cublasLtMatmul(handle, desc, &alpha, w, a, x, b, &beta, y, c, y, c, &algo,
                             workspace.p, size_t{32} << 20, s));
  }
};

std::string short_name(const GemvBf16Config &c) {
  char buf[64];
  if (c.path == KernelPath::stream)
    std::snprintf(buf, sizeof buf, "stream r%d w%d o%d st%d c%d", c.rows_per_cta, c.warps_k,
                  c.outputs_per_warp, c.stages, c.ctas_per_sm);
  else if (c.path == KernelPath::ring)
    std::snprintf(buf, sizeof buf, "ring r%d w%d k%d o%d st%d c%d", c.rows_per_cta, c.warps,
                  c.warps_k, c.outputs_per_warp, c.stages, c.ctas_per_sm);
  else
    std::snprintf(buf, sizeof buf, "%s r%d w%d k%d o%d s%d%s", to_string(c.path), c.rows_per_cta,
                  c.warps, c.warps_k, c.outputs_per_warp, c.split_k, c.async ? " a" : "");
  return buf;
}

struct Cell {
  int n, k, rows;
  double cublas_s, default_s, best_s, best_inv_s;
  std::string best, best_inv;
  double ceiling_s;                   // loads-only read of the same weight copies, best of 3
  double old_s = 1e9, stream_s = 1e9; // best mma/fma config, best stream config
  double stream_default_s = 1e9;      // gemv_bf16_stream_default
  std::string old_name, stream_name;
};

int run_main(int argc, char **argv) {
  bool quick = false, no_check = false;
  const char *csv_path = nullptr;
  std::vector<int> only_rows, only_shapes;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick"))
      quick = true;
    else if (!std::strcmp(argv[i], "--no-check"))
      no_check = true;
    else if (!std::strcmp(argv[i], "--csv") && i + 1 < argc)
      csv_path = argv[++i];
    else if (!std::strcmp(argv[i], "--rows") && i + 1 < argc)
      only_rows = parse_list(argv[++i]);
    else if (!std::strcmp(argv[i], "--shapes") && i + 1 < argc)
      only_shapes = parse_list(argv[++i]);
  }
  cudaDeviceProp prop{};
  KT_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("device: %s, %d SMs, L2 %d MB, %zu configs compiled\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, gemv_bf16_configs().size());

  // --- correctness and batch invariance ---
  struct NK {
    int n, k;
  };
  const std::vector<NK> check_shapes = {{4096, 4096}, {1536, 8960}, {2048, 2048}, {1000, 4104},
                                        {4100, 1032}, {77, 264},    {4097, 2056}, {1, 8}};
  const std::vector<int> check_rows =
      quick ? std::vector<int>{1, 7, 32} : std::vector<int>{1, 3, 7, 8, 12, 16, 24, 32};
  int failed = 0, configs = 0, invariant = 0, variant = 0, stream_invariant = 0;
  double worst = 0;
  for (NK s : check_shapes)
    for (int rows : check_rows) {
      if (no_check)
        break;
      const CheckSummary c = check_shape(rows, s.n, s.k);
      failed += c.failed;
      configs += c.configs;
      invariant += c.invariant;
      variant += c.variant;
      stream_invariant += c.stream_invariant;
      worst = std::max(worst, c.worst_error);
      for (const std::string &f : c.failures)
        std::printf("FAIL %s\n", f.c_str());
    }
  std::printf("check: %d config runs, %d failed the %.0e gate (worst rel L2 %.2e); batch "
              "invariance: %d same-order runs bit-identical, %d stream runs bit-identical to "
              "their order's rows=1 run, %d differ\n",
              configs, failed, kBound, worst, invariant, stream_invariant, variant);

  // --- timing ---
  cudaStream_t stream{};
  KT_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaEvent_t e0{}, e1{};
  KT_CHECK(cudaEventCreate(&e0));
  KT_CHECK(cudaEventCreate(&e1));
  const double bandwidth = measure_read_bandwidth(stream, e0, e1);
  std::printf("read bandwidth: %.2f TB/s (2 GiB streaming read, median of 5)\n", bandwidth * 1e-12);

  std::vector<NK> shapes = {{4096, 4096}, {6144, 4096}, {14336, 4096}, {4096, 14336},
                            {8960, 1536}, {1536, 8960}, {2048, 2048}};
  std::vector<int> rows_list = {1, 2, 3, 4, 6, 8, 12, 16, 24, 32};
  if (!only_rows.empty())
    rows_list = only_rows;
  if (only_shapes.size() >= 2) {
    shapes.clear();
    for (size_t i = 0; i + 1 < only_shapes.size(); i += 2)
      shapes.push_back({only_shapes[i], only_shapes[i + 1]});
  }
  const int samples = 7;
  FILE *csv = csv_path ? std::fopen(csv_path, "w") : nullptr;
  if (csv)
    std::fprintf(csv, "n,k,rows,candidate,us,default\n");
  std::vector<Cell> cells;
  for (NK s : shapes) {
    const size_t w_bytes = elements(s.n, s.k) * 2;
    const int copies = cold_copies(static_cast<size_t>(prop.l2CacheSize), w_bytes);
    std::vector<std::unique_ptr<DeviceMem>> ws, xs;
    for (int c = 0; c < copies; ++c) {
      ws.push_back(std::make_unique<DeviceMem>(w_bytes));
      xs.push_back(std::make_unique<DeviceMem>(elements(32, s.k) * 2));
      fill_random(ws.back()->p, elements(s.n, s.k), next_seed());
      fill_random(xs.back()->p, elements(32, s.k), next_seed());
    }
    DeviceMem y(elements(32, s.n) * 2), sink(16);
    KT_CHECK(cudaDeviceSynchronize());
    for (int rows : rows_list) {
      const GemvBf16Config def = gemv_bf16_default(rows, s.n, s.k);
      const GemvBf16Config stream_def = gemv_bf16_stream_default(rows, s.n, s.k);
      std::vector<GemvBf16Config> field{def};
      for (const GemvBf16Config &c : gemv_bf16_configs()) {
        std::string why;
        const bool is_def = c.to_tactic() == def.to_tactic();
        if (!is_def && testing::path_selected(c.path) &&
            gemv_bf16_can_implement(c, rows, s.n, s.k, &why))
          field.push_back(c);
      }
      CublasGemm gemm(rows, s.n, s.k);
      std::vector<std::function<void(int, cudaStream_t)>> fns;
      for (const GemvBf16Config &c : field)
        fns.push_back([&, c](int copy, cudaStream_t st) {
          KT_CHECK(static_cast<cudaError_t>(
              launch(c, xs[copy]->p, ws[copy]->p, y.p, rows, s.n, s.k, st)));
        });
      fns.push_back(
          [&](int copy, cudaStream_t st) { gemm.run(xs[copy]->p, ws[copy]->p, y.p, st); });
      const size_t peer = fns.size() - 1;
      for (int per_sm : {2, 4, 8}) // the loads-only ceiling of the same bytes
        fns.push_back([&, per_sm](int copy, cudaStream_t st) {
          load_only(ws[copy]->p, w_bytes, per_sm, static_cast<uint32_t *>(sink.p), st);
        });
      // Batch sized from the ideal time so that one sample is ~0.5 ms.
      const double ideal = static_cast<double>(w_bytes) / bandwidth + 2e-6;
      const int batch = std::clamp(static_cast<int>(5e-4 / ideal), 8, 200);
      std::vector<std::unique_ptr<GraphBatch>> graphs;
      for (auto &fn : fns)
        graphs.push_back(std::make_unique<GraphBatch>(fn, batch, copies, stream));
      for (auto &g : graphs) // warm-up
        g->time(stream, e0, e1);
      std::vector<std::vector<double>> t(graphs.size());
      for (int i = 0; i < samples; ++i) // interleaved, start rotated every round
        for (size_t j = 0; j < graphs.size(); ++j) {
          const size_t g = (j + static_cast<size_t>(i)) % graphs.size();
          t[g].push_back(graphs[g]->time(stream, e0, e1) / batch);
        }
      Cell cell{s.n, s.k, rows, median(t[peer]), median(t[0]), 1e9, 1e9, "", "", 1e9};
      for (size_t g = peer + 1; g < t.size(); ++g)
        cell.ceiling_s = std::min(cell.ceiling_s, median(t[g]));
      for (size_t g = 0; g < field.size(); ++g) {
        const double m = median(t[g]);
        if (csv)
          std::fprintf(csv, "%d,%d,%d,\"%s\",%.3f,%d\n", s.n, s.k, rows,
                       field[g].to_tactic().str().c_str(), m * 1e6, g == 0 ? 1 : 0);
        if (m < cell.best_s)
          cell.best_s = m, cell.best = short_name(field[g]);
        if (same_order(field[g], def) && m < cell.best_inv_s)
          cell.best_inv_s = m, cell.best_inv = short_name(field[g]);
        // Weights once: the stream and ring paths ("stream" columns).
        const bool streamed =
            field[g].path == KernelPath::stream || field[g].path == KernelPath::ring;
        if (streamed && m < cell.stream_s)
          cell.stream_s = m, cell.stream_name = short_name(field[g]);
        if (!streamed && m < cell.old_s)
          cell.old_s = m, cell.old_name = short_name(field[g]);
        if (field[g] == stream_def)
          cell.stream_default_s = m;
      }
      if (csv) {
        std::fprintf(csv, "%d,%d,%d,cublasLt,%.3f,0\n", s.n, s.k, rows, cell.cublas_s * 1e6);
        std::fprintf(csv, "%d,%d,%d,load_only,%.3f,0\n", s.n, s.k, rows, cell.ceiling_s * 1e6);
      }
      cells.push_back(cell);
      std::printf("%dx%d rows %d: ceiling %.2f us, old best %.2f (%s), stream best %.2f (%s)\n",
                  s.n, s.k, rows, cell.ceiling_s * 1e6, cell.old_s * 1e6, cell.old_name.c_str(),
                  cell.stream_s * 1e6, cell.stream_name.c_str());
      std::fflush(stdout);
    }
  }
  if (csv)
    std::fclose(csv);

  std::printf("\n%-11s %4s %8s %8s %6s %5s %8s %6s %5s %8s %6s  %s\n", "n x k", "rows", "cublas",
              "default", "x", "%bw", "inv.best", "x", "%bw", "best", "x", "best config");
  for (const Cell &c : cells) {
    const double bytes = static_cast<double>(elements(c.n, c.k)) * 2;
    auto pct = [&](double sec) { return 100.0 * bytes / sec / bandwidth; };
    char nk[16];
    std::snprintf(nk, sizeof nk, "%dx%d", c.n, c.k);
    std::printf("%-11s %4d %8.2f %8.2f %6.2f %5.1f %8.2f %6.2f %5.1f %8.2f %6.2f  %s\n", nk, c.rows,
                c.cublas_s * 1e6, c.default_s * 1e6, c.cublas_s / c.default_s, pct(c.default_s),
                c.best_inv_s * 1e6, c.cublas_s / c.best_inv_s, pct(c.best_inv_s), c.best_s * 1e6,
                c.cublas_s / c.best_s, c.best.c_str());
  }
  // The weights-once comparison: fractions of the loads-only read of the same bytes
  // (ceil = ceiling time / kernel time) and against cuBLASLt.
  std::printf("\n%-11s %4s %8s %8s %5s %8s %5s %5s %8s %5s %5s %8s %5s  %-26s %s\n", "n x k",
              "rows", "ceiling", "old", "ceil", "str.def", "ceil", "x.cub", "stream", "ceil",
              "x.cub", "cublas", "ceil", "old best config", "stream best config");
  for (const Cell &c : cells) {
    char nk[16];
    std::snprintf(nk, sizeof nk, "%dx%d", c.n, c.k);
    std::printf("%-11s %4d %8.2f %8.2f %5.3f %8.2f %5.3f %5.2f %8.2f %5.3f %5.2f %8.2f %5.3f  "
                "%-26s %s\n",
                nk, c.rows, c.ceiling_s * 1e6, c.old_s * 1e6, c.ceiling_s / c.old_s,
                c.stream_default_s * 1e6, c.ceiling_s / c.stream_default_s,
                c.cublas_s / c.stream_default_s, c.stream_s * 1e6, c.ceiling_s / c.stream_s,
                c.cublas_s / c.stream_s, c.cublas_s * 1e6, c.ceiling_s / c.cublas_s,
                c.old_name.c_str(), c.stream_name.c_str());
  }
  // Geometric means of speedup over cuBLASLt, rows 1..16.
  double lg_def = 0, lg_inv = 0, lg_best = 0, min_def = 1e9, min_inv = 1e9;
  int count = 0;
  for (const Cell &c : cells)
    if (c.rows <= 16) {
      lg_def += std::log(c.cublas_s / c.default_s);
      lg_inv += std::log(c.cublas_s / c.best_inv_s);
      lg_best += std::log(c.cublas_s / c.best_s);
      ++count;
    }
  for (const Cell &c : cells) {
    min_def = std::min(min_def, c.cublas_s / c.default_s);
    min_inv = std::min(min_inv, c.cublas_s / c.best_inv_s);
  }
  std::printf("geomean speedup vs cuBLASLt, rows<=16: default %.3f, invariant best %.3f, best "
              "%.3f; worst cell: default %.3f, invariant best %.3f\n",
              std::exp(lg_def / count), std::exp(lg_inv / count), std::exp(lg_best / count),
              min_def, min_inv);
  std::printf("%d passed, %d failed\n", configs - failed - variant, failed + variant);
  return failed + variant == 0 ? 0 : 1;
}

#else // GoogleTest under CMake

using testing::DeviceTest;

class GemvBf16KernelTest : public DeviceTest {};

TEST_F(GemvBf16KernelTest, EveryConfigMatchesTheReferenceAndDefaultOrderIsBatchInvariant) {
  struct NK {
    int n, k;
  };
  const std::vector<NK> shapes =
      testing::reduced_shapes()
          ? std::vector<NK>{{77, 264}, {300, 1032}, {120, 1024}}
          : std::vector<NK>{{1000, 4104}, {77, 264}, {1536, 2048}, {1, 8}, {120, 1024}};
  for (NK s : shapes)
    for (int rows : {1, 5, 16, 32}) {
      const CheckSummary c = check_shape(rows, s.n, s.k);
      EXPECT_EQ(c.failed, 0) << "n=" << s.n << " k=" << s.k << " rows=" << rows;
      EXPECT_EQ(c.variant, 0) << "n=" << s.n << " k=" << s.k << " rows=" << rows;
      if (testing::path_selected(KernelPath::mma))
        EXPECT_GT(c.invariant, 1) << "the default's order must be shared by other configs";
      if (testing::path_selected(KernelPath::stream))
        EXPECT_GT(c.stream_invariant, 0) << "stream configs must run and match their order";
      if (s.k % 32 == 0 && testing::path_selected(KernelPath::ring)) // the ring path's chunk
        EXPECT_GT(c.ring_invariant, 0) << "ring configs must run and match the mma path";
      for (const std::string &f : c.failures)
        ADD_FAILURE() << f;
    }
}

TEST_F(GemvBf16KernelTest, NoStreamConfigSpills) {
  int stream = 0;
  for (const GemvBf16Config &c : gemv_bf16_configs())
    if (c.path == KernelPath::stream || c.path == KernelPath::ring) {
      ++stream;
      const KernelResources r = gemv_bf16_resources(c);
      EXPECT_GT(r.registers, 0) << c.to_tactic().str();
      EXPECT_EQ(r.local_bytes, 0u) << c.to_tactic().str();
    }
  EXPECT_GT(stream, 0);
}

// Every ring config offered at two CTAs per SM fits twice in the register file at its compiled
// kernel's registers (as allocated, in steps of 8): the kernel table's REGISTERS are ptxas's
// counts, so a kernel that grew since fails here rather than timing as its one-CTA twin.
TEST_F(GemvBf16KernelTest, RingPairsFitTheRegisterFile) {
  int pairs = 0;
  for (const GemvBf16Config &c : gemv_bf16_configs())
    if (c.path == KernelPath::ring && c.ctas_per_sm == 2) {
      ++pairs;
      const int allocated = (gemv_bf16_resources(c).registers + 7) / 8 * 8;
      EXPECT_LE(2 * (c.warps + 1) * 32 * allocated, 65536)
          << c.to_tactic().str() << ": " << allocated << " registers a thread";
    }
  EXPECT_GT(pairs, 0);
}

// The kernels' 32-bit offsets of 16-byte fragments: a matrix of 2^34 elements or more is refused
// by name.
TEST(GemvBf16KernelConfigTest, MatricesOfTwoToTheThirtyFourElementsAreRefused) {
  std::string why;
  const GemvBf16Config small = gemv_bf16_default(1, 1 << 17, 1 << 14); // 2^31 elements
  EXPECT_TRUE(gemv_bf16_can_implement(small, 1, 1 << 17, 1 << 14, &why)) << why;
  const GemvBf16Config big = gemv_bf16_default(1, 1 << 20, 1 << 14); // 2^34
  EXPECT_FALSE(gemv_bf16_can_implement(big, 1, 1 << 20, 1 << 14, &why));
  EXPECT_NE(why.find("2^34"), std::string::npos) << why;
  EXPECT_NE(why.find("n=1048576"), std::string::npos) << why;
}

TEST(GemvBf16KernelConfigTest, StreamDefaultOrderDoesNotDependOnRowsAndRoundTrips) {
  for (int n : {1, 77, 4096, 14336})
    for (int k : {8, 64, 264, 4096, 14336}) {
      const GemvBf16Config one = gemv_bf16_stream_default(1, n, k);
      for (int rows = 1; rows <= 32; ++rows) {
        const GemvBf16Config c = gemv_bf16_stream_default(rows, n, k);
        EXPECT_EQ(c.path, KernelPath::stream);
        EXPECT_TRUE(same_order(c, one)) << n << "x" << k << " rows=" << rows;
        std::string why;
        EXPECT_TRUE(gemv_bf16_can_implement(c, rows, n, k, &why)) << why;
        EXPECT_EQ(GemvBf16Config::from_tactic(c.to_tactic()), c) << c.to_tactic().str();
      }
    }
  // A stream config never takes more rows than one CTA holds (weights once).
  GemvBf16Config c = gemv_bf16_stream_default(8, 4096, 4096);
  std::string why;
  EXPECT_FALSE(gemv_bf16_can_implement(c, 9, 4096, 4096, &why));
  EXPECT_NE(why.find("once"), std::string::npos) << why;
}

TEST(GemvBf16KernelConfigTest, RingConfigsCoverTheMmaOrdersAndRefuseWhatTheyCannotTake) {
  // A ring config for every k_slices of the mma path at every row count (16 slices up to 16
  // rows: the 32-row kernels take at most 8 consumers), so that a batch-invariant tune can pick
  // the ring path whatever the shape's default order is.
  for (int rows = 1; rows <= 32; ++rows)
    for (int slices : {1, 2, 4, 8, 16}) {
      if (slices == 16 && rows > 16)
        continue;
      bool found = false;
      for (const GemvBf16Config &c : gemv_bf16_configs())
        found = found || (c.path == KernelPath::ring && gemv_bf16_k_slices(c) == slices &&
                          gemv_bf16_can_implement(c, rows, 4096, 4096, nullptr));
      EXPECT_TRUE(found) << "rows=" << rows << " k_slices=" << slices;
    }
  // Every listed ring config can launch (a TMA box holds at most 256 rows of a tile).
  for (const GemvBf16Config &c : gemv_bf16_configs())
    if (c.path == KernelPath::ring)
      EXPECT_TRUE(ring_launch_fits(c, c, c.rows_per_cta, 1 << 20, c.rows_per_cta <= 16 ? 16 : 8))
          << c.to_tactic().str();
  for (const GemvBf16Config &c : gemv_bf16_configs())
    if (c.path == KernelPath::ring && c.rows_per_cta == 8) {
      EXPECT_LE(static_cast<size_t>(ring_shared_bytes(c, c, 32)) * c.ctas_per_sm,
                kStreamMaxSharedBytes);
      std::string why;
      EXPECT_FALSE(gemv_bf16_can_implement(c, 9, 4096, 4096, &why));
      EXPECT_NE(why.find("ring path reads the weights once"), std::string::npos) << why;
      EXPECT_FALSE(gemv_bf16_can_implement(c, 1, 4096, 4104, &why));
      EXPECT_NE(why.find("k=4104 is not a multiple of 32"), std::string::npos) << why;
    }
}

// The ring twin of an mma config (ChainLaunch::weights_once) computes its K order: the ring
// path at the same k_slices, and one that can run the shape; none for the other paths or where
// the ring's 32-value chunk does not divide K.
TEST(GemvBf16KernelConfigTest, RingTwinKeepsTheMmaConfigsOrder) {
  int twins = 0;
  for (int rows : {1, 8, 9, 16, 24, 32})
    for (const auto &[n, k] : {std::pair{4096, 4096}, std::pair{28672, 4096},
                               std::pair{4096, 14336}, std::pair{1536, 8960}}) {
      for (const GemvBf16Config &c : gemv_bf16_configs()) {
        if (c.path != KernelPath::mma || !gemv_bf16_can_implement(c, rows, n, k, nullptr))
          continue;
        const std::optional<GemvBf16Config> twin = gemv_bf16_ring_twin(c, rows, n, k);
        if (!twin)
          continue;
        ++twins;
        EXPECT_EQ(twin->path, KernelPath::ring) << c.to_tactic().str();
        EXPECT_EQ(gemv_bf16_k_slices(*twin), gemv_bf16_k_slices(c)) << c.to_tactic().str();
        EXPECT_TRUE(gemv_bf16_can_implement(*twin, rows, n, k, nullptr))
            << twin->to_tactic().str() << " rows=" << rows << " n=" << n << " k=" << k;
      }
      if (rows == 1 && n != 1536)
        EXPECT_TRUE(gemv_bf16_ring_twin(gemv_bf16_default(1, n, k), 1, n, k))
            << "n=" << n << " k=" << k;
    }
  EXPECT_GT(twins, 0);
  const GemvBf16Config ring = gemv_bf16_ring_default(1, 4096, 4096);
  EXPECT_EQ(gemv_bf16_ring_twin(ring, 1, 4096, 4096), ring);
  EXPECT_FALSE(gemv_bf16_ring_twin(gemv_bf16_stream_default(1, 4096, 4096), 1, 4096, 4096));
  // K = 4104: a multiple of 8, not of the ring's 32-value chunk.
  EXPECT_FALSE(gemv_bf16_ring_twin(gemv_bf16_default(1, 4096, 4104), 1, 4096, 4104));
}

TEST(GemvBf16KernelConfigTest, RingDefaultKeepsTheMmaDefaultOrderAndRuns) {
  for (int n : {77, 1536, 4096, 14336, 28672})
    for (int k : {256, 1536, 4096, 14336}) {
      const GemvBf16Config mma = gemv_bf16_default(1, n, k);
      for (int rows = 1; rows <= 32; ++rows) {
        const GemvBf16Config c = gemv_bf16_ring_default(rows, n, k);
        const std::string t = c.to_tactic().str();
        EXPECT_EQ(c.path, KernelPath::ring) << t;
        // The mma default's order, so the same bits: the switch changes speed only.
        EXPECT_TRUE(same_order(c, mma)) << t << " rows " << rows;
        EXPECT_EQ(GemvBf16Config::from_tactic(c.to_tactic()), c) << t;
        std::string why;
        const int most = c.rows_per_cta <= 16 ? 16 : 8; // consumers of its kernel
        EXPECT_EQ(gemv_bf16_can_implement(c, rows, n, k, &why), gemv_bf16_k_slices(c) <= most)
            << t << " rows " << rows << ": " << why;
      }
    }
}

TEST(GemvBf16KernelConfigTest, EveryConfigRoundTripsAndOldTacticsKeepTheirSpelling) {
  int stream = 0, ring = 0;
  for (const GemvBf16Config &c : gemv_bf16_configs()) {
    EXPECT_EQ(GemvBf16Config::from_tactic(c.to_tactic()), c) << c.to_tactic().str();
    const std::string t = c.to_tactic().str();
    if (c.path == KernelPath::stream) {
      ++stream;
      EXPECT_EQ(t.rfind("gemv.bf16.stream:", 0), 0u) << t;
      EXPECT_NE(t.find(",stages="), std::string::npos) << t;
    } else if (c.path == KernelPath::ring) {
      ++ring;
      EXPECT_EQ(t.rfind("gemv.bf16.ring:", 0), 0u) << t;
      EXPECT_NE(t.find(",stages="), std::string::npos) << t;
    } else {
      EXPECT_EQ(t.find("stages"), std::string::npos) << t;
      EXPECT_EQ(t.find("ctas_per_sm"), std::string::npos) << t;
    }
  }
  EXPECT_GT(stream, 0);
  EXPECT_GT(ring, 0);
  EXPECT_EQ(GemvBf16Config::from_tactic(
                Tactic::parse("gemv.bf16.mma:rows_per_cta=8,warps=4,warps_k=4,"
                              "outputs_per_warp=16,split_k=1,vec=16"))
                .path,
            KernelPath::mma);
}

TEST(GemvBf16KernelConfigTest, KNotMultipleOf8IsRejectedWithAReason) {
  std::string reason;
  EXPECT_FALSE(gemv_bf16_can_implement(gemv_bf16_default(1, 64, 100), 1, 64, 100, &reason));
  EXPECT_NE(reason.find("multiple of 8"), std::string::npos) << reason;
}

TEST(GemvBf16KernelConfigTest, DefaultOrderDoesNotDependOnRows) {
  for (int n : {1, 77, 896, 1536, 4096, 14336})
    for (int k : {8, 264, 896, 1536, 4096, 14336}) {
      const GemvBf16Config one = gemv_bf16_default(1, n, k);
      for (int rows = 1; rows <= 32; ++rows) {
        const GemvBf16Config c = gemv_bf16_default(rows, n, k);
        EXPECT_TRUE(same_order(c, one)) << n << "x" << k << " rows=" << rows;
        std::string why;
        EXPECT_TRUE(gemv_bf16_can_implement(c, rows, n, k, &why)) << why;
        EXPECT_EQ(GemvBf16Config::from_tactic(c.to_tactic()).to_tactic(), c.to_tactic());
      }
    }
}

// 17-32 rows: a small matrix (bf16 weights under 8 MB) runs its rows in two groups of 16, a
// larger one in one CTA of 32; up to 16 rows the CTA holds them all.
TEST(GemvBf16KernelConfigTest, PastSixteenRowsSmallMatricesRunTwoGroupsOfSixteen) {
  const struct {
    int rows, n, k, rows_per_cta;
  } cases[] = {
      {24, 896, 896, 16},   {32, 2048, 1536, 16}, {32, 2048, 2048, 32}, // 6.3 MB, 8.4 MB
      {32, 4096, 4096, 32}, {12, 896, 896, 16},   {4, 896, 896, 8},
  };
  for (const auto &c : cases)
    EXPECT_EQ(gemv_bf16_default(c.rows, c.n, c.k).rows_per_cta, c.rows_per_cta)
        << c.n << "x" << c.k << " rows=" << c.rows;
}

// A small matrix splits K until its launch has about 4 warps per SM (the fill floor); a large
// one keeps the fitted rule's split.
TEST(GemvBf16KernelConfigTest, SmallMatricesSplitKUntilTheLaunchFillsTheGpu) {
  const struct {
    int n, k, slices;
  } cases[] = {
      {896, 896, 8},    // 56 m16 tiles: 448 warps (2 under the fitted rule's 256-element slices)
      {1152, 896, 4},   // 72 tiles: 288 warps; 8 slices would be 576
      {896, 4864, 16},  // the fitted rule's split is above the floor
      {4096, 4096, 8},  // likewise
      {17920, 1536, 1}, // 1120 tiles fill the GPU unsplit
      {28672, 4096, 1}, {64, 64, 2}, // the floor stops at one 32-element chunk per slice
  };
  for (const auto &c : cases)
    for (int rows : {1, 16, 32})
      EXPECT_EQ(gemv_bf16_k_slices(gemv_bf16_default(rows, c.n, c.k)), c.slices)
          << c.n << "x" << c.k << " rows=" << rows;
}

#endif

} // namespace
} // namespace hone::cuda

#ifdef HONE_GEMV_BF16_KERNEL_TEST_MAIN
int main(int argc, char **argv) { return hone::cuda::run_main(argc, argv); }
#endif
