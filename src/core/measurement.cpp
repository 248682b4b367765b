#include "hone/measurement.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "hone/error.h"
#include "hone/stats.h"

namespace hone {

int rotation_count(size_t llc_bytes, size_t bytes_per_launch, double llc_multiple) {
  if (bytes_per_launch == 0)
    return 1;
  const double need = std::ceil(llc_multiple * static_cast<double>(llc_bytes) /
                                static_cast<double>(bytes_per_launch));
  return static_cast<int>(std::min(need, 1e6)) + 1;
}

std::vector<size_t> interleaved_order(size_t n, int samples_each) {
  HONE_CHECK(n >= 1, "interleaved_order needs at least one subject");
  const size_t each = static_cast<size_t>(std::max(samples_each, 1));
  if (n == 1)
    return std::vector<size_t>(each, 0);
  // Hierholzer's walk from subject 0; next[v] is v's next unused out-edge (never v itself).
  std::vector<size_t> next(n, 0), stack{0}, circuit;
  const auto skip_self = [&](size_t v) {
    if (next[v] == v)
      ++next[v];
  };
  while (!stack.empty()) {
    const size_t v = stack.back();
    skip_self(v);
    if (next[v] < n) {
      stack.push_back(next[v]++);
    } else {
      circuit.push_back(v);
      stack.pop_back();
    }
  }
  std::reverse(circuit.begin(), circuit.end());
  circuit.pop_back(); // the walk closes on subject 0: n (n - 1) samples, read cyclically
  const size_t circuits = (each + n - 2) / (n - 1);
  std::vector<size_t> order;
  order.reserve(circuits * circuit.size());
  for (size_t c = 0; c < circuits; ++c)
    order.insert(order.end(), circuit.begin(), circuit.end());
  return order;
}

RotationPlan plan_rotation(size_t llc_bytes, size_t bytes_per_launch, size_t budget_bytes,
                           bool cold, double llc_multiple) {
  RotationPlan plan;
  if (!cold) {
    plan.footprint = bytes_per_launch;
    return plan;
  }
  plan.needed = rotation_count(llc_bytes, bytes_per_launch, llc_multiple);
  const size_t fit = bytes_per_launch == 0 ? static_cast<size_t>(plan.needed)
                                           : budget_bytes / bytes_per_launch;
  if (static_cast<size_t>(plan.needed) <= fit) {
    plan.copies = plan.needed;
  } else {
    // Past the budget: one copy, and an explicit flush between samples.
    plan.copies = 1;
    plan.flush = true;
  }
  plan.footprint = static_cast<size_t>(plan.copies) * bytes_per_launch;
  return plan;
}

namespace {
double time_with_timer(Timer &timer, const LaunchFn &launch, int batch, int copies,
                       int *next_copy) {
  int copy = *next_copy;
  timer.start();
  for (int i = 0; i < batch; ++i) {
    launch(copy);
    copy = copy + 1 >= copies ? 0 : copy + 1;
  }
  const double seconds = timer.stop();
  *next_copy = copy;
  return seconds;
}
} // namespace

Measurement::Measurement(Timer &timer, Backend *backend, MeasureOptions options)
    : timer_(timer), backend_(backend), options_(options) {
  std::vector<double> rt;
  for (int i = 0; i < 3; ++i) { // warm-up
    timer_.start();
    timer_.stop();
  }
  for (int i = 0; i < 15; ++i) {
    timer_.start();
    rt.push_back(timer_.stop());
  }
  sync_round_trip_ = median(rt);
}

double Measurement::resolution() const { return timer_.resolution(); }

int Measurement::calibrate(const LaunchFn &launch, int copies) {
  copies = std::max(copies, 1);
  if (options_.fixed_batch > 0)
    return options_.fixed_batch;
  // Warm-up: touch every copy once so that first-use costs stay out of the estimate.
  int warm = next_copy_;
  if (backend_)
    backend_->time_batch(launch, copies, copies, &warm);
  else
    time_with_timer(timer_, launch, copies, copies, &warm);
  const double target = std::max(options_.sync_factor * sync_round_trip_,
                                 options_.resolution_factor * resolution());
  int batch = 1;
  for (int attempt = 0; attempt < 32; ++attempt) {
    int copy = next_copy_;
    const double t = backend_ ? backend_->time_batch(launch, batch, copies, &copy)
                              : time_with_timer(timer_, launch, batch, copies, &copy);
    if (t >= target || batch >= options_.max_batch)
      return batch;
    // Grow towards the target with a 20% allowance, at least doubling.
    const double scale = t > 0 ? 1.2 * target / t : 16.0;
    const double grown = std::ceil(batch * std::max(2.0, scale));
    batch = static_cast<int>(std::min<double>(grown, options_.max_batch));
  }
  return batch;
}

double Measurement::sample(const LaunchFn &launch, int batch, int copies, bool flush) {
  HONE_CHECK(batch >= 1, "batch must be positive");
  copies = std::max(copies, 1);
  if (next_copy_ >= copies)
    next_copy_ = 0;
  if (flush && backend_)
    backend_->flush_llc(); // outside the timed region
  const double seconds = backend_ ? backend_->time_batch(launch, batch, copies, &next_copy_)
                                  : time_with_timer(timer_, launch, batch, copies, &next_copy_);
  return seconds / batch;
}

} // namespace hone
