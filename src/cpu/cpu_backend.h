// CPU backend: device facts from /proc/cpuinfo and sysfs, a steady-clock timer (sync is a
// no-op), an LLC flush, and the CPU ops.
#pragma once

#include "hone/backend.h"

namespace hone {
class Registry;
}

namespace hone::cpu {

// The process-wide CPU backend.
Backend &backend();
// Adds gemv.f32 and qmv.affine (cpu) to `registry`.
void register_ops(Registry &registry);

} // namespace hone::cpu
