// Public CPU op entry points (include/hone/ops/cpu.h).
#include "hone/ops/cpu.h"

#include "cpu/cpu_backend.h"
#include "cpu/gemv_f32.h"
#include "cpu/gemv_f32_op.h"
#include "cpu/qmv_affine.h"
#include "cpu/qmv_affine_op.h"
#include "hone/dispatcher.h"
#include "hone/settings.h"

namespace hone::ops::cpu {

namespace {
// The entry points' own op instances: same name and version as the registry's, so they
// share cache entries; the dispatcher memoises per instance.
const hone::cpu::GemvF32Op &gemv_op() {
  static const hone::cpu::GemvF32Op op;
  return op;
}
const hone::cpu::QmvAffineOp &qmv_op() {
  static const hone::cpu::QmvAffineOp op;
  return op;
}
} // namespace

Dispatcher &dispatcher() {
  static Dispatcher d(hone::cpu::backend(), DispatcherOptions::from_settings(settings()));
  return d;
}

void gemv_f32(const float *x, const float *w, float *y, int64_t rows, int64_t n, int64_t k,
              Dispatcher &d) {
  const Resolution &r = d.resolve(gemv_op(), Shape{{rows, n, k}, DType::f32});
  hone::cpu::gemv_f32_kernel(r.compiled.as<hone::cpu::GemvConfig>(), x, w, y, rows, n, k);
}

void qmv_affine(const float *x, const uint32_t *packed, const uint16_t *scales,
                const uint16_t *biases, float *y, int64_t rows, int64_t n, int64_t k, int bits,
                int group, Dispatcher &d) {
  const Resolution &r = d.resolve(qmv_op(), Shape{{rows, n, k, bits, group}, DType::f32});
  hone::cpu::qmv_affine_kernel(r.compiled.as<hone::cpu::QmvConfig>(),
                               {x, packed, scales, biases, y, rows, n, k, bits, group});
}

} // namespace hone::ops::cpu
