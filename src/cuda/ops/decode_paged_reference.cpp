#include "cuda/ops/decode_paged_reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <thread>

#include "hone/bf16.h"

namespace hone::cuda {

namespace {

// Request b, KV head h: every query head of h over every token of b.
void reference_task(const DecodePagedProblem &p, const DecodePagedTable &t, const uint16_t *q,
                    const uint16_t *k_cache, const uint16_t *v_cache, double scale, int b, int h,
                    DecodePagedReference &out) {
  const int d_count = p.head_dim, group = p.hq / p.hkv;
  const int len = p.lengths[static_cast<size_t>(b)];
  std::vector<double> qd(static_cast<size_t>(group * d_count));
  for (int g = 0; g < group; ++g)
    for (int d = 0; d < d_count; ++d)
      qd[static_cast<size_t>(g * d_count + d)] = bf16_to_float(
          q[(static_cast<size_t>(b) * p.hq + h * group + g) * d_count + static_cast<size_t>(d)]);
  const auto row = [&](const uint16_t *cache, int token) {
    const int32_t page = t.indices[static_cast<size_t>(t.indptr[static_cast<size_t>(b)] +
                                                       token / p.page_size)];
    return cache + ((static_cast<size_t>(page) * p.page_size + token % p.page_size) * p.hkv + h) *
                       static_cast<size_t>(d_count);
  };
  std::vector<double> s(static_cast<size_t>(group) * len);
  for (int token = 0; token < len; ++token) {
    const uint16_t *k = row(k_cache, token);
    for (int g = 0; g < group; ++g) {
      double dot = 0;
      for (int d = 0; d < d_count; ++d)
        dot += qd[static_cast<size_t>(g * d_count + d)] * bf16_to_float(k[d]);
      s[static_cast<size_t>(g) * len + token] = scale * dot;
    }
  }
  std::vector<double> acc(static_cast<size_t>(d_count));
  for (int g = 0; g < group; ++g) {
    const double *sg = s.data() + static_cast<size_t>(g) * len;
    const double m = *std::max_element(sg, sg + len);
    double sum = 0;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int token = 0; token < len; ++token) {
      const double w = std::exp(sg[token] - m);
      sum += w;
      const uint16_t *v = row(v_cache, token);
      for (int d = 0; d < d_count; ++d)
        acc[static_cast<size_t>(d)] += w * bf16_to_float(v[d]);
    }
    const size_t head = static_cast<size_t>(b) * p.hq + h * group + g;
    for (int d = 0; d < d_count; ++d)
      out.o[head * d_count + static_cast<size_t>(d)] = acc[static_cast<size_t>(d)] / sum;
    out.lse[head] = m + std::log(sum);
  }
}

} // namespace

DecodePagedReference decode_paged_reference(const DecodePagedProblem &problem,
                                            const DecodePagedTable &table, const uint16_t *q,
                                            const uint16_t *k_cache, const uint16_t *v_cache,
                                            double scale) {
  DecodePagedReference out;
  const size_t heads = static_cast<size_t>(problem.batch()) * problem.hq;
  out.o.assign(heads * problem.head_dim, 0.0);
  out.lse.assign(heads, 0.0);
  const int tasks = problem.batch() * problem.hkv;
  std::atomic<int> next{0};
  const auto work = [&] {
    for (int i = next++; i < tasks; i = next++)
      reference_task(problem, table, q, k_cache, v_cache, scale, i / problem.hkv, i % problem.hkv,
                     out);
  };
  const int threads =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, std::min(tasks, 32));
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i)
    pool.emplace_back(work);
  work();
  for (std::thread &th : pool)
    th.join();
  return out;
}

DecodePagedComparison compare_decode_paged(const std::vector<uint16_t> &o,
                                           const std::vector<float> *lse,
                                           const DecodePagedReference &ref, int head_dim) {
  DecodePagedComparison c;
  double num = 0, den = 0;
  for (size_t r = 0; r * head_dim < o.size(); ++r) {
    double row_num = 0, row_den = 0;
    for (size_t i = r * head_dim; i < (r + 1) * head_dim; ++i) {
      if (bf16_is_nan(o[i])) {
        ++c.nan_count;
        continue;
      }
      const double e = bf16_to_float(o[i]) - ref.o[i];
      row_num += e * e;
      row_den += ref.o[i] * ref.o[i];
    }
    num += row_num;
    den += row_den;
    c.max_row_relative_l2 =
        std::max(c.max_row_relative_l2, std::sqrt(row_num / std::max(row_den, 1e-300)));
  }
  c.relative_l2 = std::sqrt(num / std::max(den, 1e-300));
  if (lse)
    for (size_t i = 0; i < lse->size(); ++i) {
      const double v = (*lse)[i];
      if (std::isnan(v)) {
        ++c.lse_nan_count;
        continue;
      }
      c.lse_max_abs_error = std::max(c.lse_max_abs_error, std::abs(v - ref.lse[i]));
    }
  if (c.nan_count > 0)
    c.relative_l2 = c.max_row_relative_l2 = std::numeric_limits<double>::infinity();
  return c;
}

} // namespace hone::cuda
