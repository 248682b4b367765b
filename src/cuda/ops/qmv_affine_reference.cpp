#include "cuda/ops/qmv_affine_reference.h"

#include <algorithm>
#include <string>
#include <thread>

#include "cuda/backend/bf16.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

size_t elements(int a, int b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

// Output columns [j_begin, j_end) of every row: each weight row is dequantised once and
// serves all rows of X.
void reference_columns(const std::vector<double> &xd, std::span<const uint32_t> q,
                       std::span<const uint16_t> scales, std::span<const uint16_t> biases,
                       const QmvAffineProblem &p, int j_begin, int j_end, double *y) {
  const int per_word = 32 / p.bits;
  const uint32_t mask = (1u << p.bits) - 1u;
  const size_t words = elements(p.k, p.bits) / 32;
  const int groups = p.k / p.group;
  std::vector<double> wrow(static_cast<size_t>(p.k));
  for (int j = j_begin; j < j_end; ++j) {
    const uint32_t *qrow = q.data() + static_cast<size_t>(j) * words;
    for (int i = 0; i < p.k; ++i) {
      const size_t g = elements(j, groups) + static_cast<size_t>(i / p.group);
      const uint32_t v = (qrow[i / per_word] >> ((i % per_word) * p.bits)) & mask;
      wrow[static_cast<size_t>(i)] = static_cast<double>(v) * bf16_to_float(scales[g]) +
                                     static_cast<double>(bf16_to_float(biases[g]));
    }
    for (int r = 0; r < p.rows; ++r) {
      const double *xr = xd.data() + elements(r, p.k);
      // Four partial sums for instruction-level parallelism; the order of a float64 sum
      // does not matter at the gate's resolution.
      double acc[4] = {0, 0, 0, 0};
      int i = 0;
      for (; i + 4 <= p.k; i += 4)
        for (int u = 0; u < 4; ++u)
          acc[u] += xr[i + u] * wrow[static_cast<size_t>(i + u)];
      for (; i < p.k; ++i)
        acc[0] += xr[i] * wrow[static_cast<size_t>(i)];
      y[elements(r, p.n) + static_cast<size_t>(j)] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    }
  }
}

} // namespace

std::vector<double> qmv_affine_reference(std::span<const uint16_t> x, std::span<const uint32_t> q,
                                         std::span<const uint16_t> scales,
                                         std::span<const uint16_t> biases,
                                         const QmvAffineProblem &p) {
  HONE_CHECK(p.rows >= 1 && p.n >= 1 && p.k >= 1, "reference needs positive dimensions");
  HONE_CHECK(p.bits == 4 || p.bits == 8,
             "reference needs bits 4 or 8, got " + std::to_string(p.bits));
  HONE_CHECK(p.group > 0 && p.k % p.group == 0 && p.k % 32 == 0,
             "reference needs k=" + std::to_string(p.k) +
                 " a multiple of group=" + std::to_string(p.group) + " and of 32");
  HONE_CHECK(x.size() >= elements(p.rows, p.k) && q.size() >= elements(p.n, p.k) * p.bits / 32 &&
                 scales.size() >= elements(p.n, p.k / p.group) &&
                 biases.size() >= elements(p.n, p.k / p.group),
             "reference inputs smaller than the problem");
  std::vector<double> xd(elements(p.rows, p.k));
  for (size_t i = 0; i < xd.size(); ++i)
    xd[i] = bf16_to_float(x[i]);
  std::vector<double> y(elements(p.rows, p.n));

  const double work = static_cast<double>(p.rows + 1) * p.n * p.k;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  // Below ~4M multiply-adds a thread costs more to start than it saves.
  const int threads = static_cast<int>(std::clamp<double>(work / 4e6, 1, std::min(hw, 64u)));
  const int chunk = (p.n + threads - 1) / threads;
  std::vector<std::jthread> pool;
  for (int t = 1; t < threads; ++t) {
    const int begin = t * chunk;
    const int end = std::min(p.n, begin + chunk);
    if (begin < end)
      pool.emplace_back(
          [&, begin, end] { reference_columns(xd, q, scales, biases, p, begin, end, y.data()); });
  }
  reference_columns(xd, q, scales, biases, p, 0, std::min(p.n, chunk), y.data());
  pool.clear(); // joins
  return y;
}

} // namespace hone::cuda
