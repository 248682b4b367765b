// Progress of a long run of steps on stderr: redrawn in place on a terminal; one line per
// finished step otherwise (a log or a CI job), so that a long tune is never silent. Each
// report names the step, done/total, the time elapsed and an estimate of the time left (the
// caller's, e.g. a model tune's cost model of the steps left; else the mean time of the steps
// done, times the steps left), as durations like 3m20s (format_duration).
//
//   Progress progress(total, stderr_is_tty());
//   progress.start("gemv.f32 rows=8,n=4096,k=4096");   // drawn on a terminal only
//   tune(...);
//   progress.finish();                                   // a line when not on a terminal
//   progress.finish(budget.predicted());                 // ... with the caller's time left
#pragma once

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

namespace hone::cli {

// "1m10s elapsed, about 3m20s left" after `done` of `total` steps in `elapsed` seconds: the
// time left is `left` when given, else the steps left times the mean time of those done; no
// estimate before the first step is done or after the last.
std::string progress_times(double elapsed, size_t done, size_t total,
                           std::optional<double> left = std::nullopt);

class Progress {
public:
  Progress(size_t total, bool terminal);
  ~Progress();
  Progress(const Progress &) = delete;
  Progress &operator=(const Progress &) = delete;

  // Step `what` begins (redrawn on a terminal).
  void start(std::string what);
  // The current step is done: a line "[3/36] <what>: 412 ms; 1.3s elapsed, about 11s left"
  // when not on a terminal. `left`: [seconds] the caller's estimate of the steps left, used
  // instead of the mean of the steps done (a model tune's cost model knows that a chain cell
  // takes several times a bucket).
  void finish(std::optional<double> left = std::nullopt);
  // Erases the line drawn on a terminal, so that other output starts at column 0.
  void clear();

private:
  std::string counts() const; // "[3/36]"
  std::string times() const;  // progress_times() now

  size_t total_;
  size_t done_ = 0;
  bool terminal_;
  std::string what_;
  std::optional<double> left_; // [seconds] the caller's estimate at the last finish()
  std::chrono::steady_clock::time_point t0_;
  std::chrono::steady_clock::time_point step_t0_;
};

} // namespace hone::cli
