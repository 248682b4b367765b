// The kernels of a decode step as programmatic dependent launches, captured in CUDA graphs
// whose replays first poison every intermediate: the small ops (rmsnorm -> silu_mul -> rmsnorm
// -> rope -> kv_append), and the linears (gemv.bf16 and qmv.affine on every kernel path --
// register and cp.async pipelines, CUDA cores, split-K clusters, the weights-once stream). A
// kernel that read an activation before griddepcontrol.wait would read the poison of its replay
// (or a stale value), so every replay must give the bits of the same chain launched without PDL.
// decode.paged, which with ChainLaunch::prefetch_kib reads its page table and asks L2 for cached
// K and V before its wait, runs after kv_append and a q producer, with the new tokens' cache
// slots poisoned by every replay. With the chain's early trigger (chain_settings.h) rmsnorm lets
// the next kernel start at its own start: a dependent kernel after it, which still must read
// only its finished output.
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/kernels/common/chain_settings.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16.h"
#include "cuda/kernels/qmv_affine/qmv_affine.h"
#include "cuda/ops/decode_paged_entry.h"
#include "device_test.h"
#include "hone/dispatcher.h"
#include "hone/ops/cuda.h"
#include "hone/settings.h"
#include "step_op_test_util.h"

namespace hone::cuda {
namespace {

using testing::download_bf16;
using testing::paged_append;
using testing::PdlDeviceTest;
using testing::poisoned;
using testing::random_bf16;
using testing::reduced_shapes;
using testing::upload;

class StepOpsPdlTest : public PdlDeviceTest {};

// Graph replays of a dependent chain (20 under HONE_DEVICE_TEST_REDUCED, else 1000).
int replay_count() { return reduced_shapes() ? 20 : 1000; }

// bf16 words of `v` that are finite (exponent not all ones: poison is 0xffff, a NaN).
size_t count_finite(const std::vector<uint16_t> &v) {
  return static_cast<size_t>(
      std::count_if(v.begin(), v.end(), [](uint16_t x) { return (x & 0x7f80u) != 0x7f80u; }));
}

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
    ops::cuda::KvAppendTensors kv = paged_append(k_cache, v_cache, dindptr, dindices, dlast, rows,
                                                 num_pages, hkv, head_dim, page_size, dependent);
    kv.k = static_cast<const uint16_t *>(c.data()) + hq * head_dim;
    kv.v = static_cast<const uint16_t *>(c.data()) + (hq + hkv) * head_dim;
    kv.k_stride = kv.v_stride = 2 * inter;
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

// rmsnorm (q, not dependent: it follows the poison in stream order) -> kv_append of the new
// token -> decode.paged over the paged cache, split in chunks of 4 pages; every replay restores
// the cache with the new tokens' slots poisoned and poisons q and o. decode.paged with
// prefetch_kib > 0 reads its page table and asks L2 for its first K and V tiles, the new token's
// among them, before griddepcontrol.wait: its o must still be the serial chain's, bit for bit. A
// dependent rmsnorm of o follows, also with the early trigger (which reaches the rmsnorm alone):
// it must read the finished o.
TEST_F(StepOpsPdlTest, GraphReplaysOfAppendThenPrefetchingAttentionEqualTheSerialChain) {
  const int hq = 16, hkv = 4, head_dim = 128, page_size = 16;
  const std::vector<int> lengths{700, 33, 2000}; // with the new token
  const int batch = static_cast<int>(lengths.size());
  // Pages of every request from a shuffled pool with spares.
  std::vector<int32_t> indptr{0}, last;
  for (int len : lengths) {
    indptr.push_back(indptr.back() + (len + page_size - 1) / page_size);
    last.push_back(len - (indptr.back() - indptr[indptr.size() - 2] - 1) * page_size);
  }
  const int num_pages = indptr.back() + 5;
  std::vector<int32_t> indices(static_cast<size_t>(num_pages));
  for (int i = 0; i < num_pages; ++i)
    indices[static_cast<size_t>(i)] = (i * 37 + 11) % num_pages; // 37 is prime to num_pages
  ASSERT_NE(num_pages % 37, 0);
  indices.resize(static_cast<size_t>(indptr.back()));
  const size_t token = static_cast<size_t>(hkv) * head_dim;
  const size_t cache = static_cast<size_t>(num_pages) * page_size * token;
  std::vector<uint16_t> k_host = random_bf16(cache), v_host = random_bf16(cache);
  for (int b = 0; b < batch; ++b) { // the new token's slot: poison, as before its append
    const size_t page = static_cast<size_t>(indices[static_cast<size_t>(indptr[b + 1] - 1)]);
    const size_t slot = (page * page_size + static_cast<size_t>(last[b] - 1)) * token;
    std::fill_n(k_host.begin() + static_cast<std::ptrdiff_t>(slot), token, uint16_t{0xffff});
    std::fill_n(v_host.begin() + static_cast<std::ptrdiff_t>(slot), token, uint16_t{0xffff});
  }
  const size_t q_count = static_cast<size_t>(batch) * hq * head_dim;
  const size_t new_count = static_cast<size_t>(batch) * token;
  DeviceBuffer k_pristine = upload(k_host), v_pristine = upload(v_host);
  DeviceBuffer k_cache = upload(k_host), v_cache = upload(v_host);
  DeviceBuffer q_src = upload(random_bf16(q_count)), norm_w = upload(random_bf16(head_dim));
  DeviceBuffer k_new = upload(random_bf16(new_count)), v_new = upload(random_bf16(new_count));
  DeviceBuffer q = poisoned(q_count * 2), o = poisoned(q_count * 2), on = poisoned(q_count * 2);
  DeviceBuffer dindptr = upload(indptr), dindices = upload(indices), dlast = upload(last);
  cudaStream_t stream = nullptr;
  HONE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  Dispatcher d(cuda_backend(), DispatcherOptions::from_settings(Settings::from_env()));
  const ops::cuda::DecodePagedPlan plan = decode_paged_plan_with(
      indptr.data(), last.data(), batch, hq, hkv, head_dim, page_size, 4 * page_size, d);
  ASSERT_GT(plan.max_chunks, 1) << "the test wants the split kernel and the merge kernel";

  int prefetch_kib = 0;
  const auto chain = [&](bool dependent) {
    ops::cuda::RmsnormTensors n;
    n.x = q_src.data();
    n.w = norm_w.data();
    n.out = q.data();
    n.rows = batch * hq;
    n.hidden = head_dim;
    n.dependent = false;
    ops::cuda::rmsnorm(n, stream);
    ops::cuda::KvAppendTensors kv = paged_append(k_cache, v_cache, dindptr, dindices, dlast, batch,
                                                 num_pages, hkv, head_dim, page_size, dependent);
    kv.k = k_new.data();
    kv.v = v_new.data();
    ops::cuda::kv_append(kv, stream);
    ops::cuda::DecodePagedTensors t;
    t.q = q.data();
    t.k_cache = k_cache.data();
    t.v_cache = v_cache.data();
    t.kv_indptr = dindptr.as<const int32_t>();
    t.kv_indices = dindices.as<const int32_t>();
    t.kv_last_page_len = dlast.as<const int32_t>();
    t.o = o.data();
    t.batch = batch;
    t.num_pages = num_pages;
    t.hq = hq;
    t.hkv = hkv;
    t.head_dim = head_dim;
    t.page_size = page_size;
    t.scale = 0.088f;
    t.kv_indptr_host = indptr.data();
    t.kv_last_page_len_host = last.data();
    t.dependent = dependent;
    t.prefetch_kib = prefetch_kib;
    decode_paged_run(t, plan, stream, /*check_pages=*/false);
    ops::cuda::RmsnormTensors after = n; // of o, after attention
    after.x = o.data();
    after.out = on.data();
    after.dependent = dependent;
    ops::cuda::rmsnorm(after, stream);
  };
  const auto poison = [&] {
    HONE_CUDA_CHECK(cudaMemcpyAsync(k_cache.data(), k_pristine.data(), k_cache.size(),
                                    cudaMemcpyDeviceToDevice, stream));
    HONE_CUDA_CHECK(cudaMemcpyAsync(v_cache.data(), v_pristine.data(), v_cache.size(),
                                    cudaMemcpyDeviceToDevice, stream));
    for (DeviceBuffer *b : {&q, &o, &on})
      HONE_CUDA_CHECK(cudaMemsetAsync(b->data(), 0xff, b->size(), stream));
  };
  const auto outputs = [&] { // o, then its rmsnorm
    HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
    std::vector<uint16_t> v = download_bf16(o, q_count);
    const std::vector<uint16_t> normed = download_bf16(on, q_count);
    v.insert(v.end(), normed.begin(), normed.end());
    return v;
  };

  poison();
  chain(false);
  const std::vector<uint16_t> serial = outputs();
  // Every output finite: the appended tokens replaced the poison before attention read them.
  ASSERT_EQ(count_finite(serial), 2 * q_count) << "the serial chain left poison in o";

  const int replays = replay_count();
  for (int kib : {0, 8, 64, 1 << 20}) {
    prefetch_kib = kib;
    const int mismatched = mismatched_replays(stream, poison, chain, outputs, serial, replays);
    EXPECT_EQ(mismatched, 0) << "prefetch_kib=" << kib << ": of " << replays << " replays";
  }
  for (int kib : {0, 64}) { // the chain's early trigger, captured into the graph
    prefetch_kib = kib;
    const ScopedChainSettings early(-1, true);
    const int mismatched = mismatched_replays(stream, poison, chain, outputs, serial, replays);
    EXPECT_EQ(mismatched, 0) << "early trigger, prefetch_kib=" << kib << ": of " << replays
                             << " replays";
  }
  // Out of range: refused, naming the value.
  prefetch_kib = -1;
  testing::expect_invalid_call([&] { chain(true); }, "prefetch_kib=-1");
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
  HONE_CUDA_CHECK(cudaStreamDestroy(stream));
}

// One config of each kernel path that can run (rows, n, k): the first of the compiled table per
// (path, the shallow kernels apart, async, split_k > 1), the default first.
template <class Config, class CanImplement>
std::vector<Config> one_per_path(const Config &def, const std::vector<Config> &configs,
                                 CanImplement can_implement) {
  std::vector<Config> out{def};
  const auto kind = [](const Config &c) {
    int shallow = 0; // qmv.affine's shallow kernels: a path of their own here
    if constexpr (requires { c.shallow; })
      shallow = c.shallow > 0;
    return int(c.path) * 8 + shallow * 4 + c.async * 2 + (c.split_k > 1);
  };
  for (const Config &c : configs) {
    bool seen = false;
    for (const Config &o : out)
      seen = seen || kind(o) == kind(c);
    if (!seen && can_implement(c))
      out.push_back(c);
  }
  return out;
}

// The operands of a linear chain: rmsnorm of x into `a`, linears ping-ponging between `a` and
// `b` over one bf16 weight matrix and one int4 g64 one, rmsnorm into `out`; and its stream.
struct LinearChain {
  static constexpr int kBits = 4, kGroup = 64;
  int rows, n, k;
  size_t act;
  DeviceBuffer x, norm_w, w, q, scales, biases, a, b, out;
  cudaStream_t stream = nullptr;

  LinearChain(int rows_, int n_, int k_)
      : rows(rows_), n(n_), k(k_), act(static_cast<size_t>(rows_) * k_),
        x(upload(random_bf16(act))), norm_w(upload(random_bf16(k_))),
        w(upload(random_bf16(static_cast<size_t>(n_) * k_, 0.05f))), q(random_words()),
        scales(upload(random_bf16(static_cast<size_t>(n_) * k_ / kGroup, 0.005f))),
        biases(upload(random_bf16(static_cast<size_t>(n_) * k_ / kGroup, 0.02f))),
        a(poisoned(act * 2)), b(poisoned(act * 2)), out(poisoned(act * 2)) {
    HONE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  }
  ~LinearChain() { cudaStreamDestroy(stream); }
  LinearChain(const LinearChain &) = delete;
  LinearChain &operator=(const LinearChain &) = delete;

  DeviceBuffer random_words() const {
    std::vector<uint32_t> words(static_cast<size_t>(n) * k * kBits / 32);
    for (uint32_t &v : words)
      v = static_cast<uint32_t>(next_random_seed());
    return upload(words);
  }
  // rmsnorm(from) -> `to`, a dependent launch or not.
  void norm(const DeviceBuffer &from, DeviceBuffer &to, bool dependent) {
    ops::cuda::RmsnormTensors t;
    t.x = from.data();
    t.w = norm_w.data();
    t.out = to.data();
    t.rows = rows;
    t.hidden = k;
    t.dependent = dependent;
    ops::cuda::rmsnorm(t, stream);
  }
  // rmsnorm(x) -> `a`, after the poison in stream order.
  void first_norm() { norm(x, a, false); }
  // rmsnorm(from) -> `out`.
  void last_norm(const DeviceBuffer &from, bool dependent) { norm(from, out, dependent); }
  void poison() {
    for (DeviceBuffer *d : {&a, &b, &out})
      HONE_CUDA_CHECK(cudaMemsetAsync(d->data(), 0xff, d->size(), stream));
  }
  std::vector<uint16_t> outputs() {
    HONE_CUDA_CHECK(cudaStreamSynchronize(stream));
    return download_bf16(out, act);
  }
  // The serial chain's outputs, then how many of the dependent chain's graph replays differ.
  int mismatches(const std::function<void(bool)> &chain, const std::string &what) {
    poison();
    chain(false);
    const std::vector<uint16_t> serial = outputs();
    EXPECT_EQ(count_finite(serial), act)
        << "the serial chain left outputs unwritten or not finite:" << what;
    return mismatched_replays(
        stream, [&] { poison(); }, chain, [&] { return outputs(); }, serial, replay_count());
  }
};

// rmsnorm -> gemv.bf16 under every path's config -> qmv.affine (int4 g64) under every path's
// config -> rmsnorm, each linear a dependent launch, ping-ponging between two activation
// buffers.
TEST_F(StepOpsPdlTest, GraphReplaysOfDependentLinearsEqualTheSerialChain) {
  LinearChain l(4, 1024, 1024);
  const int rows = l.rows, n = l.n, k = l.k, bits = LinearChain::kBits, group = LinearChain::kGroup;
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
    paths += ' ' + c.to_tactic().str();
  for (const QmvAffineConfig &c : qmvs)
    paths += ' ' + c.to_tactic().str();
  ASSERT_GE(gemvs.size(), 3u) << paths;
  ASSERT_GE(qmvs.size(), 2u) << paths;

  const auto chain = [&](bool dependent) {
    l.first_norm();
    DeviceBuffer *from = &l.a, *to = &l.b;
    const auto next = [&] { std::swap(from, to); };
    for (const GemvBf16Config &c : gemvs) {
      GemvBf16Args args;
      args.x = from->data();
      args.w = l.w.data();
      args.y = to->data();
      args.rows = rows;
      args.n = n;
      args.k = k;
      args.workspace = workspace.data();
      args.workspace_bytes = workspace.size();
      args.chain = {dependent};
      ASSERT_TRUE(gemv_bf16_launch(c, args, l.stream).ok()) << c.to_tactic().str();
      next();
    }
    for (const QmvAffineConfig &c : qmvs) {
      QmvAffineArgs args;
      args.x = from->data();
      args.q = l.q.as<const uint32_t>();
      args.scales = l.scales.data();
      args.biases = l.biases.data();
      args.y = to->data();
      args.rows = rows;
      args.n = n;
      args.k = k;
      args.bits = bits;
      args.group = group;
      args.chain = {dependent};
      ASSERT_TRUE(qmv_affine_launch(c, args, l.stream).ok()) << c.to_tactic().str();
      next();
    }
    l.last_norm(*from, dependent);
  };
  EXPECT_EQ(l.mismatches(chain, paths), 0) << "of " << replay_count() << " replays;" << paths;
}

// rmsnorm -> gemv.bf16 -> qmv.affine (int4 g64) -> gemv.bf16 -> rmsnorm through the public
// entry points with their default tactics (mma path), each linear a dependent launch that runs
// as its weights-once ring twin (ChainLaunch::weights_once): every replay gives the bits of the
// same chain launched plainly, the mma kernels without PDL.
TEST_F(StepOpsPdlTest, GraphReplaysOfWeightsOnceTwinsEqualTheSerialMmaChain) {
  LinearChain l(1, 2048, 2048);
  const int rows = l.rows, n = l.n, k = l.k, bits = LinearChain::kBits, group = LinearChain::kGroup;
  // The twins exist here, so the dependent chain does run the ring kernels.
  const GemvBf16Config gemv = gemv_bf16_default(rows, n, k);
  const QmvAffineConfig qmv = qmv_affine_default(rows, n, k, bits, group);
  ASSERT_EQ(gemv.path, KernelPath::mma);
  ASSERT_EQ(qmv.path, KernelPath::mma);
  ASSERT_TRUE(gemv_bf16_ring_twin(gemv, rows, n, k).has_value());
  ASSERT_TRUE(qmv_affine_ring_twin(qmv, rows, n, k, bits, group).has_value());
  // The static defaults: no cache, no lazy tune, no HONE_TACTIC_* override.
  DispatcherOptions defaults;
  defaults.use_cache = false;
  Dispatcher d(cuda_backend(), defaults);

  const auto chain = [&](bool dependent) {
    ops::cuda::ChainLaunch link;
    link.dependent = dependent;
    link.weights_once = dependent;
    l.first_norm();
    ops::cuda::gemv_bf16(l.a.data(), l.w.data(), l.b.data(), rows, n, k, l.stream, d, link);
    ops::cuda::qmv_affine(l.b.data(), l.q.as<const uint32_t>(), l.scales.data(), l.biases.data(),
                          l.a.data(), rows, n, k, bits, group, l.stream, d, link);
    ops::cuda::gemv_bf16(l.a.data(), l.w.data(), l.b.data(), rows, n, k, l.stream, d, link);
    l.last_norm(l.b, dependent);
  };
  EXPECT_EQ(l.mismatches(chain, " weights-once twins"), 0) << "of " << replay_count() << " replays";
}

// rmsnorm -> qmv.affine (int4 g64) -> rmsnorm -> gemv.bf16 -> rmsnorm through the public entry
// points with their default tactics, each a dependent launch, under the chain's early trigger:
// every rmsnorm lets the linear after it start at its own start, and every replay must still
// give the bits of the same chain launched without PDL.
TEST_F(StepOpsPdlTest, GraphReplaysWithTheEarlyTriggerEqualTheSerialChain) {
  LinearChain l(1, 2048, 2048);
  const int rows = l.rows, n = l.n, k = l.k, bits = LinearChain::kBits, group = LinearChain::kGroup;
  DispatcherOptions defaults;
  defaults.use_cache = false;
  Dispatcher d(cuda_backend(), defaults);
  const auto chain = [&](bool dependent) {
    const ScopedChainSettings settings(-1, dependent);
    l.first_norm();
    l.norm(l.a, l.b, dependent);
    ops::cuda::qmv_affine(l.b.data(), l.q.as<const uint32_t>(), l.scales.data(), l.biases.data(),
                          l.a.data(), rows, n, k, bits, group, l.stream, d, {dependent});
    l.norm(l.a, l.b, dependent);
    ops::cuda::gemv_bf16(l.b.data(), l.w.data(), l.a.data(), rows, n, k, l.stream, d, {dependent});
    l.last_norm(l.a, dependent);
  };
  EXPECT_EQ(l.mismatches(chain, " early trigger"), 0) << "of " << replay_count() << " replays";
}

} // namespace
} // namespace hone::cuda
