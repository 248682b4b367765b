#include "cuda/ops/decode_paged_problem.h"

#include <algorithm>
#include <numeric>
#include <random>

#include "hone/error.h"

namespace hone::cuda {

int64_t DecodePagedProblem::total_len() const {
  return std::accumulate(lengths.begin(), lengths.end(), int64_t{0});
}

int64_t DecodePagedProblem::max_len() const {
  return lengths.empty() ? 0 : *std::max_element(lengths.begin(), lengths.end());
}

int64_t DecodePagedProblem::pages() const {
  int64_t n = 0;
  for (int32_t len : lengths)
    n += (len + page_size - 1) / page_size;
  return n;
}

std::vector<int32_t> DecodePagedProblem::indptr() const {
  std::vector<int32_t> out{0};
  for (int32_t len : lengths)
    out.push_back(out.back() + (len + page_size - 1) / page_size);
  return out;
}

Shape DecodePagedProblem::shape() const {
  return Shape{{batch(), max_len(), total_len(), hq, hkv, head_dim, page_size}, DType::bf16};
}

std::vector<int32_t> decode_paged_synthetic_lengths(int64_t batch, int64_t max_len,
                                                    int64_t total_len) {
  HONE_CHECK(batch >= 1 && max_len >= 1, "decode.paged lengths need batch, max_len >= 1");
  const int64_t total = std::clamp(total_len, max_len + batch - 1, batch * max_len);
  std::vector<int32_t> lengths(static_cast<size_t>(batch), static_cast<int32_t>(max_len));
  if (batch > 1) {
    const int64_t rest = total - max_len, others = batch - 1;
    for (int64_t i = 0; i < others; ++i)
      lengths[static_cast<size_t>(i + 1)] =
          static_cast<int32_t>(rest / others + (i < rest % others ? 1 : 0));
  }
  return lengths;
}

DecodePagedProblem decode_paged_problem(const Shape &shape) {
  DecodePagedProblem p;
  p.lengths = decode_paged_synthetic_lengths(shape[0], shape[1], shape[2]);
  p.hq = static_cast<int>(shape[3]);
  p.hkv = static_cast<int>(shape[4]);
  p.head_dim = static_cast<int>(shape[5]);
  p.page_size = static_cast<int>(shape[6]);
  return p;
}

DecodePagedTable decode_paged_table(const DecodePagedProblem &problem, uint64_t seed) {
  DecodePagedTable t;
  const int64_t used = problem.pages();
  HONE_CHECK(used >= 1 && used < (int64_t{1} << 30), "decode.paged page pool size");
  t.used = static_cast<int32_t>(used);
  t.num_pages = static_cast<int32_t>(used + used / 16 + 1);
  t.indices.resize(static_cast<size_t>(used));
  std::iota(t.indices.begin(), t.indices.end(), 0);
  std::mt19937_64 rng(seed);
  std::shuffle(t.indices.begin(), t.indices.end(), rng);
  t.indptr = problem.indptr();
  for (size_t b = 0; b < problem.lengths.size(); ++b)
    t.last_page_len.push_back(problem.lengths[b] -
                              (t.indptr[b + 1] - t.indptr[b] - 1) * problem.page_size);
  return t;
}

} // namespace hone::cuda
