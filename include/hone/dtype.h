// Element types that appear in problem keys.
#pragma once

#include <string_view>

namespace hone {

enum class DType : unsigned char { f32, f16, bf16, i8, i4 };

std::string_view to_string(DType dtype);
// Throws Error(invalid_argument) naming the text for an unknown dtype.
DType parse_dtype(std::string_view text);

} // namespace hone
