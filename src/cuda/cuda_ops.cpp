// Public CUDA op entry points (include/hone/ops/cuda.h).
#include "hone/ops/cuda.h"

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include <cuda_runtime.h>

#include "cuda/cuda_backend.h"
#include "cuda/device_buffer.h"
#include "cuda/gemv_bf16_op.h"
#include "cuda/qmv_affine_op.h"
#include "hone/dispatcher.h"
#include "hone/error.h"

namespace hone::ops::cuda {

namespace {

// The entry points' own op instance: same name and version as the registry's, so they share
// cache entries; the dispatcher memoises per instance.
const hone::cuda::GemvBf16Op &gemv_op() {
  static const hone::cuda::GemvBf16Op op;
  return op;
}
const hone::cuda::QmvAffineOp &qmv_op() {
  static const hone::cuda::QmvAffineOp op;
  return op;
}

// Split-K workspace per stream. NOTE: growing frees the old buffer with cudaFree, which waits
// for the device, so a launch still reading it has finished.
void *workspace_for(void *stream, size_t bytes) {
  static std::mutex mutex;
  static std::map<void *, hone::cuda::DeviceBuffer> buffers;
  std::lock_guard<std::mutex> lock(mutex);
  hone::cuda::DeviceBuffer &b = buffers[stream];
  if (b.size() < bytes)
    b = hone::cuda::DeviceBuffer(bytes);
  return b.data();
}

} // namespace

Dispatcher &dispatcher() {
  static Dispatcher d(hone::cuda::backend(), DispatcherOptions::from_env());
  return d;
}

void gemv_bf16(const void *x, const void *w, void *y, int64_t rows, int64_t n, int64_t k,
               void *stream, Dispatcher &d) {
  const Resolution &r = d.resolve(gemv_op(), Shape{{rows, n, k}, DType::bf16});
  const auto &config = r.compiled.as<hone::cuda::GemvBf16Config>();
  hone::cuda::GemvBf16Args args;
  args.x = x;
  args.w = w;
  args.y = y;
  args.rows = static_cast<int>(rows);
  args.n = static_cast<int>(n);
  args.k = static_cast<int>(k);
  args.workspace_bytes = hone::cuda::gemv_bf16_workspace_bytes(config, args.rows, args.n, args.k);
  if (args.workspace_bytes > 0)
    args.workspace = workspace_for(stream, args.workspace_bytes);
  const int status = hone::cuda::gemv_bf16_launch(config, args, stream);
  if (status != 0) {
    const auto err = static_cast<cudaError_t>(status);
    (void)cudaGetLastError();
    HONE_RUNTIME_ERROR("gemv.bf16 launch (" + r.tactic.str() + "): " + cudaGetErrorName(err) +
                       ": " + cudaGetErrorString(err));
  }
}

void gemv_bf16(const void *x, const void *w, void *y, int64_t rows, int64_t n, int64_t k,
               void *stream) {
  gemv_bf16(x, w, y, rows, n, k, stream, dispatcher());
}

void qmv_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream,
                Dispatcher &d) {
  // lookup() validates the shape (rows, n, k, bits, group, k % group) before any launch.
  const Resolution &r = d.resolve(qmv_op(), Shape{{rows, n, k, bits, group}, DType::bf16});
  // A misaligned vector load is a sticky device fault that loses the context; refuse first.
  if (reinterpret_cast<uintptr_t>(x) % 16 != 0 || reinterpret_cast<uintptr_t>(q) % 16 != 0)
    HONE_INVALID_ARGUMENT("qmv.affine: x and q must be 16-byte aligned");
  const auto &config = r.compiled.as<hone::cuda::QmvAffineConfig>();
  hone::cuda::QmvAffineArgs args;
  args.x = x;
  args.q = q;
  args.scales = scales;
  args.biases = biases;
  args.y = y;
  args.rows = static_cast<int>(rows);
  args.n = static_cast<int>(n);
  args.k = static_cast<int>(k);
  args.bits = bits;
  args.group = group;
  const int status = hone::cuda::qmv_affine_launch(config, args, stream);
  if (status != 0) {
    const auto err = static_cast<cudaError_t>(status);
    (void)cudaGetLastError();
    HONE_RUNTIME_ERROR("qmv.affine launch (" + r.tactic.str() + "): " + cudaGetErrorName(err) +
                       ": " + cudaGetErrorString(err));
  }
}

void qmv_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream) {
  qmv_affine(x, q, scales, biases, y, rows, n, k, bits, group, stream, dispatcher());
}

} // namespace hone::ops::cuda
