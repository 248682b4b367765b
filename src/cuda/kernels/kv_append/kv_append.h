// kv_append kernels: host-callable launch interface (no CUDA header needed by includers).
// Writes the new token of every request of a decode step into the paged KV cache that
// decode.paged reads (decode_paged.h): for request b, page = kv_indices[kv_indptr[b + 1] - 1]
// (its last page), slot = kv_last_page_len[b] - 1 (the page table already counts the new
// token), and
//   k_cache[page, slot, h, :] = k[b, h, :],  v_cache[page, slot, h, :] = v[b, h, :].
// k, v: bf16 [batch, hkv, head_dim] with a per-request stride in elements (so that they may be
// slices of a fused q/k/v projection output); caches bf16 [num_pages, page_size, hkv,
// head_dim]. A copy: the cache receives the exact input bits. Device code: kv_append.cuh.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"
#include "hone/tactic.h"

namespace hone::cuda {

// One configuration, `kv_append.paged:vec=8,threads=128`.
struct KvAppendConfig {
  int vec = 8;       // bf16 per vector copy: 8 (16 bytes) or 4 (8 bytes)
  int threads = 128; // threads per CTA: 32, 64, 128 or 256
  Tactic to_tactic() const;
  // Throws Error(invalid_argument) for a tactic that is not a kv_append config.
  static KvAppendConfig from_tactic(const Tactic &tactic);
  bool operator==(const KvAppendConfig &) const = default;
};

struct KvAppendArgs {
  const void *k = nullptr;                   // bf16 [batch, hkv, head_dim], request stride k_stride
  const void *v = nullptr;                   // bf16 [batch, hkv, head_dim], request stride v_stride
  void *k_cache = nullptr;                   // bf16 [num_pages, page_size, hkv, head_dim]
  void *v_cache = nullptr;                   // bf16 [num_pages, page_size, hkv, head_dim]
  const int32_t *kv_indptr = nullptr;        // device [batch + 1]
  const int32_t *kv_indices = nullptr;       // device [kv_indptr[batch]]
  const int32_t *kv_last_page_len = nullptr; // device [batch], 1 .. page_size
  int batch = 0, hkv = 0, head_dim = 0, page_size = 0, num_pages = 0;
  int64_t k_stride = 0, v_stride = 0; // [elements]; 0: hkv x head_dim
  // Programmatic dependent launch (common/pdl.cuh). The page table is read before
  // griddepcontrol.wait: it must not be written by the kernel this launch depends on (a step
  // uploads it before its first kernel).
  bool dependent = false;
};

const std::vector<KvAppendConfig> &kv_append_configs();
KvAppendConfig kv_append_default(int batch, int hkv, int head_dim);
// False with a reason when `config` cannot run this shape (head_dim not a multiple of vec).
bool kv_append_can_implement(const KvAppendConfig &config, int batch, int hkv, int head_dim,
                             std::string *reason);
KernelResources kv_append_resources(const KvAppendConfig &config);
// Enqueues one launch on `stream` (a cudaStream_t); never synchronises. A request whose last
// page lies outside [0, num_pages) or whose slot lies outside [0, page_size) is not written
// (no fault); the entry point checks host copies of the table when it has them.
// REQUIRES: k, v, the caches and the strides aligned to vec x 2 bytes.
LaunchStatus kv_append_launch(const KvAppendConfig &config, const KvAppendArgs &args, void *stream);

} // namespace hone::cuda
