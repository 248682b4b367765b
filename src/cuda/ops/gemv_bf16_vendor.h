// gemv.bf16's vendor tactics: cuBLASLt's BF16 GEMM (fp32 compute, bf16 out, the configuration
// of the "cublas" peer) with one algorithm of cuBLASLt's heuristic list for the bucket, as one
// more tactic of the op. Spelled with the algorithm's identity (CublasLtAlgoId), not its rank
// in the list, so that a cache entry names the algorithm that was measured:
//
//   gemv.bf16.cublaslt:algo=66,tile=20,stages=8,split_k=1,reduction=0,swizzle=0,custom=0,
//                      inner_shape=0,cluster_shape=0
//
// and one more, which names no algorithm: the heuristic's first for the launch's exact shape,
// asked at the first launch of each shape (what the peer and a user of cuBLASLt run):
//
//   gemv.bf16.cublaslt:heuristic=1
//
// A bucket's pick serves every row count of the bucket (rows 9-16 run the pick of 16), and
// cuBLASLt's heuristic answers each row count apart, so a named algorithm tuned at 32 rows can
// trail cuBLASLt itself at 24 (1.4 % on 4096 x 4096, docs/benchmark_results/2026-12-05-h100-4).
// The heuristic tactic runs at every row count what cuBLASLt would; at the bucket's own row
// count it is the heuristic's first algorithm, so it takes that algorithm's place among the
// candidates (the others are named).
//
// A vendor tactic makes no batch-invariance promise (cuBLASLt picks its order per shape), so
// it is a candidate only of a tune in tolerance mode (GemvBf16Op::tune_candidates), gated
// against the same float64 reference and timed in the same round-robin as hone's kernels.
// Where the cuBLASLt in use does not list or cannot run a cached algorithm (another version,
// another device), the tactic is not a candidate of the bucket, so the cache entry is ignored
// with a warning like any stale one; never run blindly.
//
//   GemvBf16VendorConfig c = GemvBf16VendorConfig::from_tactic(tactic);
//   LaunchStatus s = gemv_bf16_vendor_launch(c, args, stream);   // the entry point's launch
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/kernels/common/kernel_types.h"
#include "cuda/kernels/gemv_bf16/gemv_bf16.h"
#include "cuda/peers/cublaslt_algo_id.h"
#include "hone/tactic.h"

namespace hone::cuda {

class CublasLtBf16Gemm;

// The kernel field of every vendor tactic of gemv.bf16.
inline constexpr std::string_view kGemvBf16VendorKernel = "gemv.bf16.cublaslt";
// How many of cuBLASLt's heuristic algorithms for a bucket are candidates of a tune.
inline constexpr int kGemvBf16VendorCandidates = 4;

struct GemvBf16VendorConfig {
  CublasLtAlgoId algo;    // the algorithm, unless `heuristic`
  bool heuristic = false; // the heuristic's first algorithm for the launch's shape
  Tactic to_tactic() const;
  // Throws Error(invalid_argument) naming the tactic for one that is not a vendor tactic of
  // gemv.bf16: another kernel, a missing, extra or misplaced field, or a value outside its
  // attribute's range (naming the field and the value).
  static GemvBf16VendorConfig from_tactic(const Tactic &tactic);
  bool operator==(const GemvBf16VendorConfig &) const = default;
};

// The heuristic tactic (`heuristic=1`).
GemvBf16VendorConfig gemv_bf16_vendor_heuristic();

// True when `tactic` names cuBLASLt (kernel kGemvBf16VendorKernel), whatever its fields.
bool is_gemv_bf16_vendor(const Tactic &tactic);

// The identities of cuBLASLt's first kGemvBf16VendorCandidates algorithms for rows, n, k,
// best first: asked once per shape in the process and kept. Empty, with one warning per shape,
// when cuBLASLt cannot answer (no device, a library error): the tune then has hone's kernels
// only.
std::vector<CublasLtAlgoId> gemv_bf16_vendor_algos(int rows, int n, int k);

// The algorithm `config` runs on rows, n, k: its own, or for the heuristic tactic the first of
// gemv_bf16_vendor_algos(rows, n, k); nullopt, with the reason in *reason, when cuBLASLt lists
// none for the shape.
std::optional<CublasLtAlgoId> gemv_bf16_vendor_algo_for(const GemvBf16VendorConfig &config,
                                                        int rows, int n, int k,
                                                        std::string *reason);

// The plan of `algo` for rows, n, k, built once in the process and shared (the entry point's
// and the workloads'); null, with the reason in *reason, when this cuBLASLt cannot run it.
std::shared_ptr<const CublasLtBf16Gemm> gemv_bf16_vendor_plan(int rows, int n, int k,
                                                              const CublasLtAlgoId &algo,
                                                              std::string *reason);

// The entry point's launch of a vendor tactic on `args` (the workspace from workspace_for on
// `stream`; args.workspace is ignored). Where this cuBLASLt cannot run the algorithm for this
// exact shape (a bucket's tactic on another row count of it), one warning per shape and
// algorithm, and the shape's default kernel runs instead, as for a stale cache entry.
// Never synchronises.
LaunchStatus gemv_bf16_vendor_launch(const GemvBf16VendorConfig &config, GemvBf16Args args,
                                     void *stream);

} // namespace hone::cuda
