#include "cuda/peers/cublaslt_bf16_gemm.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>

#include "cuda/backend/cuda_check.h"
#include "hone/error.h"

namespace hone::cuda {

namespace {

// How far down the heuristic's list the algorithm constructor looks for its algorithm before it
// rebuilds it from the attributes: a tactic tuned on one row count of a bucket is often in the
// list of another.
constexpr int kHeuristicSearch = 16;

std::string problem_text(int rows, int n, int k) {
  return "rows=" + std::to_string(rows) + ",n=" + std::to_string(n) + ",k=" + std::to_string(k);
}

// Reads attribute `attr` of `algo` as a T into an int64; 0 when this cuBLASLt does not report
// it (an attribute newer than the library).
template <class T>
int64_t read_attribute(const cublasLtMatmulAlgo_t &algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  size_t written = 0;
  if (cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written) !=
          CUBLAS_STATUS_SUCCESS ||
      written != sizeof value)
    return 0;
  return static_cast<int64_t>(value);
}

// Sets attribute `attr` of `algo` to `value` as a T; false when it does not fit a T or this
// cuBLASLt refuses it.
template <class T>
bool write_attribute(cublasLtMatmulAlgo_t &algo, cublasLtMatmulAlgoConfigAttributes_t attr,
                     int64_t value) {
  if (value < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
      value > static_cast<int64_t>(std::numeric_limits<T>::max()))
    return false;
  const T v = static_cast<T>(value);
  return cublasLtMatmulAlgoConfigSetAttribute(&algo, attr, &v, sizeof v) == CUBLAS_STATUS_SUCCESS;
}

} // namespace

std::string CublasLtAlgoId::str() const {
  return "algo=" + std::to_string(algo) + ",tile=" + std::to_string(tile) +
         ",stages=" + std::to_string(stages) + ",split_k=" + std::to_string(split_k) +
         ",reduction=" + std::to_string(reduction) + ",swizzle=" + std::to_string(swizzle) +
         ",custom=" + std::to_string(custom) + ",inner_shape=" + std::to_string(inner_shape) +
         ",cluster_shape=" + std::to_string(cluster_shape);
}

CublasLtAlgoId cublaslt_algo_id(const cublasLtMatmulAlgo_t &algo) {
  CublasLtAlgoId id;
  id.algo = read_attribute<int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID);
  id.tile = read_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID);
  id.stages = read_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID);
  id.split_k = read_attribute<int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM);
  id.reduction = read_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME);
  id.swizzle = read_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING);
  id.custom = read_attribute<uint32_t>(algo, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION);
  id.inner_shape = read_attribute<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID);
  id.cluster_shape = read_attribute<uint16_t>(algo, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID);
  return id;
}

void CublasLtBf16Gemm::create(int rows, int n, int k) {
  if (rows < 1 || n < 1 || k < 1)
    HONE_INVALID_ARGUMENT("cuBLASLt BF16 GEMM needs positive dimensions, got " +
                          problem_text(rows, n, k));
  HONE_CUBLAS_CHECK(cublasLtCreate(&h_.handle));
  // Column-major view: Y^T [n, rows] = W [n, k] . X^T [k, rows], where row-major W [n, k]
  // is column-major [k, n] (ld k, transposed: op(A) = A^T) and row-major X [rows, k] is
  // column-major [k, rows] (ld k, not transposed); Y [rows, n] row-major is column-major
  // [n, rows] with ld n.
  const auto m = static_cast<uint64_t>(n);
  const auto cols = static_cast<uint64_t>(rows);
  const auto depth = static_cast<uint64_t>(k);
  HONE_CUBLAS_CHECK(cublasLtMatmulDescCreate(&h_.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t trans_a = CUBLAS_OP_T;
  const cublasOperation_t trans_b = CUBLAS_OP_N;
  HONE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h_.desc, CUBLASLT_MATMUL_DESC_TRANSA, &trans_a,
                                                   sizeof trans_a));
  HONE_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(h_.desc, CUBLASLT_MATMUL_DESC_TRANSB, &trans_b,
                                                   sizeof trans_b));
  HONE_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&h_.a, CUDA_R_16BF, depth, m, static_cast<int64_t>(depth)));
  HONE_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&h_.b, CUDA_R_16BF, depth, cols, static_cast<int64_t>(depth)));
  HONE_CUBLAS_CHECK(
      cublasLtMatrixLayoutCreate(&h_.c, CUDA_R_16BF, m, cols, static_cast<int64_t>(m)));

  HONE_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&h_.preference));
  const size_t workspace_bytes = kCublasLtWorkspaceBytes;
  HONE_CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(h_.preference,
                                                         CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                         &workspace_bytes, sizeof workspace_bytes));
}

std::vector<cublasLtMatmulHeuristicResult_t> CublasLtBf16Gemm::heuristic_results(int count) const {
  std::vector<cublasLtMatmulHeuristicResult_t> results(static_cast<size_t>(count));
  int found = 0;
  HONE_CUBLAS_CHECK(cublasLtMatmulAlgoGetHeuristic(h_.handle, h_.desc, h_.a, h_.b, h_.c, h_.c,
                                                   h_.preference, count, results.data(), &found));
  results.resize(static_cast<size_t>(found));
  std::erase_if(results, [](const cublasLtMatmulHeuristicResult_t &r) {
    return r.state != CUBLAS_STATUS_SUCCESS || r.workspaceSize > kCublasLtWorkspaceBytes;
  });
  return results;
}

CublasLtBf16Gemm::CublasLtBf16Gemm(int rows, int n, int k, Unplanned)
    : rows_(rows), n_(n), k_(k) {
  create(rows, n, k);
}

CublasLtBf16Gemm::CublasLtBf16Gemm(int rows, int n, int k)
    : rows_(rows), n_(n), k_(k) {
  create(rows, n, k);
  workspace_ = DeviceBuffer(kCublasLtWorkspaceBytes);
  const std::vector<cublasLtMatmulHeuristicResult_t> results = heuristic_results(1);
  if (results.empty())
    HONE_RUNTIME_ERROR("cuBLASLt has no BF16 algorithm for " + problem_text(rows, n, k));
  algo_ = results.front().algo;
  algo_id_ = cublaslt_algo_id(algo_);
  algo_workspace_bytes_ = results.front().workspaceSize;
}

CublasLtBf16Gemm::CublasLtBf16Gemm(int rows, int n, int k, const CublasLtAlgoId &algo)
    : rows_(rows), n_(n), k_(k), algo_id_(algo) {
  create(rows, n, k);
  for (const cublasLtMatmulHeuristicResult_t &r : heuristic_results(kHeuristicSearch))
    if (cublaslt_algo_id(r.algo) == algo) {
      algo_ = r.algo;
      algo_workspace_bytes_ = r.workspaceSize;
      return;
    }
  const auto refuse = [&](const std::string &why) {
    HONE_INVALID_ARGUMENT("cuBLASLt cannot run BF16 algorithm " + algo.str() + " for " +
                          problem_text(rows, n, k) + ": " + why);
  };
  if (algo.algo < 0 || algo.algo > std::numeric_limits<int32_t>::max())
    refuse("algorithm id out of range");
  if (cublasLtMatmulAlgoInit(h_.handle, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_16BF, CUDA_R_16BF,
                             CUDA_R_16BF, CUDA_R_16BF, static_cast<int>(algo.algo),
                             &algo_) != CUBLAS_STATUS_SUCCESS)
    refuse("unknown algorithm id");
  if (!write_attribute<uint32_t>(algo_, CUBLASLT_ALGO_CONFIG_TILE_ID, algo.tile) ||
      !write_attribute<uint32_t>(algo_, CUBLASLT_ALGO_CONFIG_STAGES_ID, algo.stages) ||
      !write_attribute<int32_t>(algo_, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, algo.split_k) ||
      !write_attribute<uint32_t>(algo_, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, algo.reduction) ||
      !write_attribute<uint32_t>(algo_, CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING, algo.swizzle) ||
      !write_attribute<uint32_t>(algo_, CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION, algo.custom) ||
      !write_attribute<uint16_t>(algo_, CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID, algo.inner_shape) ||
      !write_attribute<uint16_t>(algo_, CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID, algo.cluster_shape))
    refuse("an attribute is refused");
  cublasLtMatmulHeuristicResult_t check{};
  if (cublasLtMatmulAlgoCheck(h_.handle, h_.desc, h_.a, h_.b, h_.c, h_.c, &algo_, &check) !=
          CUBLAS_STATUS_SUCCESS ||
      check.state != CUBLAS_STATUS_SUCCESS)
    refuse("cublasLtMatmulAlgoCheck fails");
  if (check.workspaceSize > kCublasLtWorkspaceBytes)
    refuse("needs " + std::to_string(check.workspaceSize) + " bytes of workspace, more than " +
           std::to_string(kCublasLtWorkspaceBytes));
  // An attribute this cuBLASLt ignores would leave another algorithm than the one named.
  if (!(cublaslt_algo_id(algo_) == algo))
    refuse("it reads back as " + cublaslt_algo_id(algo_).str());
  algo_workspace_bytes_ = check.workspaceSize;
}

std::vector<CublasLtAlgoId> CublasLtBf16Gemm::heuristic(int rows, int n, int k, int count) {
  if (count < 1)
    HONE_INVALID_ARGUMENT("cuBLASLt heuristic: count=" + std::to_string(count) + " < 1");
  const CublasLtBf16Gemm gemm(rows, n, k, Unplanned{});
  std::vector<CublasLtAlgoId> ids;
  for (const cublasLtMatmulHeuristicResult_t &r : gemm.heuristic_results(count)) {
    const CublasLtAlgoId id = cublaslt_algo_id(r.algo);
    if (std::find(ids.begin(), ids.end(), id) == ids.end())
      ids.push_back(id);
  }
  return ids;
}

CublasLtBf16Gemm::Handles::~Handles() {
  // NOTE: destructors do not throw; failures here leave nothing to recover.
  if (preference)
    (void)cublasLtMatmulPreferenceDestroy(preference);
  if (c)
    (void)cublasLtMatrixLayoutDestroy(c);
  if (b)
    (void)cublasLtMatrixLayoutDestroy(b);
  if (a)
    (void)cublasLtMatrixLayoutDestroy(a);
  if (desc)
    (void)cublasLtMatmulDescDestroy(desc);
  if (handle)
    (void)cublasLtDestroy(handle);
}

void CublasLtBf16Gemm::run(const void *x, const void *w, void *y, cudaStream_t stream) {
  HONE_CHECK(workspace_.size() > 0, "CublasLtBf16Gemm::run needs the heuristic constructor's "
                                    "workspace; enqueue() takes one");
  HONE_CUBLAS_CHECK(enqueue(x, w, y, workspace_.data(), workspace_.size(), stream));
}

cublasStatus_t CublasLtBf16Gemm::enqueue(const void *x, const void *w, void *y, void *workspace,
                                         size_t workspace_bytes, cudaStream_t stream) const noexcept {
  if (workspace_bytes < algo_workspace_bytes_)
    return CUBLAS_STATUS_INVALID_VALUE;
  const float alpha = 1.0f;
  const float beta = 0.0f;
  return cublasLtMatmul(h_.handle, h_.desc, &alpha, w, h_.a, x, h_.b, &beta, y, h_.c, y, h_.c,
                        &algo_, workspace, workspace_bytes, stream);
}

} // namespace hone::cuda
