// Public entry points of decode.paged (include/hone/ops/cuda.h): the plan and the launch.
#include "cuda/ops/decode_paged_entry.h"

#include <algorithm>
#include <limits>
#include <span>
#include <string>

#include <cuda_runtime.h>

#include "cuda/backend/cuda_check.h"
#include "cuda/backend/device_buffer.h"
#include "cuda/backend/workspace.h"
#include "cuda/kernels/decode_paged/decode_paged.h"
#include "cuda/ops/decode_paged_op.h"
#include "cuda/ops/entry_point.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/settings.h"

namespace hone::cuda {

namespace {

using ops::cuda::DecodePagedPlan;
using ops::cuda::DecodePagedTensors;

constexpr const char *kOp = "decode.paged";

std::string str(int64_t v) { return std::to_string(v); }

// The static name of a dispatcher source that carries a tuned or explicit kv_chunk, else null.
const char *chosen_source(Source source) {
  switch (source) {
  case Source::env_override:
    return "env";
  case Source::cache:
    return "cache";
  case Source::tuned:
    return "tuned";
  case Source::default_tactic:
  case Source::out_of_bucket:
    return nullptr;
  }
  return nullptr;
}

void require_plan_matches(const DecodePagedTensors &t, const DecodePagedPlan &plan) {
  const auto same = [&](const char *name, int64_t want, int64_t got) {
    if (want != got)
      HONE_INVALID_ARGUMENT(std::string(kOp) + ": the plan was made for " + name + "=" + str(want) +
                            ", the call has " + name + "=" + str(got));
  };
  same("batch", plan.batch, t.batch);
  same("hq", plan.hq, t.hq);
  same("hkv", plan.hkv, t.hkv);
  same("head_dim", plan.head_dim, t.head_dim);
  same("page_size", plan.page_size, t.page_size);
}

// HONE_CHECK_PAGES: every page index of the batch against num_pages, on the device.
void check_pages(const DecodePagedTensors &t, const DecodePagedPlan &plan, void *stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  HONE_CUDA_CHECK(cudaStreamIsCapturing(s, &capture));
  if (capture != cudaStreamCaptureStatusNone)
    HONE_INVALID_ARGUMENT("decode.paged: HONE_CHECK_PAGES=1 waits for the device and cannot run "
                          "inside a stream capture");
  auto *first_bad = static_cast<int32_t *>(
      workspace_for(stream, std::max<size_t>(plan.workspace_bytes, sizeof(int32_t))));
  const LaunchStatus status =
      decode_paged_check_pages_launch(t.kv_indices, plan.pages_begin, plan.pages_end,
                                      static_cast<int>(t.num_pages), first_bad, stream);
  if (!status.ok())
    HONE_RUNTIME_ERROR("decode.paged page check: " + status.message());
  int32_t position = 0;
  HONE_CUDA_CHECK(
      cudaMemcpyAsync(&position, first_bad, sizeof position, cudaMemcpyDeviceToHost, s));
  HONE_CUDA_CHECK(cudaStreamSynchronize(s));
  if (position == kDecodePagedNoBadPage)
    return;
  int32_t page = 0;
  HONE_CUDA_CHECK(
      cudaMemcpyAsync(&page, t.kv_indices + position, sizeof page, cudaMemcpyDeviceToHost, s));
  HONE_CUDA_CHECK(cudaStreamSynchronize(s));
  HONE_INVALID_ARGUMENT("decode.paged: kv_indices[" + str(position) + "]=" + str(page) +
                        " is outside [0, num_pages=" + str(t.num_pages) +
                        ") (the first bad page index; HONE_CHECK_PAGES=1)");
}

} // namespace

DecodePagedPlan decode_paged_plan_with(const int32_t *kv_indptr_host,
                                       const int32_t *kv_last_page_len_host, int64_t batch,
                                       int64_t hq, int64_t hkv, int64_t head_dim, int64_t page_size,
                                       std::optional<int> kv_chunk_override, Dispatcher &d) {
  decode_paged_validate_heads(hq, hkv, head_dim, page_size);
  if (batch < 1 || batch >= std::numeric_limits<int32_t>::max())
    HONE_INVALID_ARGUMENT("decode.paged: batch=" + str(batch) + " is outside 1..2^31 - 2");
  if (kv_indptr_host == nullptr || kv_last_page_len_host == nullptr)
    HONE_INVALID_ARGUMENT(std::string("decode.paged: ") +
                          (kv_indptr_host ? "kv_last_page_len_host" : "kv_indptr_host") +
                          " is null (the plan reads the host copy of the page table)");
  const std::span<const int32_t> indptr(kv_indptr_host, static_cast<size_t>(batch) + 1);
  const std::span<const int32_t> last(kv_last_page_len_host, static_cast<size_t>(batch));
  decode_paged_validate_table(indptr, last, static_cast<int>(page_size));

  const int ps = static_cast<int>(page_size), dim = static_cast<int>(head_dim);
  DecodePagedPlan plan;
  plan.batch = batch;
  plan.hq = hq;
  plan.hkv = hkv;
  plan.head_dim = head_dim;
  plan.page_size = page_size;
  for (size_t b = 0; b < last.size(); ++b) {
    const int64_t len = decode_paged_length(indptr, last, ps, b);
    plan.total_len += len;
    plan.max_len = std::max(plan.max_len, len);
  }
  plan.pages_begin = indptr.front();
  plan.pages_end = indptr.back();

  DecodePagedConfig config;
  if (kv_chunk_override) {
    if (*kv_chunk_override % ps != 0)
      HONE_INVALID_ARGUMENT("HONE_DECODE_KV_CHUNK=" + str(*kv_chunk_override) +
                            " is not a multiple of page_size=" + str(ps));
    config = {*kv_chunk_override, decode_paged_default_warps(dim), 0};
    plan.source = "HONE_DECODE_KV_CHUNK";
  } else {
    const DecodePagedOp &op = entry_op<DecodePagedOp>();
    const Shape shape{{batch, plan.max_len, plan.total_len, hq, hkv, head_dim, page_size},
                      DType::bf16};
    // The bucket, not the raw shape, goes to the dispatcher: lengths change every step, and
    // its memo table must stay one entry per bucket.
    if (const std::optional<Shape> bucket = op.buckets().map(shape)) {
      const Resolution &r = d.resolve(op, *bucket);
      if (const char *source = chosen_source(r.source)) {
        config = r.compiled.as<DecodePagedConfig>();
        plan.source = source;
      }
    }
    if (*plan.source == '\0') {
      config = decode_paged_default_config(indptr, static_cast<int>(hkv), dim, ps);
      plan.source = "heuristic";
    }
  }
  if (std::string why; !decode_paged_can_implement(config, static_cast<int>(hkv), dim, ps, &why))
    HONE_INVALID_ARGUMENT("decode.paged: " + config.to_tactic().str() + " (from " + plan.source +
                          ") cannot run head_dim=" + str(head_dim) + ", page_size=" + str(ps) +
                          ": " + why);
  // The plan carries kv_chunk and warps: the entry point runs one KV head per CTA and merges
  // in a second kernel.
  if (config.fused_merge != 0 || config.kv_heads != 1)
    HONE_INVALID_ARGUMENT("decode.paged: " + config.to_tactic().str() + " (from " + plan.source +
                          "): the entry point runs kv_heads=1 with the merge kernel only; "
                          "kv_heads and fused_merge are benchmark fields");
  plan.kv_chunk = config.kv_chunk;
  plan.warps = config.warps;
  const DecodePagedSplit split = decode_paged_split(indptr, ps, config.kv_chunk);
  plan.chunks = split.chunks;
  plan.max_chunks = split.max_chunks;
  plan.workspace_bytes = decode_paged_workspace_bytes(split, static_cast<int>(hq), dim);
  return plan;
}

void decode_paged_run(const DecodePagedTensors &t, const DecodePagedPlan &plan, void *stream,
                      bool check) {
  require_plan_matches(t, plan);
  require_aligned(kOp, {{"q", t.q}, {"k_cache", t.k_cache}, {"v_cache", t.v_cache}, {"o", t.o}});
  require_aligned(kOp,
                  {{"kv_indptr", t.kv_indptr},
                   {"kv_indices", t.kv_indices},
                   {"kv_last_page_len", t.kv_last_page_len}},
                  sizeof(int32_t));
  if (t.lse != nullptr)
    require_aligned(kOp, {{"lse", t.lse}}, sizeof(float));
  if (t.num_pages < 1 || t.num_pages > std::numeric_limits<int32_t>::max())
    HONE_INVALID_ARGUMENT("decode.paged: num_pages=" + str(t.num_pages) +
                          " is outside 1..2^31 - 1");
  if (t.prefetch_kib < 0 || t.prefetch_kib > kDecodePagedMaxPrefetchKib)
    HONE_INVALID_ARGUMENT("decode.paged: prefetch_kib=" + str(t.prefetch_kib) + " is outside 0.." +
                          str(kDecodePagedMaxPrefetchKib));
  if (check)
    check_pages(t, plan, stream);

  DecodePagedArgs a;
  a.q = t.q;
  a.k_cache = t.k_cache;
  a.v_cache = t.v_cache;
  a.kv_indptr = t.kv_indptr;
  a.kv_indices = t.kv_indices;
  a.kv_last_page_len = t.kv_last_page_len;
  a.o = t.o;
  a.lse = t.lse;
  a.batch = static_cast<int>(t.batch);
  a.hq = static_cast<int>(t.hq);
  a.hkv = static_cast<int>(t.hkv);
  a.head_dim = static_cast<int>(t.head_dim);
  a.page_size = static_cast<int>(t.page_size);
  a.scale = t.scale;
  a.split = {plan.chunks, plan.max_chunks};
  a.chain = {t.dependent, t.prefetch_kib};
  a.workspace_bytes = plan.workspace_bytes;
  if (plan.workspace_bytes > 0)
    a.workspace = workspace_for(stream, plan.workspace_bytes);
  const DecodePagedConfig config{plan.kv_chunk, plan.warps, 0};
  const LaunchStatus status = decode_paged_launch(config, a, stream);
  if (!status.ok())
    HONE_RUNTIME_ERROR("decode.paged launch (" + config.to_tactic().str() +
                       "): " + status.message());
}

} // namespace hone::cuda

namespace hone::ops::cuda {

DecodePagedPlan decode_paged_plan(const int32_t *kv_indptr_host,
                                  const int32_t *kv_last_page_len_host, int64_t batch, int64_t hq,
                                  int64_t hkv, int64_t head_dim, int64_t page_size, Dispatcher &d) {
  return hone::cuda::decode_paged_plan_with(kv_indptr_host, kv_last_page_len_host, batch, hq, hkv,
                                            head_dim, page_size, settings().decode_kv_chunk, d);
}

DecodePagedPlan decode_paged_plan(const int32_t *kv_indptr_host,
                                  const int32_t *kv_last_page_len_host, int64_t batch, int64_t hq,
                                  int64_t hkv, int64_t head_dim, int64_t page_size) {
  return decode_paged_plan(kv_indptr_host, kv_last_page_len_host, batch, hq, hkv, head_dim,
                           page_size, dispatcher());
}

void decode_paged(const DecodePagedTensors &t, const DecodePagedPlan &plan, void *stream) {
  hone::cuda::decode_paged_run(t, plan, stream, settings().check_pages);
}

void decode_paged(const DecodePagedTensors &t, void *stream, Dispatcher &d) {
  decode_paged(t,
               decode_paged_plan(t.kv_indptr_host, t.kv_last_page_len_host, t.batch, t.hq, t.hkv,
                                 t.head_dim, t.page_size, d),
               stream);
}

void decode_paged(const DecodePagedTensors &t, void *stream) {
  decode_paged(t, stream, dispatcher());
}

void decode_paged_validate(const int32_t *kv_indptr_host, const int32_t *kv_last_page_len_host,
                           int64_t batch, int64_t hq, int64_t hkv, int64_t head_dim,
                           int64_t page_size) {
  hone::cuda::decode_paged_validate_heads(hq, hkv, head_dim, page_size);
  hone::cuda::decode_paged_validate_table(
      std::span<const int32_t>(kv_indptr_host, static_cast<size_t>(batch) + 1),
      std::span<const int32_t>(kv_last_page_len_host, static_cast<size_t>(batch)),
      static_cast<int>(page_size));
}

} // namespace hone::ops::cuda
