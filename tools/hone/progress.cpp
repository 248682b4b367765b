#include "hone/progress.h"

#include <algorithm>
#include <iostream>

#include "hone/format.h"

namespace hone::cli {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
} // namespace

std::string progress_times(double elapsed, size_t done, size_t total, std::optional<double> left) {
  std::string text = format_duration(elapsed) + " elapsed";
  if (done > 0 && done < total)
    text += ", about " +
            format_duration(left ? std::max(*left, 0.0)
                                 : elapsed / static_cast<double>(done) *
                                       static_cast<double>(total - done)) +
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

std::string Progress::times() const {
  return progress_times(seconds_since(t0_), done_, total_, left_);
}

void Progress::start(std::string what) {
  what_ = std::move(what);
  step_t0_ = std::chrono::steady_clock::now();
  if (terminal_)
    std::cerr << "\r\033[K" << counts() << " " << what_ << " (" << times() << ")" << std::flush;
}

void Progress::finish(std::optional<double> left) {
  const double step = seconds_since(step_t0_);
  const std::string line = counts() + " " + what_ + ": " + format_seconds(step);
  ++done_;
  left_ = left;
  if (!terminal_)
    std::cerr << line << "; " << times() << '\n' << std::flush;
}

void Progress::clear() {
  if (terminal_)
    std::cerr << "\r\033[K" << std::flush;
}

} // namespace hone::cli
