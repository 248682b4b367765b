// CublasLtAlgoId: the identity of one cuBLASLt matmul algorithm, as its documented
// configuration attributes (cublasLtMatmulAlgoConfigAttributes_t) rather than the opaque
// cublasLtMatmulAlgo_t bytes, so that it can be written into a tactic, read back by another
// process, and refused (never run blindly) where the cuBLASLt in use does not know it.
//
//   CublasLtAlgoId id = cublaslt_algo_id(heuristic.algo);     // cublaslt_bf16_gemm.h
//   CublasLtBf16Gemm gemm(rows, n, k, id);                   // rebuilt, checked, or refused
//   std::string text = id.str();                              // "algo=66,tile=20,..."
#pragma once

#include <compare>
#include <cstdint>
#include <string>

namespace hone::cuda {

struct CublasLtAlgoId {
  int64_t algo = 0;          // CUBLASLT_ALGO_CONFIG_ID
  int64_t tile = 0;          // CUBLASLT_ALGO_CONFIG_TILE_ID (cublasLtMatmulTile_t)
  int64_t stages = 0;        // CUBLASLT_ALGO_CONFIG_STAGES_ID (cublasLtMatmulStages_t)
  int64_t split_k = 1;       // CUBLASLT_ALGO_CONFIG_SPLITK_NUM
  int64_t reduction = 0;     // CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME
  int64_t swizzle = 0;       // CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING
  int64_t custom = 0;        // CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION
  int64_t inner_shape = 0;   // CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID
  int64_t cluster_shape = 0; // CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID
  // Field by field, in declaration order (a map key).
  auto operator<=>(const CublasLtAlgoId &) const = default;
  // "algo=66,tile=20,stages=8,split_k=1,reduction=0,swizzle=0,custom=0,inner_shape=0,
  // cluster_shape=0" (one line), the fields in declaration order.
  std::string str() const;
};

} // namespace hone::cuda
