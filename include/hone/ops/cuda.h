// CUDA ops: public entry points on caller-owned device memory. Each call resolves its tactic
// through the CUDA dispatcher (environment override, cache, lazy tune, default) and enqueues
// one launch on the caller's stream; it never synchronises. No CUDA header is needed here:
// a stream is passed as the cudaStream_t value cast to void * (nullptr: the legacy stream).
//
//   hone::ops::cuda::gemv_bf16(x, w, y, rows, n, k, stream);   // x, w, y device pointers
#pragma once

#include <cstdint>

namespace hone {
class Dispatcher;
}

namespace hone::ops::cuda {

// The process-wide dispatcher over the CUDA backend, configured from the environment.
// Throws Error(runtime) when no CUDA device is present.
Dispatcher &dispatcher();

// Y[r, n] = sum_k X[r, k] * W[n, k] in bf16 with fp32 accumulation. X is [rows, k], W is
// [n, k], Y is [rows, n], row-major bf16 bit patterns in device memory of device 0.
// REQUIRES: 1 <= rows <= 32; k % 8 == 0; x and w 16-byte aligned.
// Throws Error(invalid_argument) naming a bad rows, n or k, Error(runtime) when the launch
// fails. A split-K tactic uses a workspace kept per stream (grown on demand, never shrunk).
void gemv_bf16(const void *x, const void *w, void *y, int64_t rows, int64_t n, int64_t k,
               void *stream, Dispatcher &d);
void gemv_bf16(const void *x, const void *w, void *y, int64_t rows, int64_t n, int64_t k,
               void *stream);

// Affine-quantized GEMV: Y[r, n] = sum_k X[r, k] * (q[n, k] * scale[n, k / group] +
// bias[n, k / group]). q is uint32 [n, k * bits / 32] (values along K, lowest bits first, the
// layout hone::ops::cpu::quantize_affine makes), scales and biases bf16 [n, k / group], X
// [rows, k] and Y [rows, n] bf16, all row-major in device memory of device 0.
// REQUIRES: 1 <= rows <= 32; bits in {4, 8}; group in {32, 64, 128}; k % group == 0;
// x 16-byte aligned, q 16-byte aligned.
// Throws Error(invalid_argument) naming a bad rows, n, k, bits or group, Error(runtime) when
// the launch fails.
void qmv_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream,
                Dispatcher &d);
void qmv_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream);

} // namespace hone::ops::cuda
