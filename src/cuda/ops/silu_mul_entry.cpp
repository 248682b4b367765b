// Public entry point of silu_mul (include/hone/ops/cuda.h).
#include <cstdint>
#include <string>

#include "cuda/kernels/silu_mul/silu_mul.h"
#include "cuda/ops/entry_point.h"
#include "cuda/ops/silu_mul_op.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/ops/cuda.h"

namespace hone::ops::cuda {

void silu_mul(const SiluMulTensors &t, void *stream, Dispatcher &d) {
  constexpr const char *kOp = "silu_mul";
  const Resolution &r = d.resolve(hone::cuda::entry_op<hone::cuda::SiluMulOp>(),
                                  Shape{{t.rows, t.inter}, DType::bf16});
  const bool fused = t.gate_up != nullptr;
  if (fused && (t.gate || t.up))
    HONE_INVALID_ARGUMENT(std::string(kOp) +
                          ": give either gate_up (fused) or gate and up, not both");
  hone::cuda::SiluMulArgs a;
  if (fused) {
    hone::cuda::require_aligned(kOp, {{"gate_up", t.gate_up}});
    a.gate = t.gate_up;
    a.up = static_cast<const uint16_t *>(t.gate_up) + t.inter;
    a.gate_stride = a.up_stride = 2 * t.inter;
  } else {
    hone::cuda::require_aligned(kOp, {{"gate", t.gate}, {"up", t.up}});
    a.gate = t.gate;
    a.up = t.up;
  }
  hone::cuda::require_aligned(kOp, {{"out", t.out}});
  a.out = t.out;
  a.rows = static_cast<int>(t.rows);
  a.inter = static_cast<int>(t.inter);
  a.dependent = t.dependent;
  hone::cuda::check_launch(
      kOp, r, hone::cuda::silu_mul_launch(r.compiled.as<hone::cuda::SiluMulConfig>(), a, stream));
}

void silu_mul(const SiluMulTensors &t, void *stream) { silu_mul(t, stream, dispatcher()); }

} // namespace hone::ops::cuda
