// The library never prints by itself: every message goes through one settable sink,
// which writes to stderr by default.
//
//   hone::set_log_sink([](hone::LogLevel level, std::string_view msg) { my_logger(msg); });
//   hone::set_log_level(hone::LogLevel::warn);
#pragma once

#include <functional>
#include <string_view>

namespace hone {

enum class LogLevel { debug = 0, info = 1, warn = 2, error = 3, off = 4 };

using LogSink = std::function<void(LogLevel, std::string_view)>;

// Replaces the sink; an empty function restores the stderr default. Thread-safe.
void set_log_sink(LogSink sink);
// Messages below `level` are dropped before formatting reaches the sink. Default: warn.
void set_log_level(LogLevel level);
LogLevel log_level();

void log(LogLevel level, std::string_view message);
inline void log_warn(std::string_view m) { log(LogLevel::warn, m); }
inline void log_info(std::string_view m) { log(LogLevel::info, m); }
inline void log_debug(std::string_view m) { log(LogLevel::debug, m); }

const char *to_string(LogLevel level);

} // namespace hone
