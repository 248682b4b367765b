// The host side the split-K GEMV-family kernels (gemv.bf16, qmv.affine) share: one compiled
// kernel's slot in an op's table, the CTA shapes every family builds its configs from, the
// shared-memory opt-in of the cp.async ring kernels, and the launch tail (ring or register
// pipeline, shared-memory limit, grid, cluster). No CUDA header needed by includers.
//
//   SplitKKernel k{fn, async_fn, 256, floats_per_warp, ring_bytes_per_warp};
//   add_split_k_configs(k, base_config, kMmaCtaShapes, configs);
//   return launch_split_k_kernel(k, config, n, rows, &params, stream);   // config: a SplitKCta
#pragma once

#include <algorithm>
#include <cstddef>
#include <span>
#include <string>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"
#include "hone/tactic.h"

namespace hone::cuda {

// One compiled kernel of a family: its entry points and per-warp shared memory.
struct SplitKKernel {
  const void *fn = nullptr;       // __global__ function (the register pipeline)
  const void *async_fn = nullptr; // the same kernel with the cp.async ring, if compiled
  int max_threads = 0;            // __launch_bounds__
  int floats_per_warp = 0;        // fp32 partials one warp writes to shared memory
  int async_bytes_per_warp = 0;   // its lane-private cp.async ring
};

// How a config spreads over a CTA and a cluster: the fields every family config has (the
// family's configs derive from it). k_slices = warps_k x split_k fixes the K summation order.
struct SplitKCta {
  int rows_per_cta = 8;      // activation rows per CTA; more rows run as more CTAs along z
  int warps = 4;             // warps per CTA = warps_n x warps_k
  int warps_k = 1;           // warps of a CTA that take adjacent K slices
  int outputs_per_warp = 16; // weight rows per warp
  int split_k = 1;           // CTAs of one thread-block cluster that split K (fixed order)
  int async = 0;             // 1: the cp.async ring kernel (bit-identical to 0)
  bool operator==(const SplitKCta &) const = default;
};

// The fields the weights-once stream path adds to a family config (weight_stream.h); 0 on
// the other paths.
struct StreamRingFields {
  int stages = 0;      // stream: ring depth
  int ctas_per_sm = 0; // stream: resident CTAs per SM
  int step_chunks = 0; // ring: chunks per K slice and ring step; 0: the rule (ring_step_chunks)
  bool operator==(const StreamRingFields &) const = default;
};

// (warps_k, split_k, warps_n). Within a family path, shapes with equal warps_k x split_k
// share the K summation order.
struct CtaShape {
  int warps_k, split_k, warps_n;
};
// The tensor-core shapes, grouped by k_slices 1, 2, 4, 8, 16.
inline constexpr CtaShape kMmaCtaShapes[] = {
    {1, 1, 4},                        // k_slices 1
    {2, 1, 1},  {2, 1, 2},            // 2
    {4, 1, 1},  {4, 1, 2}, {2, 2, 1}, // 4
    {8, 1, 1},  {4, 2, 1}, {4, 2, 2}, // 8
    {16, 1, 1}, {8, 2, 1}, {4, 4, 1}  // 16
};

// One- and two-warp CTAs at one K slice, beside kMmaCtaShapes' four (qmv.affine's tensor-core
// paths): a grid of few four-warp CTAs leaves some SMs twice the warps of others (qmv.affine's
// 16-row default on 28672 x 4096: 224 CTAs for 132 SMs).
inline constexpr CtaShape kNarrowMmaCtaShapes[] = {{1, 1, 1}, {1, 1, 2}};

// The fill floor of a family's static default K split: the largest power of two k_slices, at
// most `max_slices`, whose launch of `tiles` m16 tiles x k_slices warps stays within
// kSplitKFillWarps and whose slices hold at least one `chunk_k`-value chunk of `k` each. Under
// it no row count fills an H100/H200 (about 4 warps per SM); the ops take the larger of it and
// their fitted split (docs/notes/gemv_bf16.md, v4: 896 x 896 at 2 slices cost 1.47x its
// fastest 8-slice config over rows 1-32).
inline constexpr int kSplitKFillWarps = 512;
int split_k_fill_slices(int tiles, int chunk_k, int k, int max_slices);

// The CTA of a family's static default for `k_slices` (1, 2, 4, 8 or 16; more counts as 16):
// warps_k x split_k = k_slices, with the CTA at 4 warps where it can be. Two choices are the
// op's: the warps at 2 slices (2: one warp per slice, 4: two warps along N), and at 8 and 16
// slices whether a cluster pair of CTAs splits K (fewer, shorter-lived warps per CTA, e.g. for
// ring kernels whose shared memory limits occupancy) or one CTA holds every slice.
// Sets c.warps, c.warps_k and c.split_k.
void set_default_cta(SplitKCta &c, int k_slices, int warps_at_2, bool pair_at_8, bool pair_at_16);

// [bytes] default dynamic shared-memory limit: configs above it are not built.
inline constexpr size_t kSplitKMaxSharedBytes = 48 * 1024;
// [bytes] ring configs: partials + ring within the opt-in limit of sm_80 (163 KB) and sm_90
// (227 KB).
inline constexpr size_t kSplitKMaxAsyncSharedBytes = 160 * 1024;

// [bytes] dynamic shared memory of `kernel` with `warps` warps: partials, plus the ring when
// `async`.
size_t split_k_shared_bytes(const SplitKKernel &kernel, int warps, bool async);

// Appends to `out` every shape of `shapes` that fits `kernel`: `base` (the op's own fields and
// the kernel's rows_per_cta and outputs_per_warp) with the shape's warps, warps_k and split_k,
// and, where the ring fits too, its async twin.
template <class Config>
void add_split_k_configs(const SplitKKernel &kernel, const Config &base,
                         std::span<const CtaShape> shapes, std::vector<Config> &out) {
  for (const CtaShape &s : shapes) {
    Config c = base;
    c.warps = s.warps_k * s.warps_n;
    c.warps_k = s.warps_k;
    c.split_k = s.split_k;
    c.async = 0;
    if (c.warps * 32 > kernel.max_threads ||
        split_k_shared_bytes(kernel, c.warps, false) > kSplitKMaxSharedBytes)
      continue;
    out.push_back(c);
    if (kernel.async_fn &&
        split_k_shared_bytes(kernel, c.warps, true) <= kSplitKMaxAsyncSharedBytes) {
      c.async = 1;
      out.push_back(c);
    }
  }
}

// True when `config` is one of `compiled` (Config has operator==).
template <class Config>
bool is_compiled(const Config &config, const std::vector<Config> &compiled) {
  return std::find(compiled.begin(), compiled.end(), config) != compiled.end();
}

// What cudaFuncGetAttributes says of `fns` (the worst of them; null entries, forms a slot does
// not compile, are skipped), plus the config's dynamic shared memory. Empty resources when an
// attribute query fails.
KernelResources split_k_resources(std::span<const void *const> fns, size_t dynamic_shared_bytes);

// Sets the fields every family's kernel parameters share: the problem (rows, n, k) and how the
// CTA splits (warps_n, warps_k, split_k).
template <class Params>
void set_split_k_params(Params &p, const SplitKCta &cta, int rows, int n, int k) {
  p.rows = rows;
  p.n = n;
  p.k = k;
  p.warps_n = cta.warps / cta.warps_k;
  p.warps_k = cta.warps_k;
  p.split_k = cta.split_k;
}

// The tactic of a family config: `kernel:rows_per_cta=..,warps=..,warps_k=..,
// outputs_per_warp=..,split_k=..`, then the op's own fields (`extra_names` = `extra_values`),
// then `async=1` only where set, so that configs without the ring keep their spelling.
// REQUIRES: extra_names.size() == extra_values.size().
Tactic split_k_tactic(const std::string &kernel, const SplitKCta &cta,
                      std::span<const char *const> extra_names, std::span<const int> extra_values);
// Reads what split_k_tactic wrote into `cta` and returns the extra fields' values, in order.
// Throws Error(invalid_argument) unless the tactic's parameters are exactly those fields.
std::vector<int> parse_split_k_tactic(const Tactic &tactic,
                                      std::span<const char *const> extra_names, SplitKCta &cta);

// Candidate pruning shared by the family: a CTA of more than `min_rows_per_cta` rows that pads
// `rows` to twice or more, or more than two row groups re-reading the weights, is dominated by
// another compiled config. False with the reason in *reason (when not null).
bool split_k_rows_fit(const SplitKCta &cta, int rows, int min_rows_per_cta, std::string *reason);
// The weights-once paths (`path`: "stream", "ring") take every activation row in the CTA's one
// row group; a CTA of more than 8 rows that pads `rows` to twice or more is dominated by a
// smaller one. False with the reason in *reason (when not null).
bool weights_once_rows_fit(const SplitKCta &cta, int rows, const char *path, std::string *reason);

// Enqueues `params` (the kernel's one parameter struct) on `stream` with `cta`'s grid and
// shared memory: the ring kernel when cta.async, whose shared memory must fit the device's
// opt-in limit (cudaErrorInvalidConfiguration otherwise). `fn` overrides kernel.fn /
// kernel.async_fn when a family has several entry points per slot (nullptr: the slot's).
// Refuses (invalid value) a cta the kernel cannot take. Never synchronises. `dependent`: a
// programmatic dependent launch (launch_split_k). `extra_shared_bytes`: dynamic shared memory
// the kernel takes after its partials (and ring) for this launch alone.
LaunchStatus launch_split_k_kernel(const SplitKKernel &kernel, const SplitKCta &cta, int n,
                                   int rows, void *params, void *stream, const void *fn = nullptr,
                                   bool dependent = false, size_t extra_shared_bytes = 0);

} // namespace hone::cuda
