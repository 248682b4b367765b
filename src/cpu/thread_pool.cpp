#include "cpu/thread_pool.h"

#include <algorithm>

namespace hone::cpu {

namespace {
// Set while a thread runs pool tasks, so nested parallel_for calls run inline.
thread_local bool in_pool_task = false;

// Polls before sleeping: kernel launches of a few microseconds would otherwise pay a
// condition-variable wake-up each.
constexpr int kSpinIterations = 2048; // about 0.1 ms

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}
} // namespace

ThreadPool::ThreadPool(int threads) {
  const int workers = std::max(threads, 1) - 1;
  workers_.reserve(static_cast<size_t>(workers));
  for (int i = 0; i < workers; ++i)
    workers_.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard lock(mutex_);
    stop_.store(true, std::memory_order_relaxed);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();
  for (std::thread &t : workers_)
    t.join();
}

ThreadPool &ThreadPool::global() {
  static ThreadPool pool(static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  return pool;
}

void ThreadPool::drain() {
  for (;;) {
    const int64_t task = next_task_.fetch_add(1, std::memory_order_relaxed);
    if (task >= tasks_)
      return;
    fn_(ctx_, task);
  }
}

void ThreadPool::run(int64_t tasks, int threads, TaskFn fn, void *ctx) {
  if (tasks <= 0)
    return;
  const int use = static_cast<int>(std::min<int64_t>({threads, size(), tasks}));
  if (use <= 1 || in_pool_task) {
    for (int64_t t = 0; t < tasks; ++t)
      fn(ctx, t);
    return;
  }
  std::lock_guard submit(submit_mutex_);
  fn_ = fn;
  ctx_ = ctx;
  tasks_ = tasks;
  next_task_.store(0, std::memory_order_relaxed);
  slots_.store(use - 1, std::memory_order_relaxed);
  open_.store(true); // publishes the fields above
  {
    std::lock_guard lock(mutex_);
    generation_.fetch_add(1, std::memory_order_release);
  }
  wake_.notify_all();

  in_pool_task = true;
  drain();
  in_pool_task = false;
  // Every task is claimed. Close the job so that workers not yet in it stay out (a worker
  // descheduled on an oversubscribed machine must not hold the caller), then wait for the
  // ones inside to finish their tasks.
  open_.store(false);
  while (active_.load() > 0)
    cpu_relax();
}

bool ThreadPool::claim_slot() {
  int s = slots_.load(std::memory_order_relaxed);
  while (s > 0)
    if (slots_.compare_exchange_weak(s, s - 1, std::memory_order_relaxed,
                                     std::memory_order_relaxed))
      return true;
  return false;
}

void ThreadPool::worker_loop() {
  in_pool_task = true;
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < kSpinIterations; ++spin) {
      cpu_relax();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return generation_.load(std::memory_order_acquire) != seen; });
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_relaxed))
      return;
    // A worker that wakes late may find a later job open; it joins that one.
    active_.fetch_add(1);
    if (open_.load() && claim_slot())
      drain();
    active_.fetch_sub(1);
  }
}

} // namespace hone::cpu
