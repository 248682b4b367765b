// CPU ops: public entry points. Each call resolves its tactic through the dispatcher
// (environment override, cache, lazy tune, default) and runs it on the calling thread
// (plus the backend's worker threads when the tactic asks for them).
//
//   hone::Dispatcher &d = hone::ops::cpu::dispatcher();
//   hone::ops::cpu::gemv_f32(x, w, y, rows, n, k, d);
#pragma once

#include <cstdint>
#include <vector>

namespace hone {
class Dispatcher;
}

namespace hone::ops::cpu {

// The process-wide dispatcher over the CPU backend, configured from the environment.
Dispatcher &dispatcher();

// Y[r, n] = sum_k X[r, k] * W[n, k]. X is [rows, k], W is [n, k], Y is [rows, n], all
// row-major f32. REQUIRES: 1 <= rows; n, k >= 1.
void gemv_f32(const float *x, const float *w, float *y, int64_t rows, int64_t n, int64_t k,
              Dispatcher &d = dispatcher());

// Affine-quantized GEMV: W[n, k] = q[n, k] * scale[n, k / group] + bias[n, k / group].
// q is packed along K into uint32 words (32 / bits values per word, lowest bits first),
// [n, k * bits / 32]; scale and bias are bf16 bit patterns [n, k / group].
// REQUIRES: bits in {4, 8}; group in {32, 64, 128}; k % group == 0.
void qmv_affine(const float *x, const uint32_t *packed, const uint16_t *scales,
                const uint16_t *biases, float *y, int64_t rows, int64_t n, int64_t k, int bits,
                int group, Dispatcher &d = dispatcher());

// Quantizes W [n, k] f32 (row-major) to the affine layout above: per group along K,
// scale = (max - min) / (2^bits - 1), bias = min, q = round((w - bias) / scale).
// scale and bias are rounded to bf16 (nearest, ties to even) first and q is computed from the
// rounded values, clamped to [0, 2^bits - 1]; a constant group has scale 0 and q = 0.
// Throws Error(invalid_argument) naming a bad bits, group or k.
struct AffineQuantized {
  std::vector<uint32_t> packed; // [n, k * bits / 32]
  std::vector<uint16_t> scales; // bf16 [n, k / group]
  std::vector<uint16_t> biases; // bf16 [n, k / group]
};
AffineQuantized quantize_affine(const float *w, int64_t n, int64_t k, int bits, int group);
// w[n, k] = q * scale + bias, in f32.
std::vector<float> dequantize_affine(const AffineQuantized &q, int64_t n, int64_t k, int bits,
                                     int group);

} // namespace hone::ops::cpu
