#include "hone/progress.h"

#include <iostream>

#include "hone/format.h"

namespace hone::cli {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
} // namespace

Progress::Progress(size_t total, bool terminal)
    : total_(total), terminal_(terminal), t0_(std::chrono::steady_clock::now()),
      step_t0_(t0_) {}

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
  const double elapsed = seconds_since(t0_);
  std::string text = format_seconds(elapsed) + " elapsed";
  if (done_ > 0 && done_ < total_)
    text += ", about " +
            format_seconds(elapsed / static_cast<double>(done_) *
                           static_cast<double>(total_ - done_)) +
            " left";
  return text;
}

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
