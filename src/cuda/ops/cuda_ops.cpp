// Public CUDA op entry points (include/hone/ops/cuda.h).
#include "hone/ops/cuda.h"

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "cuda/backend/cuda_backend.h"
#include "cuda/backend/workspace.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16_shape.h"
#include "cuda/ops/entry_point.h"
#include "cuda/ops/gemv_bf16_op.h"
#include "cuda/ops/qmv_affine_op.h"
#include "hone/dispatcher.h"
#include "hone/error.h"
#include "hone/settings.h"

namespace hone::ops::cuda {

using hone::cuda::check_launch;
using hone::cuda::entry_op;
using hone::cuda::require_aligned;

namespace {

// The weights-once ring twin (ChainLaunch::weights_once) of a resolved mma config at a shape:
// `twin()` (the op's *_ring_twin, which scans the compiled configs and builds refusal text)
// runs once per (k_slices, shape) and thread, so that a launch of a known shape allocates
// nothing. The twin depends on the config only through its path (mma; a ring config is its own
// twin, the other paths have none) and k_slices.
template <class Config, class Twin>
const std::optional<Config> &known_ring_twin(int k_slices, std::array<int, 5> shape, Twin twin) {
  thread_local std::map<std::array<int, 6>, std::optional<Config>> known;
  const std::array<int, 6> key{k_slices, shape[0], shape[1], shape[2], shape[3], shape[4]};
  auto it = known.find(key);
  if (it == known.end())
    it = known.emplace(key, twin()).first;
  return it->second;
}

} // namespace

Dispatcher &dispatcher() {
  static Dispatcher d(hone::cuda::backend(), DispatcherOptions::from_settings(settings()));
  return d;
}

namespace {

// gemv.bf16's launch arguments after the entry point's checks (alignment; the shape was
// validated by the dispatcher's lookup).
hone::cuda::GemvBf16Args gemv_bf16_args(const void *x, const void *w, void *y, int64_t rows,
                                        int64_t n, int64_t k, const ChainLaunch &chain) {
  require_aligned("gemv.bf16", {{"x", x}, {"w", w}});
  require_aligned("gemv.bf16", {{"y", y}}, 2);
  hone::cuda::GemvBf16Args args;
  args.x = x;
  args.w = w;
  args.y = y;
  args.rows = static_cast<int>(rows);
  args.n = static_cast<int>(n);
  args.k = static_cast<int>(k);
  args.chain = {chain.dependent};
  return args;
}

// One launch of hone's own gemv.bf16 kernel `config`, with its workspace from `stream`'s.
void launch_gemv_bf16(const Resolution &r, const hone::cuda::GemvBf16Config &config,
                      hone::cuda::GemvBf16Args &args, void *stream) {
  args.workspace_bytes = hone::cuda::gemv_bf16_workspace_bytes(config, args.rows, args.n, args.k);
  if (args.workspace_bytes > 0)
    args.workspace = hone::cuda::workspace_for(stream, args.workspace_bytes);
  check_launch("gemv.bf16", r, hone::cuda::gemv_bf16_launch(config, args, stream));
}

} // namespace

void gemv_bf16(const void *x, const void *w, void *y, int64_t rows, int64_t n, int64_t k,
               void *stream, Dispatcher &d, const ChainLaunch &chain) {
  const Resolution &r =
      d.resolve(entry_op<hone::cuda::GemvBf16Op>(), Shape{{rows, n, k}, DType::bf16});
  hone::cuda::GemvBf16Args args = gemv_bf16_args(x, w, y, rows, n, k, chain);
  // A vendor tactic (cuBLASLt) is a pick of a tolerance-mode tune.
  if (const auto *vendor = r.compiled.get_if<hone::cuda::GemvBf16VendorConfig>()) {
    check_launch("gemv.bf16", r, hone::cuda::gemv_bf16_vendor_launch(*vendor, args, stream));
    return;
  }
  hone::cuda::GemvBf16Config config = r.compiled.as<hone::cuda::GemvBf16Config>();
  if (chain.dependent && chain.weights_once && config.path == hone::cuda::KernelPath::mma)
    if (const auto &ring = known_ring_twin<hone::cuda::GemvBf16Config>(
            hone::cuda::gemv_bf16_k_slices(config), {args.rows, args.n, args.k, 0, 0},
            [&] { return hone::cuda::gemv_bf16_ring_twin(config, args.rows, args.n, args.k); }))
      config = *ring;
  launch_gemv_bf16(r, config, args, stream);
}

void gemv_bf16(const void *x, const void *w, void *y, int64_t rows, int64_t n, int64_t k,
               void *stream) {
  gemv_bf16(x, w, y, rows, n, k, stream, dispatcher());
}

bool gemv_bf16_silu_mul(const void *x, const void *w, void *y, int64_t rows, int64_t inter,
                        int64_t k, void *stream, Dispatcher &d, const ChainLaunch &chain) {
  const Resolution &r =
      d.resolve(entry_op<hone::cuda::GemvBf16Op>(), Shape{{rows, 2 * inter, k}, DType::bf16});
  const auto *config = r.compiled.get_if<hone::cuda::GemvBf16Config>();
  if (!config || !hone::cuda::gemv_bf16_silu_epilogue_fits(*config, static_cast<int>(inter)))
    return false;
  hone::cuda::GemvBf16Args args = gemv_bf16_args(x, w, y, rows, 2 * inter, k, chain);
  args.silu_inter = static_cast<int>(inter);
  launch_gemv_bf16(r, *config, args, stream);
  return true;
}

} // namespace hone::ops::cuda

namespace hone::cuda {

QmvAffineArgs qmv_affine_entry_args(const void *x, const uint32_t *q, const void *scales,
                                    const void *biases, void *y, int64_t rows, int64_t n, int64_t k,
                                    int bits, int group, bool dependent) {
  require_aligned("qmv.affine", {{"x", x}, {"q", q}});
  require_aligned("qmv.affine", {{"scales", scales}, {"biases", biases}, {"y", y}}, 2);
  QmvAffineArgs args;
  args.x = x;
  args.q = q;
  args.scales = scales;
  args.biases = biases;
  args.y = y;
  args.rows = static_cast<int>(rows);
  args.n = static_cast<int>(n);
  args.k = static_cast<int>(k);
  args.bits = bits;
  args.group = group;
  args.chain = {dependent};
  return args;
}

} // namespace hone::cuda

namespace hone::ops::cuda {

namespace {

hone::cuda::QmvAffineArgs qmv_affine_args(const void *x, const uint32_t *q, const void *scales,
                                          const void *biases, void *y, int64_t rows, int64_t n,
                                          int64_t k, int bits, int group,
                                          const ChainLaunch &chain) {
  return hone::cuda::qmv_affine_entry_args(x, q, scales, biases, y, rows, n, k, bits, group,
                                           chain.dependent);
}

} // namespace

void qmv_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream,
                Dispatcher &d, const ChainLaunch &chain) {
  // lookup() validates the shape (rows, n, k, bits, group, k % group) before any launch.
  const Resolution &r =
      d.resolve(entry_op<hone::cuda::QmvAffineOp>(), Shape{{rows, n, k, bits, group}, DType::bf16});
  const hone::cuda::QmvAffineArgs args =
      qmv_affine_args(x, q, scales, biases, y, rows, n, k, bits, group, chain);
  hone::cuda::QmvAffineConfig config = r.compiled.as<hone::cuda::QmvAffineConfig>();
  if (chain.dependent && chain.weights_once && config.path == hone::cuda::KernelPath::mma)
    if (const auto &ring = known_ring_twin<hone::cuda::QmvAffineConfig>(
            hone::cuda::qmv_affine_k_slices(config), {args.rows, args.n, args.k, bits, group}, [&] {
              return hone::cuda::qmv_affine_ring_twin(config, args.rows, args.n, args.k, bits,
                                                      group);
            }))
      config = *ring;
  check_launch("qmv.affine", r, hone::cuda::qmv_affine_launch(config, args, stream));
}

bool qmv_affine_silu_mul(const void *x, const uint32_t *q, const void *scales, const void *biases,
                         void *y, int64_t rows, int64_t inter, int64_t k, int bits, int group,
                         void *stream, Dispatcher &d, const ChainLaunch &chain) {
  const int64_t n = 2 * inter;
  // The fused launch's own op (qmv.affine.silu_mul), where it takes the shape: its picks were
  // timed as this launch. Elsewhere (more than 8 rows, 8 bits) the caller runs the two launches.
  // The cheap refusals come first; the rest is validated once per shape, when the dispatcher
  // first resolves it (a shape it refuses is refused again at every call, by that exception).
  const auto &op = entry_op<hone::cuda::QmvAffineSiluMulOp>();
  if (rows < 1 || rows > op.buckets().dims[0].hi || bits != 4 || inter < 8 || inter % 8 != 0)
    return false;
  const Resolution *resolved = nullptr;
  try {
    resolved = &d.resolve(op, Shape{{rows, inter, k, bits, group}, DType::bf16});
  } catch (const Error &e) {
    if (e.kind() != ErrorKind::invalid_argument)
      throw;
    return false;
  }
  const Resolution &r = *resolved;
  const auto &config = r.compiled.as<hone::cuda::QmvAffineConfig>();
  if (!hone::cuda::qmv_affine_silu_epilogue_fits(config, bits, group, static_cast<int>(k),
                                                 static_cast<int>(inter)))
    return false;
  hone::cuda::QmvAffineArgs args =
      qmv_affine_args(x, q, scales, biases, y, rows, n, k, bits, group, chain);
  args.silu_inter = static_cast<int>(inter);
  check_launch("qmv.affine", r, hone::cuda::qmv_affine_launch(config, args, stream));
  return true;
}

void qmv_affine(const void *x, const uint32_t *q, const void *scales, const void *biases, void *y,
                int64_t rows, int64_t n, int64_t k, int bits, int group, void *stream) {
  qmv_affine(x, q, scales, biases, y, rows, n, k, bits, group, stream, dispatcher());
}

} // namespace hone::ops::cuda
