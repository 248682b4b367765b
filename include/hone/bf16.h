// bf16 <-> f32 conversion on raw 16-bit patterns, host side (no CUDA header): bf16 is the
// upper half of an IEEE f32, so widening is exact.
#pragma once

#include <bit>
#include <cstdint>

namespace hone {

inline float bf16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// Round to nearest, ties to even; NaN stays a (quiet) NaN.
inline uint16_t float_to_bf16(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x0040u);
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}

inline bool bf16_is_nan(uint16_t bits) { return (bits & 0x7fffu) > 0x7f80u; }

} // namespace hone
