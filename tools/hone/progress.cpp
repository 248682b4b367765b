#include "hone/progress.h"

#include <cmath>
#include <cstdio>
#include <iostream>

#include "hone/format.h"

namespace hone::cli {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
} // namespace

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

std::string progress_times(double elapsed, size_t done, size_t total) {
  std::string text = format_duration(elapsed) + " elapsed";
  if (done > 0 && done < total)
    text +=
        ", about " +
        format_duration(elapsed / static_cast<double>(done) * static_cast<double>(total - done)) +
        " left";
  return text;
}

Progress::Progress(size_t total, bool terminal)
    : total_(total), terminal_(terminal), t0_(std::chrono::steady_clock::now()), step_t0_(t0_) {}

Progress::~Progress() { clear(); }

std::string Progress::counts() const {
  // Appended piece by piece: GCC 12 at -O3 warns -Wrestrict (a false positive) on
  // "[" + std::string&&.
  std::string text = "[";
  text += std::to_string(done_ + 1);
  text += '/';
  text += std::to_string(total_);
  text += ']';
  return text;
}

std::string Progress::times() const { return progress_times(seconds_since(t0_), done_, total_); }

void Progress::start(std::string what) {
  what_ = std::move(what);
  step_t0_ = std::chrono::steady_clock::now();
  if (terminal_)
    std::cerr << "\r\033[K" << counts() << " " << what_ << " (" << times() << ")" << std::flush;
}

void Progress::finish() {
  const double step = seconds_since(step_t0_);
  const std::string line = counts() + " " + what_ + ": " + format_seconds(step);
  ++done_;
  if (!terminal_)
    std::cerr << line << "; " << times() << '\n' << std::flush;
}

void Progress::clear() {
  if (terminal_)
    std::cerr << "\r\033[K" << std::flush;
}

} // namespace hone::cli
