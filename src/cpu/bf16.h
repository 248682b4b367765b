// The CPU backend's bf16 conversions are the shared host ones.
#pragma once

#include "hone/bf16.h"

namespace hone::cpu {
using hone::bf16_to_float;
using hone::float_to_bf16;
} // namespace hone::cpu
