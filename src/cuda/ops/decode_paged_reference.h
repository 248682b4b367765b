// Float64 host reference of decode.paged, of every row or of a sample of rows (the gate's: the
// rows it covers, the (request, KV head) pairs whose K and V they read and where those lie in
// the paged cache), and the comparison of a kernel's bf16 output with it. Exact bf16 inputs,
// double products, sums and exponentials; work spread over the host's cores (one request and
// KV head per task).
//
//   DecodePagedReference ref = decode_paged_reference(problem, table, q, k, v, scale);
//   DecodePagedComparison c = compare_decode_paged(o_bits, &lse, ref, problem.head_dim);
//   std::vector<int64_t> rows = decode_paged_reference_rows(problem);   // empty: every row
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "cuda/ops/decode_paged_problem.h"

namespace hone::cuda {

struct DecodePagedReference {
  std::vector<double> o;   // [batch, hq, head_dim]
  std::vector<double> lse; // [batch, hq], natural log of sum_t exp(scale q . k_t)
};

// q: bf16 bits [batch, hq, head_dim]; k_cache, v_cache: bf16 bits [num_pages, page_size, hkv,
// head_dim] laid out by `table`.
DecodePagedReference decode_paged_reference(const DecodePagedProblem &problem,
                                            const DecodePagedTable &table, const uint16_t *q,
                                            const uint16_t *k_cache, const uint16_t *v_cache,
                                            double scale);

// [multiply-adds] the gate's float64 reference aims at per check, counting a row (request b,
// query head) as lengths[b] x head_dim x 2 (q . k and p v over every token): 2^25 ~ 34 M, one
// row of 131072 tokens at head_dim 128. Every row of 8 requests of 131072 tokens at hq=32 is
// 8.6 G, seconds per candidate.
inline constexpr int64_t kDecodePagedReferenceMacs = int64_t{1} << 25;
// Rows the gate's sampled reference covers at least, however long they are.
inline constexpr int kDecodePagedMinReferenceRows = 16;

// [multiply-adds] of the float64 reference of rows `rows` of o: the sum of lengths[b] x
// head_dim x 2 over them; over every row when `rows` is empty.
int64_t decode_paged_reference_macs(const DecodePagedProblem &problem,
                                    const std::vector<int64_t> &rows);

// The rows of o the gate holds to the reference. Empty (every row) when there are at most
// kDecodePagedMinReferenceRows or all of them cost at most kDecodePagedReferenceMacs; else
// sampled_rows(batch x hq, count): ascending, from row 0 (request 0, head 0) to the last (the
// last request, head hq - 1), evenly spaced so that the sample moves across requests and heads
// alike (every request once count > batch). The count, bisected between
// kDecodePagedMinReferenceRows and every row, costs at most kDecodePagedReferenceMacs and one
// row more would cost more; only the floor's sample may cost more.
std::vector<int64_t> decode_paged_reference_rows(const DecodePagedProblem &problem);

// A (request, KV head) pair: the K and V a sampled reference reads.
struct DecodePagedKvHead {
  int request = 0, kv_head = 0;
  bool operator==(const DecodePagedKvHead &) const = default;
};
// The distinct pairs that rows `rows` (ascending) of o read, ascending: row r is request
// r / hq, KV head (r % hq) / (hq / hkv).
std::vector<DecodePagedKvHead> decode_paged_kv_heads(const DecodePagedProblem &problem,
                                                     const std::vector<int64_t> &rows);
// [elements] where the blocks of `heads` start in a cache [num_pages, page_size, hkv,
// head_dim] laid out by `table`: for each pair in order, its request's pages in order, the
// page's page_size token rows of its KV head (head_dim elements each, hkv x head_dim apart).
// Those blocks one after another are the pairs' "gathered" K (or V): pair j's tokens 0 ..
// pages x page_size - 1 of its request, [tokens, head_dim], after those of pairs 0 .. j - 1.
std::vector<int64_t> decode_paged_kv_block_offsets(const DecodePagedProblem &problem,
                                                   const DecodePagedTable &table,
                                                   const std::vector<DecodePagedKvHead> &heads);

// The float64 reference of rows `rows` (ascending, distinct, not empty) of o and lse, in their
// order. q_rows: bf16 bits [rows, head_dim], those rows of q; k_heads, v_heads: bf16 bits of
// the pairs of decode_paged_kv_heads(rows), gathered as decode_paged_kv_block_offsets() lays
// them. Each row's arithmetic is decode_paged_reference()'s: the same inputs give its bits.
DecodePagedReference decode_paged_sampled_reference(const DecodePagedProblem &problem,
                                                    const std::vector<int64_t> &rows,
                                                    const uint16_t *q_rows, const uint16_t *k_heads,
                                                    const uint16_t *v_heads, double scale);

struct DecodePagedComparison {
  double relative_l2 = 0;       // ||o - ref|| / ||ref|| over the whole output
  double max_row_relative_l2 = 0; // the same per (request, head) row, the largest
  size_t nan_count = 0;         // NaN outputs (unwritten poison or invalid)
  double lse_max_abs_error = 0; // largest |lse - ref.lse| (0 when lse is not compared)
  size_t lse_nan_count = 0;
};

// `lse` may be null (not compared).
DecodePagedComparison compare_decode_paged(const std::vector<uint16_t> &o,
                                           const std::vector<float> *lse,
                                           const DecodePagedReference &ref, int head_dim);

} // namespace hone::cuda
