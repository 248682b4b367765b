// Number formatting shared by reasons and reports.
//
//   "relative L2 error " + hone::format_g(3.14159e-4)   // "relative L2 error 0.000314"
#pragma once

#include <string>

namespace hone {

// `v` with `digits` significant digits, as printf's %g writes it.
std::string format_g(double v, int digits = 3);

} // namespace hone
