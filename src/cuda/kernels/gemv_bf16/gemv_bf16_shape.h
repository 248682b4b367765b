// gemv.bf16 shape arithmetic shared by the config logic and the launcher (host only).
#pragma once

#include "cuda/kernels/gemv_bf16/gemv_bf16.h"

namespace hone::cuda {

// The mma kernels address the weights by 32-bit offsets of 16-byte fragments: fewer than 2^31
// of them (n x k < 2^34 elements).
inline bool gemv_bf16_offsets_fit(int n, int k) {
  return static_cast<long long>(n) * (k / 8) < (1ll << 31);
}

// Number of K slices summed in fixed order: warps_k x split_k.
inline int gemv_bf16_k_slices(const GemvBf16Config &c) { return c.warps_k * c.split_k; }

// [8-element granules] K covered by one slice: whole 32-element chunks on the mma and stream
// paths (a multiple of 4 granules), whole granules on the fma path. Depends on k and k_slices
// only.
inline int gemv_bf16_slice_granules(const GemvBf16Config &c, int k) {
  const int slices = gemv_bf16_k_slices(c);
  if (c.path != KernelPath::fma) {
    const int chunks = (k + 31) / 32;
    return 4 * ((chunks + slices - 1) / slices);
  }
  const int granules = k / 8;
  return (granules + slices - 1) / slices;
}

} // namespace hone::cuda
