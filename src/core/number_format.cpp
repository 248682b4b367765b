#include "hone/number_format.h"

#include <cstdio>

namespace hone {

std::string format_g(double v, int digits) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

} // namespace hone
