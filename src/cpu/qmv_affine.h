// qmv.affine kernels: Y[r, n] = sum_k X[r, k] * W[n, k] with W affine-quantized along K
// (include/hone/ops/cpu.h describes the layout), register-blocked over rows_per_block x
// cols_per_block outputs.
//
//   hone::cpu::QmvConfig c = hone::cpu::QmvConfig::from(tactic);   // throws when invalid
//   hone::cpu::qmv_affine_kernel(c, {x, packed, scales, biases, y, rows, n, k, 4, 64});
//
// Every weight is dequantised as float(q) * scale + bias in f32 (the value
// dequantize_affine gives), and summed as in gemv.f32 with 8 partial sums: partial sum u
// adds X[r, j] * W[n, j] for j = u mod 8 in increasing j, then the partial sums are folded
// pairwise. Every qmv.affine tactic keeps this order, so all give bit-identical rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "hone/tactic.h"

namespace hone::cpu {

inline constexpr const char *kQmvKernel = "qmv.affine";

struct QmvConfig {
  int rows_per_block = 4; // 1, 2, 4, 8: X rows sharing each dequantised W fragment
  int cols_per_block = 2; // 1, 2, 4: W rows (outputs) computed together
  // 0: dequantise on the fly inside each row block (a weight is dequantised once per block
  //    of rows_per_block rows);
  // 1: dequantise a K-chunk (whole groups) of the column block once into a float buffer that
  //    every row block then reads.
  int group_buffer = 0;
  int threads = 1; // >= 1; capped at the pool size

  // Why `tactic` is not a valid qmv.affine tactic, or nullopt when it is.
  static std::optional<std::string> invalid_reason(const Tactic &tactic);
  // Throws Error(invalid_argument) with invalid_reason().
  static QmvConfig from(const Tactic &tactic);
  Tactic tactic() const;
};

struct QmvArgs {
  const float *x;         // [rows, k]
  const uint32_t *packed; // [n, k * bits / 32]
  const uint16_t *scales; // bf16 [n, k / group]
  const uint16_t *biases; // bf16 [n, k / group]
  float *y;               // [rows, n]
  int64_t rows, n, k;
  int bits;  // 4 or 8
  int group; // 32, 64 or 128
};

// Why (bits, group, k) is not a valid qmv.affine problem (naming the values), or nullopt.
std::optional<std::string> qmv_problem_error(int64_t k, int64_t bits, int64_t group);

// REQUIRES: qmv_problem_error(k, bits, group) is nullopt; rows, n >= 1. Every element of y
// is written. Allocates only the group_buffer scratch (thread-local, kept between calls).
void qmv_affine_kernel(const QmvConfig &config, const QmvArgs &args);

} // namespace hone::cpu
