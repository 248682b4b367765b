// decode.paged (cuda): every candidate config and explicit kv_chunk values against the float64
// reference on fresh random q, K and V in shuffled pages (NaN in every slot no token owns),
// ragged lengths with 1 token, exactly one page and partial last pages, GQA 1, 4, 7 and 8,
// head_dim 64, 128 and 256, pages of 16, 32 and 64, a merge of hundreds of partial states, a
// sharp softmax, lse; the gate's power to fail; the gate's sampled reference (rows spread over
// a long ragged batch, each row's bits those of the full reference); the spill rule; the public
// entry point with its plan (HONE_DECODE_KV_CHUNK, heuristic, cache), HONE_CHECK_PAGES and a
// CUDA graph capture; the merge fused into the split kernel (every chunk size, bit-identical to
// the merge kernel, the arrival counters back at 0, a graph replayed many times); and the tuner
// end to end.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/kernels/decode_paged/decode_paged.h"
#include "cuda/ops/decode_paged_entry.h"
#include "cuda/ops/decode_paged_op.h"
#include "device_test.h"
#include "hone/cache.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/key.h"
#include "hone/ops/cuda.h"
#include "hone/registry.h"
#include "hone/tune.h"
#include "op_test_helpers.h"

namespace hone::cuda {
namespace {

using testing::CacheDirTest;
using testing::DeviceTest;
using testing::expect_sampled_reference;
using testing::reduced_shapes;
using testing::registered_op;

struct Heads {
  int hq, hkv, head_dim, page_size;
};

std::string describe(const DecodePagedProblem &p) {
  std::string s = "hq=" + std::to_string(p.hq) + " hkv=" + std::to_string(p.hkv) +
                  " head_dim=" + std::to_string(p.head_dim) +
                  " page_size=" + std::to_string(p.page_size) + " lengths=";
  for (size_t i = 0; i < p.lengths.size() && i < 8; ++i) {
    if (i > 0)
      s += ',';
    s += std::to_string(p.lengths[i]);
  }
  return s + (p.lengths.size() > 8 ? ",..." : "");
}

DecodePagedProblem problem(Heads h, std::vector<int32_t> lengths) {
  DecodePagedProblem p;
  p.hq = h.hq;
  p.hkv = h.hkv;
  p.head_dim = h.head_dim;
  p.page_size = h.page_size;
  p.lengths = std::move(lengths);
  return p;
}

// Ragged lengths around one page: 1 token, exactly one page, one page and one token, a partial
// last page, several pages, and a longer request.
std::vector<int32_t> ragged(int page_size) {
  return {1, page_size, page_size + 1, 3 * page_size - 5, 7 * page_size, 1000};
}

// The head/page combinations: every head_dim, every page size, GQA 1, 4, 7 and 8.
std::vector<Heads> head_sets() {
  if (reduced_shapes())
    return {{32, 8, 128, 16}, {8, 8, 64, 32}, {16, 2, 256, 64}};
  return {{32, 8, 128, 16}, {8, 8, 128, 16}, {32, 4, 128, 32}, {28, 4, 128, 16},
          {8, 8, 64, 32},   {32, 8, 64, 64}, {16, 2, 256, 64}, {4, 4, 256, 16}};
}

DecodePagedWorkload &as_workload(Workload &w) { return dynamic_cast<DecodePagedWorkload &>(w); }

// Runs `config` on fresh inputs (o and lse poisoned) and checks o and lse against the
// reference; returns the comparison.
DecodePagedComparison run_and_compare(DecodePagedWorkload &w, const DecodePagedConfig &config) {
  w.set_write_lse(true);
  w.randomize_inputs();
  w.poison_output();
  const size_t heads = static_cast<size_t>(w.problem().batch()) * w.problem().hq;
  HONE_CUDA_CHECK(cudaMemsetAsync(w.lse(), 0xff, heads * sizeof(float), w.stream()));
  const LaunchStatus s = w.launch(config, 0);
  EXPECT_TRUE(s.ok()) << config.to_tactic().str() << ": " << s.message();
  HONE_CUDA_CHECK(cudaStreamSynchronize(w.stream()));
  const std::vector<uint16_t> o = w.download_y();
  const std::vector<float> lse = w.download_lse();
  const DecodePagedReference ref = w.reference_of(0);
  const DecodePagedComparison c = compare_decode_paged(o, &lse, ref, w.problem().head_dim);
  const std::string what = describe(w.problem()) + " " + config.to_tactic().str();
  EXPECT_EQ(c.nan_count, 0u) << what;
  EXPECT_EQ(c.lse_nan_count, 0u) << what;
  EXPECT_LE(c.relative_l2, kDecodePagedRelativeL2Bound) << what;
  EXPECT_LE(c.max_row_relative_l2, kDecodePagedRelativeL2Bound) << what;
  EXPECT_LE(c.lse_max_abs_error, kDecodePagedLseBound) << what;
  return c;
}

class DecodePagedOpTest : public DeviceTest {};

// --- every config -----------------------------------------------------------------------------

TEST_F(DecodePagedOpTest, EveryCandidateAndChunkMatchesTheReference) {
  for (const Heads &h : head_sets()) {
    DecodePagedWorkload w(cuda_backend(), problem(h, ragged(h.page_size)));
    std::vector<DecodePagedConfig> configs = decode_paged_candidate_configs(
        w.table().indptr, h.hkv, h.head_dim, h.page_size);
    // Explicit chunks too: one page (a merge of every page), two pages, and no split, at every
    // warps count that fits.
    for (int chunk : {h.page_size, 2 * h.page_size, 0})
      for (int warps : {2, 4, 8})
        if (decode_paged_can_implement({chunk, warps}, h.head_dim, h.page_size, nullptr))
          configs.push_back({chunk, warps});
    double worst = 0;
    for (const DecodePagedConfig &c : configs)
      worst = std::max(worst, run_and_compare(w, c).relative_l2);
    std::printf("%s: %zu configs, worst relative L2 %.2e\n", describe(w.problem()).c_str(),
                configs.size(), worst);
  }
}

TEST_F(DecodePagedOpTest, EveryTacticPassesTheGate) {
  const TunableOp &op = registered_op("decode.paged");
  const std::vector<Shape> shapes =
      reduced_shapes() ? std::vector<Shape>{{{3, 700, 1200, 32, 8, 128, 16}, DType::bf16}}
                       : std::vector<Shape>{{{1, 4096, 4096, 32, 8, 128, 16}, DType::bf16},
                                            {{4, 3000, 5000, 28, 4, 64, 32}, DType::bf16},
                                            {{16, 2048, 16000, 16, 2, 256, 64}, DType::bf16}};
  for (const Shape &shape : shapes) {
    const Shape bucket = op.buckets().map(shape).value();
    std::unique_ptr<Workload> w = op.prepare(bucket);
    int ran = 0;
    for (const Tactic &t : op.candidates(bucket)) {
      std::string reason;
      ASSERT_EQ(w->can_run(t, &reason), Status::ok) << t.str() << ": " << reason;
      const CheckResult r = w->check(t, Numerics::tolerance);
      EXPECT_TRUE(r.pass()) << op.buckets().describe(bucket) << " " << t.str() << ": "
                            << r.reason;
      EXPECT_LE(r.error, kDecodePagedRelativeL2Bound) << t.str();
      ++ran;
    }
    EXPECT_GE(ran, 2) << op.buckets().describe(bucket);
  }
}

// One long request cut into pages: hundreds of partial states per head in the merge.
TEST_F(DecodePagedOpTest, MergesHundredsOfPartialStates) {
  const Heads h{32, 8, 128, 16};
  const int len = reduced_shapes() ? 1500 : 8000;
  DecodePagedWorkload w(cuda_backend(), problem(h, {len, 37}));
  const DecodePagedConfig c{16, 4};
  EXPECT_GE(w.split(c).max_chunks, len / 16);
  run_and_compare(w, c);
  run_and_compare(w, {48, 2}); // a chunk of three pages: not a power of two
}

// Downloads o and lse of the last launch after poisoning them and launching `config`.
struct Outputs {
  std::vector<uint16_t> o;
  std::vector<float> lse;
};
Outputs launch_and_download(DecodePagedWorkload &w, const DecodePagedConfig &config) {
  w.poison_output();
  const size_t heads = static_cast<size_t>(w.problem().batch()) * w.problem().hq;
  HONE_CUDA_CHECK(cudaMemsetAsync(w.lse(), 0xff, heads * sizeof(float), w.stream()));
  const LaunchStatus s = w.launch(config, 0);
  EXPECT_TRUE(s.ok()) << config.to_tactic().str() << ": " << s.message();
  HONE_CUDA_CHECK(cudaStreamSynchronize(w.stream()));
  return {w.download_y(), w.download_lse()};
}

// Arrival counters left non-zero (the fused merge leaves every one at 0).
size_t nonzero(const std::vector<int32_t> &counters) {
  return static_cast<size_t>(std::count_if(counters.begin(), counters.end(),
                                           [](int32_t c) { return c != 0; }));
}

bool same_bits(const std::vector<float> &a, const std::vector<float> &b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](float x, float y) {
           return std::memcmp(&x, &y, sizeof x) == 0;
         });
}

// The merge fused into the split kernel (the last CTA of each request and KV head merges) at
// every chunk size from one page to past the longest request, on ragged lengths with 1 token,
// one page and partial last pages: it matches the reference, gives the separate merge
// kernel's bits exactly, and leaves every arrival counter at 0.
TEST_F(DecodePagedOpTest, FusedMergeMatchesTheMergeKernelBitForBitAtEveryChunk) {
  for (const Heads &h : head_sets()) {
    const std::vector<int32_t> lengths =
        reduced_shapes() ? std::vector<int32_t>{1, h.page_size, 5 * h.page_size + 3, 300}
                         : std::vector<int32_t>{1, h.page_size, h.page_size + 1,
                                                3 * h.page_size - 5, 700, 1};
    DecodePagedWorkload w(cuda_backend(), problem(h, lengths));
    w.set_write_lse(true);
    w.randomize_inputs();
    const DecodePagedReference ref = w.reference_of(0);
    const int longest = *std::max_element(lengths.begin(), lengths.end());
    const int warps = decode_paged_default_warps(h.head_dim);
    int merged = 0;
    for (int chunk = h.page_size; chunk <= longest + h.page_size; chunk += h.page_size) {
      const DecodePagedConfig fused{chunk, warps, 1}, two_kernels{chunk, warps, 0};
      const std::string what = describe(w.problem()) + " " + fused.to_tactic().str();
      const Outputs a = launch_and_download(w, fused);
      const DecodePagedComparison c = compare_decode_paged(a.o, &a.lse, ref, h.head_dim);
      EXPECT_EQ(c.nan_count, 0u) << what;
      EXPECT_EQ(c.lse_nan_count, 0u) << what;
      EXPECT_LE(c.max_row_relative_l2, kDecodePagedRelativeL2Bound) << what;
      EXPECT_LE(c.lse_max_abs_error, kDecodePagedLseBound) << what;
      const std::vector<int32_t> counters = w.download_counters();
      EXPECT_EQ(nonzero(counters), 0u)
          << what << ": arrival counters not back at 0";
      const Outputs b = launch_and_download(w, two_kernels);
      EXPECT_EQ(a.o, b.o) << what << ": the merge kernel gives other o bits";
      EXPECT_TRUE(same_bits(a.lse, b.lse)) << what << ": the merge kernel gives other lse bits";
      merged += w.split(fused).max_chunks > 1 ? 1 : 0;
      if (reduced_shapes() && chunk >= 8 * h.page_size)
        chunk += 4 * h.page_size; // coarser steps past eight pages
    }
    EXPECT_GT(merged, 0) << describe(w.problem());
  }
}

// Launches that run one after another reuse the counters: a thousand-chunk request, then a
// batch of different lengths on the same counters, each correct.
TEST_F(DecodePagedOpTest, FusedMergeCountersServeBackToBackLaunches) {
  const Heads h{32, 8, 128, 16};
  DecodePagedWorkload w(cuda_backend(), problem(h, {16000, 1, 40}));
  for (int chunk : {16, 32, 16, 4096, 16}) {
    run_and_compare(w, {chunk, 4, 1});
    const std::vector<int32_t> counters = w.download_counters();
    EXPECT_EQ(nonzero(counters), 0u)
        << "kv_chunk=" << chunk;
  }
}

// Several KV heads per CTA (kv_heads 2, 4, 8 where they divide hkv and fit the warps): the
// benchmark configs and explicit chunks, fused and with the merge kernel (the same bits), and
// the counters of every (request, KV head group) back at 0.
TEST_F(DecodePagedOpTest, KvHeadsConfigsMatchTheReference) {
  for (const Heads &h : head_sets()) {
    DecodePagedWorkload w(cuda_backend(), problem(h, ragged(h.page_size)));
    std::vector<DecodePagedConfig> configs =
        decode_paged_kv_heads_configs(w.table().indptr, h.hkv, h.head_dim, h.page_size);
    for (int heads : {2, 4, 8})
      for (int warps : {4, 8})
        for (int chunk : {h.page_size, 4 * h.page_size, 0})
          if (decode_paged_can_implement({chunk, warps, 0, heads}, h.hkv, h.head_dim,
                                         h.page_size, nullptr))
            configs.push_back({chunk, warps, 0, heads});
    if (configs.empty())
      continue; // hkv 1 or odd: no kv_heads config
    for (const DecodePagedConfig &c : configs) {
      run_and_compare(w, c);
      DecodePagedConfig fused_config = c;
      fused_config.fused_merge = 1;
      run_and_compare(w, fused_config);
      const Outputs fused = launch_and_download(w, fused_config);
      const std::vector<int32_t> counters = w.download_counters();
      EXPECT_EQ(nonzero(counters), 0u)
          << fused_config.to_tactic().str() << ": arrival counters not back at 0";
      const Outputs b = launch_and_download(w, c);
      EXPECT_EQ(fused.o, b.o) << c.to_tactic().str();
      EXPECT_TRUE(same_bits(fused.lse, b.lse)) << c.to_tactic().str();
    }
    std::printf("%s: %zu kv_heads configs\n", describe(w.problem()).c_str(), configs.size());
  }
}

// A sharp softmax (logits of std ~2.7): the running max and the rescaling matter.
TEST_F(DecodePagedOpTest, SharpSoftmaxMatchesTheReference) {
  for (const Heads &h : {Heads{32, 8, 128, 16}, Heads{8, 1, 64, 32}}) {
    DecodePagedWorkload w(cuda_backend(), problem(h, ragged(h.page_size)),
                          8.0 / std::sqrt(static_cast<double>(h.head_dim)));
    for (const DecodePagedConfig &c : {DecodePagedConfig{0, 4}, DecodePagedConfig{h.page_size, 4},
                                       DecodePagedConfig{4 * h.page_size, 8}})
      run_and_compare(w, c);
  }
}

// The gate can fail: copy 0's output against the reference of other inputs (another copy, the
// last token of request 0 dropped, the pages of two requests swapped) is far off.
TEST_F(DecodePagedOpTest, GateDiscriminatesWrongInputs) {
  const Heads h{32, 8, 128, 16};
  DecodePagedWorkload w(cuda_backend(), problem(h, {40, 300, 17}));
  w.set_rotation(2);
  const DecodePagedConfig c{32, 4};
  run_and_compare(w, c);
  const std::vector<uint16_t> o = w.download_y();
  const DecodePagedComparison other = compare_decode_paged(o, nullptr, w.reference_of(1), 128);
  EXPECT_GT(other.relative_l2, 0.5);

  // References on perturbed tables, from copy 0's inputs.
  const auto cache_elements = static_cast<size_t>(w.table().num_pages) * 16 * 8 * 128;
  const std::vector<uint16_t> q = download<uint16_t>(w.q(0), 3 * 32 * 128, w.stream());
  const std::vector<uint16_t> k = download<uint16_t>(w.k_cache(0), cache_elements, w.stream());
  const std::vector<uint16_t> v = download<uint16_t>(w.v_cache(0), cache_elements, w.stream());
  DecodePagedProblem shorter = w.problem();
  shorter.lengths[0] -= 1;
  DecodePagedTable table = w.table();
  table.last_page_len[0] -= 1;
  const DecodePagedComparison dropped = compare_decode_paged(
      o, nullptr, decode_paged_reference(shorter, table, q.data(), k.data(), v.data(), w.scale()),
      128);
  EXPECT_GT(dropped.max_row_relative_l2, 3 * kDecodePagedRelativeL2Bound);
  table = w.table();
  std::swap(table.indices[0], table.indices[5]); // request 0's page and one of request 1's
  const DecodePagedComparison swapped = compare_decode_paged(
      o, nullptr, decode_paged_reference(w.problem(), table, q.data(), k.data(), v.data(),
                                         w.scale()),
      128);
  EXPECT_GT(swapped.max_row_relative_l2, 3 * kDecodePagedRelativeL2Bound);
}

// The model tune's 1M-token bucket of 32 requests (one of 131072 tokens, 31 of ~29600): the
// gate holds 16 rows to the reference (0.15 G multiply-adds of 8.6 G), from the first head of
// request 0 to the last of request 31, and passes the default.
TEST_F(DecodePagedOpTest, ReferenceSamplesRowsOfALongRaggedBatch) {
  const Shape shape = reduced_shapes() ? Shape{{4, 8192, 16384, 32, 8, 128, 16}, DType::bf16}
                                       : Shape{{32, 131072, 1 << 20, 32, 8, 128, 16}, DType::bf16};
  expect_sampled_reference<DecodePagedWorkload>(registered_op("decode.paged"), shape,
                                                reduced_shapes() ? 32 : 16,
                                                kDecodePagedRelativeL2Bound, {Numerics::tolerance});
}

// The sampled reference, K and V gathered on the device page by page, gives the full
// reference's o and lse bits for each of its rows (50 of 256 on ragged lengths with 1 token, one
// page and partial last pages), and every row's when the problem is small enough for all.
TEST_F(DecodePagedOpTest, SampledReferenceGivesTheFullReferenceBitsOfItsRows) {
  const Heads h{32, 8, 128, 16};
  for (const std::vector<int32_t> &lengths :
       {std::vector<int32_t>{1, 16, 17, 3000, 700, 5000, 40, 12000}, ragged(h.page_size)}) {
    DecodePagedWorkload w(cuda_backend(), problem(h, lengths));
    const std::string what = describe(w.problem());
    std::vector<int64_t> rows = w.reference_rows();
    EXPECT_EQ(rows.size(), lengths.size() == 8 ? 50u : 0u) << what;
    if (rows.empty())
      for (int64_t r = 0; r < w.output_rows(); ++r)
        rows.push_back(r);
    w.randomize_inputs();
    const DecodePagedReference sampled = w.sampled_reference_of(0), full = w.reference_of(0);
    ASSERT_EQ(sampled.o.size(), rows.size() * h.head_dim) << what;
    ASSERT_EQ(sampled.lse.size(), rows.size()) << what;
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto r = static_cast<size_t>(rows[i]);
      EXPECT_TRUE(std::equal(sampled.o.begin() + i * h.head_dim,
                             sampled.o.begin() + (i + 1) * h.head_dim,
                             full.o.begin() + r * h.head_dim))
          << what << ": o row " << r;
      EXPECT_EQ(sampled.lse[i], full.lse[r]) << what << ": lse row " << r;
    }
    const DecodePagedConfig def =
        decode_paged_default_config(w.table().indptr, h.hkv, h.head_dim, h.page_size);
    const CheckResult r = w.check(def.to_tactic(), Numerics::tolerance);
    EXPECT_TRUE(r.pass()) << what << ": " << r.reason;
  }
}

TEST_F(DecodePagedOpTest, NoKernelSpills) {
  for (int head_dim : {64, 128, 256}) {
    const KernelResources res = decode_paged_resources(head_dim);
    EXPECT_GT(res.registers, 0) << head_dim;
    EXPECT_EQ(res.local_bytes, 0u) << head_dim << ": " << res.registers << " registers";
    std::printf("head_dim %d: %d registers, %zu bytes local; CTAs/SM at 2/4/8 warps: %d %d %d\n",
                head_dim, res.registers, res.local_bytes, decode_paged_ctas_per_sm(2, head_dim),
                decode_paged_ctas_per_sm(4, head_dim), decode_paged_ctas_per_sm(8, head_dim));
  }
  EXPECT_GE(decode_paged_ctas_per_sm(4, 128), 2);
}

// --- the public entry point ----------------------------------------------------------------------

ops::cuda::DecodePagedTensors tensors_of(const DecodePagedWorkload &w, int copy, float *lse) {
  const DecodePagedProblem &p = w.problem();
  ops::cuda::DecodePagedTensors t;
  t.q = w.q(copy);
  t.k_cache = w.k_cache(copy);
  t.v_cache = w.v_cache(copy);
  t.kv_indptr = w.kv_indptr();
  t.kv_indices = w.kv_indices();
  t.kv_last_page_len = w.kv_last_page_len();
  t.kv_indptr_host = w.table().indptr.data();
  t.kv_last_page_len_host = w.table().last_page_len.data();
  t.o = w.y();
  t.lse = lse;
  t.batch = p.batch();
  t.num_pages = w.table().num_pages;
  t.hq = p.hq;
  t.hkv = p.hkv;
  t.head_dim = p.head_dim;
  t.page_size = p.page_size;
  t.scale = static_cast<float>(w.scale());
  return t;
}

// Checks o (and lse) of copy 0 after an entry-point call.
void expect_matches_reference(DecodePagedWorkload &w, bool with_lse, const std::string &what) {
  HONE_CUDA_CHECK(cudaStreamSynchronize(w.stream()));
  const std::vector<uint16_t> o = w.download_y();
  // Only a workload that writes the lse holds one to download.
  const std::vector<float> lse = with_lse ? w.download_lse() : std::vector<float>{};
  const DecodePagedComparison c = compare_decode_paged(o, with_lse ? &lse : nullptr,
                                                       w.reference_of(0), w.problem().head_dim);
  EXPECT_EQ(c.nan_count, 0u) << what;
  EXPECT_LE(c.relative_l2, kDecodePagedRelativeL2Bound) << what;
  EXPECT_LE(c.lse_max_abs_error, kDecodePagedLseBound) << what;
}

class DecodePagedEntryTest : public CacheDirTest {
protected:
  DecodePagedEntryTest() : CacheDirTest("hone-decode-paged-test-", "HONE_TACTIC_DECODE_PAGED") {}
};

TEST_F(DecodePagedEntryTest, PlanAndRunMatchTheReference) {
  DecodePagedWorkload w(cuda_backend(), problem({32, 8, 128, 16}, {5000, 1, 16, 333}));
  w.set_write_lse(true);
  Dispatcher d(cuda_backend(), DispatcherOptions::from_settings(Settings::from_env()));
  const ops::cuda::DecodePagedTensors t = tensors_of(w, 0, w.lse());
  const auto *indptr = w.table().indptr.data();
  const auto *last = w.table().last_page_len.data();

  // The heuristic, on this device's SMs.
  ops::cuda::DecodePagedPlan plan = decode_paged_plan_with(indptr, last, 4, 32, 8, 128, 16,
                                                           std::nullopt, d);
  EXPECT_STREQ(plan.source, "heuristic");
  EXPECT_EQ(plan.total_len, 5000 + 1 + 16 + 333);
  EXPECT_EQ(plan.max_len, 5000);
  EXPECT_EQ(plan.pages_end, w.table().indptr.back());
  EXPECT_GT(plan.max_chunks, 1) << "a 5000-token request splits on an idle device";
  w.poison_output();
  ops::cuda::decode_paged(t, plan, w.stream());
  expect_matches_reference(w, true, "heuristic kv_chunk=" + std::to_string(plan.kv_chunk));

  // An explicit chunk (HONE_DECODE_KV_CHUNK's path), and no split.
  for (int chunk : {64, 0}) {
    plan = decode_paged_plan_with(indptr, last, 4, 32, 8, 128, 16, chunk, d);
    EXPECT_STREQ(plan.source, "HONE_DECODE_KV_CHUNK");
    EXPECT_EQ(plan.kv_chunk, chunk);
    w.poison_output();
    ops::cuda::decode_paged(t, plan, w.stream());
    expect_matches_reference(w, true, "kv_chunk=" + std::to_string(chunk));
  }
  try {
    decode_paged_plan_with(indptr, last, 4, 32, 8, 128, 16, 24, d);
    ADD_FAILURE() << "kv_chunk=24 on pages of 16 must be refused";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("HONE_DECODE_KV_CHUNK=24"), std::string::npos)
        << e.what();
  }
  // A plan for other heads is refused.
  ops::cuda::DecodePagedTensors other = t;
  other.hq = 16;
  try {
    ops::cuda::decode_paged(other, plan, w.stream());
    ADD_FAILURE() << "a plan for hq=32 must not run hq=16";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("hq=32"), std::string::npos) << e.what();
  }
  // The convenience overload plans from the host copies itself; no lse.
  ops::cuda::DecodePagedTensors no_lse = t;
  no_lse.lse = nullptr;
  w.poison_output();
  ops::cuda::decode_paged(no_lse, w.stream(), d);
  expect_matches_reference(w, false, "convenience overload");
}

TEST_F(DecodePagedEntryTest, CheckPagesNamesTheFirstBadIndex) {
  DecodePagedWorkload w(cuda_backend(), problem({8, 8, 64, 16}, {100, 40}));
  Dispatcher d(cuda_backend(), DispatcherOptions::from_settings(Settings::from_env()));
  ops::cuda::DecodePagedTensors t = tensors_of(w, 0, nullptr);
  const ops::cuda::DecodePagedPlan plan = decode_paged_plan_with(
      t.kv_indptr_host, t.kv_last_page_len_host, 2, 8, 8, 64, 16, std::nullopt, d);
  EXPECT_NO_THROW(decode_paged_run(t, plan, w.stream(), true));
  // Positions 5 and 8 out of range: the first, 5, is named with its value.
  std::vector<int32_t> bad = w.table().indices;
  bad[5] = w.table().num_pages;
  bad[8] = -3;
  DeviceBuffer indices(bad.size() * sizeof(int32_t));
  HONE_CUDA_CHECK(cudaMemcpy(indices.data(), bad.data(), indices.size(), cudaMemcpyHostToDevice));
  t.kv_indices = indices.as<const int32_t>();
  try {
    decode_paged_run(t, plan, w.stream(), true);
    ADD_FAILURE() << "a page index past num_pages must be refused";
  } catch (const Error &e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("kv_indices[5]=" + std::to_string(w.table().num_pages)),
              std::string::npos)
        << e.what();
  }
}

TEST_F(DecodePagedEntryTest, PlanRejectsBadTablesNamingTheValue) {
  Dispatcher d(cuda_backend(), DispatcherOptions::from_settings(Settings::from_env()));
  const std::vector<int32_t> indptr{0, 2, 2, 5}, last{16, 4, 9};
  const auto expect = [&](auto f, const std::string &needle) {
    try {
      f();
      ADD_FAILURE() << "expected an error naming " << needle;
    } catch (const Error &e) {
      EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect([&] { decode_paged_plan_with(indptr.data(), last.data(), 3, 32, 8, 128, 16, {}, d); },
         "request 1 has length 0");
  const std::vector<int32_t> ok_indptr{0, 2, 3, 5};
  expect([&] { decode_paged_plan_with(ok_indptr.data(), last.data(), 3, 30, 8, 128, 16, {}, d); },
         "hq=30 is not a multiple of hkv=8");
  expect([&] { decode_paged_plan_with(ok_indptr.data(), last.data(), 3, 32, 8, 80, 16, {}, d); },
         "head_dim=80");
  expect([&] { decode_paged_plan_with(ok_indptr.data(), last.data(), 3, 32, 8, 128, 48, {}, d); },
         "page_size=48");
  const std::vector<int32_t> long_last{16, 17, 9};
  expect([&] { decode_paged_plan_with(ok_indptr.data(), long_last.data(), 3, 32, 8, 128, 16, {}, d); },
         "kv_last_page_len[1]=17");
  const std::vector<int32_t> falling{0, 2, 1, 5};
  expect([&] { decode_paged_plan_with(falling.data(), last.data(), 3, 32, 8, 128, 16, {}, d); },
         "kv_indptr is not monotone");
}

// A step captured in a CUDA graph replays with the same result.
TEST_F(DecodePagedEntryTest, RunsInsideAGraphCapture) {
  DecodePagedWorkload w(cuda_backend(), problem({32, 8, 128, 16}, {3000, 70}));
  Dispatcher d(cuda_backend(), DispatcherOptions::from_settings(Settings::from_env()));
  const ops::cuda::DecodePagedTensors t = tensors_of(w, 0, nullptr);
  const ops::cuda::DecodePagedPlan plan =
      decode_paged_plan_with(t.kv_indptr_host, t.kv_last_page_len_host, 2, 32, 8, 128, 16, 128, d);
  ASSERT_GT(plan.max_chunks, 1);
  ops::cuda::decode_paged(t, plan, w.stream()); // sizes the stream's workspace
  HONE_CUDA_CHECK(cudaStreamSynchronize(w.stream()));
  w.poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(w.stream()));
  cudaGraph_t graph = nullptr;
  HONE_CUDA_CHECK(cudaStreamBeginCapture(w.stream(), cudaStreamCaptureModeThreadLocal));
  ops::cuda::decode_paged(t, plan, w.stream());
  HONE_CUDA_CHECK(cudaStreamEndCapture(w.stream(), &graph));
  cudaGraphExec_t exec = nullptr;
  HONE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  HONE_CUDA_CHECK(cudaGraphLaunch(exec, w.stream()));
  expect_matches_reference(w, false, "graph replay");
  HONE_CUDA_CHECK(cudaGraphExecDestroy(exec));
  HONE_CUDA_CHECK(cudaGraphDestroy(graph));
}

// A split step (split kernel, then the merge kernel as a programmatic dependent launch)
// captured once and replayed many times: every replay gives the first replay's bits.
TEST_F(DecodePagedEntryTest, GraphReplaysAreBitIdentical) {
  DecodePagedWorkload w(cuda_backend(), problem({32, 8, 128, 16}, {9000, 1, 16, 700}));
  w.set_write_lse(true);
  Dispatcher d(cuda_backend(), DispatcherOptions::from_settings(Settings::from_env()));
  const ops::cuda::DecodePagedTensors t = tensors_of(w, 0, w.lse());
  for (int chunk : {16, 256}) {
    const ops::cuda::DecodePagedPlan plan = decode_paged_plan_with(
        t.kv_indptr_host, t.kv_last_page_len_host, 4, 32, 8, 128, 16, chunk, d);
    ASSERT_GT(plan.max_chunks, 1);
    ops::cuda::decode_paged(t, plan, w.stream()); // sizes the workspace
    HONE_CUDA_CHECK(cudaStreamSynchronize(w.stream()));
    cudaGraph_t graph = nullptr;
    HONE_CUDA_CHECK(cudaStreamBeginCapture(w.stream(), cudaStreamCaptureModeThreadLocal));
    ops::cuda::decode_paged(t, plan, w.stream());
    HONE_CUDA_CHECK(cudaStreamEndCapture(w.stream(), &graph));
    cudaGraphExec_t exec = nullptr;
    HONE_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    std::vector<uint16_t> first_o;
    std::vector<float> first_lse;
    const int replays = reduced_shapes() ? 20 : 200;
    for (int i = 0; i < replays; ++i) {
      if (i % 10 == 0) { // poisoned now and then: the replay writes every output
        w.poison_output();
        HONE_CUDA_CHECK(cudaMemsetAsync(w.lse(), 0xff, 4 * 32 * sizeof(float), w.stream()));
      }
      HONE_CUDA_CHECK(cudaGraphLaunch(exec, w.stream()));
      if (i == 0) {
        expect_matches_reference(w, true, "first replay, kv_chunk=" + std::to_string(chunk));
        first_o = w.download_y();
        first_lse = w.download_lse();
      } else if (i % 10 == 9 || i + 1 == replays) {
        HONE_CUDA_CHECK(cudaStreamSynchronize(w.stream()));
        EXPECT_EQ(w.download_y(), first_o) << "replay " << i << ", kv_chunk=" << chunk;
        EXPECT_TRUE(same_bits(w.download_lse(), first_lse))
            << "replay " << i << ", kv_chunk=" << chunk;
      }
    }
    HONE_CUDA_CHECK(cudaGraphExecDestroy(exec));
    HONE_CUDA_CHECK(cudaGraphDestroy(graph));
  }
}

// Tune a small bucket, store it, and a fresh dispatcher's plan takes its kv_chunk.
TEST_F(DecodePagedEntryTest, TunedChunkIsServedFromTheCache) {
  Backend &be = cuda_backend();
  const TunableOp &op = registered_op("decode.paged");
  const Shape shape{{2, 2048, 4096, 32, 8, 128, 16}, DType::bf16};
  const Shape bucket = op.buckets().map(shape).value();
  TuneOptions options;
  options.tuner.samples = 5;
  const TuneReport report = tune_bucket(be, op, bucket, options);
  const TuneResult &r = report.result;
  EXPECT_EQ(report.numerics, Numerics::tolerance);
  EXPECT_EQ(r.candidates[r.default_index].status, Status::ok)
      << r.candidates[r.default_index].reason;
  EXPECT_EQ(r.candidates[r.pick_index].status, Status::ok);
  std::printf("tuned %s: %zu candidates, pick %s ratio %.3f, default %.2f us\n",
              report.bucket_text.c_str(), r.candidates.size(), r.pick().str().c_str(), r.ratio,
              r.default_s * 1e6);
  {
    Cache cache(Cache::default_path(Settings::from_env())); // where the dispatcher below reads
    cache.load();
    cache.put(to_cache_entry(report, current_metadata(be)));
    cache.save();
  }
  Dispatcher d(be, DispatcherOptions::from_settings(Settings::from_env()));
  const DecodePagedProblem p = problem({32, 8, 128, 16}, {2048, 2048});
  const std::vector<int32_t> indptr = p.indptr();
  const std::vector<int32_t> last{16, 16};
  const ops::cuda::DecodePagedPlan plan =
      decode_paged_plan_with(indptr.data(), last.data(), 2, 32, 8, 128, 16, std::nullopt, d);
  EXPECT_STREQ(plan.source, "cache");
  EXPECT_EQ(DecodePagedConfig({plan.kv_chunk, plan.warps}).to_tactic(), r.pick());
}

} // namespace
} // namespace hone::cuda
