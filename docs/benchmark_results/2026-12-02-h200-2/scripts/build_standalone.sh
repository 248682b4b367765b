#!/usr/bin/env bash
# Run 1's standalone timing harnesses, L2 prefetch off (pf0) and on (pf1). The prefetch was
# never committed: apply l2_prefetch.patch (beside this file) to c331066 first, from the
# repository root. HONE_QMV_L2_PREFETCH and HONE_GEMV_L2_PREFETCH exist only in that patch.
set -e
F="-std=c++20 -O3 -gencode=arch=compute_90a,code=sm_90a -Iinclude -Isrc -Itests/device"
COMMON="src/cuda/kernels/common/split_k_launch.cpp src/cuda/kernels/common/config_tactic.cpp src/cuda/kernels/common/split_k_family.cpp src/cuda/kernels/common/kernel_types.cpp src/cuda/kernels/common/weight_stream.cpp src/core/tactic.cpp src/core/error.cpp"
for pf in 1 0; do
  nvcc $F -DHONE_QMV_AFFINE_KERNEL_TEST_MAIN -DHONE_QMV_L2_PREFETCH=$pf tests/device/qmv_affine_kernel_test.cu src/cuda/kernels/qmv_affine/qmv_affine.cu src/cuda/kernels/qmv_affine/qmv_affine_config.cpp $COMMON -o .carry/standalone/qmv_pf$pf &
  nvcc $F -DHONE_GEMV_BF16_KERNEL_TEST_MAIN -DHONE_GEMV_L2_PREFETCH=$pf tests/device/gemv_bf16_kernel_test.cu src/cuda/kernels/gemv_bf16/gemv_bf16.cu src/cuda/kernels/gemv_bf16/gemv_bf16_config.cpp $COMMON -lcublasLt -o .carry/standalone/gemv_pf$pf &
  wait
done
echo done
