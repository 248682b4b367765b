// kv_append device code. Included only by kv_append.cu.
//
// Grid (spans of a request's hkv x head_dim / VEC vectors, batch, 2): blockIdx.z picks K (0)
// or V (1); thread x of span s copies vector s x threads + x of request blockIdx.y, so the
// lanes of a warp write neighbouring 16-byte pieces of one token's row of the page.
//
// PDL: the page table (not written by the previous kernel of a step) is read and the
// destination computed before griddepcontrol.wait; k and v (activations) after it.
#pragma once

#include <cstdint>

#include "cuda/kernels/common/bf16_vec.cuh"
#include "cuda/kernels/common/pdl.cuh"

namespace hone::cuda::kv_append_detail {

using namespace kernel_detail;

struct Params {
  const uint16_t *k;
  const uint16_t *v;
  uint16_t *k_cache;
  uint16_t *v_cache;
  const int32_t *kv_indptr;
  const int32_t *kv_indices;
  const int32_t *kv_last_page_len;
  int token_elements; // hkv x head_dim
  int page_size, num_pages;
  int64_t k_stride, v_stride; // [elements] between requests
};

template <int VEC> __global__ void __launch_bounds__(256) kv_append_kernel(Params p) {
  const int b = blockIdx.y;
  const bool is_v = blockIdx.z != 0;
  const int c = blockIdx.x * blockDim.x + threadIdx.x;
  const int page = p.kv_indices[p.kv_indptr[b + 1] - 1];
  const int slot = p.kv_last_page_len[b] - 1;
  const bool valid = c * VEC < p.token_elements && page >= 0 && page < p.num_pages && slot >= 0 &&
                     slot < p.page_size;
  const int64_t dst = (static_cast<int64_t>(page) * p.page_size + slot) * p.token_elements +
                      static_cast<int64_t>(c) * VEC;
  const uint16_t *src = is_v ? p.v + b * p.v_stride : p.k + b * p.k_stride;

  pdl_wait();
  Bf16Pack<VEC> value;
  if (valid)
    value = load_vec_stream<VEC>(src + static_cast<int64_t>(c) * VEC);
  pdl_launch_dependents();
  if (valid)
    store_vec<VEC>((is_v ? p.v_cache : p.k_cache) + dst, value);
}

} // namespace hone::cuda::kv_append_detail
