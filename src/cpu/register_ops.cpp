// cpu::register_ops, in an object of its own: Registry::add lives in the `hone` library,
// which links before hone_cpu, so only code that already pulled in the registry may pull
// this in.
#include <memory>

#include "cpu/cpu_backend.h"
#include "cpu/gemv_f32_op.h"
#include "cpu/qmv_affine_op.h"
#include "hone/registry.h"

namespace hone::cpu {

void register_ops(Registry &registry) {
  registry.add(std::make_unique<GemvF32Op>());
  registry.add(std::make_unique<QmvAffineOp>());
}

} // namespace hone::cpu
