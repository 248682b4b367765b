// Host-side bf16 bit conversions (no CUDA header): bf16 is the upper half of an IEEE
// float32, so widening is exact.
#pragma once

#include <bit>
#include <cstdint>

namespace hone::cuda {

inline float bf16_to_float(uint16_t bits) {
  return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
}

// Round to nearest even; NaN stays NaN.
inline uint16_t float_to_bf16(float value) {
  const uint32_t u = std::bit_cast<uint32_t>(value);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40u);
  return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline bool bf16_is_nan(uint16_t bits) { return (bits & 0x7fffu) > 0x7f80u; }

// The poison pattern written to outputs before a check: 0xFFFF is a bf16 NaN.
inline constexpr uint16_t kBf16Poison = 0xffffu;

} // namespace hone::cuda
