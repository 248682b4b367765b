#include "cuda/ops/gemv_bf16_vendor.h"

#include <cstdint>
#include <limits>
#include <map>
#include <mutex>
#include <set>
#include <tuple>
#include <utility>

#include "cuda/backend/workspace.h"
#include "cuda/peers/cublaslt_bf16_gemm.h"
#include "hone/error.h"
#include "hone/log.h"

namespace hone::cuda {

namespace {

// The tactic's fields, in order, with the largest value of each attribute's type.
struct Field {
  const char *name;
  int64_t CublasLtAlgoId::*member;
  int64_t max;
};
constexpr int64_t kU32 = std::numeric_limits<uint32_t>::max();
constexpr int64_t kI32 = std::numeric_limits<int32_t>::max();
constexpr int64_t kU16 = std::numeric_limits<uint16_t>::max();
const Field kFields[] = {
    {"algo", &CublasLtAlgoId::algo, kI32},
    {"tile", &CublasLtAlgoId::tile, kU32},
    {"stages", &CublasLtAlgoId::stages, kU32},
    {"split_k", &CublasLtAlgoId::split_k, kI32},
    {"reduction", &CublasLtAlgoId::reduction, kU32},
    {"swizzle", &CublasLtAlgoId::swizzle, kU32},
    {"custom", &CublasLtAlgoId::custom, kU32},
    {"inner_shape", &CublasLtAlgoId::inner_shape, kU16},
    {"cluster_shape", &CublasLtAlgoId::cluster_shape, kU16},
};
constexpr size_t kFieldCount = sizeof kFields / sizeof kFields[0];

using ShapeKey = std::tuple<int, int, int>;

// One warning per text for the process.
void warn_once(const std::string &text) {
  static std::mutex mutex;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lock(mutex);
  if (warned.insert(text).second)
    log_warn(text);
}

std::string shape_text(int rows, int n, int k) {
  return "rows=" + std::to_string(rows) + ",n=" + std::to_string(n) + ",k=" + std::to_string(k);
}

// gemv_bf16_vendor_algos' list for rows, n, k, asked once per shape and kept: the reference
// stays valid (map nodes are never erased), so a launch reads it without a copy.
const std::vector<CublasLtAlgoId> &listed_algos(int rows, int n, int k) {
  static std::mutex mutex;
  static std::map<ShapeKey, std::vector<CublasLtAlgoId>> known;
  std::lock_guard<std::mutex> lock(mutex);
  const ShapeKey key{rows, n, k};
  if (auto it = known.find(key); it != known.end())
    return it->second;
  std::vector<CublasLtAlgoId> algos;
  try {
    algos = CublasLtBf16Gemm::heuristic(rows, n, k, kGemvBf16VendorCandidates);
  } catch (const Error &e) {
    warn_once("gemv.bf16: no cuBLASLt candidates for " + shape_text(rows, n, k) + ": " + e.what());
  }
  return known.emplace(key, std::move(algos)).first->second;
}

} // namespace

// The heuristic tactic's one field.
constexpr const char *kHeuristicField = "heuristic";

Tactic GemvBf16VendorConfig::to_tactic() const {
  Tactic t;
  t.kernel = std::string(kGemvBf16VendorKernel);
  if (heuristic) {
    t.params.emplace_back(kHeuristicField, 1);
    return t;
  }
  for (const Field &f : kFields)
    t.params.emplace_back(f.name, algo.*(f.member));
  return t;
}

GemvBf16VendorConfig GemvBf16VendorConfig::from_tactic(const Tactic &tactic) {
  if (tactic.kernel != kGemvBf16VendorKernel)
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "' is not a " +
                          std::string(kGemvBf16VendorKernel) + " tactic");
  if (tactic.params.size() == 1 && tactic.params[0].first == kHeuristicField) {
    if (tactic.params[0].second != 1)
      HONE_INVALID_ARGUMENT("tactic '" + tactic.str() +
                            "': heuristic=" + std::to_string(tactic.params[0].second) +
                            " (the heuristic tactic is spelled heuristic=1)");
    return gemv_bf16_vendor_heuristic();
  }
  if (tactic.params.size() != kFieldCount) {
    std::string expected;
    for (const Field &f : kFields) { // piecewise: `"," + std::string` made GCC 12 warn -Wrestrict
      if (!expected.empty())
        expected += ',';
      expected += f.name;
    }
    HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': " + std::string(kGemvBf16VendorKernel) +
                          " takes the fields " + expected +
                          ", in that order, or heuristic=1 alone");
  }
  GemvBf16VendorConfig c;
  for (size_t i = 0; i < kFieldCount; ++i) {
    const Field &f = kFields[i];
    const auto &[name, value] = tactic.params[i];
    if (name != f.name)
      HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': field " + std::to_string(i + 1) +
                            " is '" + name + "', expected '" + f.name + "'");
    if (value < 0 || value > f.max)
      HONE_INVALID_ARGUMENT("tactic '" + tactic.str() + "': " + f.name + "=" +
                            std::to_string(value) + " outside 0.." + std::to_string(f.max));
    c.algo.*(f.member) = value;
  }
  return c;
}

GemvBf16VendorConfig gemv_bf16_vendor_heuristic() {
  GemvBf16VendorConfig c;
  c.heuristic = true;
  return c;
}

bool is_gemv_bf16_vendor(const Tactic &tactic) { return tactic.kernel == kGemvBf16VendorKernel; }

std::vector<CublasLtAlgoId> gemv_bf16_vendor_algos(int rows, int n, int k) {
  return listed_algos(rows, n, k);
}

std::optional<CublasLtAlgoId> gemv_bf16_vendor_algo_for(const GemvBf16VendorConfig &config,
                                                        int rows, int n, int k,
                                                        std::string *reason) {
  if (!config.heuristic)
    return config.algo;
  const std::vector<CublasLtAlgoId> &algos = listed_algos(rows, n, k);
  if (algos.empty()) {
    if (reason)
      *reason = "cuBLASLt lists no algorithm for " + shape_text(rows, n, k);
    return std::nullopt;
  }
  return algos.front();
}

std::shared_ptr<const CublasLtBf16Gemm> gemv_bf16_vendor_plan(int rows, int n, int k,
                                                              const CublasLtAlgoId &algo,
                                                              std::string *reason) {
  struct Plan {
    std::shared_ptr<const CublasLtBf16Gemm> gemm;
    std::string reason;
  };
  static std::mutex mutex;
  static std::map<std::pair<ShapeKey, CublasLtAlgoId>, Plan> plans;
  std::lock_guard<std::mutex> lock(mutex);
  const std::pair<ShapeKey, CublasLtAlgoId> key{{rows, n, k}, algo};
  auto it = plans.find(key);
  if (it == plans.end()) {
    Plan p;
    try {
      p.gemm = std::make_shared<const CublasLtBf16Gemm>(rows, n, k, algo);
    } catch (const Error &e) {
      p.reason = e.what();
    }
    it = plans.emplace(key, std::move(p)).first;
  }
  if (!it->second.gemm && reason)
    *reason = it->second.reason;
  return it->second.gemm;
}

LaunchStatus gemv_bf16_vendor_launch(const GemvBf16VendorConfig &config, GemvBf16Args args,
                                     void *stream) {
  std::string why;
  const std::optional<CublasLtAlgoId> algo =
      gemv_bf16_vendor_algo_for(config, args.rows, args.n, args.k, &why);
  if (std::shared_ptr<const CublasLtBf16Gemm> gemm =
          algo ? gemv_bf16_vendor_plan(args.rows, args.n, args.k, *algo, &why) : nullptr) {
    const size_t bytes = gemm->workspace_bytes();
    void *workspace = bytes > 0 ? workspace_for(stream, bytes) : nullptr;
    const cublasStatus_t s = gemm->enqueue(args.x, args.w, args.y, workspace, bytes,
                                           static_cast<cudaStream_t>(stream));
    return s == CUBLAS_STATUS_SUCCESS ? LaunchStatus() : LaunchStatus::invalid_value();
  }
  const GemvBf16Config def = gemv_bf16_default(args.rows, args.n, args.k);
  warn_once("gemv.bf16: " + config.to_tactic().str() + " cannot run " +
            shape_text(args.rows, args.n, args.k) + " (" + why + "); running the default " +
            def.to_tactic().str());
  args.workspace_bytes = gemv_bf16_workspace_bytes(def, args.rows, args.n, args.k);
  args.workspace = args.workspace_bytes > 0 ? workspace_for(stream, args.workspace_bytes) : nullptr;
  return gemv_bf16_launch(def, args, stream);
}

} // namespace hone::cuda
