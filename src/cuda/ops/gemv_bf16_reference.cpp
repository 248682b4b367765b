#include "cuda/ops/gemv_bf16_reference.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "cuda/backend/bf16.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

// Output columns [j_begin, j_end) of every row.
void reference_columns(const std::vector<float> &xf, std::span<const uint16_t> w, int rows, int n,
                       int k, int j_begin, int j_end, double *y) {
  std::vector<float> wrow(static_cast<size_t>(k));
  for (int j = j_begin; j < j_end; ++j) {
    const uint16_t *src = w.data() + static_cast<size_t>(j) * k;
    for (int i = 0; i < k; ++i)
      wrow[static_cast<size_t>(i)] = bf16_to_float(src[i]);
    for (int r = 0; r < rows; ++r) {
      const float *xr = xf.data() + static_cast<size_t>(r) * k;
      // Four partial sums for instruction-level parallelism; the order of a float64 sum of
      // at most 2^20 exact products does not matter at the gate's resolution.
      double acc[4] = {0, 0, 0, 0};
      int i = 0;
      for (; i + 4 <= k; i += 4)
        for (int u = 0; u < 4; ++u)
          acc[u] += static_cast<double>(xr[i + u] * wrow[static_cast<size_t>(i + u)]);
      for (; i < k; ++i)
        acc[0] += static_cast<double>(xr[i] * wrow[static_cast<size_t>(i)]);
      y[static_cast<size_t>(r) * n + j] = (acc[0] + acc[1]) + (acc[2] + acc[3]);
    }
  }
}

} // namespace

std::vector<double> gemv_bf16_reference(std::span<const uint16_t> x, std::span<const uint16_t> w,
                                        int rows, int n, int k) {
  HONE_CHECK(rows >= 1 && n >= 1 && k >= 1, "reference needs positive dimensions");
  HONE_CHECK(x.size() >= static_cast<size_t>(rows) * k && w.size() >= static_cast<size_t>(n) * k,
             "reference inputs smaller than rows x k and n x k");
  std::vector<float> xf(static_cast<size_t>(rows) * k);
  for (size_t i = 0; i < xf.size(); ++i)
    xf[i] = bf16_to_float(x[i]);
  std::vector<double> y(static_cast<size_t>(rows) * n);

  const double work = static_cast<double>(rows) * n * k;
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  // Below ~4M multiply-adds a thread costs more to start than it saves.
  const int threads = static_cast<int>(std::clamp<double>(work / 4e6, 1, std::min(hw, 64u)));
  const int chunk = (n + threads - 1) / threads;
  std::vector<std::jthread> pool;
  for (int t = 1; t < threads; ++t) {
    const int begin = t * chunk;
    const int end = std::min(n, begin + chunk);
    if (begin < end)
      pool.emplace_back(
          [&, begin, end] { reference_columns(xf, w, rows, n, k, begin, end, y.data()); });
  }
  reference_columns(xf, w, rows, n, k, 0, std::min(n, chunk), y.data());
  pool.clear(); // joins
  return y;
}

} // namespace hone::cuda
