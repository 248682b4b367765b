// A concrete problem shape: up to kMaxRank named-by-position integer dimensions and a dtype.
// Fixed capacity so that building one on the dispatch hot path never allocates.
//
//   hone::Shape s{{8, 4096, 4096}, hone::DType::f32};   // rows, N, K
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>

#include "hone/dtype.h"

namespace hone {

inline constexpr int kMaxRank = 8;

struct Shape {
  std::array<int64_t, kMaxRank> dims{};
  int rank = 0;
  DType dtype = DType::f32;

  Shape() = default;
  Shape(std::initializer_list<int64_t> values, DType type);
  Shape(std::span<const int64_t> values, DType type);

  int64_t operator[](int i) const { return dims[static_cast<size_t>(i)]; }
  std::span<const int64_t> values() const { return {dims.data(), static_cast<size_t>(rank)}; }
  friend bool operator==(const Shape &a, const Shape &b) {
    if (a.rank != b.rank || a.dtype != b.dtype)
      return false;
    for (int i = 0; i < a.rank; ++i)
      if (a.dims[i] != b.dims[i])
        return false;
    return true;
  }
};

// 64-bit FNV-1a over the words of rank, dtype and dims; stable across runs and platforms.
uint64_t hash_shape(const Shape &shape) noexcept;

} // namespace hone
