#include "cpu/thread_pool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <vector>

namespace hone::cpu {
namespace {

TEST(ThreadPool, RunsEveryTaskExactlyOnce) {
  ThreadPool pool(4);
  EXPECT_EQ(pool.size(), 4);
  for (int threads : {1, 2, 4, 16})
    for (int64_t tasks : {0, 1, 3, 4, 97, 1000}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(tasks));
      pool.parallel_for(tasks, threads, [&](int64_t t) { hits[static_cast<size_t>(t)]++; });
      for (int64_t t = 0; t < tasks; ++t)
        ASSERT_EQ(hits[static_cast<size_t>(t)].load(), 1)
            << "task " << t << " of " << tasks << ", threads " << threads;
    }
}

TEST(ThreadPool, SpreadsWorkOverThreads) {
  ThreadPool pool(3);
  std::mutex m;
  std::set<std::thread::id> ids;
  std::atomic<int> arrived{0};
  // Every task waits (up to 5 s) until three have started, so three threads must take part.
  pool.parallel_for(3, 3, [&](int64_t) {
    {
      std::lock_guard lock(m);
      ids.insert(std::this_thread::get_id());
    }
    arrived++;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (arrived.load() < 3 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  });
  EXPECT_EQ(ids.size(), 3u);
}

TEST(ThreadPool, SingleThreadAndNestedCallsRunInline) {
  ThreadPool pool(4);
  const auto caller = std::this_thread::get_id();
  pool.parallel_for(8, 1, [&](int64_t) { EXPECT_EQ(std::this_thread::get_id(), caller); });
  std::atomic<int> inner{0};
  pool.parallel_for(4, 4, [&](int64_t) {
    const auto outer = std::this_thread::get_id();
    pool.parallel_for(5, 4, [&](int64_t) {
      EXPECT_EQ(std::this_thread::get_id(), outer);
      inner++;
    });
  });
  EXPECT_EQ(inner.load(), 20);
}

TEST(ThreadPool, ManySmallJobsInARow) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  for (int job = 0; job < 2000; ++job)
    pool.parallel_for(7, 4, [&](int64_t t) { sum += t; });
  EXPECT_EQ(sum.load(), 2000 * 21);
}

TEST(ThreadPool, ParallelColumnsCoversEveryColumnOnAlignedBoundaries) {
  ThreadPool pool(4);
  for (int64_t n : {1, 5, 64, 1001})
    for (int64_t align : {1, 4, 8}) {
      std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
      parallel_columns(pool, n, align, 1, 4, [&](int64_t c0, int64_t c1) {
        EXPECT_EQ(c0 % align, 0);
        for (int64_t c = c0; c < c1; ++c)
          hits[static_cast<size_t>(c)]++;
      });
      for (int64_t c = 0; c < n; ++c)
        ASSERT_EQ(hits[static_cast<size_t>(c)].load(), 1) << "n=" << n << " align=" << align;
    }
}

} // namespace
} // namespace hone::cpu
