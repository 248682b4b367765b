// qmm_probe: times chosen kernels of qmm.affine's mma path directly, without the op's gate, for
// ablations and profiles (ncu, compute-sanitizer) of one kernel at a time. Weights are rotated
// over copies of at least 480 MB in all (cold L2), kernels are interleaved per sample, and each
// prints the median of 9 samples of 20 launches.
//
//   qmm_probe M N K GROUP TACTIC...
//   TACTIC = engine,tile_m,tile_n,tile_k,warps,stages,split_k[,stream_k]
//            (engine 0 mma.sync, 1 register-A wgmma, 2 TMA, 3 TMA with lookahead)
//   QMM_PROBE_ONCE=1 qmm_probe ...   one launch per kernel, no timing (compute-sanitizer, ncu)
//   QMM_PROBE_COPIES=C qmm_probe ... C copies of the weights instead (1: warm in L2 where they
//                                     fit), to tell a launch's cold reads from the rest of it
//
// Inputs are constant bytes (no reference): a kernel that cannot launch says so and the rest
// go on. Exit status 2 on a malformed argument, 1 on a CUDA error.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/backend/cuda_check.h"
#include "cuda/kernels/qmm_affine/qmm_affine_mma.h"

namespace {

using hone::cuda::QmmMmaArgs;
using hone::cuda::QmmMmaKernel;

struct Candidate {
  QmmMmaKernel kernel;
  int split_k = 1;
  bool stream_k = false;
  std::string text;
  void *workspace = nullptr;
  size_t workspace_bytes = 0;
};

bool parse(const char *text, Candidate *c) {
  QmmMmaKernel &k = c->kernel;
  int stream = 0;
  const int fields = std::sscanf(text, "%d,%d,%d,%d,%d,%d,%d,%d", &k.engine, &k.tile_m, &k.tile_n,
                                 &k.tile_k, &k.warps, &k.stages, &c->split_k, &stream);
  c->stream_k = stream != 0;
  c->text = text;
  return fields == 7 || fields == 8;
}

// `copies` rotated sets of packed weights, scales and biases (constant bytes), one activation
// matrix and one output.
struct Buffers {
  std::vector<void *> q, scales, biases;
  void *x = nullptr, *y = nullptr;
  Buffers(int m, int n, int k, int group, int copies) {
    const size_t q_bytes = static_cast<size_t>(n) * k / 2;
    const size_t p_bytes = static_cast<size_t>(n) * (k / group) * 2;
    for (int c = 0; c < copies; ++c) {
      q.push_back(alloc(q_bytes, 0x37));
      scales.push_back(alloc(p_bytes, 0x3c)); // bf16 0x3c3c ~ 0.0115
      biases.push_back(alloc(p_bytes, 0x3c));
    }
    x = alloc(static_cast<size_t>(m) * k * 2, 0x3c);
    y = alloc(static_cast<size_t>(m) * n * 2, 0);
  }
  static void *alloc(size_t bytes, int value) {
    void *p = nullptr;
    HONE_CUDA_CHECK(cudaMalloc(&p, bytes));
    HONE_CUDA_CHECK(cudaMemset(p, value, bytes));
    return p;
  }
};

} // namespace

int main(int argc, char **argv) try {
  if (argc < 6) {
    std::fprintf(stderr,
                 "usage: %s M N K GROUP "
                 "engine,tile_m,tile_n,tile_k,warps,stages,split_k[,stream_k]...\n",
                 argv[0]);
    return 2;
  }
  const int m = std::atoi(argv[1]), n = std::atoi(argv[2]), k = std::atoi(argv[3]),
            group = std::atoi(argv[4]);
  if (m < 1 || n < 8 || k < 64 || (group != 32 && group != 64 && group != 128)) {
    std::fprintf(stderr, "qmm_probe: bad shape m=%d n=%d k=%d group=%d\n", m, n, k, group);
    return 2;
  }
  std::vector<Candidate> candidates;
  for (int i = 5; i < argc; ++i) {
    Candidate c;
    if (!parse(argv[i], &c)) {
      std::fprintf(stderr,
                   "qmm_probe: bad tactic '%s' (engine,tile_m,tile_n,tile_k,warps,"
                   "stages,split_k[,stream_k])\n",
                   argv[i]);
      return 2;
    }
    candidates.push_back(c);
  }
  const bool once = std::getenv("QMM_PROBE_ONCE") != nullptr;
  const size_t per_copy =
      static_cast<size_t>(n) * k / 2 + 2 * static_cast<size_t>(n) * (k / group) * 2;
  int copies = once ? 1 : std::max(2, static_cast<int>((size_t{480} << 20) / per_copy) + 1);
  if (const char *text = std::getenv("QMM_PROBE_COPIES"); text != nullptr && !once) {
    copies = std::atoi(text);
    if (copies < 1 || copies > 4096) {
      std::fprintf(stderr, "qmm_probe: bad QMM_PROBE_COPIES '%s' (1 to 4096)\n", text);
      return 2;
    }
  }
  Buffers buffers(m, n, k, group, copies);
  for (Candidate &c : candidates) {
    c.workspace_bytes = hone::cuda::qmm_mma_workspace_bytes(c.kernel, m, n, k, c.stream_k);
    if (c.workspace_bytes > 0)
      c.workspace = Buffers::alloc(c.workspace_bytes, 0xa5);
  }
  cudaStream_t stream;
  HONE_CUDA_CHECK(cudaStreamCreate(&stream));
  const auto launch = [&](const Candidate &c, int copy) {
    QmmMmaArgs a;
    a.x = buffers.x;
    a.q = static_cast<const uint32_t *>(buffers.q[copy]);
    a.scales = buffers.scales[copy];
    a.biases = buffers.biases[copy];
    a.y = buffers.y;
    a.m = m;
    a.n = n;
    a.k = k;
    a.group = group;
    a.split_k = c.split_k;
    a.stream_k = c.stream_k;
    a.workspace = c.workspace;
    a.workspace_bytes = c.workspace_bytes;
    return hone::cuda::qmm_mma_launch(c.kernel, a, stream);
  };
  std::vector<bool> ok;
  for (const Candidate &c : candidates) {
    ok.push_back(launch(c, 0).ok());
    HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
  }
  if (once) {
    for (size_t i = 0; i < candidates.size(); ++i)
      std::printf("m=%d n=%d k=%d %s %s\n", m, n, k, candidates[i].text.c_str(),
                  ok[i] ? "ran" : "cannot launch");
    HONE_CUDA_CHECK(cudaDeviceSynchronize());
    return 0;
  }
  constexpr int kBatch = 20, kSamples = 9;
  cudaEvent_t start, stop;
  HONE_CUDA_CHECK(cudaEventCreate(&start));
  HONE_CUDA_CHECK(cudaEventCreate(&stop));
  std::vector<std::vector<float>> us(candidates.size());
  int copy = 0;
  for (int sample = 0; sample < kSamples; ++sample)
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (!ok[i])
        continue;
      HONE_CUDA_CHECK(cudaEventRecord(start, stream));
      for (int r = 0; r < kBatch; ++r) {
        copy = (copy + 1) % copies;
        launch(candidates[i], copy);
      }
      HONE_CUDA_CHECK(cudaEventRecord(stop, stream));
      HONE_CUDA_CHECK(cudaEventSynchronize(stop));
      float ms = 0;
      HONE_CUDA_CHECK(cudaEventElapsedTime(&ms, start, stop));
      us[i].push_back(ms * 1000.0f / kBatch);
    }
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (!ok[i]) {
      std::printf("m=%d n=%d k=%d %s cannot launch\n", m, n, k, candidates[i].text.c_str());
      continue;
    }
    std::sort(us[i].begin(), us[i].end());
    std::printf("m=%d n=%d k=%d %s %.2f us\n", m, n, k, candidates[i].text.c_str(),
                us[i][kSamples / 2]);
  }
  return 0;
} catch (const std::exception &e) { // HONE_CUDA_CHECK throws, naming the call
  std::fprintf(stderr, "%s\n", e.what());
  return 1;
}
