// Public entry points of qmm.affine and quantized_linear (include/hone/ops/cuda.h).
#include <cstdint>
#include <string>

#include "cuda/backend/workspace.h"
#include "cuda/ops/entry_point.h"
#include "cuda/ops/qmm_affine_op.h"
#include "cuda/ops/qmv_affine_op.h"
#include "cuda/ops/quantized_linear_op.h"
#include "cuda/ops/rmsnorm_op.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/ops/cuda.h"

namespace hone::ops::cuda {

using hone::cuda::check_launch;
using hone::cuda::entry_op;
using hone::cuda::require_aligned;

void qmm_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream,
                Dispatcher &d) {
  // resolve() validates the shape (rows, n, k, bits, group, k % group, built) before a launch.
  const Resolution &r =
      d.resolve(entry_op<hone::cuda::QmmAffineOp>(), Shape{{rows, n, k, bits, group}, DType::bf16});
  // TMA reads X and q and writes Y: 16-byte aligned global addresses.
  require_aligned("qmm.affine", {{"x", x}, {"q", q}, {"y", y}});
  require_aligned("qmm.affine", {{"scales", scales}, {"biases", biases}}, 2);
  const auto &config = r.compiled.as<hone::cuda::QmmAffineConfig>();
  hone::cuda::QmmAffineArgs args;
  args.x = x;
  args.q = q;
  args.scales = scales;
  args.biases = biases;
  args.y = y;
  args.m = static_cast<int>(rows);
  args.n = static_cast<int>(n);
  args.k = static_cast<int>(k);
  args.bits = bits;
  args.group = group;
  args.workspace_bytes =
      hone::cuda::qmm_affine_workspace_bytes(config, args.m, args.n, args.k, bits, group);
  args.workspace = hone::cuda::workspace_for(stream, args.workspace_bytes);
  check_launch("qmm.affine", r, hone::cuda::qmm_affine_launch(config, args, stream));
}

void qmm_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream) {
  qmm_affine(x, q, scales, biases, y, rows, n, k, bits, group, stream, dispatcher());
}

namespace {

// Whether quantized_linear runs qmv.affine at this shape. A bucket's side holds for its
// representative; rows above qmv's 32 in the bucket of 32 (33..45) run qmm whatever it says.
bool runs_qmv(int64_t rows, int64_t n, int64_t k, int bits, int group, Dispatcher &d) {
  const Resolution &r = d.resolve(entry_op<hone::cuda::QuantizedLinearOp>(),
                                  Shape{{rows, n, k, bits, group}, DType::bf16});
  return r.compiled.as<hone::cuda::QuantizedLinearSide>() == hone::cuda::QuantizedLinearSide::qmv &&
         rows <= hone::cuda::kQmvMaxRows;
}

} // namespace

void quantized_linear(const void *x, const uint32_t *q, const void *scales, const void *biases,
                      void *y, int64_t rows, int64_t n, int64_t k, int bits, int group,
                      void *stream, Dispatcher &d, const ChainLaunch &chain) {
  if (runs_qmv(rows, n, k, bits, group, d))
    qmv_affine(x, q, scales, biases, y, rows, n, k, bits, group, stream, d, chain);
  else // the CUTLASS kernels wait for the kernel before them as any launch does
    qmm_affine(x, q, scales, biases, y, rows, n, k, bits, group, stream, d);
}

void quantized_linear(const void *x, const uint32_t *q, const void *scales, const void *biases,
                      void *y, int64_t rows, int64_t n, int64_t k, int bits, int group,
                      void *stream) {
  quantized_linear(x, q, scales, biases, y, rows, n, k, bits, group, stream, dispatcher());
}

bool quantized_linear_silu_mul(const void *x, const uint32_t *q, const void *scales,
                               const void *biases, void *y, int64_t rows, int64_t inter, int64_t k,
                               int bits, int group, void *stream, Dispatcher &d,
                               const ChainLaunch &chain) {
  return runs_qmv(rows, 2 * inter, k, bits, group, d) &&
         qmv_affine_silu_mul(x, q, scales, biases, y, rows, inter, k, bits, group, stream, d,
                             chain);
}

bool quantized_linear_rmsnorm(const void *x, const uint32_t *q, const void *scales,
                              const void *biases, void *y, int64_t rows, int64_t n, int64_t k,
                              int bits, int group, const RmsnormTensors &norm, unsigned *counter,
                              void *stream, Dispatcher &d, const ChainLaunch &chain) {
  constexpr const char *kOp = "quantized_linear_rmsnorm";
  if (norm.x != nullptr && norm.x != y)
    HONE_INVALID_ARGUMENT(std::string(kOp) +
                          ": norm.x is not y (the norm takes the linear's output)");
  if (norm.rows != rows || norm.hidden != n)
    HONE_INVALID_ARGUMENT(std::string(kOp) + ": norm rows=" + std::to_string(norm.rows) +
                          ",hidden=" + std::to_string(norm.hidden) + " is not the linear's rows=" +
                          std::to_string(rows) + ",n=" + std::to_string(n));
  if (!(norm.eps >= 0))
    HONE_INVALID_ARGUMENT(std::string(kOp) + ": eps=" + std::to_string(norm.eps) +
                          " is negative or NaN");
  // The cheap refusals first: the fused form is a 4-bit decode kernel's, and the weights-once
  // twin (ChainLaunch::weights_once) has none.
  if (rows < 1 || rows > 8 || bits != 4 || counter == nullptr ||
      (chain.dependent && chain.weights_once) || !runs_qmv(rows, n, k, bits, group, d))
    return false;
  const Resolution &r = d.resolve(hone::cuda::entry_op<hone::cuda::QmvAffineOp>(),
                                  Shape{{rows, n, k, bits, group}, DType::bf16});
  const Resolution &rn = d.resolve(hone::cuda::entry_op<hone::cuda::RmsnormOp>(),
                                   Shape{{rows, n, norm.residual != nullptr ? 1 : 0}, DType::bf16});
  const auto &config = r.compiled.as<hone::cuda::QmvAffineConfig>();
  hone::cuda::QmvAffineArgs args = hone::cuda::qmv_affine_entry_args(
      x, q, scales, biases, y, rows, n, k, bits, group, chain.dependent);
  args.norm.residual = norm.residual;
  args.norm.residual_out = norm.residual_out;
  args.norm.w = norm.w;
  args.norm.out = norm.out;
  args.norm.counter = counter;
  args.norm.lanes = rn.compiled.as<hone::cuda::RmsnormConfig>().lanes();
  args.norm.eps = norm.eps;
  if (!hone::cuda::qmv_affine_norm_fits(config, args))
    return false;
  check_launch("qmv.affine", r, hone::cuda::qmv_affine_launch(config, args, stream));
  return true;
}

bool quantized_linear_rmsnorm(const void *x, const uint32_t *q, const void *scales,
                              const void *biases, void *y, int64_t rows, int64_t n, int64_t k,
                              int bits, int group, const RmsnormTensors &norm, unsigned *counter,
                              void *stream) {
  return quantized_linear_rmsnorm(x, q, scales, biases, y, rows, n, k, bits, group, norm, counter,
                                  stream, dispatcher());
}

} // namespace hone::ops::cuda
