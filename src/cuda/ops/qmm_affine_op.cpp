#include "cuda/ops/qmm_affine_op.h"

#include <algorithm>
#include <bit>

#include "cuda/backend/cuda_backend_impl.h"
#include "cuda/backend/cuda_check.h"
#include "cuda/kernels/qmm_affine/qmm_affine_mma.h"
#include "cuda/ops/qmv_affine_op.h" // qmv_affine_problem: the same {rows, n, k, bits, group}
#include "hone/error.h"
#include "hone/settings.h"

namespace hone::cuda {

namespace {

constexpr int64_t kMaxRows = 16384;
constexpr int64_t kMaxDim = int64_t{1} << 24; // n and k, as for qmv.affine
// Split-K and stream-K are offered while the data-parallel grid has fewer tiles than two waves
// of an H100/H200 (132 SMs): past that every SM already holds work and splitting only adds
// partials. Pruning only; any config the table has can still be forced.
constexpr int kSplitTileLimit = 2 * 132;

size_t elements(int64_t a, int64_t b) { return static_cast<size_t>(a) * static_cast<size_t>(b); }

std::string describe(const QmvAffineProblem &p) {
  return "rows=" + std::to_string(p.rows) + ",n=" + std::to_string(p.n) +
         ",k=" + std::to_string(p.k) + ",bits=" + std::to_string(p.bits) +
         ",group=" + std::to_string(p.group);
}

bool is_compiled(const QmmAffineConfig &config, int bits) {
  const std::vector<QmmAffineConfig> &all = qmm_affine_configs(bits);
  return std::find(all.begin(), all.end(), config) != all.end();
}

// True when a tuner could pick `c` for `p` (see QmmAffineOp::candidates).
// The mma path is offered from 9 to 64 rows (measured on the H200, 2026-12-03: at 16-64 rows it
// beats every CUTLASS config on 4096 x 4096, at 16 rows on all four Llama-3.1-8B shapes; at 128
// rows it takes twice their time; at 1-8 rows qmv.affine is faster than either), at the
// activation tile that holds the rows (16, 32, 64: the tile below re-reads the weights, the one
// above idles its tensor work), and with at most 128 weight rows per CTA (256 never won).
// The wgmma engines' 128-row tiles take 65-256 rows (two activation tiles above 128), and the
// TMA engine's 256-row tiles 129-256; the TMA engine's 256 weight rows per CTA won on
// 28672 x 4096 at 64 rows (2026-12-04-h200-2, call 3).
constexpr int kMmaMinRows = 9;
struct MmaEngineRange {
  int max_rows, max_tile_n;
};
// Indexed by QmmAffineConfig::engine: mma.sync, register-A wgmma, TMA, TMA with lookahead,
// register-A wgmma with the late refill.
constexpr MmaEngineRange kMmaEngineRanges[] = {
    {64, 128}, {256, 128}, {256, 256}, {256, 256}, {256, 128}};

bool worth_trying(const QmmAffineConfig &c, const QmvAffineProblem &p) {
  int smallest_tile_m = c.tile_m, largest_tile_m = c.tile_m;
  for (const QmmAffineConfig &o : qmm_affine_configs(p.bits))
    if ((o.path == kQmmMmaPath) == (c.path == kQmmMmaPath)) {
      smallest_tile_m = std::min(smallest_tile_m, o.tile_m);
      largest_tile_m = std::max(largest_tile_m, o.tile_m);
    }
  const int m_pow2 = static_cast<int>(std::bit_ceil(static_cast<unsigned>(p.rows)));
  // Above 128 rows the 128-row tiles (two of them, the picks before the TMA engine's 256-row
  // kernels) stay candidates beside the 256-row ones.
  const int fit = std::clamp(m_pow2, smallest_tile_m, largest_tile_m);
  if (c.path == kQmmMmaPath &&
      (p.rows < kMmaMinRows || p.rows > kMmaEngineRanges[c.engine].max_rows ||
       c.tile_n > kMmaEngineRanges[c.engine].max_tile_n ||
       (c.tile_m != fit && !(fit > 128 && c.tile_m == 128))))
    return false;
  if (c.tile_m > std::max(smallest_tile_m, 2 * m_pow2))
    return false;
  const int tiles = ((p.rows + c.tile_m - 1) / c.tile_m) * ((p.n + c.tile_n - 1) / c.tile_n);
  if ((c.split_k > 1 || c.stream_k) && tiles >= kSplitTileLimit)
    return false;
  return true;
}

std::string tile_env_text(const Settings &s) {
  const auto field = [](const std::optional<int> &v) {
    return v ? std::to_string(*v) : std::string("unset");
  };
  return "HONE_QMM_TILE_M=" + field(s.qmm_tile_m) + ", HONE_QMM_TILE_N=" + field(s.qmm_tile_n) +
         ", HONE_QMM_TILE_K=" + field(s.qmm_tile_k);
}

} // namespace

// --- workload ---------------------------------------------------------------------------

QmmAffineWorkload::QmmAffineWorkload(CudaBackend &backend, const QmvAffineProblem &problem)
    : AffineLinearWorkload(backend, problem) {
  const QmvAffineProblem &p = this->problem();
  size_t workspace = 0;
  for (const QmmAffineConfig &c : qmm_affine_configs(p.bits))
    if (std::string why; qmm_affine_can_implement(c, p.rows, p.n, p.k, p.bits, p.group, &why))
      workspace =
          std::max(workspace, qmm_affine_workspace_bytes(c, p.rows, p.n, p.k, p.bits, p.group));
  workspace_ = DeviceBuffer(workspace);
  set_rotation(1);
  poison_output();
  HONE_CUDA_CHECK(cudaStreamSynchronize(stream()));
}

std::optional<std::string> QmmAffineWorkload::cannot_implement(const Tactic &tactic) const {
  const QmvAffineProblem &p = problem();
  QmmAffineConfig config;
  try {
    config = QmmAffineConfig::from_tactic(tactic);
  } catch (const Error &e) {
    return e.what();
  }
  if (std::string why; !qmm_affine_can_implement(config, p.rows, p.n, p.k, p.bits, p.group, &why))
    return why;
  const size_t need = qmm_affine_workspace_bytes(config, p.rows, p.n, p.k, p.bits, p.group);
  if (need > workspace_.size())
    return "needs " + std::to_string(need) + " bytes of workspace, " +
           std::to_string(workspace_.size()) + " allocated";
  if (qmm_affine_resources(config, p.bits).registers == 0)
    return "the kernel cannot load on this device (sm_90a code only)";
  return std::nullopt;
}

std::optional<KernelResources> QmmAffineWorkload::resources(const Tactic &tactic) const {
  return qmm_affine_resources(QmmAffineConfig::from_tactic(tactic), problem().bits);
}

LaunchStatus QmmAffineWorkload::launch(const QmmAffineConfig &config, int copy, const void *x,
                                       void *y, int m) {
  const QmvAffineProblem &p = problem();
  QmmAffineArgs args;
  args.x = x;
  args.q = q(copy);
  args.scales = scales(copy);
  args.biases = biases(copy);
  args.y = y;
  args.m = m;
  args.n = p.n;
  args.k = p.k;
  args.bits = p.bits;
  args.group = p.group;
  args.workspace = workspace_.data();
  args.workspace_bytes = workspace_.size();
  return qmm_affine_launch(config, args, stream());
}

LaunchStatus QmmAffineWorkload::launch(const Tactic &tactic, int copy) {
  return launch(last_config_.of(tactic), copy, x(copy), y(), rows());
}

// --- op -----------------------------------------------------------------------------------

QmmAffineOp::QmmAffineOp()
    : CudaOp("qmm.affine",
             BucketSpec{{DimSpec::exact_then_pow2_up("rows", 1, kMaxRows, 32),
                         DimSpec::exact("n", 8, kMaxDim), DimSpec::exact("k", 32, kMaxDim),
                         DimSpec::one_of("bits", {4, 8}), DimSpec::one_of("group", {32, 64, 128})}},
             Numerics::tolerance) {}

std::vector<Tactic> QmmAffineOp::candidates(const Shape &bucket) const {
  const QmvAffineProblem p = qmv_affine_problem(bucket);
  const Tactic first = default_tactic(bucket);
  std::vector<Tactic> out{first};
  for (const QmmAffineConfig &c : qmm_affine_configs(p.bits)) {
    if (std::string why; !qmm_affine_can_implement(c, p.rows, p.n, p.k, p.bits, p.group, &why) ||
                         !worth_trying(c, p))
      continue;
    Tactic t = c.to_tactic();
    if (!(t == first))
      out.push_back(std::move(t));
  }
  return out;
}

Tactic QmmAffineOp::default_tactic(const Shape &bucket) const {
  const QmvAffineProblem p = qmv_affine_problem(bucket);
  return qmm_affine_default(p.rows, p.n, p.k, p.bits, p.group).to_tactic();
}

void QmmAffineOp::validate(const Shape &shape) const {
  if (shape.rank != 5)
    HONE_INVALID_ARGUMENT("qmm.affine takes 5 dimensions (rows, n, k, bits, group), got " +
                          std::to_string(shape.rank));
  if (shape.dtype != DType::bf16)
    HONE_INVALID_ARGUMENT("qmm.affine takes dtype bf16, got " +
                          std::string(to_string(shape.dtype)));
  const int64_t rows = shape[0], n = shape[1], k = shape[2], bits = shape[3], group = shape[4];
  if (rows < 1 || rows > kMaxRows)
    HONE_INVALID_ARGUMENT("qmm.affine: rows=" + std::to_string(rows) + " outside 1..16384");
  if (n < 8 || n > kMaxDim || n % 8 != 0)
    HONE_INVALID_ARGUMENT("qmm.affine: n=" + std::to_string(n) +
                          " is not a multiple of 8 in 8..2^24 (16-byte rows of Y for TMA)");
  if (bits != 4 && bits != 8)
    HONE_INVALID_ARGUMENT("qmm.affine: bits=" + std::to_string(bits) + " is not 4 or 8");
  if (group != 32 && group != 64 && group != 128)
    HONE_INVALID_ARGUMENT("qmm.affine: group=" + std::to_string(group) + " is not 32, 64 or 128");
  if (k < group || k > kMaxDim)
    HONE_INVALID_ARGUMENT("qmm.affine: k=" + std::to_string(k) +
                          " outside group=" + std::to_string(group) + "..2^24");
  if (k % group != 0)
    HONE_INVALID_ARGUMENT("qmm.affine: k=" + std::to_string(k) +
                          " is not a multiple of group=" + std::to_string(group));
  if (!qmm_affine_built())
    HONE_INVALID_ARGUMENT("qmm.affine is not built into this hone: the CUTLASS headers were not "
                          "found when it was configured (scripts/bootstrap.sh installs them)");
  const QmvAffineProblem p = qmv_affine_problem(shape);
  const QmmAffineConfig def = qmm_affine_default(p.rows, p.n, p.k, p.bits, p.group);
  if (std::string reason;
      !qmm_affine_can_implement(def, p.rows, p.n, p.k, p.bits, p.group, &reason))
    HONE_INVALID_ARGUMENT("qmm.affine: " + describe(p) + " not supported by the default " +
                          def.to_tactic().str() + ": " + reason);
}

std::unique_ptr<Workload> QmmAffineOp::prepare(const Shape &shape) const {
  validate(shape);
  return std::make_unique<QmmAffineWorkload>(cuda_backend(), qmv_affine_problem(shape));
}

std::optional<WorkloadBytes> QmmAffineOp::workload_bytes(const Shape &shape) const {
  validate(shape);
  const QmvAffineProblem p = qmv_affine_problem(shape);
  WorkloadBytes b;
  b.per_copy = elements(p.rows, p.k) * sizeof(uint16_t) + elements(p.n, p.k) * p.bits / 8 +
               2 * elements(p.n, p.k / p.group) * sizeof(uint16_t);
  size_t workspace = 0;
  for (const QmmAffineConfig &c : qmm_affine_configs(p.bits))
    if (std::string why; qmm_affine_can_implement(c, p.rows, p.n, p.k, p.bits, p.group, &why))
      workspace =
          std::max(workspace, qmm_affine_workspace_bytes(c, p.rows, p.n, p.k, p.bits, p.group));
  b.fixed = elements(p.rows, p.n) * sizeof(uint16_t) + workspace;
  return b;
}

std::optional<Tactic> QmmAffineOp::env_override(const Shape &bucket,
                                                const Settings &settings) const {
  if (std::optional<Tactic> t = TunableOp::env_override(bucket, settings))
    return t;
  if (!settings.qmm_tile_m && !settings.qmm_tile_n && !settings.qmm_tile_k)
    return std::nullopt;
  const QmvAffineProblem p = qmv_affine_problem(bucket);
  const QmmAffineConfig def = qmm_affine_default(p.rows, p.n, p.k, p.bits, p.group);
  QmmAffineConfig want = def;
  want.tile_m = settings.qmm_tile_m.value_or(def.tile_m);
  want.tile_n = settings.qmm_tile_n.value_or(def.tile_n);
  want.tile_k = settings.qmm_tile_k.value_or(def.tile_k);
  // The default's cluster, schedule and split where that kernel exists with the tile; else the
  // first compiled config of the tile (table order: no cluster, cooperative, split 1 first).
  const QmmAffineConfig *pick = nullptr;
  for (const QmmAffineConfig &c : qmm_affine_configs(p.bits)) {
    if (c.tile_m != want.tile_m || c.tile_n != want.tile_n || c.tile_k != want.tile_k)
      continue;
    if (c == want) {
      pick = &c;
      break;
    }
    if (!pick)
      pick = &c;
  }
  if (!pick)
    HONE_INVALID_ARGUMENT(tile_env_text(settings) + ": qmm.affine has no kernel with tile " +
                          std::to_string(want.tile_m) + "x" + std::to_string(want.tile_n) + "x" +
                          std::to_string(want.tile_k) +
                          " (MxNxK) for bits=" + std::to_string(p.bits) +
                          "; compiled tiles: " + qmm_affine_tile_list(p.bits));
  if (std::string why; !qmm_affine_can_implement(*pick, p.rows, p.n, p.k, p.bits, p.group, &why))
    HONE_INVALID_ARGUMENT(tile_env_text(settings) + ": " + pick->to_tactic().str() +
                          " cannot run qmm.affine " + describe(p) + ": " + why);
  return pick->to_tactic();
}

CompiledTactic QmmAffineOp::compile(const Tactic &tactic) const {
  const QmmAffineConfig c = QmmAffineConfig::from_tactic(tactic);
  if (!is_compiled(c, 4) && !is_compiled(c, 8))
    HONE_INVALID_ARGUMENT("qmm.affine: tactic '" + tactic.str() +
                          "' is not compiled into this build (tiles MxNxK, bits 4: " +
                          qmm_affine_tile_list(4) + "; bits 8: " + qmm_affine_tile_list(8) +
                          "; split_k 1/2/4 or stream_k=1 with cooperative kernels)");
  return CompiledTactic::of(c);
}

} // namespace hone::cuda
