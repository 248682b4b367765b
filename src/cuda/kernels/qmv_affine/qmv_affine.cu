// qmv.affine kernels: the compiled kernel table, the config list built on it, resources and
// launch. Shape logic (tactics, defaults, can_implement) lives in qmv_affine_config.cpp.
//
// Tactic fields (`qmv.affine.mma:...`):
//   rows_per_cta      activation rows per CTA: 8, 16 or 32; more rows run as more CTAs along
//                     grid.z, which re-read the same packed weights (mostly from L2)
//   warps             warps per CTA = warps_n x warps_k
//   warps_k           warps of one CTA that take adjacent K slices
//   outputs_per_warp  weight rows per warp: 16 or 32 (one or two m16 tiles)
//   split_k           CTAs of one thread-block cluster that take further K slices (sm_90)
//   async             (optional, default 0) 1: the packed words of the next S chunks stream
//                     through a lane-private cp.async ring in shared memory instead of a
//                     register double buffer; bit-identical to async=0
//   ahead             (optional, default 0, after async) 2 or 4: the register pipeline holds
//                     that many chunks of weights in flight per warp (J), where a kernel of that
//                     depth is compiled beside the slot's own; bit-identical to ahead=0
//   deep              (optional, default 0, after ahead) 2: the register pipeline holds two
//                     blocks of words ahead, the group parameters staged in shared memory (the
//                     DEEP twin of qmv_affine.cuh; int4 g64, 8-row CTAs, one m16 tile, ahead=2);
//                     bit-identical to deep=0
//   shallow           (optional, default 0, after deep) 2 or 4: the shallow kernel, a warp's
//                     whole K slice (1-2 or 3-4 chunks) in registers at once, no pipeline (int4,
//                     8-row CTAs, one m16 tile or, at outputs_per_warp 8, its lower half, rows
//                     1-8); bit-identical to the mma configs of its k_slices
// `qmv.affine.stream:...` (weights once, persistent grid; qmv_affine.cuh) reads the same fields
// as: rows_per_cta 8, 16 or 32 (rows <= rows_per_cta), warps = warps_k = consumer warps = K
// slices (plus one producer warp), outputs_per_warp 16 (weight rows per tile), split_k 1, and
// adds
//   stages            ring depth: shared-memory stages of 16 rows x warps x 256 bytes
//   ctas_per_sm       resident CTAs per SM of the persistent grid (1 or 2)
// `qmv.affine.ring:...` (qmv_affine_ring.h) has the stream path's fields and the mma path's K
// order.
// k_slices = warps_k x split_k fixes the K summation order (see qmv_affine.cuh): configs of one
// path with equal k_slices give bit-identical rows for every row count.
#include "cuda/kernels/qmv_affine/qmv_affine.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "cuda/kernels/common/split_k_family.h"
#include "cuda/kernels/common/split_k_launch.h"
#include "cuda/kernels/common/weight_stream.h"

#include "cuda/kernels/qmv_affine/qmv_affine.cuh"
#include "cuda/kernels/qmv_affine/qmv_affine_ring.h"
#include "cuda/kernels/qmv_affine/qmv_affine_shape.h"

namespace hone::cuda {

namespace {

using qmv_affine_detail::NormParams;
using qmv_affine_detail::Params;
using KernelFn = void (*)(Params);
using NormKernelFn = void (*)(NormParams);

// One compiled kernel: the template parameters it fixes, then its slot in the family table.
// Each slot has an entry point per pipeline and dequantisation (qmv_affine_chunk_groups: per
// weight, factored with one group per chunk, factored with two at 4 bits; null at 8 bits); the
// slot's fn / async_fn are the per-weight ones.
struct KernelEntry {
  int bits;
  int rows_per_cta;     // NT * 8
  int outputs_per_warp; // MT * 16
  int ahead;            // J where the slot has a kernel of its own beside it (`ahead=J`), else 0
  SplitKKernel kernel;  // ring: S x 2 MT x 512 bytes per warp
  KernelFn fn[3];       // [chunk groups] the register-pipelined kernel
  KernelFn async_fn[3]; // [chunk groups] the same kernel with the cp.async ring
  // [chunk groups] fn with the SiLU epilogue (split_k_reduce.cuh): the 4-bit slots of rows
  // 1-8 (a decode batch), register pipeline only; null elsewhere.
  KernelFn silu_fn[3];
  // The per-weight fn and silu_fn that stage the group parameters in shared memory (the
  // parameter-vector kernels of J 2: 4 bits, one activation tile; staged_words); null elsewhere.
  // The J 4 kernels' twins measured slower everywhere (staged_words), so none is compiled.
  KernelFn staged_fn;
  KernelFn staged_silu_fn;
  // The DEEP twins of staged_fn and staged_silu_fn (`deep=2`: two blocks of words ahead; the
  // one-tile J 2 slot only); null elsewhere.
  KernelFn staged_deep_fn;
  KernelFn staged_deep_silu_fn;
  // The per-weight async_fn that stages them (4 bits); null elsewhere.
  KernelFn staged_async_fn;
  // The per-weight fn whose last CTA normalises y's rows (the NORM twin; the one-tile J 2 slot
  // only, the decode default of o_proj and down at one row); null elsewhere.
  NormKernelFn norm_fn;
};

// ALT: a register pipeline of another J beside the slot's own, spelled `ahead=J`. It has no
// cp.async twin: the cp.async kernels stream S chunks ahead whatever J is.
template <int BITS, int NT, int MT, int J, int S, int MAX_THREADS, bool ALT = false>
constexpr KernelEntry entry() {
  using qmv_affine_detail::qmv_affine_mma_kernel;
  constexpr KernelFn fn0 = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 0>;
  constexpr KernelFn fn1 = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 1>;
  KernelFn fn2 = nullptr, async0 = nullptr, async1 = nullptr, async2 = nullptr;
  KernelFn silu0 = nullptr, silu1 = nullptr, silu2 = nullptr;
  KernelFn staged = nullptr, staged_silu = nullptr, staged_async = nullptr;
  KernelFn staged_deep = nullptr, staged_deep_silu = nullptr;
  NormKernelFn norm = nullptr;
  if constexpr (BITS == 4 && NT == 1 && MT == 1 && J == 2 && ALT)
    norm = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 0, false, false, false, true>;
  if constexpr (BITS == 4 && !ALT)
    staged_async = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, S, 0, false, true>;
  if constexpr (BITS == 4 && NT == 1 && J == 2) {
    staged = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 0, false, true>;
    staged_silu = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 0, true, true>;
    if constexpr (MT == 1) {
      staged_deep = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 0, false, true, true>;
      staged_deep_silu =
          &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 0, true, true, true>;
    }
  }
  if constexpr (BITS == 4 && NT == 1) {
    silu0 = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 0, true>;
    silu1 = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 1, true>;
    silu2 = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 2, true>;
  }
  if constexpr (!ALT) {
    async0 = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, S, 0>;
    async1 = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, S, 1>;
  }
  if constexpr (BITS == 4) {
    fn2 = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, 0, 2>;
    if constexpr (!ALT) {
      // Eight m16n8 tiles in two-group chunks spill at two cp.async stages (96 bytes at 255
      // registers); one stage fits (the slot's shared memory is sized for S, of which it uses
      // part).
      constexpr int kS2 = NT * MT >= 8 ? 1 : S;
      async2 = &qmv_affine_mma_kernel<BITS, NT, MT, J, MAX_THREADS, kS2, 2>;
    }
  }
  return {BITS,
          NT * 8,
          MT * 16,
          ALT ? J : 0,
          {reinterpret_cast<const void *>(fn0), reinterpret_cast<const void *>(async0), MAX_THREADS,
           MT * NT * 128, ALT ? 0 : S * 2 * MT * 512},
          {fn0, fn1, fn2},
          {async0, async1, async2},
          {silu0, silu1, silu2},
          staged,
          staged_silu,
          staged_deep,
          staged_deep_silu,
          staged_async,
          norm};
}

// NOTE: J (chunks of weights in flight per warp) is sized so that the weight fragments, their
// prefetch, the activation fragments and the accumulators fit the register cap of
// MAX_THREADS without spilling (checked with -Xptxas -v). <4, 4, 2> (32 activation rows, two
// m16 tiles sharing each activation fragment: the weights read once for 17-32 rows, at half the
// activation loads per weight of <4, 4, 1>) takes 234-255 registers, no spills, at 2 stages;
// <8, 4, 2> 178-228 at 2 stages (at 4 its cp.async kernel spilled 152 bytes).
// The last six (ALT) are deeper register pipelines beside their slot's own (`ahead=J`): the
// rows-1 kernels wait on their loads (docs/notes/qmv_affine.md, v9 measured). At the 256-thread
// cap they do not spill. <4, 2, 2> at J 2 (190 registers per weight, 244-248 factored): the
// 16-row default's slot with two chunks of weights in flight a warp, 3.68 instructions a weight
// in its main loop against 3.95 at J 1, which copies each chunk's fragments into the next
// (notes v19).
// <BITS, NT, MT, J, S, MAX_THREADS[, ALT]>
const KernelEntry kKernels[] = {
    entry<4, 1, 1, 1, 4, 512>(),       entry<4, 1, 2, 2, 4, 256>(),
    entry<4, 2, 1, 2, 8, 256>(),       entry<4, 2, 2, 1, 4, 256>(),
    entry<4, 4, 1, 1, 4, 256>(),       entry<4, 4, 2, 1, 2, 256>(),
    entry<8, 1, 1, 2, 4, 512>(),       entry<8, 1, 2, 2, 4, 256>(),
    entry<8, 2, 1, 2, 8, 256>(),       entry<8, 2, 2, 1, 4, 256>(),
    entry<8, 4, 1, 1, 4, 256>(),       entry<8, 4, 2, 1, 2, 256>(),
    entry<4, 1, 1, 2, 4, 256, true>(), entry<4, 1, 1, 4, 4, 256, true>(),
    entry<4, 2, 1, 4, 8, 256, true>(), entry<4, 2, 2, 2, 4, 256, true>(),
    entry<4, 4, 1, 2, 4, 256, true>(), entry<8, 1, 1, 4, 4, 256, true>(),
};

const KernelEntry *find_kernel(const QmvAffineConfig &c, int bits) {
  for (const KernelEntry &e : kKernels)
    if (e.bits == bits && e.rows_per_cta == c.rows_per_cta &&
        e.outputs_per_warp == c.outputs_per_warp && e.ahead == c.ahead && c.shallow == 0 &&
        c.path == KernelPath::mma)
      return &e;
  return nullptr;
}

// The shallow kernels (`shallow=C`, qmv_affine.cuh): <C, GROUPS, MAX_THREADS, MIN_BLOCKS>, 4 bits,
// 8-row CTAs of one m16 tile a warp. MIN_BLOCKS holds the registers to what lets a grid of 8-warp
// CTAs hold more warps an SM than the register pipeline's 98-130 registers allow: 64 at C 2 (two
// 16-warp CTAs or four 8-warp ones). At C 4 three 8-warp CTAs (80 registers) spilled 4 bytes
// per weight and 28 factored (ptxas, sm_90), so C 4 keeps two CTAs' 128 (96 used): one round
// trip a warp, not more warps.
struct ShallowEntry {
  int chunks;          // C
  int rows;            // weight rows a warp: 16, or 8 (the tile's upper half zero)
  SplitKKernel kernel; // partials of one m16 x n8 tile a warp
  KernelFn fn[2];      // [chunk groups]: per weight, factored with one group a chunk
};
template <int C, int ROWS, int MAX_THREADS, int MIN_BLOCKS, int FACTORED_MIN_BLOCKS>
constexpr ShallowEntry shallow_entry() {
  using qmv_affine_detail::qmv_affine_shallow_kernel;
  constexpr KernelFn fn0 = &qmv_affine_shallow_kernel<C, 0, ROWS, MAX_THREADS, MIN_BLOCKS>;
  return {C,
          ROWS,
          {reinterpret_cast<const void *>(fn0), nullptr, MAX_THREADS, 128, 0},
          {fn0, &qmv_affine_shallow_kernel<C, 1, ROWS, MAX_THREADS, FACTORED_MIN_BLOCKS>}};
}
// The 8-row warps (`outputs_per_warp=8`) are for the matrices of a few hundred KB at one row,
// where the register pipeline's grid holds one warp a scheduler and its dequantisation's
// dependent chain goes unhidden (docs/notes/qmv_affine.md, v26).
const ShallowEntry kShallowKernels[] = {
    shallow_entry<2, 16, 512, 2, 2>(), shallow_entry<4, 16, 256, 2, 2>(),
    shallow_entry<2, 8, 512, 2, 2>(), shallow_entry<4, 8, 256, 2, 2>()};

const ShallowEntry *find_shallow_kernel(const QmvAffineConfig &c, int bits) {
  if (bits != 4 || c.path != KernelPath::mma || c.rows_per_cta != 8 || c.ahead != 0 ||
      c.deep != 0 || c.async != 0)
    return nullptr;
  for (const ShallowEntry &e : kShallowKernels)
    if (e.chunks == c.shallow && e.rows == c.outputs_per_warp)
      return &e;
  return nullptr;
}

// The stream kernels: <BITS, NT>, 16 weight rows per tile.
struct StreamEntry {
  int bits;
  int rows_per_cta; // NT * 8
  const void *fn;
};
template <int BITS, int NT> constexpr StreamEntry stream_entry() {
  return {BITS, NT * 8,
          reinterpret_cast<const void *>(&qmv_affine_detail::qmv_affine_stream_kernel<BITS, NT>)};
}
const StreamEntry kStreamKernels[] = {
    stream_entry<4, 1>(), stream_entry<4, 2>(), stream_entry<4, 4>(),
    stream_entry<8, 1>(), stream_entry<8, 2>(), stream_entry<8, 4>(),
};

const StreamEntry *find_stream_kernel(const QmvAffineConfig &c, int bits) {
  for (const StreamEntry &e : kStreamKernels)
    if (e.bits == bits && e.rows_per_cta == c.rows_per_cta && c.outputs_per_warp == 16)
      return &e;
  return nullptr;
}

// The grouped kernels (4 bits): <NS, MT, J, G, MAX_THREADS>, NS spread n8 tiles, G = 128 / group
// columns per row. A config names rows_per_cta; the kernel that runs it has NS = rows_per_cta x G
// / 8 (at least 1) for the launch's group: G = 1 and 2 at 4 rows and G = 1 at 8 rows take one
// tile, G = 2 at 8 rows and G = 4 at 4 rows two (G = 4 at 8 rows needs four: refused).
struct GroupedEntry {
  int outputs_per_warp; // MT * 16
  SplitKKernel kernel;  // partials sized for two spread tiles
  KernelFn fn[3][2];    // [log2 G][NS - 1]; nullptr where no config runs it
};
template <int MT, int J> constexpr GroupedEntry grouped_entry() {
  using qmv_affine_detail::qmv_affine_grouped_kernel;
  constexpr KernelFn g1 = &qmv_affine_grouped_kernel<1, MT, J, 1, 256>;
  return {MT * 16,
          {reinterpret_cast<const void *>(g1), nullptr, 256, MT * 2 * 128, 0},
          {{g1, nullptr},
           {&qmv_affine_grouped_kernel<1, MT, J, 2, 256>,
            &qmv_affine_grouped_kernel<2, MT, J, 2, 256>},
           {nullptr, &qmv_affine_grouped_kernel<2, MT, J, 4, 256>}}};
}
// NOTE: J (chunks of weights in flight) as in kKernels: sized to stay clear of spills.
const GroupedEntry kGroupedKernels[] = {grouped_entry<1, 2>(), grouped_entry<2, 1>()};
constexpr int kGroupedRowsPerCta[] = {4, 8};

const GroupedEntry *find_grouped_kernel(const QmvAffineConfig &c, int bits) {
  if (bits != 4 || c.path != KernelPath::grouped)
    return nullptr;
  for (const GroupedEntry &e : kGroupedKernels)
    if (e.outputs_per_warp == c.outputs_per_warp)
      for (int rows : kGroupedRowsPerCta)
        if (rows == c.rows_per_cta)
          return &e;
  return nullptr;
}

size_t stream_shared_bytes(const QmvAffineConfig &c) {
  return static_cast<size_t>(
      qmv_affine_detail::stream_shared_bytes(1, c.rows_per_cta / 8, c.warps_k, c.stages));
}

// The kernel parameters the mma and grouped paths share.
Params mma_params(const QmvAffineConfig &config, const QmvAffineArgs &args) {
  Params p{};
  p.x = static_cast<const uint16_t *>(args.x);
  p.q = args.q;
  p.scales = static_cast<const uint16_t *>(args.scales);
  p.biases = static_cast<const uint16_t *>(args.biases);
  p.y = static_cast<uint16_t *>(args.y);
  set_split_k_params(p, config, args.rows, args.n, args.k);
  p.groups_per_row = args.k / args.group;
  p.group_shift = std::countr_zero(static_cast<unsigned>(args.group));
  p.slice_chunks = qmv_affine_slice_chunks(config, args.k, args.bits);
  return p;
}

// The staged twin of `config`'s kernel for a launch with `args`, or null where none is compiled.
KernelFn staged_twin(const KernelEntry &e, const QmvAffineConfig &config,
                     const QmvAffineArgs &args) {
  if (config.deep > 0)
    return config.async ? nullptr : args.silu_inter > 0 ? e.staged_deep_silu_fn : e.staged_deep_fn;
  return args.silu_inter > 0 ? e.staged_silu_fn : config.async ? e.staged_async_fn : e.staged_fn;
}

// The dynamic shared memory a CTA's staged group parameters take at `words` words a row.
size_t staged_bytes(const KernelEntry &e, const QmvAffineConfig &config, int words) {
  return static_cast<size_t>(config.warps) * static_cast<size_t>(e.outputs_per_warp) *
         static_cast<size_t>(words) * 4;
}

// The 32-bit words a weight row takes in the stage at `slice_chunks` chunks a slice: D pair words
// of scales, then D of biases, then 2 words of padding.
int staged_row_words(int slice_chunks) { return 2 * slice_chunks + 2; }

// Whether `words` a row of staged parameters fit the slot's shared memory beside its partials
// (and its ring, for a cp.async config).
bool staged_fits(const KernelEntry &e, const QmvAffineConfig &config, int words) {
  const size_t limit = config.async ? kSplitKMaxAsyncSharedBytes : kSplitKMaxSharedBytes;
  return split_k_shared_bytes(e.kernel, config.warps, config.async != 0) +
             staged_bytes(e, config, words) <=
         limit;
}

// The 32-bit words a weight row takes in a warp's staged group parameters (Params::staged_words;
// qmv_affine.cuh, the STAGE twins), or 0 where the launch does not stage them. Staged: 4 bits in
// the per-weight form, group 64, where the slot compiles a twin (the register pipeline's J 2
// kernels of one activation tile; every cp.async ring kernel), slices starting on a pair
// of chunks, K a multiple of two chunks, the arrays 8-byte aligned, and the shared memory within
// the slot's limit (the register pipeline: the default 48 KB, no opt-in, so the CTAs an SM
// holds are still set by the registers), and the twin without spills.
// The rule (stage_parameters -1), register pipeline: on grids of two CTAs an SM or more, and
// only where the staging's one wait is paid back: slices of 32 chunks or more, or of 16 or more
// at 4 rows or more. Measured against the kernels without it on an H100, int4 g64, rows 1-8
// (docs/benchmark_results/2026-12-06-h100-4 call6, the mean of two rounds): at J 2, 0.91-0.97 of
// the time at 32 chunks (28672 x 4096's default), 0.91-1.00 at 16-28 chunks and 4-8 rows but
// 1.01-1.04 at one row there for one m16 tile, 1.05-1.16 (geomean) at 2-8 chunks; every J 4
// kernel 1.04-1.17. Under this rule (call7): 0.910-1.008 over 816 cells, geomean 0.999.
// The cp.async ring: slices of 4 chunks or more (its first stage waits for the staged group
// anyway, so the staging adds no wait of its own). Forced on against off on an H100, int4 g64,
// the four Llama-3.1-8B linears at rows 1-16, every cp.async config (the mean of two rounds,
// docs/benchmark_results/2026-12-06-h100-5 call2): geomean 0.91-0.97 by slice length at 4-112
// chunks (0.95-0.96 at 4), 0.98-1.01 at 2; the fastest config of a cell 0.95 at 16 rows on
// 6144 x 4096 and 0.91 on 4096 x 4096.
// A row holds staged_row_words(D) words, D = the slice's chunks.
int staged_words(const KernelEntry &e, const QmvAffineConfig &config, const QmvAffineArgs &args,
                 const Params &p) {
  const auto bases =
      reinterpret_cast<uintptr_t>(args.scales) | reinterpret_cast<uintptr_t>(args.biases);
  if (!staged_twin(e, config, args) || args.stage_parameters == 0 || p.factored != 0 ||
      args.group != 64 || p.groups_per_row % 4 != 0 || bases % 8 != 0 || p.slice_chunks % 2 != 0)
    return 0;
  if (args.stage_parameters < 0 && config.deep == 0) { // a deep config stages where it can
    if (config.async) {
      if (p.slice_chunks < 4)
        return 0;
    } else {
      const long long ctas = split_k_grid_ctas(
          {.n = args.n,
           .rows = args.rows,
           .outputs_per_cta = config.warps / config.warps_k * config.outputs_per_warp,
           .rows_per_cta = config.rows_per_cta,
           .split_k = config.split_k});
      const int sms = current_device_sms();
      if (sms <= 0 || ctas < 2LL * sms ||
          !(p.slice_chunks >= 32 || (p.slice_chunks >= 16 && args.rows >= 4)))
        return 0;
    }
  }
  const int words = staged_row_words(p.slice_chunks);
  if (!staged_fits(e, config, words))
    return 0;
  // The twin is held to the spill rule as its slot's kernels are: one that spills is never
  // launched, and the slot's own kernel runs unstaged.
  return kernel_spill_free(reinterpret_cast<const void *>(staged_twin(e, config, args))) ? words
                                                                                         : 0;
}

std::vector<QmvAffineConfig> build_configs(int bits) {
  std::vector<QmvAffineConfig> out;
  for (const KernelEntry &e : kKernels)
    if (e.bits == bits) {
      QmvAffineConfig base;
      base.rows_per_cta = e.rows_per_cta;
      base.outputs_per_warp = e.outputs_per_warp;
      base.ahead = e.ahead;
      const size_t first = out.size();
      add_split_k_configs(e.kernel, base, kNarrowMmaCtaShapes, out);
      add_split_k_configs(e.kernel, base, kMmaCtaShapes, out);
      if (e.staged_deep_fn) // `deep=2`: each of the slot's register-pipeline configs once more
        for (size_t i = first, end = out.size(); i < end; ++i)
          if (out[i].async == 0) {
            QmvAffineConfig deep = out[i];
            deep.deep = 2;
            out.push_back(deep);
          }
    }
  if (bits == 4)
    for (const ShallowEntry &e : kShallowKernels) {
      QmvAffineConfig base;
      base.shallow = e.chunks;
      base.outputs_per_warp = e.rows;
      add_split_k_configs(e.kernel, base, kMmaCtaShapes, out);
    }
  if (bits == 4)
    for (const GroupedEntry &e : kGroupedKernels)
      for (int rows : kGroupedRowsPerCta) {
        QmvAffineConfig base;
        base.path = KernelPath::grouped;
        base.rows_per_cta = rows;
        base.outputs_per_warp = e.outputs_per_warp;
        add_split_k_configs(e.kernel, base, kNarrowMmaCtaShapes, out);
        add_split_k_configs(e.kernel, base, kMmaCtaShapes, out);
      }
  for (const StreamEntry &e : kStreamKernels)
    if (e.bits == bits) {
      QmvAffineConfig base;
      base.rows_per_cta = e.rows_per_cta;
      base.outputs_per_warp = 16;
      append_stream_configs(base, stream_shared_bytes, out);
    }
  append_qmv_affine_ring_configs(bits, out);
  return out;
}

} // namespace

const std::vector<QmvAffineConfig> &qmv_affine_configs(int bits) {
  static const std::vector<QmvAffineConfig> configs4 = build_configs(4);
  static const std::vector<QmvAffineConfig> configs8 = build_configs(8);
  static const std::vector<QmvAffineConfig> none;
  return bits == 4 ? configs4 : bits == 8 ? configs8 : none;
}

KernelResources qmv_affine_resources(const QmvAffineConfig &config, int bits) {
  if (config.path == KernelPath::ring)
    return qmv_affine_ring_resources(config, bits);
  if (config.path == KernelPath::stream) {
    const StreamEntry *s = find_stream_kernel(config, bits);
    if (!s)
      return {};
    const void *fns[] = {s->fn};
    return split_k_resources(fns, stream_shared_bytes(config));
  }
  if (config.path == KernelPath::grouped) {
    const GroupedEntry *e = find_grouped_kernel(config, bits);
    if (!e)
      return {};
    // The worst of the slot's kernels (one per group size and spread-tile count).
    const void *all[] = {reinterpret_cast<const void *>(e->fn[0][0]),
                         reinterpret_cast<const void *>(e->fn[1][0]),
                         reinterpret_cast<const void *>(e->fn[1][1]),
                         reinterpret_cast<const void *>(e->fn[2][1])};
    return split_k_resources(all, split_k_shared_bytes(e->kernel, config.warps, false));
  }
  if (config.shallow > 0) {
    const ShallowEntry *e = find_shallow_kernel(config, bits);
    if (!e)
      return {};
    const void *all[] = {reinterpret_cast<const void *>(e->fn[0]),
                         reinterpret_cast<const void *>(e->fn[1])};
    return split_k_resources(all, split_k_shared_bytes(e->kernel, config.warps, false));
  }
  const KernelEntry *e = find_kernel(config, bits);
  if (!e)
    return {};
  // The worst of the config's kernels (every dequantisation it compiles; for `deep=2` its DEEP
  // twins too, so that the spill rule sees the kernels such a config launches).
  const KernelFn *fns = config.async ? e->async_fn : e->fn;
  const bool deep = config.deep > 0 && !config.async;
  const void *all[] = {reinterpret_cast<const void *>(fns[0]),
                       reinterpret_cast<const void *>(fns[1]),
                       reinterpret_cast<const void *>(fns[2]),
                       reinterpret_cast<const void *>(deep ? e->staged_deep_fn : nullptr),
                       reinterpret_cast<const void *>(deep ? e->staged_deep_silu_fn : nullptr)};
  return split_k_resources(all, split_k_shared_bytes(e->kernel, config.warps, config.async != 0));
}

namespace {
// The SiLU epilogue's kernel of `config` at this format and k, or null where none is compiled.
KernelFn silu_kernel(const QmvAffineConfig &config, int bits, int group, int k, int inter) {
  if (config.path != KernelPath::mma || config.async || inter <= 0 || inter % 8 != 0)
    return nullptr;
  const KernelEntry *e = find_kernel(config, bits);
  const int groups = qmv_affine_launch_chunk_groups(-1, bits, group, k);
  return e && groups >= 0 ? e->silu_fn[groups] : nullptr;
}
} // namespace

bool qmv_affine_silu_epilogue_compiled(const QmvAffineConfig &config, int bits, int group, int k,
                                       int inter) {
  return silu_kernel(config, bits, group, k, inter) != nullptr;
}

bool qmv_affine_silu_epilogue_fits(const QmvAffineConfig &config, int bits, int group, int k,
                                   int inter) {
  const KernelFn fn = silu_kernel(config, bits, group, k, inter);
  // The spill rule holds for the epilogue's kernels too: one that spills is never launched.
  return fn && kernel_spill_free(reinterpret_cast<const void *>(fn));
}

bool qmv_affine_deep_stage_fits(const QmvAffineConfig &config, int k, int bits) {
  const KernelEntry *e = find_kernel(config, bits);
  if (!e || !e->staged_deep_fn || config.async)
    return false;
  return staged_fits(*e, config, staged_row_words(qmv_affine_slice_chunks(config, k, bits)));
}

bool qmv_affine_norm_fits(const QmvAffineConfig &config, const QmvAffineArgs &args,
                          std::string *reason) {
  auto no = [&](std::string why) {
    if (reason)
      *reason = std::move(why);
    return false;
  };
  const KernelEntry *e = config.path == KernelPath::mma && !config.async && config.deep == 0
                             ? find_kernel(config, args.bits)
                             : nullptr;
  if (!e || !e->norm_fn)
    return no("no NORM twin for " + config.to_tactic().str() +
              " (the per-weight 4-bit one-tile ahead=2 register pipeline has one)");
  if (args.silu_inter != 0 || args.chunk_groups != -1)
    return no("the NORM twin has no SiLU epilogue and the shape's own dequantisation");
  if (args.rows < 1 || args.rows > 8)
    return no("rows=" + std::to_string(args.rows) + " outside 1..8 (the last CTA's rows)");
  const int threads = config.warps * 32;
  if (!rmsnorm_row::grid_norm_fits(threads, args.n, args.norm.lanes))
    return no("a CTA of " + std::to_string(threads) + " threads cannot sum hidden=" +
              std::to_string(args.n) + " in the order of lanes=" + std::to_string(args.norm.lanes));
  const auto bases =
      reinterpret_cast<uintptr_t>(args.y) | reinterpret_cast<uintptr_t>(args.norm.residual) |
      reinterpret_cast<uintptr_t>(args.norm.residual_out) |
      reinterpret_cast<uintptr_t>(args.norm.w) | reinterpret_cast<uintptr_t>(args.norm.out);
  if (bases % 16 != 0 || args.norm.w == nullptr || args.norm.out == nullptr ||
      args.norm.counter == nullptr || (args.norm.residual && !args.norm.residual_out))
    return no("the norm's tensors must be 16-byte aligned, with w, out, a counter, and "
              "residual_out beside a residual");
  if (args.k < 32 || args.k % 32 != 0 || args.group <= 0 || args.k % args.group != 0 ||
      config.warps_k < 1 || config.split_k < 1)
    return no("shape");
  Params p = mma_params(config, args);
  p.factored = qmv_affine_launch_chunk_groups(-1, args.bits, args.group, args.k);
  if (p.factored != 0)
    return no("the shape's dequantisation is factored (the NORM twin is per weight)");
  if (staged_words(*e, config, args, p) > 0)
    return no("the launch stages its group parameters (the NORM twin does not)");
  if (!kernel_spill_free(reinterpret_cast<const void *>(e->norm_fn)))
    return no("the NORM twin spills");
  return true;
}

bool qmv_affine_stages_parameters(const QmvAffineConfig &config, const QmvAffineArgs &args) {
  const KernelEntry *e = find_kernel(config, args.bits);
  if (!e || args.k < 32 || args.k % 32 != 0 || args.group <= 0 || args.k % args.group != 0 ||
      config.warps_k < 1 || config.split_k < 1)
    return false;
  Params p = mma_params(config, args);
  p.factored = qmv_affine_launch_chunk_groups(args.chunk_groups, args.bits, args.group, args.k);
  return p.factored >= 0 && staged_words(*e, config, args, p) > 0;
}

namespace {
// What a launch of the mma path's kernels (the register pipeline's and the shallow ones) needs
// of the shape and the CTA: K a multiple of 32, 32-bit offsets, a compiled group, a K split.
bool mma_launch_shape_fits(const QmvAffineConfig &config, const QmvAffineArgs &args) {
  return args.k >= 32 && args.k % 32 == 0 && qmv_affine_offsets_fit(args.n, args.k, args.bits) &&
         (args.group == 32 || args.group == 64 || args.group == 128) && args.k % args.group == 0 &&
         config.warps_k >= 1 && config.split_k >= 1;
}
} // namespace

LaunchStatus qmv_affine_launch(const QmvAffineConfig &config, const QmvAffineArgs &args,
                               void *stream) {
  if (args.silu_inter != 0 &&
      (!qmv_affine_silu_epilogue_fits(config, args.bits, args.group, args.k, args.silu_inter) ||
       args.n != 2 * args.silu_inter || args.chunk_groups != -1))
    return LaunchStatus::invalid_value();
  if (config.path == KernelPath::ring)
    return qmv_affine_ring_launch(config, args, stream);
  if (config.path == KernelPath::stream) {
    const StreamEntry *s = find_stream_kernel(config, args.bits);
    const int chunk_k = qmv_affine_chunk_k(args.bits);
    const int chunks = (args.k + chunk_k - 1) / chunk_k;
    if (!s || args.k < 32 || args.k % 32 != 0 ||
        (args.group != 32 && args.group != 64 && args.group != 128) || args.k % args.group != 0 ||
        args.n < 1 || !stream_launch_fits(config, config, args.rows, chunks))
      return LaunchStatus::invalid_value();
    qmv_affine_detail::StreamParams p;
    static_cast<StreamShape &>(p) = stream_shape(args.x, args.y, args.rows, args.n, args.k,
                                                 args.k / 8 * args.bits, 16, config, config);
    p.q = args.q;
    p.scales = static_cast<const uint16_t *>(args.scales);
    p.biases = static_cast<const uint16_t *>(args.biases);
    p.groups_per_row = args.k / args.group;
    p.group_shift = std::countr_zero(static_cast<unsigned>(args.group));
    return launch_stream_kernel(s->fn, config.warps_k, stream_shared_bytes(config), p.tiles,
                                config.ctas_per_sm, &p, stream, args.chain.dependent);
  }
  if (config.path == KernelPath::grouped) {
    const GroupedEntry *e = find_grouped_kernel(config, args.bits);
    const int cols = args.group > 0 ? 128 / args.group : 0;
    const int ns = std::max(1, config.rows_per_cta * cols / 8);
    if (!e || args.k < 128 || args.k % 128 != 0 ||
        !qmv_affine_offsets_fit(args.n, args.k, args.bits) ||
        (args.group != 32 && args.group != 64 && args.group != 128) || ns > 2 ||
        config.warps_k < 1 || config.split_k < 1 ||
        (cols > 1 && !qmv_affine_parameter_pairs_aligned(args.scales, args.biases)))
      return LaunchStatus::invalid_value();
    Params p = mma_params(config, args);
    p.rows_per_cta = config.rows_per_cta;
    const KernelFn fn = e->fn[std::countr_zero(static_cast<unsigned>(cols))][ns - 1];
    if (!fn)
      return LaunchStatus::invalid_value();
    return launch_split_k_kernel(e->kernel, config, args.n, args.rows, &p, stream,
                                 reinterpret_cast<const void *>(fn), args.chain.dependent);
  }
  if (config.shallow > 0) {
    const ShallowEntry *e = find_shallow_kernel(config, args.bits);
    const int groups =
        qmv_affine_launch_chunk_groups(args.chunk_groups, args.bits, args.group, args.k);
    if (!e || args.norm.out != nullptr || args.rows < 1 || args.rows > 8 || groups < 0 ||
        groups > 1 || !mma_launch_shape_fits(config, args))
      return LaunchStatus::invalid_value();
    Params p = mma_params(config, args);
    p.factored = groups;
    if (!qmv_affine_shallow_slice_fits(config.shallow, p.slice_chunks))
      return LaunchStatus::invalid_value();
    return launch_split_k_kernel(e->kernel, config, args.n, args.rows, &p, stream,
                                 reinterpret_cast<const void *>(e->fn[groups]),
                                 args.chain.dependent);
  }
  const KernelEntry *e = find_kernel(config, args.bits);
  if (!e || !mma_launch_shape_fits(config, args))
    return LaunchStatus::invalid_value();
  Params p = mma_params(config, args);
  p.factored = qmv_affine_launch_chunk_groups(args.chunk_groups, args.bits, args.group, args.k);
  p.silu_inter = args.silu_inter;
  const KernelFn *fns = args.silu_inter > 0 ? e->silu_fn : config.async ? e->async_fn : e->fn;
  KernelFn fn = p.factored < 0 ? nullptr : fns[p.factored];
  if (!fn || (p.factored == 2 && !qmv_affine_parameter_pairs_aligned(args.scales, args.biases)))
    return LaunchStatus::invalid_value();
  if (args.norm.out != nullptr) {
    if (!qmv_affine_norm_fits(config, args))
      return LaunchStatus::invalid_value();
    NormParams np;
    static_cast<Params &>(np) = p;
    np.norm.x = p.y;
    np.norm.residual = static_cast<const uint16_t *>(args.norm.residual);
    np.norm.residual_out = static_cast<uint16_t *>(args.norm.residual_out);
    np.norm.w = static_cast<const uint16_t *>(args.norm.w);
    np.norm.out = static_cast<uint16_t *>(args.norm.out);
    np.norm.counter = args.norm.counter;
    np.norm.rows = args.rows;
    np.norm.hidden = args.n;
    np.norm.lanes = args.norm.lanes;
    np.norm.eps = args.norm.eps;
    return launch_split_k_kernel(e->kernel, config, args.n, args.rows, &np, stream,
                                 reinterpret_cast<const void *>(e->norm_fn), args.chain.dependent);
  }
  p.staged_words = staged_words(*e, config, args, p);
  if (p.staged_words > 0)
    fn = staged_twin(*e, config, args);
  return launch_split_k_kernel(e->kernel, config, args.n, args.rows, &p, stream,
                               reinterpret_cast<const void *>(fn), args.chain.dependent,
                               staged_bytes(*e, config, p.staged_words));
}

} // namespace hone::cuda
