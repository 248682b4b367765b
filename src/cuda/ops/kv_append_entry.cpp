// Public entry point of kv_append (include/hone/ops/cuda.h).
#include <string>

#include "cuda/kernels/kv_append/kv_append.h"
#include "cuda/ops/entry_point.h"
#include "cuda/ops/kv_append_op.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/ops/cuda.h"

namespace hone::ops::cuda {

namespace {

constexpr const char *kOp = "kv_append";

std::string str(int64_t v) { return std::to_string(v); }

// The host copies of the page table, where the caller has them.
void check_table(const KvAppendTensors &t, const char *op) {
  if (t.kv_indptr_host == nullptr || t.kv_last_page_len_host == nullptr)
    return;
  if (t.kv_indptr_host[0] < 0)
    HONE_INVALID_ARGUMENT(std::string(op) + ": kv_indptr[0]=" + str(t.kv_indptr_host[0]) +
                          " is negative");
  for (int64_t b = 0; b < t.batch; ++b) {
    const int32_t lo = t.kv_indptr_host[b], hi = t.kv_indptr_host[b + 1];
    if (hi <= lo)
      HONE_INVALID_ARGUMENT(std::string(op) + ": request " + str(b) + " has no page (kv_indptr[" +
                            str(b) + "]=" + str(lo) + ", kv_indptr[" + str(b + 1) + "]=" + str(hi) +
                            ")");
    const int32_t last = t.kv_last_page_len_host[b];
    if (last < 1 || last > t.page_size)
      HONE_INVALID_ARGUMENT(std::string(op) + ": kv_last_page_len[" + str(b) + "]=" + str(last) +
                            " is outside 1..page_size=" + str(t.page_size));
  }
}

void require_stride(const char *op, const char *name, int64_t stride, int64_t least) {
  if (stride != 0 && (stride < least || stride % 8 != 0))
    HONE_INVALID_ARGUMENT(std::string(op) + ": " + name + "=" + str(stride) +
                          " is not 0 or a multiple of 8 of at least " + str(least));
}

} // namespace

} // namespace hone::ops::cuda

namespace hone::cuda {

void kv_append_validate(const ops::cuda::KvAppendTensors &t, const char *op) {
  if (t.num_pages < 1 || t.num_pages > 0x7fffffff)
    HONE_INVALID_ARGUMENT(std::string(op) + ": num_pages=" + ops::cuda::str(t.num_pages) +
                          " outside 1..2^31 - 1");
  require_aligned(op, {{"v", t.v}, {"k_cache", t.k_cache}, {"v_cache", t.v_cache}});
  require_aligned(op,
                  {{"kv_indptr", t.kv_indptr},
                   {"kv_indices", t.kv_indices},
                   {"kv_last_page_len", t.kv_last_page_len}},
                  4);
  ops::cuda::require_stride(op, "k_stride", t.k_stride, t.hkv * t.head_dim);
  ops::cuda::require_stride(op, "v_stride", t.v_stride, t.hkv * t.head_dim);
  ops::cuda::check_table(t, op);
}

} // namespace hone::cuda

namespace hone::ops::cuda {

void kv_append(const KvAppendTensors &t, void *stream, Dispatcher &d) {
  const Resolution &r = d.resolve(hone::cuda::entry_op<hone::cuda::KvAppendOp>(),
                                  Shape{{t.batch, t.hkv, t.head_dim, t.page_size}, DType::bf16});
  hone::cuda::require_aligned(kOp, {{"k", t.k}});
  hone::cuda::kv_append_validate(t, kOp);
  hone::cuda::KvAppendArgs a;
  a.k = t.k;
  a.v = t.v;
  a.k_cache = t.k_cache;
  a.v_cache = t.v_cache;
  a.kv_indptr = t.kv_indptr;
  a.kv_indices = t.kv_indices;
  a.kv_last_page_len = t.kv_last_page_len;
  a.batch = static_cast<int>(t.batch);
  a.hkv = static_cast<int>(t.hkv);
  a.head_dim = static_cast<int>(t.head_dim);
  a.page_size = static_cast<int>(t.page_size);
  a.num_pages = static_cast<int>(t.num_pages);
  a.k_stride = t.k_stride;
  a.v_stride = t.v_stride;
  a.dependent = t.dependent;
  hone::cuda::check_launch(
      kOp, r, hone::cuda::kv_append_launch(r.compiled.as<hone::cuda::KvAppendConfig>(), a, stream));
}

void kv_append(const KvAppendTensors &t, void *stream) { kv_append(t, stream, dispatcher()); }

} // namespace hone::ops::cuda
