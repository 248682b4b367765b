// The problem of one decode.paged workload on the host (no CUDA header): heads, head_dim, page
// size and the request lengths, the representative lengths of a shape bucket, and the page
// table that lays those lengths out in a shuffled page pool.
//
//   DecodePagedProblem p = decode_paged_problem(Shape{{16, 32768, 200000, 32, 8, 128, 16}, bf16});
//   DecodePagedTable table = decode_paged_table(p, /*seed=*/7);   // indptr, indices, last
#pragma once

#include <cstdint>
#include <vector>

#include "hone/shape.h"

namespace hone::cuda {

struct DecodePagedProblem {
  int hq = 0, hkv = 0, head_dim = 0, page_size = 0;
  std::vector<int32_t> lengths; // [tokens] of each request, each >= 1

  int batch() const { return static_cast<int>(lengths.size()); }
  int64_t total_len() const;
  int64_t max_len() const;
  int64_t pages() const; // sum of ceil(length / page_size)
  // kv_indptr of the lengths laid out consecutively: [batch + 1], from 0.
  std::vector<int32_t> indptr() const;
  // The op's shape {batch, max_len, total_len, hq, hkv, head_dim, page_size}, dtype bf16.
  Shape shape() const;
};

// Representative lengths of (batch, max_len, total_len): total is first clamped to
// [max_len + batch - 1, batch x max_len] (bucketed dimensions need not be consistent); request
// 0 gets max_len and the other batch - 1 share the rest evenly, the first (rest % (batch - 1))
// of them one token more, so every length is in 1 .. max_len; total == batch x max_len gives
// uniform lengths. REQUIRES: batch >= 1, max_len >= 1.
std::vector<int32_t> decode_paged_synthetic_lengths(int64_t batch, int64_t max_len,
                                                    int64_t total_len);
// The problem of a validated shape {batch, max_len, total_len, hq, hkv, head_dim, page_size}.
DecodePagedProblem decode_paged_problem(const Shape &shape);

// A page table of a problem over a pool of num_pages pages: request b's pages are
// indices[indptr[b] .. indptr[b + 1]), a shuffled permutation of pages 0 .. used - 1 (drawn
// from `seed`), so that consecutive tokens of a request live in scattered pages; pages
// used .. num_pages - 1 are spares no request references (the workload poisons them).
struct DecodePagedTable {
  std::vector<int32_t> indptr;        // [batch + 1], indptr[0] == 0
  std::vector<int32_t> indices;       // [used]
  std::vector<int32_t> last_page_len; // [batch], 1 .. page_size
  int32_t used = 0;                   // pages the requests reference
  int32_t num_pages = 0;              // used + spares (used / 16 + 1)
};
DecodePagedTable decode_paged_table(const DecodePagedProblem &problem, uint64_t seed);

} // namespace hone::cuda
