#include "hone/format.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <string>

namespace hone::cli {

namespace {
std::string printf_string(const char *format, double value, const char *unit) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, value, unit);
  return buf;
}
// Three significant digits: "812", "12.4", "3.05".
std::string three_digits(double value, const char *unit) {
  const double a = std::fabs(value);
  const char *format = a >= 100 ? "%.0f %s" : a >= 10 ? "%.1f %s" : "%.2f %s";
  return printf_string(format, value, unit);
}
} // namespace

std::string format_seconds(double seconds) {
  const double a = std::fabs(seconds);
  if (a == 0)
    return "0 s";
  if (a < 1e-6)
    return three_digits(seconds * 1e9, "ns");
  if (a < 1e-3)
    return three_digits(seconds * 1e6, "us");
  if (a < 1)
    return three_digits(seconds * 1e3, "ms");
  return three_digits(seconds, "s");
}

std::string format_duration(double seconds) {
  char buf[32];
  if (!(seconds > 0))
    return "0.0s";
  if (seconds < 9.95) {
    std::snprintf(buf, sizeof buf, "%.1fs", seconds);
    return buf;
  }
  const long long s = std::llround(seconds);
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else {
    const long long m = (s + 30) / 60; // rounded to the minute shown last
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", m / 60, m % 60);
  }
  return buf;
}

std::string format_bytes(size_t bytes) {
  const double b = static_cast<double>(bytes);
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  if (bytes < (size_t{1} << 20))
    return three_digits(b / 1024, "KiB");
  if (bytes < (size_t{1} << 30))
    return three_digits(b / (1024.0 * 1024), "MiB");
  return three_digits(b / (1024.0 * 1024 * 1024), "GiB");
}

std::string format_ratio(double ratio) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3fx", ratio);
  return buf;
}

std::string format_percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", fraction * 100);
  return buf;
}

std::optional<size_t> parse_bytes(std::string_view text) {
  size_t i = 0;
  double value = 0;
  bool digits = false;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])); ++i, digits = true)
    value = value * 10 + (text[i] - '0');
  if (i < text.size() && text[i] == '.') {
    double scale = 0.1;
    for (++i; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]));
         ++i, digits = true, scale /= 10)
      value += (text[i] - '0') * scale;
  }
  if (!digits)
    return std::nullopt;
  std::string unit;
  for (; i < text.size(); ++i)
    unit += static_cast<char>(std::toupper(static_cast<unsigned char>(text[i])));
  double multiplier = 0;
  if (unit.empty() || unit == "B")
    multiplier = 1;
  else if (unit == "K" || unit == "KB" || unit == "KIB")
    multiplier = 1024.0;
  else if (unit == "M" || unit == "MB" || unit == "MIB")
    multiplier = 1024.0 * 1024;
  else if (unit == "G" || unit == "GB" || unit == "GIB")
    multiplier = 1024.0 * 1024 * 1024;
  else
    return std::nullopt;
  const double bytes = value * multiplier;
  if (bytes < 1 || bytes > 1e18)
    return std::nullopt;
  return static_cast<size_t>(bytes);
}

std::string short_tactic(std::string_view tactic, std::string_view op_name) {
  if (tactic.size() > op_name.size() && tactic.starts_with(op_name) &&
      tactic[op_name.size()] == ':')
    return std::string(tactic.substr(op_name.size() + 1));
  return std::string(tactic);
}

} // namespace hone::cli
