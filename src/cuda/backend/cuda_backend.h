// CUDA backend entry points, callable from host-only code (no CUDA header here).
#pragma once

#include "hone/backend.h"

namespace hone {
class Registry;
}

namespace hone::cuda {

// True when a CUDA device is visible and usable.
bool device_present();
// The process-wide CUDA backend for device 0; throws Error(runtime) when none is present.
Backend &backend();
// Adds the CUDA ops (gemv.bf16, qmv.affine) and their peers to `registry`.
void register_ops(Registry &registry);

} // namespace hone::cuda
