#include "cpu/qmv_affine.h"

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "cpu/bf16.h"
#include "cpu/tactic_params.h"
#include "cpu/thread_pool.h"
#include "hone/error.h"

namespace hone::cpu {

namespace {

constexpr int kLanes = 8;                 // partial sums per output (sets the summation order)
constexpr int64_t kChunk = 256;           // [elements] K-slice dequantised at once; whole groups
constexpr int64_t kMinTaskWork = 1 << 15; // [multiply-adds] smallest share for another thread

inline float fold(float (&s)[kLanes]) {
  for (int h = kLanes / 2; h > 0; h /= 2)
    for (int i = 0; i < h; ++i)
      s[i] += s[i + h];
  return s[0];
}

// Dequantises W[col, j .. j + 8) (j a multiple of 8, inside one group) into out[0..8).
template <int BITS>
inline void dequant8(const uint32_t *q_row, int64_t j, float scale, float bias, float *out) {
  constexpr int per_word = 32 / BITS;
  constexpr uint32_t mask = (1u << BITS) - 1u;
  const uint32_t *words = q_row + j / per_word;
  for (int u = 0; u < kLanes; ++u) {
    const uint32_t v = (words[u / per_word] >> ((u % per_word) * BITS)) & mask;
    out[u] = static_cast<float>(v) * scale + bias;
  }
}

struct Layout {
  int64_t words_per_row; // k * bits / 32
  int64_t groups;        // k / group
};

// On the fly: RB x CB outputs, every weight dequantised once for the RB rows.
template <int BITS, int RB, int CB>
void tile_on_the_fly(const QmvArgs &a, const Layout &l, int64_t r0, int64_t c0) {
  float acc[RB][CB][kLanes] = {};
  const float *x = a.x + r0 * a.k;
  for (int64_t g = 0; g < l.groups; ++g) {
    float scale[CB], bias[CB];
    for (int c = 0; c < CB; ++c) {
      scale[c] = bf16_to_float(a.scales[(c0 + c) * l.groups + g]);
      bias[c] = bf16_to_float(a.biases[(c0 + c) * l.groups + g]);
    }
    const int64_t j_end = (g + 1) * a.group;
    for (int64_t j = g * a.group; j < j_end; j += kLanes) {
      float wv[CB][kLanes];
      for (int c = 0; c < CB; ++c)
        dequant8<BITS>(a.packed + (c0 + c) * l.words_per_row, j, scale[c], bias[c], wv[c]);
      for (int r = 0; r < RB; ++r) {
        float xv[kLanes];
        for (int u = 0; u < kLanes; ++u)
          xv[u] = x[r * a.k + j + u];
        for (int c = 0; c < CB; ++c)
          for (int u = 0; u < kLanes; ++u)
            acc[r][c][u] += xv[u] * wv[c][u];
      }
    }
  }
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < CB; ++c)
      a.y[(r0 + r) * a.n + c0 + c] = fold(acc[r][c]);
}

template <int BITS, int RB, int CB>
void rows_on_the_fly(const QmvArgs &a, const Layout &l, int64_t r0, int64_t c0) {
  int64_t r = r0;
  for (; r + RB <= a.rows; r += RB)
    tile_on_the_fly<BITS, RB, CB>(a, l, r, c0);
  if constexpr (RB > 1)
    if (r < a.rows)
      rows_on_the_fly<BITS, RB / 2, CB>(a, l, r, c0);
}

// Group buffer: partial sums of rows [r0, r0 + RB) x CB live in `acc_store` between chunks.
template <int RB, int CB>
void accumulate_chunk(const float *x, int64_t k, const float *buf, int64_t len, float *acc_store) {
  float acc[RB][CB][kLanes];
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < CB; ++c)
      for (int u = 0; u < kLanes; ++u)
        acc[r][c][u] = acc_store[(r * CB + c) * kLanes + u];
  for (int64_t j = 0; j < len; j += kLanes) {
    float wv[CB][kLanes];
    for (int c = 0; c < CB; ++c)
      for (int u = 0; u < kLanes; ++u)
        wv[c][u] = buf[c * len + j + u];
    for (int r = 0; r < RB; ++r) {
      float xv[kLanes];
      for (int u = 0; u < kLanes; ++u)
        xv[u] = x[r * k + j + u];
      for (int c = 0; c < CB; ++c)
        for (int u = 0; u < kLanes; ++u)
          acc[r][c][u] += xv[u] * wv[c][u];
    }
  }
  for (int r = 0; r < RB; ++r)
    for (int c = 0; c < CB; ++c)
      for (int u = 0; u < kLanes; ++u)
        acc_store[(r * CB + c) * kLanes + u] = acc[r][c][u];
}

template <int RB, int CB>
void rows_from_buffer(const float *x, int64_t r0, int64_t rows, int64_t k, const float *buf,
                      int64_t len, float *acc_all) {
  int64_t r = r0;
  for (; r + RB <= rows; r += RB)
    accumulate_chunk<RB, CB>(x + r * k, k, buf, len, acc_all + r * CB * kLanes);
  if constexpr (RB > 1)
    if (r < rows)
      rows_from_buffer<RB / 2, CB>(x, r, rows, k, buf, len, acc_all);
}

// Per-thread scratch for the group buffer: kept between calls, grown when a call needs more.
float *buffer_scratch(size_t floats) {
  thread_local std::vector<float> scratch;
  if (scratch.size() < floats)
    scratch.resize(floats);
  return scratch.data();
}

template <int BITS, int RB, int CB>
void column_block_buffered(const QmvArgs &a, const Layout &l, int64_t c0) {
  const size_t acc_floats = static_cast<size_t>(a.rows) * CB * kLanes;
  float *acc_all = buffer_scratch(acc_floats + CB * kChunk);
  float *buf = acc_all + acc_floats;
  std::fill(acc_all, acc_all + acc_floats, 0.0f);
  for (int64_t k0 = 0; k0 < a.k; k0 += kChunk) {
    const int64_t len = std::min(kChunk, a.k - k0); // whole groups: k % group == 0
    for (int c = 0; c < CB; ++c) {
      const uint32_t *q_row = a.packed + (c0 + c) * l.words_per_row;
      for (int64_t j = k0; j < k0 + len; j += kLanes) {
        const int64_t g = j / a.group;
        dequant8<BITS>(q_row, j, bf16_to_float(a.scales[(c0 + c) * l.groups + g]),
                       bf16_to_float(a.biases[(c0 + c) * l.groups + g]), buf + c * len + (j - k0));
      }
    }
    rows_from_buffer<RB, CB>(a.x + k0, 0, a.rows, a.k, buf, len, acc_all);
  }
  for (int64_t r = 0; r < a.rows; ++r)
    for (int c = 0; c < CB; ++c) {
      float s[kLanes];
      std::copy_n(acc_all + (r * CB + c) * kLanes, kLanes, s);
      a.y[r * a.n + c0 + c] = fold(s);
    }
}

template <int BITS, int RB, int CB, int BUF>
void columns(const QmvArgs &a, const Layout &l, int64_t c0, int64_t c1) {
  int64_t c = c0;
  for (; c + CB <= c1; c += CB)
    if constexpr (BUF)
      column_block_buffered<BITS, RB, CB>(a, l, c);
    else
      rows_on_the_fly<BITS, RB, CB>(a, l, 0, c);
  for (; c < c1; ++c)
    if constexpr (BUF)
      column_block_buffered<BITS, RB, 1>(a, l, c);
    else
      rows_on_the_fly<BITS, RB, 1>(a, l, 0, c);
}

using ColumnsFn = void (*)(const QmvArgs &, const Layout &, int64_t, int64_t);

constexpr std::array<int, 2> kBits = {4, 8};
constexpr std::array<int, 4> kRowBlocks = {1, 2, 4, 8};
constexpr std::array<int, 3> kColBlocks = {1, 2, 4};

// Index = ((bits * 4 + rb) * 3 + cb) * 2 + buf.
template <size_t... I> constexpr auto make_table(std::index_sequence<I...>) {
  return std::array<ColumnsFn, sizeof...(I)>{
      &columns<kBits[I / 24], kRowBlocks[I / 6 % 4], kColBlocks[I / 2 % 3], int(I % 2)>...};
}
constexpr auto kTable = make_table(std::make_index_sequence<2 * 4 * 3 * 2>{});

} // namespace

std::optional<std::string> qmv_problem_error(int64_t k, int64_t bits, int64_t group) {
  if (bits != 4 && bits != 8)
    return "bits=" + std::to_string(bits) + " is not one of 4, 8";
  if (group != 32 && group != 64 && group != 128)
    return "group=" + std::to_string(group) + " is not one of 32, 64, 128";
  if (k < 1 || k % group != 0)
    return "k=" + std::to_string(k) + " is not a multiple of group=" + std::to_string(group);
  return std::nullopt;
}

std::optional<std::string> QmvConfig::invalid_reason(const Tactic &t) {
  if (t.kernel != kQmvKernel)
    return "kernel '" + t.kernel + "' is not " + kQmvKernel;
  for (const auto &[name, value] : t.params) {
    std::optional<std::string> why;
    if (name == "rows_per_block")
      why = not_one_of(name, value, kRowBlocks);
    else if (name == "cols_per_block")
      why = not_one_of(name, value, kColBlocks);
    else if (name == "group_buffer")
      why = not_in_range(name, value, 0, 1);
    else if (name == "threads")
      why = not_in_range(name, value, 1, 4096);
    else
      why = "unknown parameter '" + name + "'";
    if (why)
      return why;
  }
  return std::nullopt;
}

QmvConfig QmvConfig::from(const Tactic &t) {
  if (auto why = invalid_reason(t))
    HONE_INVALID_ARGUMENT("tactic '" + t.str() + "': " + *why);
  QmvConfig c;
  c.rows_per_block = static_cast<int>(t.param_or("rows_per_block", c.rows_per_block));
  c.cols_per_block = static_cast<int>(t.param_or("cols_per_block", c.cols_per_block));
  c.group_buffer = static_cast<int>(t.param_or("group_buffer", c.group_buffer));
  c.threads = static_cast<int>(t.param_or("threads", c.threads));
  return c;
}

Tactic QmvConfig::tactic() const {
  return Tactic{kQmvKernel,
                {{"rows_per_block", rows_per_block},
                 {"cols_per_block", cols_per_block},
                 {"group_buffer", group_buffer},
                 {"threads", threads}}};
}

void qmv_affine_kernel(const QmvConfig &c, const QmvArgs &a) {
  const int bi = index_of(kBits, a.bits);
  const int rb = index_of(kRowBlocks, c.rows_per_block);
  const int cb = index_of(kColBlocks, c.cols_per_block);
  HONE_CHECK(bi >= 0 && rb >= 0 && cb >= 0 && (c.group_buffer == 0 || c.group_buffer == 1),
             "qmv.affine config out of range");
  HONE_CHECK(!qmv_problem_error(a.k, a.bits, a.group), "qmv.affine problem out of range");
  const ColumnsFn fn = kTable[static_cast<size_t>(((bi * 4 + rb) * 3 + cb) * 2 + c.group_buffer)];
  const Layout l{a.k * a.bits / 32, a.k / a.group};
  const int64_t min_cols = (kMinTaskWork + a.rows * a.k - 1) / (a.rows * a.k);
  parallel_columns(ThreadPool::global(), a.n, c.cols_per_block, min_cols, c.threads,
                   [&](int64_t c0, int64_t c1) { fn(a, l, c0, c1); });
}

} // namespace hone::cpu
