# qmm.affine kernels: one generated translation unit per CUTLASS instantiation (so that they
# compile in parallel), compiled for sm_90a (wgmma and TMA need the architecture-specific
# target) into an object library that hone_cuda links, plus the list qmm_affine.cpp builds
# its table from. Included, as every kernels/*/*.cmake, from src/cuda/CMakeLists.txt after
# hone_cuda is defined.
#
# Kernel names are parsed, not looked up: w<bits>_t<tile N>x<tile M>x<tile K>_c<cluster N>x
# <cluster M>_<coop|pp>, with N the weight rows and M the activation rows of Y[M, N] (the
# kernels run the transposed problem, weights on the wgmma's M); bits 4 or 8 for the
# mixed-input kernels (path wgmma), bf16 for the dense kernels of path dequant, which serve
# both bits. The run-time split (split-K, stream-K) multiplies each cooperative kernel into
# several tactics (qmm_affine.cpp).
#
#   cmake -S . -B build -DHONE_QMM_TACTICS=full   # every kernel (the GPU machine)
#   cmake -S . -B build                           # ci: one kernel per path and bits

set(HONE_CUTLASS_INCLUDE_DIR "${PROJECT_SOURCE_DIR}/third_party/cutlass/include" CACHE PATH
    "CUTLASS/CuTe headers for qmm.affine (scripts/bootstrap.sh copies them from the PyPI package nvidia-cutlass)")
option(HONE_QMM_WGMMA_RS "qmm.affine: the mma path's register-A wgmma kernels (sm_90a)" ON)
set(HONE_QMM_TACTICS "ci" CACHE STRING
    "qmm.affine kernels to compile: ci (3 kernels, minutes on 2 cores) or full (the tuning set)")
set_property(CACHE HONE_QMM_TACTICS PROPERTY STRINGS ci full)

# ci: every shape runs (group 32 on the dequant kernel), on the fewest kernels.
set(HONE_QMM_KERNELS_CI
    w4_t128x128x64_c1x1_coop
    w8_t128x128x64_c1x1_coop
    wbf16_t128x128x64_c1x1_coop)
# full: the tuning set (docs/notes/qmm_affine.md says why each is here). Every kernel compiles
# without spills (-DHONE_CUDA_PTXAS_VERBOSE=ON shows it; the op refuses a kernel that spills).
set(HONE_QMM_KERNELS_FULL
    w4_t128x64x64_c1x1_coop
    w4_t128x128x64_c1x1_coop
    w4_t128x256x64_c1x1_coop
    w4_t128x128x128_c1x1_coop
    w4_t256x128x64_c1x1_coop
    w4_t128x128x64_c1x2_coop
    w4_t128x128x64_c2x1_coop
    w4_t64x128x64_c1x1_pp
    w4_t64x64x64_c1x1_pp
    w8_t128x64x64_c1x1_coop
    w8_t128x128x64_c1x1_coop
    w8_t128x256x64_c1x1_coop
    w8_t128x128x64_c1x2_coop
    w8_t64x128x64_c1x1_pp
    wbf16_t128x128x64_c1x1_coop
    wbf16_t128x256x64_c1x1_coop
    wbf16_t64x128x64_c1x1_pp)

set(hone_qmm_gen_dir ${CMAKE_CURRENT_BINARY_DIR}/qmm_affine)
set(hone_qmm_kernels "")
if(NOT EXISTS ${HONE_CUTLASS_INCLUDE_DIR}/cutlass/cutlass.h OR
   NOT EXISTS ${HONE_CUTLASS_INCLUDE_DIR}/cute/tensor.hpp)
  message(WARNING "hone: qmm.affine and quantized_linear are NOT built: no CUTLASS headers in "
                  "HONE_CUTLASS_INCLUDE_DIR=${HONE_CUTLASS_INCLUDE_DIR} (run scripts/bootstrap.sh, "
                  "which copies them there from the PyPI package nvidia-cutlass, or point "
                  "HONE_CUTLASS_INCLUDE_DIR at a CUTLASS 3.x/4.x include directory)")
elseif(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 12.3)
  message(WARNING "hone: qmm.affine and quantized_linear are NOT built: nvcc "
                  "${CMAKE_CUDA_COMPILER_VERSION} is older than 12.3 (CUTLASS sm_90a kernels)")
elseif(HONE_QMM_TACTICS STREQUAL "ci")
  set(hone_qmm_kernels ${HONE_QMM_KERNELS_CI})
elseif(HONE_QMM_TACTICS STREQUAL "full")
  set(hone_qmm_kernels ${HONE_QMM_KERNELS_FULL})
else()
  message(FATAL_ERROR "HONE_QMM_TACTICS=${HONE_QMM_TACTICS}: expected ci or full")
endif()

set(hone_qmm_sources "")
set(hone_qmm_list "")
foreach(kernel IN LISTS hone_qmm_kernels)
  if(NOT kernel MATCHES "^w(4|8|bf16)_t([0-9]+)x([0-9]+)x([0-9]+)_c([0-9]+)x([0-9]+)_(coop|pp)$")
    message(FATAL_ERROR "qmm.affine kernel name '${kernel}' is not w<4|8|bf16>_t<N>x<M>x<K>_c<N>x<M>_<coop|pp>")
  endif()
  if(CMAKE_MATCH_1 STREQUAL "bf16")
    set(HONE_QMM_BITS 16)
  else()
    set(HONE_QMM_BITS ${CMAKE_MATCH_1})
  endif()
  set(HONE_QMM_TILE_N ${CMAKE_MATCH_2})
  set(HONE_QMM_TILE_M ${CMAKE_MATCH_3})
  set(HONE_QMM_TILE_K ${CMAKE_MATCH_4})
  set(HONE_QMM_CLUSTER_N ${CMAKE_MATCH_5})
  set(HONE_QMM_CLUSTER_M ${CMAKE_MATCH_6})
  if(CMAKE_MATCH_7 STREQUAL "pp")
    set(HONE_QMM_PINGPONG 1)
    set(HONE_QMM_SCHEDULE "ping-pong")
  else()
    set(HONE_QMM_PINGPONG 0)
    set(HONE_QMM_SCHEDULE "cooperative")
  endif()
  set(HONE_QMM_NAME qmm_affine_${kernel}_sm90a)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/qmm_affine_instance.cu.in
                 ${hone_qmm_gen_dir}/${HONE_QMM_NAME}.cu @ONLY)
  list(APPEND hone_qmm_sources ${hone_qmm_gen_dir}/${HONE_QMM_NAME}.cu)
  string(APPEND hone_qmm_list "HONE_QMM_KERNEL(${HONE_QMM_NAME})\n")
endforeach()
# The mma path's wgmma engine: one sm_90a unit beside the CUTLASS ones (a .cu.in, so that
# hone_cuda's glob of kernels/*.cu, compiled for the generic architecture, leaves it out).
if(HONE_QMM_WGMMA_RS AND hone_qmm_sources)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/qmm_affine_wgmma_rs.cu.in
                 ${hone_qmm_gen_dir}/qmm_affine_wgmma_rs_sm90a.cu COPYONLY)
  list(APPEND hone_qmm_sources ${hone_qmm_gen_dir}/qmm_affine_wgmma_rs_sm90a.cu)
  target_compile_definitions(hone_cuda PRIVATE HONE_QMM_WGMMA_RS)
endif()
# Units of kernels no longer listed (another HONE_QMM_TACTICS) are removed, so that the build
# directory holds what the table says.
file(GLOB hone_qmm_present ${hone_qmm_gen_dir}/qmm_affine_*_sm90a.cu)
foreach(unit IN LISTS hone_qmm_present)
  if(NOT unit IN_LIST hone_qmm_sources)
    file(REMOVE ${unit})
  endif()
endforeach()
# Rewritten only when the list changes (file(CONFIGURE) keeps an unchanged file untouched).
file(CONFIGURE OUTPUT ${hone_qmm_gen_dir}/qmm_affine_kernels.inc
     CONTENT "// Generated by qmm_affine.cmake (HONE_QMM_TACTICS=${HONE_QMM_TACTICS}): the compiled qmm.affine kernels.\n${hone_qmm_list}")
target_include_directories(hone_cuda PRIVATE ${hone_qmm_gen_dir})

list(LENGTH hone_qmm_sources hone_qmm_count)
if(hone_qmm_count GREATER 0)
  add_library(hone_qmm_kernels OBJECT ${hone_qmm_sources})
  # sm_90a only, whatever HONE_CUDA_ARCHS says: the kernels use wgmma and TMA.
  set_target_properties(hone_qmm_kernels PROPERTIES CUDA_ARCHITECTURES 90a-real
                                                    POSITION_INDEPENDENT_CODE ON)
  target_include_directories(hone_qmm_kernels PRIVATE ${PROJECT_SOURCE_DIR}/src
                                                      ${PROJECT_SOURCE_DIR}/include)
  target_include_directories(hone_qmm_kernels SYSTEM PRIVATE ${HONE_CUTLASS_INCLUDE_DIR})
  # NDEBUG in every build type: a device assert is a function call inside the wgmma pipeline,
  # which serialises it (ptxas C7510) and costs registers (spills the op would refuse).
  target_compile_definitions(hone_qmm_kernels PRIVATE NDEBUG
                             $<$<BOOL:${HONE_QMM_WGMMA_RS}>:HONE_QMM_WGMMA_RS>)
  target_compile_options(hone_qmm_kernels PRIVATE
    --expt-relaxed-constexpr -lineinfo
    $<$<BOOL:${HONE_CUDA_PTXAS_VERBOSE}>:-Xptxas=-v>)
  target_sources(hone_cuda PRIVATE $<TARGET_OBJECTS:hone_qmm_kernels>)
  message(STATUS "hone: qmm.affine: ${hone_qmm_count} kernels (HONE_QMM_TACTICS=${HONE_QMM_TACTICS}), "
                 "CUTLASS from ${HONE_CUTLASS_INCLUDE_DIR}")
endif()
