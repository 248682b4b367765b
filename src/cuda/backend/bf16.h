// Host-side bf16 helpers of the CUDA backend (no CUDA header): the shared conversions plus
// the poison pattern for outputs.
#pragma once

#include "hone/bf16.h"

namespace hone::cuda {

using hone::bf16_is_nan;
using hone::bf16_to_float;
using hone::float_to_bf16;

// The poison pattern written to outputs before a check: 0xFFFF is a bf16 NaN.
inline constexpr uint16_t kBf16Poison = 0xffffu;

} // namespace hone::cuda
