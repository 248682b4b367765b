// Cost of a dispatch lookup on a hit: the hot-path overhead every op call pays.
#include <benchmark/benchmark.h>

#include <cstdlib>

#include "hone/dispatcher.h"
#include "hone/registry.h"

namespace {

void BM_DispatchLookupHit(benchmark::State &state) {
  hone::Backend &backend = hone::get_backend("cpu");
  const hone::TunableOp *op = hone::Registry::global().find("gemv.f32", "cpu");
  hone::DispatcherOptions options;
  options.use_cache = false; // no file I/O; the table is what a hit reads
  hone::Dispatcher d(backend, options);
  // A realistic table: every decode row count of a few layer shapes.
  for (int64_t rows = 1; rows <= 32; ++rows)
    for (int64_t n : {896, 1152, 4864, 9728})
      d.lookup(*op, hone::Shape{{rows, n, 896}, hone::DType::f32});
  const hone::Shape shape{{8, 4864, 896}, hone::DType::f32};
  for (auto _ : state) {
    const hone::Tactic &t = d.lookup(*op, shape);
    benchmark::DoNotOptimize(&t);
  }
}
BENCHMARK(BM_DispatchLookupHit);

} // namespace

BENCHMARK_MAIN();
