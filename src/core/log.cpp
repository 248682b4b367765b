#include "hone/log.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <string>

namespace hone {

namespace {
std::mutex &sink_mutex() {
  static std::mutex m;
  return m;
}
LogSink &sink() {
  static LogSink s;
  return s;
}
std::atomic<int> &level_value() {
  static std::atomic<int> v{static_cast<int>(LogLevel::warn)};
  return v;
}
} // namespace

const char *to_string(LogLevel level) {
  switch (level) {
  case LogLevel::debug:
    return "debug";
  case LogLevel::info:
    return "info";
  case LogLevel::warn:
    return "warning";
  case LogLevel::error:
    return "error";
  case LogLevel::off:
    return "off";
  }
  return "?";
}

void set_log_sink(LogSink s) {
  std::lock_guard lock(sink_mutex());
  sink() = std::move(s);
}

void set_log_level(LogLevel level) { level_value().store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(level_value().load()); }

void log(LogLevel level, std::string_view message) {
  if (static_cast<int>(level) < level_value().load() || level == LogLevel::off)
    return;
  std::lock_guard lock(sink_mutex());
  if (sink()) {
    sink()(level, message);
    return;
  }
  std::string line = std::string("hone: ") + to_string(level) + ": " + std::string(message) + "\n";
  std::fputs(line.c_str(), stderr);
}

} // namespace hone
