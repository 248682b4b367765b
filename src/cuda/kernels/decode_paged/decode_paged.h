// decode.paged CUDA kernels: host-callable interface (no CUDA header needed by includers).
// One decode step of attention over a paged KV cache, split along the KV sequence:
//   o[b, h, :] = sum_t softmax_t(scale * q[b, h, :] . k[b, t, hk, :]) v[b, t, hk, :]
// with hk = h / (hq / hkv) (GQA), t over the request's tokens 0 .. len[b] - 1.
// q, o: bf16 [batch, hq, head_dim]; k_cache, v_cache: bf16 [num_pages, page_size, hkv,
// head_dim]; the CSR page table: kv_indptr int32 [batch + 1] (monotone), kv_indices int32
// [kv_indptr[batch]] (page numbers), kv_last_page_len int32 [batch] (1 .. page_size), so
//   len[b] = (kv_indptr[b + 1] - kv_indptr[b] - 1) * page_size + kv_last_page_len[b],
// token t of request b lives in page kv_indices[kv_indptr[b] + t / page_size], slot
// t % page_size. Optional lse: float [batch, hq], NATURAL log of sum_t exp(scale * q . k).
// head_dim 64, 128 or 256; page_size 16, 32 or 64; hq = G * hkv with G in 1..8; fp32
// softmax and accumulation (device code and summation order: decode_paged.cuh).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"
#include "hone/tactic.h"

namespace hone::cuda {

// One configuration of decode.paged, `decode.paged:kv_chunk=256,warps=4`; the optional fields
// are spelled only when not at their default, in this order:
// `decode.paged:kv_chunk=256,warps=8,kv_heads=4,fused_merge=1`.
struct DecodePagedConfig {
  int kv_chunk = 0; // [tokens] per split of a request's KV, a multiple of page_size; 0: no split
  int warps = 4;    // warps per CTA (2, 4 or 8), each taking every warps-th 16-token tile
  // 0: a second kernel (a programmatic dependent launch) merges a split request's partial
  // states; 1: the split kernel's last CTA of each (request, KV head) merges them (one kernel,
  // arrival counters). Same result bits either way; the second kernel measured faster on the
  // H200 at every acceptance config (docs/notes/decode_paged.md).
  int fused_merge = 0;
  // KV heads per CTA (1, 2, 4 or 8; dividing hkv and warps): warp w serves KV head w %
  // kv_heads and every (warps / kv_heads)-th tile, so one CTA reads whole token rows of
  // kv_heads heads side by side. A CTA still reads each KV byte once.
  int kv_heads = 1;
  Tactic to_tactic() const;
  // Throws Error(invalid_argument) for a tactic that is not a decode.paged config.
  static DecodePagedConfig from_tactic(const Tactic &tactic);
  bool operator==(const DecodePagedConfig &) const = default;
};

// How one batch splits under one kv_chunk: from the page counts alone, since kv_chunk is a
// multiple of page_size (ceil(len / kv_chunk) == ceil(pages / (kv_chunk / page_size))).
struct DecodePagedSplit {
  int64_t chunks = 0; // work items per kv head: sum over requests of their chunk counts
  int max_chunks = 0; // most chunks of one request; 1: every request writes o directly
};

struct DecodePagedArgs {
  const void *q = nullptr;                   // bf16 [batch, hq, head_dim]
  const void *k_cache = nullptr;             // bf16 [num_pages, page_size, hkv, head_dim]
  const void *v_cache = nullptr;             // bf16 [num_pages, page_size, hkv, head_dim]
  const int32_t *kv_indptr = nullptr;        // device [batch + 1]
  const int32_t *kv_indices = nullptr;       // device [kv_indptr[batch]]
  const int32_t *kv_last_page_len = nullptr; // device [batch]
  void *o = nullptr;                         // bf16 [batch, hq, head_dim]
  float *lse = nullptr;                      // float [batch, hq], natural log; nullptr: skipped
  int batch = 0, hq = 0, hkv = 0, head_dim = 0, page_size = 0;
  float scale = 0; // softmax scale, e.g. 1 / sqrt(head_dim)
  // From the host copy of kv_indptr (decode_paged_split): the grid and whether to merge.
  DecodePagedSplit split;
  // Partial states when split.max_chunks > 1: decode_paged_workspace_bytes() bytes.
  void *workspace = nullptr;
  size_t workspace_bytes = 0;
  // Fused merge (fused_merge = 1) when split.max_chunks > 1: int32 [batch x hkv] arrival
  // counters, all zero before the launch and left zero by it; not shared with another stream.
  int32_t *counters = nullptr;
  size_t counter_count = 0;
  ChainLink chain; // a link of a decode step: the split kernel waits before reading anything
};

// Tokens of one 16-row tile, the unit a warp loads and multiplies.
inline constexpr int kDecodePagedTileTokens = 16;
// Largest ChainLaunch::prefetch_kib the launcher takes (a CTA asks L2 for at most its chunk's
// first 32 pages in any case).
inline constexpr int kDecodePagedMaxPrefetchKib = 1 << 20;
// K / V tiles per warp that a CTA of `warps` warps asks L2 for before its griddepcontrol.wait
// for `prefetch_kib` KiB per CTA: at least one for any prefetch_kib > 0, 0 for 0. The launcher
// uses it for dependent launches only (ChainLaunch::prefetch_kib).
int decode_paged_prefetch_tiles(int prefetch_kib, int warps, int head_dim);
// Largest GQA ratio hq / hkv: the query heads of one KV head fill one m16 tile's rows 0-7.
inline constexpr int kDecodePagedMaxGroup = 8;

// --- host logic (decode_paged_config.cpp, no device) ---------------------------------------

// Throws Error(invalid_argument) naming the bad value: hq, hkv below 1, hq not a multiple of
// hkv, a ratio over 8, head_dim not 64/128/256, page_size not 16/32/64.
void decode_paged_validate_heads(int64_t hq, int64_t hkv, int64_t head_dim, int64_t page_size);
// Throws Error(invalid_argument) naming the bad value of the host page table: batch below 1,
// kv_indptr[0] negative, kv_indptr not monotone, a request of length 0 (no page), a
// kv_last_page_len outside 1..page_size, more than 2^31 - 1 pages or tokens in all.
void decode_paged_validate_table(std::span<const int32_t> kv_indptr,
                                 std::span<const int32_t> kv_last_page_len, int page_size);
// len[b] of a validated table.
inline int64_t decode_paged_length(std::span<const int32_t> kv_indptr,
                                   std::span<const int32_t> kv_last_page_len, int page_size,
                                   size_t b) {
  return static_cast<int64_t>(kv_indptr[b + 1] - kv_indptr[b] - 1) * page_size +
         kv_last_page_len[b];
}

// The split of a validated kv_indptr under kv_chunk (0: one chunk per request).
DecodePagedSplit decode_paged_split(std::span<const int32_t> kv_indptr, int page_size,
                                    int kv_chunk);
// [bytes] of workspace: 0 when split.max_chunks <= 1, else chunks x hq partial states (fp32 o
// [head_dim] + lse), 256-byte aligned.
size_t decode_paged_workspace_bytes(const DecodePagedSplit &split, int hq, int head_dim);

// The device facts the default split is balanced against.
struct DecodePagedMachine {
  int sms = 0;         // streaming multiprocessors
  int ctas_per_sm = 0; // resident CTAs of the default config per SM (occupancy)
};

// Smallest kv_chunk worth splitting to: one 16-token tile per warp, at least one page.
int decode_paged_min_chunk(int page_size, int warps);
// The static default: the kv_chunk whose estimated makespan over sms x min(ctas_per_sm, 2) CTA
// slots is smallest (decode_paged_config.cpp states the model), 0 when not splitting is best.
// Deterministic, allocation-free; REQUIRES: a validated kv_indptr.
int decode_paged_default_chunk(std::span<const int32_t> kv_indptr, int page_size, int hkv,
                               int warps, DecodePagedMachine machine);
// Tuning candidates of kv_chunk besides the default: 0 (no split) and page_size x 2^i from the
// minimum chunk up to below the longest request, kept while they make at most 8 work items per
// CTA slot. Ascending.
std::vector<int> decode_paged_candidate_chunks(std::span<const int32_t> kv_indptr, int page_size,
                                               int hkv, int warps, DecodePagedMachine machine);
// Default warps per CTA: 4, and 2 at head_dim 256 (so that three CTAs of 64 KB fit an SM).
int decode_paged_default_warps(int head_dim);
// [bytes] dynamic shared memory of a CTA: warps x stages x (K + V tile).
size_t decode_paged_shared_bytes(int warps, int head_dim);
// False with a reason when `config` cannot run (warps, shared memory, kv_chunk not a
// multiple of page_size, kv_heads not 1/2/4/8 or above warps).
bool decode_paged_can_implement(const DecodePagedConfig &config, int head_dim, int page_size,
                                std::string *reason);
// The same, and kv_heads dividing hkv.
bool decode_paged_can_implement(const DecodePagedConfig &config, int hkv, int head_dim,
                                int page_size, std::string *reason);

// --- device (decode_paged.cu) -------------------------------------------------------------------

// Resident CTAs per SM of the main kernel for (head_dim, warps) (cudaOccupancy...), queried
// once and remembered; 0 when the query fails or the config is not compiled.
int decode_paged_ctas_per_sm(int warps, int head_dim);
// Registers and local memory of the main kernel for head_dim (the spill rule).
KernelResources decode_paged_resources(int head_dim);
// Counters the fused merge needs: batch x hkv.
inline size_t decode_paged_counter_count(int64_t batch, int64_t hkv) {
  return static_cast<size_t>(batch) * static_cast<size_t>(hkv);
}

// Enqueues the split kernel and, when args.split.max_chunks > 1 and not config.fused_merge, the
// merge kernel (a programmatic dependent launch) on `stream` (a cudaStream_t); never
// synchronises. With fused_merge a split batch needs args.counters.
// REQUIRES: the device page table equals the host copy the split was computed from; q,
// k_cache, v_cache, o 16-byte aligned.
LaunchStatus decode_paged_launch(const DecodePagedConfig &config, const DecodePagedArgs &args,
                                 void *stream);
// HONE_CHECK_PAGES: enqueues a scan of kv_indices[begin, end) that records in *first_bad (a
// device int) the smallest position whose page is outside [0, num_pages), after setting it
// to kDecodePagedNoBadPage; never synchronises.
inline constexpr int32_t kDecodePagedNoBadPage = 0x7f7f7f7f;
LaunchStatus decode_paged_check_pages_launch(const int32_t *kv_indices, int64_t begin, int64_t end,
                                             int num_pages, int32_t *first_bad, void *stream);

} // namespace hone::cuda
