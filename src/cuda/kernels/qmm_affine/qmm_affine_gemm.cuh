// qmm.affine device code: the CUTLASS 3.x type glue that turns one kernel description (bits,
// tile, cluster, schedule) into a Hopper GEMM, and the four host functions a QmmAffineKernel row
// holds. Included by exactly one generated translation unit per kernel
// (qmm_affine_instance.cu.in); needs sm_90a (wgmma, TMA) and the CUTLASS headers.
//
// Two kinds of kernel:
//   bits 4 / 8   the mixed-input GEMM below (path wgmma), weights dequantised in registers;
//   bits 16      a dense bf16 GEMM (path dequant) on weights qmm_affine.cpp first dequantises
//                to bf16 scratch, a chunk of rows at a time. It serves group 32, which the
//                mixed-input mainloop cannot (it needs tile K >= 64 and one scale per K tile),
//                and competes with the mixed-input kernels where the tensor cores bound the time.
//
// The problem handed to CUTLASS is the transposed one, Y^T[n, m] = W[n, k] . X^T[k, m]:
//   A = the packed weights, [n, k] K-major (uint4b_t or uint8_t, the bytes of the affine q
//       words: 32 / bits values per uint32 word, lowest bits first, which is CUTLASS's
//       sub-byte order), paired with its scales and zero-points (ConvertAndScaleWithZero);
//   B = X, [k, m] K-major (X row-major [m, k]);
//   D = Y^T, [n, m] N-major (Y row-major [m, n]).
// The collective dequantises each A fragment in registers as bf16(bf16(q * scale) + zero)
// (cutlass/detail/collective/mixed_input_utils.hpp, dequantize_A_kblock), i.e. the zero-point
// is added after scaling: hone's bias is that zero-point as is. Its scales must be N-major
// ([k / group, n]), hence the transposed group parameters in the workspace (qmm_affine.cpp).
//
// Summation order: fp32 accumulation over K in tile_k steps, in 16-deep wgmma steps within a
// tile; split-K and stream-K add the K slices of a tile through the workspace in a fixed
// order (ReductionMode::Deterministic), so a config's output does not depend on timing.
#pragma once

#include <atomic>
#include <cstdint>

#include <cuda_runtime.h>

#include "cute/tensor.hpp"
#include "cutlass/cutlass.h"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/kernel/gemm_universal.hpp"

#include "cuda/kernels/qmm_affine/qmm_affine_kernel.h"

namespace hone::cuda::qmm_affine_detail {

using Bf16 = cutlass::bfloat16_t;

// The CUTLASS GEMM of one kernel description. TILE_N / CLUSTER_N run along the weights (the
// GEMM's M), TILE_M / CLUSTER_M along the activation rows (the GEMM's N).
template <int BITS, int TILE_N, int TILE_M, int TILE_K, int CLUSTER_N, int CLUSTER_M, bool PINGPONG>
struct QmmGemm {
  static_assert(BITS == 4 || BITS == 8 || BITS == 16,
                "qmm.affine packs 4- or 8-bit weights; 16: the dense kernel on bf16 weights");
  static_assert(!PINGPONG || TILE_N == 64, "a ping-pong consumer warpgroup owns 64 weight rows");
  static_assert(PINGPONG || TILE_N % 128 == 0, "cooperative tiles split N over two warpgroups");

  static constexpr bool kMixed = BITS != 16;
  using Quant = cute::conditional_t<BITS == 4, cutlass::uint4b_t,
                                    cute::conditional_t<BITS == 8, uint8_t, Bf16>>;
  // The A operand: the quantized weights with their scales and zero-points (mixed input), or
  // the dequantised bf16 weights.
  using ElementA = cute::conditional_t<kMixed, cute::tuple<Quant, Bf16, Bf16>, Bf16>;
  using TileShape = cute::Shape<cute::Int<TILE_N>, cute::Int<TILE_M>, cute::Int<TILE_K>>;
  using ClusterShape = cute::Shape<cute::Int<CLUSTER_N>, cute::Int<CLUSTER_M>, cute::_1>;
  using KernelSchedule =
      cute::conditional_t<PINGPONG, cutlass::gemm::KernelTmaWarpSpecializedPingpong,
                          cutlass::gemm::KernelTmaWarpSpecializedCooperative>;
  using EpilogueSchedule = cute::conditional_t<PINGPONG, cutlass::epilogue::TmaWarpSpecialized,
                                               cutlass::epilogue::TmaWarpSpecializedCooperative>;
  // Stream-K (which also runs split-K and data-parallel, chosen per launch) exists for the
  // cooperative kernel only; ping-pong keeps the plain persistent scheduler.
  using TileScheduler = cute::conditional_t<PINGPONG, cutlass::gemm::PersistentScheduler,
                                            cutlass::gemm::StreamKScheduler>;

  // Y^T is N-major: column-major in the transposed problem. No C operand (beta = 0), so the
  // epilogue reserves no shared memory and reads nothing.
  using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
      cutlass::epilogue::collective::EpilogueTileAuto, float, float, void,
      cutlass::layout::ColumnMajor, 8, Bf16, cutlass::layout::ColumnMajor, 8,
      EpilogueSchedule>::CollectiveOp;

  using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
      cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, ElementA, cutlass::layout::RowMajor,
      128 / BITS, Bf16, cutlass::layout::ColumnMajor, 8, float, TileShape, ClusterShape,
      cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(
          sizeof(typename Epilogue::SharedStorage))>,
      KernelSchedule>::CollectiveOp;

  using Kernel = cutlass::gemm::kernel::GemmUniversal<cute::Shape<int, int, int, int>, Mainloop,
                                                      Epilogue, TileScheduler>;
  using Device = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;
  static constexpr bool kStreamK = !PINGPONG;
};

template <class G> typename G::Device::Arguments make_arguments(const QmmAffineKernelArgs &a) {
  using Kernel = typename G::Kernel;
  const int64_t m = a.m, n = a.n, k = a.k, ldy = a.ldy > 0 ? a.ldy : a.n;
  typename Kernel::StrideA stride_q{};
  cute::get<0>(stride_q) = k;
  cute::get<2>(stride_q) = n * k;
  typename Kernel::StrideB stride_x{};
  cute::get<0>(stride_x) = k;
  cute::get<2>(stride_x) = m * k;
  typename Kernel::StrideD stride_y{};
  cute::get<1>(stride_y) = ldy;
  cute::get<2>(stride_y) = ldy * m;

  typename G::Device::Arguments args{};
  args.mode = cutlass::gemm::GemmUniversalMode::kGemm;
  args.problem_shape = {a.n, a.m, a.k, 1};
  args.mainloop.ptr_A = static_cast<const typename G::Quant *>(a.q);
  args.mainloop.dA = stride_q;
  args.mainloop.ptr_B = static_cast<const Bf16 *>(a.x);
  args.mainloop.dB = stride_x;
  if constexpr (G::kMixed) {
    const int64_t groups = a.k / a.group;
    typename G::Mainloop::StrideScale stride_s{};
    cute::get<1>(stride_s) = n;
    cute::get<2>(stride_s) = n * groups;
    args.mainloop.ptr_S = static_cast<const Bf16 *>(a.scales_t);
    args.mainloop.dS = stride_s;
    args.mainloop.group_size = a.group;
    args.mainloop.ptr_Z = static_cast<const Bf16 *>(a.biases_t);
  }
  args.epilogue.thread.alpha = 1.0f;
  args.epilogue.thread.beta = 0.0f;
  args.epilogue.ptr_C = nullptr;
  args.epilogue.ptr_D = static_cast<Bf16 *>(a.y);
  args.epilogue.dD = stride_y;
  args.hw_info.sm_count = a.sm_count;
  if constexpr (G::kStreamK) {
    using Mode = typename Kernel::TileScheduler::DecompositionMode;
    args.scheduler.splits = a.split_k;
    args.scheduler.decomposition_mode = a.stream_k      ? Mode::StreamK
                                        : a.split_k > 1 ? Mode::SplitK
                                                        : Mode::DataParallel;
  }
  return args;
}

template <class G> size_t workspace_bytes(const QmmAffineKernelArgs &a) {
  return G::Device::get_workspace_size(make_arguments<G>(a));
}

template <class G> int can_implement(const QmmAffineKernelArgs &a) {
  return static_cast<int>(G::Device::can_implement(make_arguments<G>(a)));
}

// The kernel's dynamic shared memory exceeds the default 48 KB: opted in once per device
// (bit d of `done` for device d < 64; later devices every call).
template <class G> cudaError_t opt_in_shared_memory() {
  static std::atomic<uint64_t> done{0};
  int device = 0;
  if (cudaError_t e = cudaGetDevice(&device); e != cudaSuccess)
    return e;
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit && (done.load(std::memory_order_acquire) & bit))
    return cudaSuccess;
  const cudaError_t e = cudaFuncSetAttribute(cutlass::device_kernel<typename G::Kernel>,
                                             cudaFuncAttributeMaxDynamicSharedMemorySize,
                                             G::Kernel::SharedStorageSize);
  if (e == cudaSuccess && bit)
    done.fetch_or(bit, std::memory_order_acq_rel);
  return e;
}

template <class G> int run(const QmmAffineKernelArgs &a, void *stream) {
  using Kernel = typename G::Kernel;
  const auto s = static_cast<cudaStream_t>(stream);
  if (cudaError_t e = opt_in_shared_memory<G>(); e != cudaSuccess)
    return static_cast<int>(e);
  const auto args = make_arguments<G>(a);
  if (G::Device::can_implement(args) != cutlass::Status::kSuccess)
    return static_cast<int>(cudaErrorInvalidValue);
  // Zeroes what split-K / stream-K need zeroed (stream-ordered; nothing for data-parallel).
  if (Kernel::initialize_workspace(args, a.workspace, s, nullptr) != cutlass::Status::kSuccess) {
    const cudaError_t e = cudaGetLastError();
    return static_cast<int>(e != cudaSuccess ? e : cudaErrorInvalidValue);
  }
  typename Kernel::Params params = Kernel::to_underlying_arguments(args, a.workspace);
  if (G::Device::run(params, s) != cutlass::Status::kSuccess) {
    const cudaError_t e = cudaGetLastError();
    return static_cast<int>(e != cudaSuccess ? e : cudaErrorLaunchFailure);
  }
  return static_cast<int>(cudaGetLastError());
}

template <class G> int resources(KernelResources *out) {
  cudaFuncAttributes attr{};
  const cudaError_t e = cudaFuncGetAttributes(&attr, cutlass::device_kernel<typename G::Kernel>);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return static_cast<int>(e);
  }
  out->registers = attr.numRegs;
  out->local_bytes = attr.localSizeBytes;
  out->shared_bytes = attr.sharedSizeBytes + static_cast<size_t>(G::Kernel::SharedStorageSize);
  out->max_threads = attr.maxThreadsPerBlock;
  return 0;
}

template <int BITS, int TILE_N, int TILE_M, int TILE_K, int CLUSTER_N, int CLUSTER_M, int PINGPONG>
constexpr QmmAffineKernel make_kernel(const char *name) {
  using G = QmmGemm<BITS, TILE_N, TILE_M, TILE_K, CLUSTER_N, CLUSTER_M, PINGPONG != 0>;
  return {BITS,
          TILE_M,
          TILE_N,
          TILE_K,
          CLUSTER_M,
          CLUSTER_N,
          PINGPONG,
          G::Mainloop::DispatchPolicy::Stages,
          name,
          &workspace_bytes<G>,
          &can_implement<G>,
          &run<G>,
          &resources<G>};
}

} // namespace hone::cuda::qmm_affine_detail
