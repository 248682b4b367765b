#include "hone/chain_tune.h"

#include <algorithm>
#include <iostream>

#include "hone/error.h"
#include "hone/format.h"
#include "hone/step_command.h"
#if HONE_WITH_CUDA
#include "hone/dispatcher.h"
#include "hone/settings.h"
#include "model/decode_step.h"
#include "model/step_bench.h"
#endif

namespace hone::cli {

namespace {

// [bytes/s] a step's reads are predicted at (the H200 step measured 0.7-0.8 of 4.6 TB/s).
constexpr double kPriorStepBytesPerSecond = 3e12;
// [seconds] building a step: allocation and random fills of every weight and the cache.
constexpr double kPriorStepSetupSeconds = 1.0;

#if HONE_WITH_CUDA
model::StepOptions step_options(const ChainCell &cell, const ChainPlanOptions &o) {
  model::StepOptions so = quant_step_options(cell.bits, cell.group, o.page_size, /*seed=*/1);
  so.batch = cell.batch;
  so.context = o.context;
  return so;
}
#endif

} // namespace

std::string ChainCell::quant() const {
  return bits == 16 ? "bf16" : "int" + std::to_string(bits) + ":g" + std::to_string(group);
}

bool chain_available(const Backend &backend) {
#if HONE_WITH_CUDA
  return backend.info().backend == "cuda";
#else
  (void)backend;
  return false;
#endif
}

std::vector<ChainCell> chain_cells(const model::ModelSpec &spec, const ChainPlanOptions &o,
                                   const Backend &backend) {
  std::vector<ChainCell> cells;
  if (!chain_available(backend))
    return cells;
  bool quantized = true;
  for (int64_t k : {spec.hidden, spec.hq * spec.head_dim, spec.inter})
    if (k % o.group != 0) {
      std::cerr << "note: " << kChainOpName << ": int" << o.bits << ":g" << o.group
                << " skipped: " << spec.name << " has a linear of K = " << k
                << ", not a multiple of the group\n";
      quantized = false;
      break;
    }
  for (int64_t batch : o.batches)
    for (int bits : {16, o.bits}) {
      if (bits != 16 && !quantized)
        continue;
      ChainCell cell;
      cell.batch = batch;
      cell.bits = bits;
      cell.group = bits == 16 ? 0 : o.group;
      cell.bucket = chain_bucket(spec, batch, bits, cell.group, o.page_size);
#if HONE_WITH_CUDA
      const size_t need = model::decode_step_bytes(spec, step_options(cell, o));
      if (const std::optional<size_t> available = backend.available_memory_bytes();
          available && need > *available) {
        std::cerr << "note: " << kChainOpName << " batch " << batch << " " << cell.quant()
                  << " skipped: the step needs " << format_bytes(need) << ", the device has "
                  << format_bytes(*available) << " free\n";
        continue;
      }
#endif
      cells.push_back(cell);
    }
  return cells;
}

double chain_cell_seconds(const model::ModelSpec &spec, const ChainCell &cell,
                          const ChainPlanOptions &o) {
#if HONE_WITH_CUDA
  const double step_s = static_cast<double>(model::decode_step_bytes(spec, step_options(cell, o))) /
                        kPriorStepBytesPerSecond;
  // Per variant (PDL off, PDL, PDL with the KV prefetch, PDL with the early trigger) two eager
  // runs; per PDL variant a reference run and the check replays; then per sample and variant the
  // replays of at least 0.02 s (StepBenchOptions::sample_seconds).
  constexpr int kVariants = 4, kPdlVariants = 3;
  return kPriorStepSetupSeconds +
         step_s * (2 * kVariants + kPdlVariants * (kChainCheckReplays + 1)) +
         kVariants * o.samples * std::max(0.02, 3 * step_s);
#else
  (void)spec, (void)cell, (void)o;
  return 0;
#endif
}

ChainTiming time_chain_cell(Backend &backend, const model::ModelSpec &spec, const ChainCell &cell,
                            const ChainPlanOptions &o) {
#if HONE_WITH_CUDA
  if (!chain_available(backend))
    HONE_INVALID_ARGUMENT("the " + backend.info().backend + " backend has no decode step");
  model::DecodeStep step(spec, step_options(cell, o));
  DispatcherOptions options = DispatcherOptions::from_settings(settings());
  options.autotune = false;
  Dispatcher tuned(backend, options);
  model::StepBenchOptions bo;
  bo.samples = o.samples;
  bo.check_replays = kChainCheckReplays;
  bo.breakdown = false;
  std::vector<model::StepVariant> variants = {
      model::step_variant("tuned", &tuned, false), model::step_variant("tuned+pdl", &tuned, true),
      model::step_variant("tuned+pdl+kv", &tuned, true, kChainKvPrefetchKib),
      model::step_variant("tuned+pdl+early", &tuned, true)};
  variants.back().early_trigger = true;
  const model::StepBenchResult r = model::bench_decode_step(step, variants, bo);
  return chain_timing(r, 0);
#else
  (void)spec, (void)cell, (void)o;
  HONE_INVALID_ARGUMENT("the " + backend.info().backend + " backend has no decode step");
#endif
}

#if HONE_WITH_CUDA
ChainTiming chain_timing(const model::StepBenchResult &r, size_t off) {
  const model::StepVariantResult &o = r.variants[off], &on = r.variants[off + 1];
  ChainTiming t;
  t.off_s = o.seconds;
  t.on_s = on.seconds;
  t.off_spread = o.spread;
  t.on_spread = on.spread;
  t.mismatches = on.mismatches;
  t.check_replays = on.check_replays;
  t.replays_per_sample = r.replays_per_sample;
  for (size_t i = off + 2; i < r.variants.size(); ++i) {
    const model::StepVariantResult &v = r.variants[i];
    // PDL with a KV prefetch or the early trigger, and otherwise what the PDL variant ran.
    model::StepLaunch without = v.launch;
    without.kv_prefetch_kib = 0;
    without.early_trigger = false;
    if ((v.launch.kv_prefetch_kib > 0 || v.launch.early_trigger) && without == on.launch)
      t.variants.push_back({{true, v.launch.kv_prefetch_kib, v.launch.early_trigger},
                            v.seconds,
                            v.spread,
                            v.mismatches,
                            v.check_replays});
  }
  return t;
}
#endif

} // namespace hone::cli
