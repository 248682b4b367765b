// The kv_append op (backend "cuda"): the new token's K and V of every request of a decode step
// written into the paged cache decode.paged reads (kv_append.h states the layout). Shape
// {batch, hkv, head_dim, page_size}. A copy, gated bit for bit (bound 0).
//
// The gate's output is the written slots themselves: its page table puts request b's new
// token in slot b % page_size of page b / page_size (its earlier pages are other valid pages,
// so that a kernel reading the wrong entry of kv_indices writes the wrong slot), and its K and
// V caches are the two halves of y, exactly the batch's slots, so that no slot is left
// poisoned. The kernel writes one slot per request whatever the pages hold; the device test
// checks shuffled pages of real requests and that every other slot is untouched.
//
//   hone::cuda::KvAppendOp op;
//   auto w = op.prepare(hone::Shape{{16, 8, 128, 16}, hone::DType::bf16});
//   if (w->check(op.default_tactic(bucket), hone::Numerics::tolerance).pass()) ...
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cuda/kernels/kv_append/kv_append.h"
#include "cuda/ops/cuda_op.h"
#include "hone/ops/cuda.h"

namespace hone::cuda {

// A copy: the exact bits, so the relative L2 bound is 0.
inline constexpr double kKvAppendRelativeL2Bound = 0;

// The gate's page table (see above) for `batch` requests: kv_indptr [batch + 1], kv_indices,
// kv_last_page_len [batch], and the page count ceil(batch / page_size).
struct KvAppendGateTable {
  std::vector<int32_t> indptr, indices, last_page_len;
  int num_pages = 0;
};
KvAppendGateTable kv_append_gate_table(int batch, int page_size);

struct KvAppendInputs {
  DeviceBuffer k; // bf16 [batch, hkv, head_dim]
  DeviceBuffer v; // bf16 [batch, hkv, head_dim]
};

// Output y: bf16 [2 x batch x hkv, head_dim]: the K cache's slots, then the V cache's.
class KvAppendWorkload final : public CudaWorkloadOf<KvAppendInputs> {
public:
  KvAppendWorkload(CudaBackend &backend, int batch, int hkv, int head_dim, int page_size);

  size_t bytes_per_launch() const override; // k, v read; the same written; the page table
  std::vector<double> reference() const override;
  LaunchStatus launch(const KvAppendConfig &config, int copy);

private:
  HONE_CUDA_WORKLOAD_HOOKS(KvAppendInputs);

  int batch_, hkv_, head_dim_, page_size_;
  KvAppendGateTable table_;
  DeviceBuffer indptr_, indices_, last_;
  LastConfig<KvAppendConfig> last_config_;
};

// What the kv_append entry point checks before it resolves a tactic, for `op` (the name in its
// messages; rope checks the append it fuses the same way): num_pages, the alignment of v, the
// caches and the page table, the strides, and the host copies of the page table where given (k
// is the caller's: kv_append's own, rope's roped k). Throws Error(invalid_argument) naming the
// bad value.
void kv_append_validate(const ops::cuda::KvAppendTensors &t, const char *op);

// Buckets: batch exact 1..8, then the power of two at or above (up to 4096); hkv, head_dim and
// page_size exact.
class KvAppendOp final : public CudaOp {
public:
  KvAppendOp();
  // validate(): Shape {batch, hkv, head_dim, page_size}, bf16. Throws Error(invalid_argument)
  // naming the bad value.
  HONE_CUDA_OP_INTERFACE;
};

} // namespace hone::cuda
