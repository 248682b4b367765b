// Public entry point of rmsnorm (include/hone/ops/cuda.h).
#include <string>

#include "cuda/kernels/rmsnorm/rmsnorm.h"
#include "cuda/ops/entry_point.h"
#include "cuda/ops/rmsnorm_op.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/ops/cuda.h"

namespace hone::ops::cuda {

void rmsnorm(const RmsnormTensors &t, void *stream, Dispatcher &d) {
  constexpr const char *kOp = "rmsnorm";
  const bool residual = t.residual != nullptr;
  // resolve() validates rows and hidden before any launch.
  const Resolution &r = d.resolve(hone::cuda::entry_op<hone::cuda::RmsnormOp>(),
                                  Shape{{t.rows, t.hidden, residual ? 1 : 0}, DType::bf16});
  hone::cuda::require_aligned(kOp, {{"x", t.x}, {"w", t.w}, {"out", t.out}});
  if (residual)
    hone::cuda::require_aligned(kOp, {{"residual", t.residual}, {"residual_out", t.residual_out}});
  if (!(t.eps >= 0))
    HONE_INVALID_ARGUMENT(std::string(kOp) + ": eps=" + std::to_string(t.eps) +
                          " is negative or NaN");
  hone::cuda::RmsnormArgs a;
  a.x = t.x;
  a.residual = t.residual;
  a.residual_out = t.residual_out;
  a.w = t.w;
  a.out = t.out;
  a.rows = static_cast<int>(t.rows);
  a.hidden = static_cast<int>(t.hidden);
  a.eps = t.eps;
  a.dependent = t.dependent;
  hone::cuda::check_launch(
      kOp, r, hone::cuda::rmsnorm_launch(r.compiled.as<hone::cuda::RmsnormConfig>(), a, stream));
}

void rmsnorm(const RmsnormTensors &t, void *stream) { rmsnorm(t, stream, dispatcher()); }

} // namespace hone::ops::cuda
