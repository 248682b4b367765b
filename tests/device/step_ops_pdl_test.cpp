// The kernels of a decode step as programmatic dependent launches, captured in CUDA graphs
// whose replays first poison every intermediate: the small ops (rmsnorm -> silu_mul -> rmsnorm
// -> rope -> kv_append), and the linears (gemv.bf16 and qmv.affine on every kernel path --
// register and cp.async pipelines, CUDA cores, split-K clusters, the weights-once stream). A
// kernel that read an activation before griddepcontrol.wait would read the poison of its replay
// (or a stale value), so every replay must give the bits of the same chain launched without PDL.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "cuda/backend/cuda_check.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16.h"
#include "cuda/kernels/qmv_affine/qmv_affine.h"
#include "device_test.h"
#include "hone/ops/cuda.h"
#include "step_op_test_util.h"

namespace hone::cuda {
namespace {

using testing::download_bf16;
using testing::PdlDeviceTest;
using testing::poisoned;
using testing::random_bf16;
using testing::reduced_shapes;
using testing::upload;

class StepOpsPdlTest : public PdlDeviceTest {};

// Graph replays of a dependent chain (20 under HONE_DEVICE_TEST_REDUCED, else 1000).
int replay_count() { return reduced_shapes() ? 20 : 1000; }

// `poison()` then `chain(true)` (the dependent chain) captured once in a CUDA graph on `stream`
// and replayed `replays` times: how many replays' `outputs()` differ from `serial`.
int mismatched_replays(cudaStream_t stream, const std::function<void()> &poison,
                       const std::function<void(bool)> &chain,
                       const std::function<std::vector<uint16_t>()> &outputs,
                       const std::vector<uint16_t> &serial, int replays) {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  HONE_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  poison();
  chain(true);
  HONE_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  HONE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  int mismatched = 0;
  for (int i = 0; i < replays; ++i) {
    HONE_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    mismatched += outputs() != serial ? 1 : 0;
  }
  HONE_CUDA_CHECK(cudaGraphExecDestroy(exec));
  HONE_CUDA_CHECK(cudaGraphDestroy(graph));
  return mismatched;
}

TEST_F(StepOpsPdlTest, GraphReplaysOfADependentChainEqualTheSerialChain) {
  const int rows = 4, inter = 2048, hq = 8, hkv = 4, head_dim = 128; // 2 inter = (hq + 2 hkv) D
  const int page_size = 16, num_pages = 8;
  const size_t wide = static_cast<size_t>(rows) * 2 * inter, narrow = wide / 2;
  DeviceBuffer x = upload(random_bf16(wide)), w1 = upload(random_bf16(2 * inter));
  DeviceBuffer w2 = upload(random_bf16(inter));
  DeviceBuffer a = poisoned(wide * 2), b = poisoned(narrow * 2), c = poisoned(wide * 2);
  DeviceBuffer positions = upload(std::vector<int32_t>{5, 77, 1000, 31999});
  const std::vector<int32_t> indptr{0, 1, 2, 3, 4}, indices{6, 1, 3, 0}, last{1, 7, 16, 3};
  DeviceBuffer dindptr = upload(indptr), dindices = upload(indices), dlast = upload(last);
  const size_t cache = static_cast<size_t>(num_pages) * page_size * hkv * head_dim;
  DeviceBuffer k_cache = poisoned(cache * 2), v_cache = poisoned(cache * 2);
  cudaStream_t stream = nullptr;
  HONE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  // x -> a = rmsnorm(x) [rows, 2 inter] -> b = silu_mul(a) [rows, inter] -> c [rows, 2 inter],
  // both halves of a row rmsnorm(b's row), read as q/k/v rows [rows, (hq + 2 hkv) D] -> rope on
  // c's q and k in place -> kv_append of c's k and v.
  const auto chain = [&](bool dependent) {
    ops::cuda::RmsnormTensors n1;
    n1.x = x.data();
    n1.w = w1.data();
    n1.out = a.data();
    n1.rows = rows;
    n1.hidden = 2 * inter;
    n1.dependent = false; // the first kernel waits for the poison below in stream order
    ops::cuda::rmsnorm(n1, stream);
    ops::cuda::SiluMulTensors s;
    s.gate_up = a.data();
    s.out = b.data();
    s.rows = rows;
    s.inter = inter;
    s.dependent = dependent;
    ops::cuda::silu_mul(s, stream);
    // c's rows are 2 inter apart and the entry point takes contiguous rows: one call per row
    // and half (more dependent launches in the chain).
    for (int half = 0; half < 2; ++half)
      for (int r = 0; r < rows; ++r) {
        ops::cuda::RmsnormTensors n2;
        n2.x = static_cast<const uint16_t *>(b.data()) + static_cast<size_t>(r) * inter;
        n2.w = w2.data();
        n2.out =
            static_cast<uint16_t *>(c.data()) + static_cast<size_t>(r) * 2 * inter + half * inter;
        n2.rows = 1;
        n2.hidden = inter;
        n2.dependent = dependent;
        ops::cuda::rmsnorm(n2, stream);
      }
    ops::cuda::RopeTensors rope;
    rope.q = c.data();
    rope.k = static_cast<const uint16_t *>(c.data()) + hq * head_dim;
    rope.q_stride = rope.k_stride = 2 * inter;
    rope.positions = positions.as<const int32_t>();
    rope.rows = rows;
    rope.hq = hq;
    rope.hkv = hkv;
    rope.head_dim = head_dim;
    rope.theta = 1e6;
    rope.dependent = dependent;
    ops::cuda::rope(rope, stream);
    ops::cuda::KvAppendTensors kv;
    kv.k = static_cast<const uint16_t *>(c.data()) + hq * head_dim;
    kv.v = static_cast<const uint16_t *>(c.data()) + (hq + hkv) * head_dim;
    kv.k_stride = kv.v_stride = 2 * inter;
    kv.k_cache = k_cache.data();
    kv.v_cache = v_cache.data();
    kv.kv_indptr = dindptr.as<const int32_t>();
    kv.kv_indices = dindices.as<const int32_t>();
    kv.kv_last_page_len = dlast.as<const int32_t>();
    kv.batch = rows;
    kv.num_pages = num_pages;
    kv.hkv = hkv;
    kv.head_dim = head_dim;
    kv.page_size = page_size;
    kv.dependent = dependent;
    ops::cuda::kv_append(kv, stream);
  };
  const auto poison = [&] {
    for (DeviceBuffer *d : {&a, &b, &c, &k_cache, &v_cache})
      HONE_CUDA_CHECK(cudaMemsetAsync(d->data(), 0xff, d->size(), stream));
  };
  const auto outputs = [&] {
    HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint16_t> out = download_bf16(c, wide);
    const std::vector<uint16_t> k = download_bf16(k_cache, cache);
    out.insert(out.end(), k.begin(), k.end());
    const std::vector<uint16_t> v = download_bf16(v_cache, cache);
    out.insert(out.end(), v.begin(), v.end());
    return out;
  };

  poison();
  chain(false);
  const std::vector<uint16_t> serial = outputs();
  size_t written = 0;
  for (size_t i = 0; i < wide; ++i)
    written += serial[i] != 0xffffu ? 1 : 0;
  ASSERT_EQ(written, wide) << "the serial chain left outputs unwritten";

  const int replays = replay_count();
  const int mismatched = mismatched_replays(stream, poison, chain, outputs, serial, replays);
  EXPECT_EQ(mismatched, 0) << "of " << replays << " replays";
  HONE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// One config of each kernel path that can run (rows, n, k): the first of the compiled table per
// (path, async, split_k > 1), the default first.
template <class Config, class CanImplement>
std::vector<Config> one_per_path(const Config &def, const std::vector<Config> &configs,
                                 CanImplement can_implement) {
  std::vector<Config> out{def};
  const auto kind = [](const Config &c) { return int(c.path) * 4 + c.async * 2 + (c.split_k > 1); };
  for (const Config &c : configs) {
    bool seen = false;
    for (const Config &o : out)
      seen = seen || kind(o) == kind(c);
    if (!seen && can_implement(c))
      out.push_back(c);
  }
  return out;
}

// rmsnorm -> gemv.bf16 under every path's config -> qmv.affine (int4 g64) under every path's
// config -> rmsnorm, each linear a dependent launch, ping-ponging between two activation
// buffers.
TEST_F(StepOpsPdlTest, GraphReplaysOfDependentLinearsEqualTheSerialChain) {
  const int rows = 4, n = 1024, k = 1024, bits = 4, group = 64;
  const size_t act = static_cast<size_t>(rows) * k;
  DeviceBuffer x = upload(random_bf16(act)), norm_w = upload(random_bf16(k));
  DeviceBuffer w = upload(random_bf16(static_cast<size_t>(n) * k, 0.05f));
  std::vector<uint32_t> words(static_cast<size_t>(n) * k * bits / 32);
  for (uint32_t &v : words)
    v = static_cast<uint32_t>(next_random_seed());
  DeviceBuffer q = upload(words);
  DeviceBuffer scales = upload(random_bf16(static_cast<size_t>(n) * k / group, 0.005f));
  DeviceBuffer biases = upload(random_bf16(static_cast<size_t>(n) * k / group, 0.02f));
  DeviceBuffer a = poisoned(act * 2), b = poisoned(act * 2), out = poisoned(act * 2);
  cudaStream_t stream = nullptr;
  HONE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));

  const std::vector<GemvBf16Config> gemvs = one_per_path(
      gemv_bf16_default(rows, n, k), gemv_bf16_configs(),
      [&](const GemvBf16Config &c) { return gemv_bf16_can_implement(c, rows, n, k, nullptr); });
  const std::vector<QmvAffineConfig> qmvs =
      one_per_path(qmv_affine_default(rows, n, k, bits, group), qmv_affine_configs(bits),
                   [&](const QmvAffineConfig &c) {
                     return qmv_affine_can_implement(c, rows, n, k, bits, group, nullptr);
                   });
  size_t workspace_bytes = 0;
  for (const GemvBf16Config &c : gemvs)
    workspace_bytes = std::max(workspace_bytes, gemv_bf16_workspace_bytes(c, rows, n, k));
  DeviceBuffer workspace(std::max<size_t>(workspace_bytes, 16));
  std::string paths;
  for (const GemvBf16Config &c : gemvs)
    paths += " " + c.to_tactic().str();
  for (const QmvAffineConfig &c : qmvs)
    paths += " " + c.to_tactic().str();
  ASSERT_GE(gemvs.size(), 3u) << paths;
  ASSERT_GE(qmvs.size(), 2u) << paths;

  const auto chain = [&](bool dependent) {
    ops::cuda::RmsnormTensors n1;
    n1.x = x.data();
    n1.w = norm_w.data();
    n1.out = a.data();
    n1.rows = rows;
    n1.hidden = k;
    ops::cuda::rmsnorm(n1, stream); // waits for the poison in stream order
    DeviceBuffer *from = &a, *to = &b;
    const auto next = [&] { std::swap(from, to); };
    for (const GemvBf16Config &c : gemvs) {
      GemvBf16Args args;
      args.x = from->data();
      args.w = w.data();
      args.y = to->data();
      args.rows = rows;
      args.n = n;
      args.k = k;
      args.workspace = workspace.data();
      args.workspace_bytes = workspace.size();
      args.chain = {dependent};
      ASSERT_TRUE(gemv_bf16_launch(c, args, stream).ok()) << c.to_tactic().str();
      next();
    }
    for (const QmvAffineConfig &c : qmvs) {
      QmvAffineArgs args;
      args.x = from->data();
      args.q = q.as<const uint32_t>();
      args.scales = scales.data();
      args.biases = biases.data();
      args.y = to->data();
      args.rows = rows;
      args.n = n;
      args.k = k;
      args.bits = bits;
      args.group = group;
      args.chain = {dependent};
      ASSERT_TRUE(qmv_affine_launch(c, args, stream).ok()) << c.to_tactic().str();
      next();
    }
    ops::cuda::RmsnormTensors n2;
    n2.x = from->data();
    n2.w = norm_w.data();
    n2.out = out.data();
    n2.rows = rows;
    n2.hidden = k;
    n2.dependent = dependent;
    ops::cuda::rmsnorm(n2, stream);
  };
  const auto poison = [&] {
    for (DeviceBuffer *d : {&a, &b, &out})
      HONE_CUDA_CHECK(cudaMemsetAsync(d->data(), 0xff, d->size(), stream));
  };
  const auto outputs = [&] {
    HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
    return download_bf16(out, act);
  };

  poison();
  chain(false);
  const std::vector<uint16_t> serial = outputs();
  size_t finite = 0;
  for (uint16_t v : serial)
    finite += (v & 0x7f80u) != 0x7f80u ? 1 : 0;
  ASSERT_EQ(finite, act) << "the serial chain left outputs unwritten or not finite:" << paths;

  const int replays = replay_count();
  const int mismatched = mismatched_replays(stream, poison, chain, outputs, serial, replays);
  EXPECT_EQ(mismatched, 0) << "of " << replays << " replays;" << paths;
  HONE_CUDA_CHECK(cudaStreamDestroy(stream));
}

} // namespace
} // namespace hone::cuda
