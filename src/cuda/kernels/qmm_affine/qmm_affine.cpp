// qmm.affine kernels: the table of compiled kernels, the config list built on it, resources,
// workspace and launch. Shape logic (tactics, default, can_implement) lives in
// qmm_affine_config.cpp; the CUTLASS glue in qmm_affine_gemm.cuh, instantiated once per kernel
// in the translation units that qmm_affine.cmake generates, which also writes the list this
// file includes (qmm_affine_kernels.inc: `HONE_QMM_KERNEL(name)` per compiled kernel, empty
// when the build has none).
//
// Tactic fields (`qmm.affine.wgmma:...`, `qmm.affine.dequant:...`):
//   tile_m     activation rows per output tile (the wgmma N): 16..256
//   tile_n     weight rows per output tile: 128 or 256 cooperative (two consumer warpgroups of
//              64 x tile_m), 64 ping-pong (one warpgroup per tile, two tiles in flight)
//   tile_k     K per pipeline stage: 64 or 128 (the mixed-input mainloop needs at least four
//              16-deep wgmma steps per stage); on the wgmma path it divides the group (one
//              scale and bias per weight row and stage)
//   cluster_m  CTAs of a cluster along M, which receive one weight tile by TMA multicast
//   cluster_n  CTAs of a cluster along N, which receive one activation tile
//   pingpong   0 cooperative, 1 ping-pong
//   split_k    K slices per tile (cooperative): partials through the workspace, added in fixed
//              order by the last slice's CTA
//   stream_k   (optional, default 0) 1: stream-K over the K tiles of all output tiles
// The mma path (`qmm.affine.mma:tile_m=..,tile_n=..,tile_k=..,stages=..,warps=..,split_k=..`,
// int4):
//   tile_m     activation rows per CTA: 16, 32 or 64 (mma.sync), up to 128 (register-A
//              wgmma), up to 256 (the TMA engines)
//   tile_n     weight rows per CTA: 16 or 32 per warp along the rows
//   tile_k     K per block: 64, 128 or 256, one 64-deep quarter per warp along K
//   stages     cp.async ring depth (K blocks of weights, activations, group parameters)
//   warps      warps per CTA (tile_k / 64 along K, the rest along the weight rows)
//   split_k    K slices: CTAs of one cluster, partials added in slice order (1..8)
//   stream_k   (optional, the TMA engines, split_k 1) 1: a persistent grid over all (tile, K
//              block) units; a tile's segments are added in K order (../common/stream_k.h)
// Kernel names per engine: qmm.affine.mma (mma.sync), mma_wgmma (register-A wgmma, cp.async),
// mma_tma (warp-specialised TMA), mma_tma_ahead (the same, next step's loads and integer
// dequantisation before the wait) and mma_wgmma_late (mma_wgmma refilling a stage one block
// later, without a wgmma drain per block).
// Its kernels are listed where the CUTLASS set is (qmm_affine_built()).
#include "cuda/kernels/qmm_affine/qmm_affine.h"

#include <algorithm>
#include <array>
#include <string>

#include <cuda_runtime.h>

#include "cuda/kernels/qmm_affine/group_params_transpose.h"
#include "cuda/kernels/qmm_affine/qmm_affine_kernel.h"
#include "cuda/kernels/qmm_affine/qmm_affine_mma.h"
#include "cuda/ops/affine_dequantize.h"

namespace hone::cuda {

namespace qmm_affine_detail {
#define HONE_QMM_KERNEL(name) extern const QmmAffineKernel name;
#include "qmm_affine_kernels.inc"
#undef HONE_QMM_KERNEL
} // namespace qmm_affine_detail

namespace {

// Run-time decompositions offered for every cooperative kernel: (split_k, stream_k).
constexpr std::array<std::pair<int, int>, 4> kCooperativeSplits{{{1, 0}, {2, 0}, {4, 0}, {1, 1}}};
constexpr size_t kRegionAlign = 256; // bytes: each workspace region starts TMA-aligned
constexpr int kDenseBits = 16;       // QmmAffineKernel::bits of the dense (dequant) kernels
constexpr int kChunkRowAlign = 256;  // dequant chunks start on a multiple of every tile N
// Run-time splits offered for every mma kernel (cluster sizes).
constexpr std::array<int, 3> kMmaSplits{1, 2, 4};

const QmmMmaKernel *find_mma_kernel(const QmmAffineConfig &c, int bits) {
  if (c.path != kQmmMmaPath || bits != 4 || c.cluster_m != 1 || c.cluster_n != 1 || c.pingpong != 0)
    return nullptr;
  for (const QmmMmaKernel &k : qmm_mma_kernels())
    if (k.tile_m == c.tile_m && k.tile_n == c.tile_n && k.tile_k == c.tile_k &&
        k.stages == c.stages && k.warps == c.warps && k.engine == c.engine)
      return &k;
  return nullptr;
}

const std::vector<const QmmAffineKernel *> &kernels() {
  static const std::vector<const QmmAffineKernel *> all = {
#define HONE_QMM_KERNEL(name) &qmm_affine_detail::name,
#include "qmm_affine_kernels.inc"
#undef HONE_QMM_KERNEL
  };
  return all;
}

// The kernel of `c` for weights of `bits`: a mixed-input kernel of those bits (wgmma), or a
// dense kernel (dequant), which serves every bits.
const QmmAffineKernel *find_kernel(const QmmAffineConfig &c, int bits) {
  if ((bits != 4 && bits != 8) || c.path == kQmmMmaPath)
    return nullptr;
  const int kernel_bits = c.path == 1 ? kDenseBits : c.path == 0 ? bits : -1;
  for (const QmmAffineKernel *k : kernels())
    if (k->bits == kernel_bits && k->tile_m == c.tile_m && k->tile_n == c.tile_n &&
        k->tile_k == c.tile_k && k->cluster_m == c.cluster_m && k->cluster_n == c.cluster_n &&
        k->pingpong == c.pingpong)
      return k;
  return nullptr;
}

std::vector<QmmAffineConfig> build_configs(int bits) {
  std::vector<QmmAffineConfig> out;
  for (const QmmAffineKernel *k : kernels()) {
    if (k->bits != bits && k->bits != kDenseBits)
      continue;
    QmmAffineConfig c;
    c.path = k->bits == kDenseBits ? 1 : 0;
    c.tile_m = k->tile_m;
    c.tile_n = k->tile_n;
    c.tile_k = k->tile_k;
    c.cluster_m = k->cluster_m;
    c.cluster_n = k->cluster_n;
    c.pingpong = k->pingpong;
    if (k->pingpong) {
      out.push_back(c);
      continue;
    }
    for (auto [split, stream] : kCooperativeSplits) {
      c.split_k = split;
      c.stream_k = stream;
      out.push_back(c);
    }
  }
  if (bits == 4 && !out.empty())
    for (const QmmMmaKernel &k : qmm_mma_kernels())
      for (int split : kMmaSplits) {
        QmmAffineConfig c;
        c.path = kQmmMmaPath;
        c.tile_m = k.tile_m;
        c.tile_n = k.tile_n;
        c.tile_k = k.tile_k;
        c.stages = k.stages;
        c.warps = k.warps;
        c.engine = k.engine;
        c.split_k = split;
        out.push_back(c);
        if (qmm_engine_is_tma(k.engine) && split == 1 && qmm_tma_warpgroups_k(k) == 1) {
          c.stream_k = 1;
          out.push_back(c);
        }
      }
  return out;
}

size_t round_up(size_t bytes) { return (bytes + kRegionAlign - 1) / kRegionAlign * kRegionAlign; }

// [bytes] of one transposed group-parameter array.
size_t params_bytes(int n, int k, int group) {
  return round_up(static_cast<size_t>(n) * static_cast<size_t>(k / group) * sizeof(uint16_t));
}

// Weight rows per dequant chunk: as many as kQmmDequantChunkBytes of bf16 hold, a multiple of
// kChunkRowAlign (at least one), at most n.
int chunk_rows(int n, int k) {
  const size_t row_bytes = static_cast<size_t>(k) * sizeof(uint16_t);
  const size_t fit = kQmmDequantChunkBytes / row_bytes / kChunkRowAlign * kChunkRowAlign;
  return static_cast<int>(
      std::min<size_t>(static_cast<size_t>(n), std::max<size_t>(fit, kChunkRowAlign)));
}

// [bytes] before the kernel's own workspace: two transposed parameter arrays (wgmma) or one
// chunk of bf16 weights (dequant).
size_t scratch_bytes(const QmmAffineConfig &c, int n, int k, int group) {
  if (c.path == 1)
    return round_up(static_cast<size_t>(chunk_rows(n, k)) * static_cast<size_t>(k) *
                    sizeof(uint16_t));
  return 2 * params_bytes(n, k, group);
}

// `sm_count`: the current device's (current_device_sms), which bounds the persistent grid; 0
// (CUTLASS then asks the device itself) when it cannot be read.
QmmAffineKernelArgs kernel_args(const QmmAffineConfig &c, const QmmAffineArgs &a, int sm_count) {
  QmmAffineKernelArgs ka;
  ka.x = a.x;
  ka.q = a.q;
  ka.y = a.y;
  ka.m = a.m;
  ka.n = a.n;
  ka.k = a.k;
  ka.group = a.group;
  ka.split_k = c.split_k;
  ka.stream_k = c.stream_k;
  ka.sm_count = sm_count;
  if (a.workspace) {
    auto *base = static_cast<char *>(a.workspace);
    if (c.path == 1) {
      ka.n = chunk_rows(a.n, a.k); // the first chunk's shape; launch() moves along the rest
      ka.ldy = a.n;
      ka.q = base; // the chunk's bf16 weights
      ka.workspace = base + scratch_bytes(c, a.n, a.k, a.group);
    } else {
      const size_t params = params_bytes(a.n, a.k, a.group);
      ka.scales_t = base;
      ka.biases_t = base + params;
      ka.workspace = base + 2 * params;
    }
  } else if (c.path == 1) {
    ka.n = chunk_rows(a.n, a.k);
    ka.ldy = a.n;
  }
  return ka;
}

// The dequant path: per chunk of weight rows, dequantise into the scratch and run the dense
// GEMM into the chunk's columns of Y. Every chunk reuses the scratch and the kernel workspace
// in stream order.
LaunchStatus launch_dequant(const QmmAffineKernel &kernel, const QmmAffineArgs &args,
                            QmmAffineKernelArgs ka, void *stream) {
  const int rows = ka.n;
  const size_t q_row_bytes = static_cast<size_t>(args.k) * static_cast<size_t>(args.bits) / 8;
  const size_t params_per_row = static_cast<size_t>(args.k / args.group);
  for (int j0 = 0; j0 < args.n; j0 += rows) {
    const int chunk = std::min(rows, args.n - j0);
    const auto *q = reinterpret_cast<const uint32_t *>(reinterpret_cast<const char *>(args.q) +
                                                       static_cast<size_t>(j0) * q_row_bytes);
    const auto *scales = static_cast<const uint16_t *>(args.scales) + j0 * params_per_row;
    const auto *biases = static_cast<const uint16_t *>(args.biases) + j0 * params_per_row;
    affine_dequantize_bf16(q, scales, biases, const_cast<void *>(ka.q), chunk, args.k, args.bits,
                           args.group, static_cast<cudaStream_t>(stream));
    QmmAffineKernelArgs step = ka;
    step.n = chunk;
    step.y = static_cast<uint16_t *>(args.y) + j0;
    if (kernel.can_implement(step) != 0)
      return LaunchStatus::invalid_value();
    if (const int e = kernel.run(step, stream); e != 0)
      return LaunchStatus::from_cuda(e);
  }
  return LaunchStatus{};
}

} // namespace

bool qmm_affine_built() { return !kernels().empty(); }

const std::vector<QmmAffineConfig> &qmm_affine_configs(int bits) {
  static const std::vector<QmmAffineConfig> configs4 = build_configs(4);
  static const std::vector<QmmAffineConfig> configs8 = build_configs(8);
  static const std::vector<QmmAffineConfig> none;
  return bits == 4 ? configs4 : bits == 8 ? configs8 : none;
}

std::string qmm_affine_tile_list(int bits) {
  constexpr const char *kPathSuffix[] = {"", " (dequant)", " (mma)"};
  std::vector<std::string> tiles;
  for (const QmmAffineConfig &c : qmm_affine_configs(bits)) {
    std::string t = std::to_string(c.tile_m) + "x" + std::to_string(c.tile_n) + "x" +
                    std::to_string(c.tile_k) + kPathSuffix[c.path];
    if (std::find(tiles.begin(), tiles.end(), t) == tiles.end())
      tiles.push_back(std::move(t));
  }
  if (tiles.empty())
    return "none";
  std::string out;
  for (const std::string &t : tiles)
    out += (out.empty() ? "" : ", ") + t;
  return out;
}

KernelResources qmm_affine_resources(const QmmAffineConfig &config, int bits) {
  if (const QmmMmaKernel *m = find_mma_kernel(config, bits))
    return qmm_mma_resources(*m, config.stream_k != 0);
  KernelResources res;
  if (const QmmAffineKernel *k = find_kernel(config, bits))
    if (k->resources(&res) != 0)
      return KernelResources{};
  return res;
}

int qmm_affine_stages(const QmmAffineConfig &config, int bits) {
  if (const QmmMmaKernel *m = find_mma_kernel(config, bits))
    return m->stages;
  const QmmAffineKernel *k = find_kernel(config, bits);
  return k ? k->stages : 0;
}

size_t qmm_affine_workspace_bytes(const QmmAffineConfig &config, int m, int n, int k, int bits,
                                  int group) {
  if (const QmmMmaKernel *mma = find_mma_kernel(config, bits))
    return qmm_mma_workspace_bytes(*mma, m, n, k, config.stream_k != 0);
  const QmmAffineKernel *kernel = find_kernel(config, bits);
  if (!kernel || m < 1 || n < 1 || k < group || group < 1 || k % group != 0)
    return 0;
  QmmAffineArgs a;
  a.m = m;
  a.n = n;
  a.k = k;
  a.bits = bits;
  a.group = group;
  // Stream-K's partials depend on the grid, which the current device's SM count bounds: the
  // size holds for launches on this device (and for every dequant chunk, the first the
  // largest).
  return scratch_bytes(config, n, k, group) +
         round_up(kernel->workspace_bytes(kernel_args(config, a, current_device_sms())));
}

LaunchStatus qmm_affine_launch(const QmmAffineConfig &config, const QmmAffineArgs &args,
                               void *stream) {
  if (const QmmMmaKernel *m = find_mma_kernel(config, args.bits)) {
    QmmMmaArgs ma;
    ma.x = args.x;
    ma.q = args.q;
    ma.scales = args.scales;
    ma.biases = args.biases;
    ma.y = args.y;
    ma.m = args.m;
    ma.n = args.n;
    ma.k = args.k;
    ma.group = args.group;
    ma.split_k = config.split_k;
    ma.stream_k = config.stream_k != 0;
    ma.workspace = args.workspace;
    ma.workspace_bytes = args.workspace_bytes;
    return qmm_mma_launch(*m, ma, stream);
  }
  const QmmAffineKernel *kernel = find_kernel(config, args.bits);
  if (!kernel || args.m < 1 || args.n < 8 || args.n % 8 != 0 || args.k < args.group ||
      (args.group != 32 && args.group != 64 && args.group != 128) || args.k % args.group != 0 ||
      (config.path == 0 && args.group % config.tile_k != 0) || config.split_k < 1 ||
      (config.pingpong && (config.split_k != 1 || config.stream_k != 0)) || !args.workspace ||
      args.workspace_bytes <
          qmm_affine_workspace_bytes(config, args.m, args.n, args.k, args.bits, args.group))
    return LaunchStatus::invalid_value();
  const QmmAffineKernelArgs ka = kernel_args(config, args, current_device_sms());
  if (config.path == 1)
    return launch_dequant(*kernel, args, ka, stream);
  if (kernel->can_implement(ka) != 0)
    return LaunchStatus::invalid_value();
  if (const int e = transpose_group_params(
          args.scales, args.biases, const_cast<void *>(ka.scales_t),
          const_cast<void *>(ka.biases_t), args.n, args.k / args.group, stream);
      e != 0)
    return LaunchStatus::from_cuda(e);
  return LaunchStatus::from_cuda(kernel->run(ka, stream));
}

} // namespace hone::cuda
