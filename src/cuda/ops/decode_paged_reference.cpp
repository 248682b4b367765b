#include "cuda/ops/decode_paged_reference.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <thread>

#include "cuda/gate/cuda_workload.h"
#include "hone/bf16.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

// The K and V rows of one (request, KV head) pair: token t's is pages[t / page_size] + (t %
// page_size) x token_stride, in a paged cache and in a gathered one alike.
struct KvHeadRows {
  std::vector<const uint16_t *> k_pages, v_pages; // each page's first token row
  size_t token_stride = 0;                        // [elements] between tokens of a page
};

// Query heads q (bf16 rows [count, head_dim]) of one KV head over its `len` tokens: o
// [count, head_dim] and lse [count]. The one arithmetic of every reference, full or sampled.
void attend(const DecodePagedProblem &p, int len, const KvHeadRows &kv, const uint16_t *q,
            int count, double scale, double *o, double *lse) {
  const int d_count = p.head_dim;
  std::vector<double> qd(static_cast<size_t>(count * d_count));
  for (size_t i = 0; i < qd.size(); ++i)
    qd[i] = bf16_to_float(q[i]);
  const auto row = [&](const std::vector<const uint16_t *> &pages, int token) {
    return pages[static_cast<size_t>(token / p.page_size)] +
           static_cast<size_t>(token % p.page_size) * kv.token_stride;
  };
  std::vector<double> s(static_cast<size_t>(count) * len);
  for (int token = 0; token < len; ++token) {
    const uint16_t *k = row(kv.k_pages, token);
    for (int g = 0; g < count; ++g) {
      double dot = 0;
      for (int d = 0; d < d_count; ++d)
        dot += qd[static_cast<size_t>(g * d_count + d)] * bf16_to_float(k[d]);
      s[static_cast<size_t>(g) * len + token] = scale * dot;
    }
  }
  std::vector<double> acc(static_cast<size_t>(d_count));
  for (int g = 0; g < count; ++g) {
    const double *sg = s.data() + static_cast<size_t>(g) * len;
    const double m = *std::max_element(sg, sg + len);
    double sum = 0;
    std::fill(acc.begin(), acc.end(), 0.0);
    for (int token = 0; token < len; ++token) {
      const double w = std::exp(sg[token] - m);
      sum += w;
      const uint16_t *v = row(kv.v_pages, token);
      for (int d = 0; d < d_count; ++d)
        acc[static_cast<size_t>(d)] += w * bf16_to_float(v[d]);
    }
    for (int d = 0; d < d_count; ++d)
      o[static_cast<size_t>(g * d_count + d)] = acc[static_cast<size_t>(d)] / sum;
    lse[g] = m + std::log(sum);
  }
}

// Runs task(0) .. task(tasks - 1) over up to 32 of the host's threads.
void run_tasks(int tasks, const std::function<void(int)> &task) {
  std::atomic<int> next{0};
  const auto work = [&] {
    for (int i = next++; i < tasks; i = next++)
      task(i);
  };
  const int threads =
      std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, std::min(tasks, 32));
  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i)
    pool.emplace_back(work);
  work();
  for (std::thread &th : pool)
    th.join();
}

// A pair of the sampled rows and the rows it serves: rows first .. first + count - 1 of the
// sample (consecutive, since the rows ascend).
struct KvHeadSpan {
  DecodePagedKvHead head;
  size_t first = 0;
  int count = 0;
};

std::vector<KvHeadSpan> kv_head_spans(const DecodePagedProblem &p,
                                      const std::vector<int64_t> &rows) {
  const int64_t row_count = int64_t{p.batch()} * p.hq;
  const int group = p.hq / p.hkv;
  std::vector<KvHeadSpan> spans;
  for (size_t i = 0; i < rows.size(); ++i) {
    HONE_CHECK(rows[i] >= 0 && rows[i] < row_count && (i == 0 || rows[i - 1] < rows[i]),
               "decode.paged sampled rows must ascend within 0.." + std::to_string(row_count - 1));
    const DecodePagedKvHead head{static_cast<int>(rows[i] / p.hq),
                                 static_cast<int>(rows[i] % p.hq) / group};
    if (spans.empty() || !(spans.back().head == head))
      spans.push_back({head, i, 0});
    ++spans.back().count;
  }
  return spans;
}

size_t request_pages(const DecodePagedProblem &p, int b) {
  return static_cast<size_t>((p.lengths[static_cast<size_t>(b)] + p.page_size - 1) / p.page_size);
}

// [multiply-adds] of one row over `len` tokens.
int64_t row_macs(const DecodePagedProblem &p, int64_t len) { return len * p.head_dim * 2; }

} // namespace

DecodePagedReference decode_paged_reference(const DecodePagedProblem &problem,
                                            const DecodePagedTable &table, const uint16_t *q,
                                            const uint16_t *k_cache, const uint16_t *v_cache,
                                            double scale) {
  DecodePagedReference out;
  const size_t heads = static_cast<size_t>(problem.batch()) * problem.hq;
  const size_t d_count = static_cast<size_t>(problem.head_dim);
  out.o.assign(heads * d_count, 0.0);
  out.lse.assign(heads, 0.0);
  const int group = problem.hq / problem.hkv;
  // Task i: request i / hkv, KV head i % hkv, its `group` query heads.
  run_tasks(problem.batch() * problem.hkv, [&](int i) {
    const int b = i / problem.hkv, h = i % problem.hkv;
    KvHeadRows kv;
    kv.token_stride = static_cast<size_t>(problem.hkv) * d_count;
    for (int32_t j = table.indptr[static_cast<size_t>(b)];
         j < table.indptr[static_cast<size_t>(b) + 1]; ++j) {
      const size_t first = (static_cast<size_t>(table.indices[static_cast<size_t>(j)]) *
                                problem.page_size * problem.hkv +
                            static_cast<size_t>(h)) *
                           d_count;
      kv.k_pages.push_back(k_cache + first);
      kv.v_pages.push_back(v_cache + first);
    }
    const size_t head = static_cast<size_t>(b) * problem.hq + static_cast<size_t>(h) * group;
    attend(problem, problem.lengths[static_cast<size_t>(b)], kv, q + head * d_count, group, scale,
           out.o.data() + head * d_count, out.lse.data() + head);
  });
  return out;
}

int64_t decode_paged_reference_macs(const DecodePagedProblem &problem,
                                    const std::vector<int64_t> &rows) {
  if (rows.empty())
    return row_macs(problem, problem.total_len()) * problem.hq;
  int64_t macs = 0;
  for (int64_t r : rows)
    macs += row_macs(problem, problem.lengths[static_cast<size_t>(r / problem.hq)]);
  return macs;
}

std::vector<int64_t> decode_paged_reference_rows(const DecodePagedProblem &problem) {
  const int64_t rows = int64_t{problem.batch()} * problem.hq;
  if (rows <= kDecodePagedMinReferenceRows ||
      decode_paged_reference_macs(problem, {}) <= kDecodePagedReferenceMacs)
    return {};
  const auto within = [&](int count) {
    return decode_paged_reference_macs(problem, sampled_rows(rows, count)) <=
           kDecodePagedReferenceMacs;
  };
  // Every row costs at least the shortest request's: no count above `hi` fits, nor `hi`, nor
  // (checked above) every row. lo fits or is the floor.
  const int64_t cheapest =
      row_macs(problem, *std::min_element(problem.lengths.begin(), problem.lengths.end()));
  int lo = kDecodePagedMinReferenceRows;
  int hi = static_cast<int>(std::min(rows, kDecodePagedReferenceMacs / cheapest + 1));
  while (hi - lo > 1) {
    const int mid = lo + (hi - lo) / 2;
    (within(mid) ? lo : hi) = mid;
  }
  return sampled_rows(rows, lo);
}

std::vector<DecodePagedKvHead> decode_paged_kv_heads(const DecodePagedProblem &problem,
                                                     const std::vector<int64_t> &rows) {
  std::vector<DecodePagedKvHead> heads;
  for (const KvHeadSpan &span : kv_head_spans(problem, rows))
    heads.push_back(span.head);
  return heads;
}

std::vector<int64_t> decode_paged_kv_block_offsets(const DecodePagedProblem &problem,
                                                   const DecodePagedTable &table,
                                                   const std::vector<DecodePagedKvHead> &heads) {
  std::vector<int64_t> offsets;
  const int64_t token_row = int64_t{problem.hkv} * problem.head_dim;
  for (const DecodePagedKvHead &head : heads)
    for (int32_t j = table.indptr[static_cast<size_t>(head.request)];
         j < table.indptr[static_cast<size_t>(head.request) + 1]; ++j)
      offsets.push_back(int64_t{table.indices[static_cast<size_t>(j)]} * problem.page_size *
                            token_row +
                        int64_t{head.kv_head} * problem.head_dim);
  return offsets;
}

DecodePagedReference decode_paged_sampled_reference(const DecodePagedProblem &problem,
                                                    const std::vector<int64_t> &rows,
                                                    const uint16_t *q_rows, const uint16_t *k_heads,
                                                    const uint16_t *v_heads, double scale) {
  HONE_CHECK(!rows.empty(), "decode.paged sampled reference of no rows");
  const std::vector<KvHeadSpan> spans = kv_head_spans(problem, rows);
  const size_t d_count = static_cast<size_t>(problem.head_dim);
  // [elements] where each pair's gathered tokens start.
  std::vector<size_t> starts{0};
  for (const KvHeadSpan &span : spans)
    starts.push_back(starts.back() + request_pages(problem, span.head.request) *
                                         static_cast<size_t>(problem.page_size) * d_count);
  DecodePagedReference out;
  out.o.assign(rows.size() * d_count, 0.0);
  out.lse.assign(rows.size(), 0.0);
  run_tasks(static_cast<int>(spans.size()), [&](int i) {
    const KvHeadSpan &span = spans[static_cast<size_t>(i)];
    KvHeadRows kv;
    kv.token_stride = d_count;
    const size_t page_elements = static_cast<size_t>(problem.page_size) * d_count;
    for (size_t j = 0; j < request_pages(problem, span.head.request); ++j) {
      kv.k_pages.push_back(k_heads + starts[static_cast<size_t>(i)] + j * page_elements);
      kv.v_pages.push_back(v_heads + starts[static_cast<size_t>(i)] + j * page_elements);
    }
    attend(problem, problem.lengths[static_cast<size_t>(span.head.request)], kv,
           q_rows + span.first * d_count, span.count, scale, out.o.data() + span.first * d_count,
           out.lse.data() + span.first);
  });
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
