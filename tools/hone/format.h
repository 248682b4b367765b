// Human-readable numbers for CLI output. Each picks its unit from the magnitude so that a
// table column reads at a glance; JSON output keeps raw SI values instead.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace hone::cli {

// "812 ns", "12.4 us", "3.05 ms", "1.20 s" for a time in [seconds].
std::string format_seconds(double seconds);
// A duration for a person: "4.2s" below 10 s, "42s", "3m05s", "1h05m" (rounded to the unit
// shown last); negative durations print as "0.0s".
std::string format_duration(double seconds);
// "512 B", "48.0 KiB", "32.0 MiB", "1.50 GiB".
std::string format_bytes(size_t bytes);
// "0.942x".
std::string format_ratio(double ratio);
// "1.3%" for 0.013.
std::string format_percent(double fraction);
// [bytes] from "1048576", "64K", "32M", "1G", "32MiB", "1.5GB" (K/M/G are powers of 1024);
// nullopt when the text is not a positive size.
std::optional<size_t> parse_bytes(std::string_view text);
// `text` without "kernel:" when the kernel is `op_name`, so tables stay narrow.
std::string short_tactic(std::string_view tactic, std::string_view op_name);

} // namespace hone::cli
