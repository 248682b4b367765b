#include "cpu/gemv_f32.h"

#include <array>
#include <utility>

#include "cpu/tactic_params.h"
#include "cpu/thread_pool.h"
#include "hone/error.h"

namespace hone::cpu {

namespace {

// Smallest share of work [multiply-adds] worth handing to another thread.
constexpr int64_t kMinTaskWork = int64_t{1} << 15;

template <int U> inline float fold(float (&s)[U]) {
  for (int h = U / 2; h > 0; h /= 2)
    for (int i = 0; i < h; ++i)
      s[i] += s[i + h];
  return s[0];
}

// RB x CB outputs: y[r, c] for X rows x[0..RB) and W rows w[0..CB), all of stride k.
template <int RB, int CB, int U>
inline void tile(const float *x, const float *w, float *y, int64_t ldy, int64_t k) {
  float acc[RB][CB][U] = {};
  const int64_t k_main = k - k % U;
  for (int64_t j = 0; j < k_main; j += U) {
    float wv[CB][U];
    for (int c = 0; c < CB; ++c)
      for (int u = 0; u < U; ++u)
        wv[c][u] = w[c * k + j + u];
    for (int r = 0; r < RB; ++r) {
      float xv[U];
      for (int u = 0; u < U; ++u)
        xv[u] = x[r * k + j + u];
      for (int c = 0; c < CB; ++c)
        for (int u = 0; u < U; ++u)
          acc[r][c][u] += xv[u] * wv[c][u];
    }
  }
  for (int64_t j = k_main; j < k; ++j) {
    const int u = static_cast<int>(j - k_main);
    for (int r = 0; r < RB; ++r)
      for (int c = 0; c < CB; ++c)
        acc[r][c][u] += x[r * k + j] * w[c * k + j];
  }
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < CB; ++c)
      y[r * ldy + c] = fold<U>(acc[r][c]);
}

// Rows [r0, rows) for one block of CB W rows: full RB blocks, the rest in halving blocks.
template <int RB, int CB, int U>
void rows_loop(const float *x, const float *w, float *y, int64_t r0, int64_t rows, int64_t n,
               int64_t k) {
  int64_t r = r0;
  for (; r + RB <= rows; r += RB)
    tile<RB, CB, U>(x + r * k, w, y + r * n, n, k);
  if constexpr (RB > 1)
    if (r < rows)
      rows_loop<RB / 2, CB, U>(x, w, y, r, rows, n, k);
}

// Columns [c0, c1) of Y.
template <int RB, int CB, int U>
void columns(const float *x, const float *w, float *y, int64_t rows, int64_t n, int64_t k,
             int64_t c0, int64_t c1) {
  int64_t c = c0;
  for (; c + CB <= c1; c += CB)
    rows_loop<RB, CB, U>(x, w + c * k, y + c, 0, rows, n, k);
  for (; c < c1; ++c)
    rows_loop<RB, 1, U>(x, w + c * k, y + c, 0, rows, n, k);
}

using ColumnsFn = void (*)(const float *, const float *, float *, int64_t, int64_t, int64_t,
                           int64_t, int64_t);

constexpr std::array<int, 4> kBlocks = {1, 2, 4, 8};
constexpr std::array<int, 3> kUnrolls = {4, 8, 16};

template <size_t... I> constexpr auto make_table(std::index_sequence<I...>) {
  return std::array<ColumnsFn, sizeof...(I)>{
      &columns<kBlocks[I / 12], kBlocks[I / 3 % 4], kUnrolls[I % 3]>...};
}
constexpr auto kTable = make_table(std::make_index_sequence<4 * 4 * 3>{});

} // namespace

std::optional<std::string> GemvConfig::invalid_reason(const Tactic &t) {
  if (t.kernel != kGemvKernel)
    return "kernel '" + t.kernel + "' is not " + kGemvKernel;
  for (const auto &[name, value] : t.params) {
    std::optional<std::string> why;
    if (name == "rows_per_block" || name == "cols_per_block")
      why = not_one_of(name, value, kBlocks);
    else if (name == "k_unroll")
      why = not_one_of(name, value, kUnrolls);
    else if (name == "threads")
      why = not_in_range(name, value, 1, 4096);
    else
      why = "unknown parameter '" + name + "'";
    if (why)
      return why;
  }
  return std::nullopt;
}

GemvConfig GemvConfig::from(const Tactic &t) {
  if (auto why = invalid_reason(t))
    HONE_INVALID_ARGUMENT("tactic '" + t.str() + "': " + *why);
  GemvConfig c;
  c.rows_per_block = static_cast<int>(t.param_or("rows_per_block", c.rows_per_block));
  c.cols_per_block = static_cast<int>(t.param_or("cols_per_block", c.cols_per_block));
  c.k_unroll = static_cast<int>(t.param_or("k_unroll", c.k_unroll));
  c.threads = static_cast<int>(t.param_or("threads", c.threads));
  return c;
}

Tactic GemvConfig::tactic() const {
  return Tactic{kGemvKernel,
                {{"rows_per_block", rows_per_block},
                 {"cols_per_block", cols_per_block},
                 {"k_unroll", k_unroll},
                 {"threads", threads}}};
}

void gemv_f32_kernel(const GemvConfig &c, const float *x, const float *w, float *y, int64_t rows,
                     int64_t n, int64_t k) {
  const int rb = index_of(kBlocks, c.rows_per_block);
  const int cb = index_of(kBlocks, c.cols_per_block);
  const int u = index_of(kUnrolls, c.k_unroll);
  HONE_CHECK(rb >= 0 && cb >= 0 && u >= 0, "gemv.f32 config out of range");
  const ColumnsFn fn = kTable[static_cast<size_t>(rb * 12 + cb * 3 + u)];
  const int64_t min_cols = (kMinTaskWork + rows * k - 1) / (rows * k);
  parallel_columns(ThreadPool::global(), n, c.cols_per_block, min_cols, c.threads,
                   [&](int64_t c0, int64_t c1) { fn(x, w, y, rows, n, k, c0, c1); });
}

} // namespace hone::cpu
