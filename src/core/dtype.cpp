#include "hone/dtype.h"

#include <string>

#include "hone/error.h"

namespace hone {

std::string_view to_string(DType dtype) {
  switch (dtype) {
  case DType::f32:
    return "f32";
  case DType::f16:
    return "f16";
  case DType::bf16:
    return "bf16";
  case DType::i8:
    return "i8";
  case DType::i4:
    return "i4";
  }
  return "?";
}

DType parse_dtype(std::string_view text) {
  for (DType d : {DType::f32, DType::f16, DType::bf16, DType::i8, DType::i4})
    if (to_string(d) == text)
      return d;
  HONE_INVALID_ARGUMENT("unknown dtype '" + std::string(text) +
                        "' (expected f32, f16, bf16, i8 or i4)");
}

} // namespace hone
