// The decode.paged op (backend "cuda"): one decode step of attention over a paged bf16 KV
// cache (decode_paged.h states the layouts), split along the sequence with kv_chunk as the
// tactic. Its shape is {batch, max_len, total_len, hq, hkv, head_dim, page_size}: the
// variable-length batch enters the key through its size, longest and total length, and
// prepare() lays out representative lengths (decode_paged_synthetic_lengths) in a shuffled
// page pool. The workload gates a candidate against a float64 host reference of a sample of
// rows (decode_paged_reference_rows), downloading only the K and V those rows read.
//
//   hone::cuda::DecodePagedOp op;
//   auto w = op.prepare(hone::Shape{{1, 32768, 32768, 32, 8, 128, 16}, hone::DType::bf16});
//   if (w->check(op.default_tactic(bucket), hone::Numerics::tolerance).pass()) ...
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cuda/backend/device_buffer.h"
#include "cuda/backend/last_config.h"
#include "cuda/gate/cuda_workload.h"
#include "cuda/kernels/decode_paged/decode_paged.h"
#include "cuda/ops/decode_paged_problem.h"
#include "cuda/ops/decode_paged_reference.h"
#include "hone/bucket.h"
#include "hone/op.h"

namespace hone::cuda {

class CudaBackend;

// Relative L2 bound of the tolerance gate on o. Two roundings move a kernel's output from the
// exact one: each softmax weight p is rounded once to bf16 before the P.V product (<= 2^-9
// relative per weight; l sums the same rounded weights, so o stays a weighted mean, moved by
// ~2^-9 / sqrt(3) ~ 1.1e-3 relative in L2 on random data, at worst 2^-9 times the ratio of
// sum p |v| to |sum p v|, which random V keeps near 1 at any length), and o is rounded once to
// bf16 (<= 2^-9 ~ 1.95e-3 per element). fp32 scores, exponentials (ex2.approx, 2^-22) and
// accumulation (~sqrt(tokens) x 2^-24), the fp32 partial states and their merge add < 1e-5.
// Together ~1.6e-3 on random data; 8e-3, as for the GEMVs, leaves 4x room, while a wrong
// page, head or mask, or a dropped or doubled chunk of n, gives O(1 / sqrt(n)) or more and
// fails at the lengths the tests use.
inline constexpr double kDecodePagedRelativeL2Bound = 8e-3;
// Bound on |lse - reference| (natural log units): l is a sum of bf16-rounded weights, <= 2^-9
// relative, so lse moves by <= 2^-9 ~ 2e-3; 8e-3 leaves 4x room.
inline constexpr double kDecodePagedLseBound = 8e-3;

// The device facts the plan balances over: SMs of the device (132 when no device is present,
// so that a listing still works) and resident CTAs of (warps, head_dim) per SM.
DecodePagedMachine decode_paged_machine(int warps, int head_dim);
// The static default of a page table: decode_paged_default_warps(head_dim) and the heuristic
// kv_chunk on this device. REQUIRES: a validated table.
DecodePagedConfig decode_paged_default_config(std::span<const int32_t> kv_indptr, int hkv,
                                              int head_dim, int page_size);
// The tuning candidates, the default first: every decode_paged_candidate_chunks() value at the
// default warps, then the default kv_chunk at the other warps counts that fit shared memory.
// All at kv_heads 1 and fused_merge 0, the configs the entry point's plan carries.
std::vector<DecodePagedConfig> decode_paged_candidate_configs(std::span<const int32_t> kv_indptr,
                                                              int hkv, int head_dim, int page_size);
// Benchmark configs with several KV heads per CTA: kv_heads 2, 4, 8 (dividing hkv) at 8 warps
// and 2, 4 at 4 warps, each at the default heuristic's kv_chunk for hkv / kv_heads CTAs per
// work item. Not tuning candidates: the entry point's plan has no field for kv_heads yet.
std::vector<DecodePagedConfig> decode_paged_kv_heads_configs(std::span<const int32_t> kv_indptr,
                                                             int hkv, int head_dim, int page_size);

// The inputs of one rotation copy: q and the two caches (the page table is shared).
struct DecodePagedInputs {
  DeviceBuffer q;       // bf16 [batch, hq, head_dim]
  DeviceBuffer k_cache; // bf16 [num_pages, page_size, hkv, head_dim]
  DeviceBuffer v_cache; // bf16 [num_pages, page_size, hkv, head_dim]
};

class DecodePagedWorkload final : public CudaWorkloadOf<DecodePagedInputs> {
public:
  // REQUIRES: heads and lengths valid (decode_paged_validate_heads, lengths >= 1). `scale`
  // 0 means 1 / sqrt(head_dim); `table_seed` draws the page shuffle.
  DecodePagedWorkload(CudaBackend &backend, DecodePagedProblem problem, double scale = 0,
                      uint64_t table_seed = 0x5eed);

  // [bytes] K and V of every token read once, q, o and the page table.
  size_t bytes_per_launch() const override;
  // [bytes] of K and V one launch reads: total_len x hkv x head_dim x 2 x 2.
  size_t kv_bytes() const;

  const DecodePagedProblem &problem() const { return p_; }
  const DecodePagedTable &table() const { return table_; }
  double scale() const { return scale_; }
  const void *q(int copy) const { return copy_at(copy).q.data(); }
  const void *k_cache(int copy) const { return copy_at(copy).k_cache.data(); }
  const void *v_cache(int copy) const { return copy_at(copy).v_cache.data(); }
  const int32_t *kv_indptr() const { return indptr_.as<const int32_t>(); }
  const int32_t *kv_indices() const { return indices_.as<const int32_t>(); }
  const int32_t *kv_last_page_len() const { return last_.as<const int32_t>(); }

  // With `write` the launches also write lse (float [batch, hq]), poisoned like o by check().
  void set_write_lse(bool write);
  float *lse() const { return lse_.as<float>(); }
  std::vector<float> download_lse() const;
  // The float64 reference (o and lse) of copy `copy`'s current inputs, every row; downloads q
  // and the whole of both caches.
  DecodePagedReference reference_of(int copy) const;
  // The rows of o (and lse; row b x hq + h) the gate holds to the reference:
  // decode_paged_reference_rows(problem()), fixed at construction; empty: every row. At 8
  // requests of 131072 tokens, hq=32, head_dim 128: 16 of 256 rows, 0.54 G multiply-adds of
  // 8.6 G.
  std::vector<int64_t> reference_rows() const override { return reference_rows_; }
  // The float64 reference of copy `copy`'s current inputs for reference_rows() (every row when
  // empty): o [rows, head_dim] and lse [rows], in their order, each row's bits those of
  // reference_of(). Downloads only those rows of q and, of K and V, the pages of each (request,
  // KV head) pair they read (decode_paged_kv_block_offsets), gathered on the device.
  DecodePagedReference sampled_reference_of(int copy) const;
  // sampled_reference_of(0).o: the gate checks o only (lse is the device tests').
  std::vector<double> reference() const override { return sampled_reference_of(0).o; }

  // The fused merge's arrival counters, int32 [batch, hkv]: zero after every launch.
  const int32_t *counters() const { return counters_.as<const int32_t>(); }
  std::vector<int32_t> download_counters() const;

  // The split of this batch under `config`.
  DecodePagedSplit split(const DecodePagedConfig &config) const;
  // Enqueues `config` on copy `copy` into y() (and lse() when set). Grows the partial-state
  // workspace when needed, which cannot happen inside a stream capture: the constructor sizes
  // it for every candidate config, anything else must run once outside a capture first.
  LaunchStatus launch(const DecodePagedConfig &config, int copy);

private:
  HONE_CUDA_WORKLOAD_HOOKS(DecodePagedInputs);
  void reserve_workspace(size_t bytes);

  DecodePagedProblem p_;
  DecodePagedTable table_;
  double scale_;
  std::vector<int64_t> reference_rows_;
  DeviceBuffer indptr_, indices_, last_; // the page table, shared by every copy
  DeviceBuffer workspace_;               // partial states
  DeviceBuffer counters_;                // fused merge arrivals, int32 [batch, hkv], zeroed once
  DeviceBuffer lse_;                     // float [batch, hq] when set_write_lse(true)
  bool write_lse_ = false;
  LastConfig<DecodePagedConfig> last_config_;
};

class DecodePagedOp final : public TunableOp {
public:
  DecodePagedOp();

  std::string_view name() const override { return "decode.paged"; }
  // 1 and 2 are taken: 1 was the first landing and, again, the merge-kernel default after 2's
  // fused-merge default, so an entry of either may hold the pick of another default. 4: the
  // default's chunk model counts one CTA slot per SM (longer chunks at batch 1-8), so entries of
  // 3 were picked against another default.
  int version() const override { return 4; }
  std::string_view backend() const override { return "cuda"; }
  DType dtype() const override { return DType::bf16; }
  // batch pow2 1..4096, max_len pow2 1..2^22, total_len pow2 1..2^30, hq exact 1..1024, hkv
  // exact 1..1024, head_dim one of {64, 128, 256}, page_size one of {16, 32, 64}.
  const BucketSpec &buckets() const override { return buckets_; }
  // decode_paged_candidate_configs() of the bucket's representative lengths, default first.
  std::vector<Tactic> candidates(const Shape &bucket) const override;
  Tactic default_tactic(const Shape &bucket) const override;
  // Shape {batch, max_len, total_len, hq, hkv, head_dim, page_size}, dtype bf16. Throws
  // Error(invalid_argument) naming the bad value: rank, dtype, a dimension out of range,
  // max_len over total_len, total_len below batch, and decode_paged_validate_heads.
  void validate(const Shape &shape) const override;
  std::unique_ptr<Workload> prepare(const Shape &shape) const override;
  // kv_chunk fixes the summation order and follows the batch: no batch-invariant mode.
  Numerics default_numerics() const override { return Numerics::tolerance; }
  CompiledTactic compile(const Tactic &tactic) const override {
    return CompiledTactic::of(DecodePagedConfig::from_tactic(tactic));
  }

private:
  BucketSpec buckets_;
};

} // namespace hone::cuda
