// Sweep cells for the tests of `hone sweep`'s reports: one that ran and one that was skipped.
//
//   SweepCell c = hone::testing::ran_cell(1, 4096, /*tuned_us=*/90, /*pdl_us=*/80);
#pragma once

#include <cstdint>
#include <string>

#include "hone/sweep_report.h"

namespace hone::testing {

using cli::SweepCell;

// A cell that ran: default 100 us (97 us with PDL); tuned `tuned_us`; tuned+pdl `pdl_us`, whose
// 100 checked replays had `mismatches` differing words; 300 MB of weights and 100 MB of KV.
inline SweepCell ran_cell(int64_t batch, int64_t context, double tuned_us, double pdl_us,
                          int64_t mismatches = 0) {
  SweepCell c;
  c.batch = batch;
  c.context = context;
  c.variants = {{"default", false, 100e-6, 0.01, -1, 0},
                {"default+pdl", true, 97e-6, 0.01, 0, 100},
                {"tuned", false, tuned_us * 1e-6, 0.01, -1, 0},
                {"tuned+pdl", true, pdl_us * 1e-6, 0.02, mismatches, 100}};
  c.weight_bytes = 300'000'000;
  c.kv_bytes = 100'000'000;
  c.need_bytes = 500'000'000;
  c.replays_per_sample = 200;
  return c;
}

inline SweepCell skipped_cell(int64_t batch, int64_t context, std::string note) {
  SweepCell c;
  c.batch = batch;
  c.context = context;
  c.status = SweepCell::Status::skipped;
  c.note = std::move(note);
  return c;
}

} // namespace hone::testing
