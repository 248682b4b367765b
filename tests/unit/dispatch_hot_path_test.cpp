// The dispatcher's hot path: once a shape is resolved, a lookup and the op's compiled config
// (TunableOp::compile) cost no allocation and no tactic parsing. Allocations are counted by
// replacing the global operator new in this test binary (one binary per test file).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <vector>

#include "cpu/cpu_backend.h"
#include "cpu/gemv_f32.h"
#include "cpu/qmv_affine.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/registry.h"

namespace {
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
} // namespace

void *operator new(std::size_t size) {
  if (g_counting.load(std::memory_order_relaxed))
    g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void *p = std::malloc(size ? size : 1))
    return p;
  throw std::bad_alloc();
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }

namespace hone {
namespace {

// Counts the allocations made while `fn` runs.
template <class Fn> long allocations_during(Fn &&fn) {
  g_allocations = 0;
  g_counting = true;
  fn();
  g_counting = false;
  return g_allocations.load();
}

DispatcherOptions no_files() {
  DispatcherOptions options;
  options.use_cache = false;
  return options;
}

TEST(DispatchHotPath, TheCountingAllocatorSeesAllocations) {
  // The counter must be able to fail the tests below.
  EXPECT_GT(allocations_during([] { std::vector<int> v(1000, 1); }), 0);
}

TEST(DispatchHotPath, ResolvedLookupAndCompiledConfigAllocateNothing) {
  const TunableOp *op = Registry::global().find("gemv.f32", "cpu");
  ASSERT_NE(op, nullptr);
  Dispatcher d(cpu::backend(), no_files());
  const Shape shape{{8, 4864, 896}, DType::f32};
  const Resolution &first = d.resolve(*op, shape);
  const cpu::GemvConfig &config = first.compiled.as<cpu::GemvConfig>();
  const long allocations = allocations_during([&] {
    for (int i = 0; i < 1000; ++i) {
      const Resolution &r = d.resolve(*op, Shape{{8, 4864, 896}, DType::f32});
      EXPECT_EQ(&r.compiled.as<cpu::GemvConfig>(), &config);
    }
  });
  EXPECT_EQ(allocations, 0);
  EXPECT_EQ(d.resolutions(), 1u); // compiled once, with the resolution
}

TEST(DispatchHotPath, CompiledConfigIsTheTacticParsed) {
  Dispatcher d(cpu::backend(), no_files());
  const TunableOp *gemv = Registry::global().find("gemv.f32", "cpu");
  const TunableOp *qmv = Registry::global().find("qmv.affine", "cpu");
  ASSERT_NE(gemv, nullptr);
  ASSERT_NE(qmv, nullptr);
  for (int64_t rows : {1, 5, 32}) {
    const Resolution &r = d.resolve(*gemv, Shape{{rows, 100, 256}, DType::f32});
    const cpu::GemvConfig &c = r.compiled.as<cpu::GemvConfig>();
    EXPECT_EQ(c.tactic(), r.tactic) << rows;
    const Resolution &q = d.resolve(*qmv, Shape{{rows, 64, 256, 4, 64}, DType::f32});
    EXPECT_EQ(q.compiled.as<cpu::QmvConfig>().tactic(), q.tactic) << rows;
  }
}

TEST(DispatchHotPath, AskingForAnotherConfigTypeThrows) {
  Dispatcher d(cpu::backend(), no_files());
  const TunableOp *op = Registry::global().find("gemv.f32", "cpu");
  ASSERT_NE(op, nullptr);
  const Resolution &r = d.resolve(*op, Shape{{2, 64, 64}, DType::f32});
  EXPECT_THROW((void)r.compiled.as<cpu::QmvConfig>(), Error);
  EXPECT_THROW((void)CompiledTactic{}.as<int>(), Error);
  EXPECT_FALSE(static_cast<bool>(CompiledTactic{}));
}

} // namespace
} // namespace hone
