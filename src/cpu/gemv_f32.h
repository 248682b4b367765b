// gemv.f32 kernels: Y[r, n] = sum_k X[r, k] * W[n, k] in f32, register-blocked over
// rows_per_block x cols_per_block outputs with k_unroll independent partial sums each.
//
//   hone::cpu::GemvConfig c = hone::cpu::GemvConfig::from(tactic);   // throws when invalid
//   hone::cpu::gemv_f32_kernel(c, x, w, y, rows, n, k);
//
// Summation order: partial sum u (u < k_unroll) adds X[r, j] * W[n, j] for j = u mod
// k_unroll in increasing j; the partial sums are then folded pairwise (s[i] += s[i + h] for
// h = k_unroll / 2, ..., 1). The order depends on k_unroll alone, so tactics that share
// k_unroll give bit-identical rows whatever the blocking, thread count or row count.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hone/tactic.h"

namespace hone::cpu {

inline constexpr const char *kGemvKernel = "gemv.f32";

struct GemvConfig {
  int rows_per_block = 4; // 1, 2, 4, 8: X rows sharing each loaded W fragment
  int cols_per_block = 2; // 1, 2, 4, 8: W rows (outputs) computed together
  int k_unroll = 8;       // 4, 8, 16: independent partial sums (sets the summation order)
  int threads = 1;        // >= 1; capped at the pool size

  // Why `tactic` is not a valid gemv.f32 tactic, or nullopt when it is.
  static std::optional<std::string> invalid_reason(const Tactic &tactic);
  // Throws Error(invalid_argument) with invalid_reason().
  static GemvConfig from(const Tactic &tactic);
  Tactic tactic() const;
};

// REQUIRES: rows, n, k >= 1; x [rows, k], w [n, k], y [rows, n] row-major. Every element of
// y is written. Allocates nothing.
void gemv_f32_kernel(const GemvConfig &config, const float *x, const float *w, float *y,
                     int64_t rows, int64_t n, int64_t k);

} // namespace hone::cpu
