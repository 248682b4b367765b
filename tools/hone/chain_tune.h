// The chain cells of a model tune: the model's decode step, with the op picks tuned so far, built
// for each batch bucket and weight format and timed with PDL off and on (bench_decode_step: one
// CUDA graph per variant, interleaved, the PDL step compared bit for bit with PDL off over
// kChainCheckReplays replays); chain_report() turns a timing into the cell's cache entry. Only
// a CUDA build on the cuda backend has a step to time.
//
//   std::vector<ChainCell> cells = chain_cells(spec, options, backend);   // notes skipped ones
//   ChainTiming t = time_chain_cell(backend, spec, cells[0], options);
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hone/backend.h"
#include "hone/chain_tactic.h"
#include "hone/shape.h"
#include "model/model_spec.h"

namespace hone::model {
struct StepBenchResult;
}

namespace hone::cli {

struct ChainPlanOptions {
  std::vector<int64_t> batches = {1, 4, 16}; // requests of a step, one bucket each
  int64_t context = 4096;                    // [tokens] cached per request
  int64_t page_size = 16;
  int bits = 4; // the affine format timed beside bf16
  int group = 64;
  int samples = 9; // interleaved samples per median
};

struct ChainCell {
  int64_t batch = 1;
  int bits = 16;             // 16: bf16 weights
  int group = 0;             // 0 for bf16
  Shape bucket;              // chain_bucket()
  std::string quant() const; // "bf16", "int4:g64"
};

// True when `backend` can run a decode step (the cuda backend of a CUDA build).
bool chain_available(const Backend &backend);
// The cells to time: options.batches x {bf16, int<bits>:g<group>}, in that order. A format
// the model cannot take (a linear's K not a multiple of the group) and cells whose step does
// not fit in the device memory free now are left out with a note on stderr. Throws
// Error(invalid_argument) for a batch the step cannot take (outside 1..32). Empty when
// !chain_available(backend).
std::vector<ChainCell> chain_cells(const model::ModelSpec &spec, const ChainPlanOptions &options,
                                   const Backend &backend);
// [seconds] predicted for time_chain_cell() (the budget's prior): set-up, the check replays and
// the samples at a step time of the step's bytes over 3 TB/s.
double chain_cell_seconds(const model::ModelSpec &spec, const ChainCell &cell,
                          const ChainPlanOptions &options);
// Builds the step of `cell` and times it with a Dispatcher over the cache as it is now (no
// lazy tune: buckets the cache lacks run their defaults). Throws Error(runtime) when the device
// lacks the memory, Error(invalid_argument) when !chain_available(backend).
ChainTiming time_chain_cell(Backend &backend, const model::ModelSpec &spec, const ChainCell &cell,
                            const ChainPlanOptions &options);
// The chain timing in a step bench's results: variant `off` (PDL off), `off + 1` (PDL on) and
// every later variant that runs `off + 1`'s launch but for a KV prefetch or the early trigger.
// CUDA builds.
// REQUIRES: off + 1 < r.variants.size().
ChainTiming chain_timing(const model::StepBenchResult &r, size_t off);

} // namespace hone::cli
