// Float64 host reference of decode.paged and the comparison of a kernel's bf16 output with it.
// Exact bf16 inputs, double products, sums and exponentials; work spread over the host's
// cores (one request and KV head per task), so a gate on 10^5-token contexts stays seconds.
//
//   DecodePagedReference ref = decode_paged_reference(problem, table, q, k, v, scale);
//   DecodePagedComparison c = compare_decode_paged(o_bits, &lse, ref, problem.head_dim);
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
