// ThreadPool: a persistent set of worker threads for the CPU kernels' `threads` tactic.
// parallel_for runs tasks [0, tasks) on up to `threads` threads, the calling thread included,
// and returns when every task is done. One parallel_for runs at a time; a call made from
// inside a task, or with threads <= 1, runs inline on the calling thread.
//
//   hone::cpu::ThreadPool &pool = hone::cpu::ThreadPool::global();
//   pool.parallel_for(64, pool.size(), [&](int64_t task) { work(task); });
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace hone::cpu {

class ThreadPool {
public:
  // `threads` counts the calling thread, so threads - 1 workers are started.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  // The process-wide pool, sized to the hardware threads.
  static ThreadPool &global();

  // Threads a parallel_for may use, the calling thread included.
  int size() const { return static_cast<int>(workers_.size()) + 1; }

  // Runs fn(task) for every task in [0, tasks) on min(threads, size()) threads.
  // Never allocates; `fn` must not throw.
  template <class Fn> void parallel_for(int64_t tasks, int threads, Fn &&fn) {
    using F = std::remove_reference_t<Fn>;
    run(
        tasks, threads, [](void *ctx, int64_t task) { (*static_cast<F *>(ctx))(task); },
        const_cast<void *>(static_cast<const void *>(&fn)));
  }

private:
  using TaskFn = void (*)(void *ctx, int64_t task);
  void run(int64_t tasks, int threads, TaskFn fn, void *ctx);
  void worker_loop();
  bool claim_slot();
  void drain(); // runs tasks of the current job until none is left

  std::vector<std::thread> workers_;
  std::mutex submit_mutex_; // one job at a time
  std::mutex mutex_;        // guards generation_ and stop_ for the sleeping workers
  std::condition_variable wake_;
  std::atomic<uint64_t> generation_{0}; // bumped once per job
  std::atomic<bool> stop_{false};

  // The current job. Written by the submitting thread while the job is closed and no worker
  // is active; a worker reads them only after registering as active and then seeing the
  // job open (both sequentially consistent, so the submitter either sees the worker active
  // or the worker sees the job closed).
  TaskFn fn_ = nullptr;
  void *ctx_ = nullptr;
  int64_t tasks_ = 0;
  std::atomic<bool> open_{false};
  std::atomic<int> slots_{0};         // workers that may still join the job
  std::atomic<int> active_{0};        // workers between registering and leaving
  std::atomic<int64_t> next_task_{0}; // next task index to claim
};

// Splits the columns [0, n) into ranges for `threads` threads and calls fn(c0, c1) for each:
// about four ranges per thread, every boundary a multiple of `align`, and no range smaller
// than `min_cols` (rounded up to `align`) so that tiny problems stay on one thread.
template <class Fn>
void parallel_columns(ThreadPool &pool, int64_t n, int64_t align, int64_t min_cols, int threads,
                      Fn &&fn) {
  const int use = std::max(1, std::min(threads, pool.size()));
  int64_t per_task = (n + 4 * use - 1) / (4 * use);
  per_task = std::max(per_task, min_cols);
  per_task = (per_task + align - 1) / align * align;
  const int64_t tasks = (n + per_task - 1) / per_task;
  if (tasks <= 1 || use == 1) {
    fn(int64_t{0}, n);
    return;
  }
  pool.parallel_for(tasks, use, [&](int64_t task) {
    const int64_t c0 = task * per_task;
    fn(c0, std::min(n, c0 + per_task));
  });
}

} // namespace hone::cpu
