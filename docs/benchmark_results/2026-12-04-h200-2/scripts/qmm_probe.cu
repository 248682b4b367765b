// qmm_probe: times qmm.affine's mma-path kernels directly (no gate), cold weights rotated over
// >= 8 x 60 MB, interleaved per sample, median of 9 samples of 20 launches. Made for ablations
// (call 2: HONE_QMM_ABLATE, read by a temporary build of the wgmma engine's launch) whose results
// are wrong by design, so the op's gate would refuse them. QMM_PROBE_ONCE=1: one launch of each
// kernel and no timing (for compute-sanitizer).
//   qmm_probe M N K GROUP TACTIC...   TACTIC: engine,tile_m,tile_n,tile_k,warps,stages,split_k
// Built against a CMake build (-DHONE_QMM_TACTICS=full) from the repository root:
//   nvcc -std=c++20 -O2 -gencode=arch=compute_90a,code=sm_90a -Isrc -Iinclude \
//     docs/benchmark_results/2026-12-04-h200-2/scripts/qmm_probe.cu -o build/qmm_probe \
//     build/src/cuda/libhone_cuda.a build/src/core/libhone_core.a -lcublasLt -lcublas
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/backend/cuda_check.h"
#include "cuda/kernels/qmm_affine/qmm_affine_mma.h"

using namespace hone::cuda;

int main(int argc, char **argv) try {
  if (argc < 6)
    return 2;
  const int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]),
            group = std::atoi(argv[4]);
  struct T {
    QmmMmaKernel kern;
    int split;
    std::string text;
  };
  std::vector<T> ts;
  for (int i = 5; i < argc; ++i) {
    T t{};
    if (std::sscanf(argv[i], "%d,%d,%d,%d,%d,%d,%d", &t.kern.engine, &t.kern.tile_m, &t.kern.tile_n,
                    &t.kern.tile_k, &t.kern.warps, &t.kern.stages, &t.split) != 7)
      return 2;
    t.text = argv[i];
    ts.push_back(t);
  }
  const size_t qb = size_t(n) * k / 2, pb = size_t(n) * (k / group) * 2;
  const size_t per = qb + 2 * pb;
  const bool once = std::getenv("QMM_PROBE_ONCE") != nullptr;
  const int copies = once ? 1 : std::max<int>(2, int((size_t(480) << 20) / per) + 1);
  std::vector<unsigned char *> q(copies), s(copies), b(copies);
  for (int c = 0; c < copies; ++c) {
    HONE_CUDA_CHECK(cudaMalloc(&q[c], qb));
    HONE_CUDA_CHECK(cudaMalloc(&s[c], pb));
    HONE_CUDA_CHECK(cudaMalloc(&b[c], pb));
    HONE_CUDA_CHECK(cudaMemset(q[c], 0x37, qb));
    HONE_CUDA_CHECK(cudaMemset(s[c], 0x3c, pb)); // bf16 0x3c3c ~ 0.0115
    HONE_CUDA_CHECK(cudaMemset(b[c], 0x3c, pb));
  }
  void *x, *y;
  HONE_CUDA_CHECK(cudaMalloc(&x, size_t(m) * k * 2));
  HONE_CUDA_CHECK(cudaMemset(x, 0x3c, size_t(m) * k * 2));
  HONE_CUDA_CHECK(cudaMalloc(&y, size_t(m) * n * 2));
  cudaStream_t st;
  HONE_CUDA_CHECK(cudaStreamCreate(&st));
  cudaEvent_t e0, e1;
  HONE_CUDA_CHECK(cudaEventCreate(&e0));
  HONE_CUDA_CHECK(cudaEventCreate(&e1));
  auto launch = [&](const T &t, int c) {
    QmmMmaArgs a;
    a.x = x;
    a.q = reinterpret_cast<const uint32_t *>(q[c]);
    a.scales = s[c];
    a.biases = b[c];
    a.y = y;
    a.m = m;
    a.n = n;
    a.k = k;
    a.group = group;
    a.split_k = t.split;
    return qmm_mma_launch(t.kern, a, st);
  };
  std::vector<bool> ok(ts.size());
  for (size_t i = 0; i < ts.size(); ++i) {
    ok[i] = launch(ts[i], 0).ok();
    HONE_CUDA_CHECK(cudaStreamSynchronize(st));
  }
  if (once) {
    for (size_t i = 0; i < ts.size(); ++i)
      std::printf("m=%d n=%d k=%d %s %s\n", m, n, k, ts[i].text.c_str(),
                  ok[i] ? "ran" : "cannot launch");
    HONE_CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
  }
  const int kBatch = 20, kSamples = 9;
  std::vector<std::vector<float>> times(ts.size());
  int copy = 0;
  for (int smp = 0; smp < kSamples; ++smp)
    for (size_t i = 0; i < ts.size(); ++i) {
      if (!ok[i])
        continue;
      HONE_CUDA_CHECK(cudaEventRecord(e0, st));
      for (int r = 0; r < kBatch; ++r)
        launch(ts[i], copy = (copy + 1) % copies);
      HONE_CUDA_CHECK(cudaEventRecord(e1, st));
      HONE_CUDA_CHECK(cudaEventSynchronize(e1));
      float ms;
      HONE_CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
      times[i].push_back(ms * 1000.f / kBatch);
    }
  const char *ab = std::getenv("HONE_QMM_ABLATE");
  for (size_t i = 0; i < ts.size(); ++i) {
    if (!ok[i]) {
      std::printf("ablate=%s m=%d n=%d k=%d %s cannot launch\n", ab ? ab : "0", m, n, k,
                  ts[i].text.c_str());
      continue;
    }
    std::sort(times[i].begin(), times[i].end());
    std::printf("ablate=%s m=%d n=%d k=%d %s %.2f us\n", ab ? ab : "0", m, n, k, ts[i].text.c_str(),
                times[i][kSamples / 2]);
  }
  return 0;
} catch (const std::exception &e) { // HONE_CUDA_CHECK throws, naming the call
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
