// The decode.paged entry point's two steps with their settings passed in, so that a test can
// exercise HONE_DECODE_KV_CHUNK and HONE_CHECK_PAGES without the process-wide settings. The
// public functions (include/hone/ops/cuda.h) pass settings().decode_kv_chunk and
// settings().check_pages.
//
//   DecodePagedPlan plan = decode_paged_plan_with(indptr, last, b, hq, hkv, d, ps, 256, disp);
//   decode_paged_run(tensors, plan, stream, /*check_pages=*/true);
#pragma once

#include <cstdint>
#include <optional>

#include "hone/ops/cuda.h"

namespace hone::cuda {

// decode_paged_plan() with `kv_chunk_override` in place of HONE_DECODE_KV_CHUNK.
ops::cuda::DecodePagedPlan decode_paged_plan_with(const int32_t *kv_indptr_host,
                                                  const int32_t *kv_last_page_len_host,
                                                  int64_t batch, int64_t hq, int64_t hkv,
                                                  int64_t head_dim, int64_t page_size,
                                                  std::optional<int> kv_chunk_override,
                                                  Dispatcher &d);
// decode_paged(t, plan, stream) with `check_pages` in place of HONE_CHECK_PAGES.
void decode_paged_run(const ops::cuda::DecodePagedTensors &t, const ops::cuda::DecodePagedPlan &plan,
                      void *stream, bool check_pages);

} // namespace hone::cuda
