# CUDA benchmark programs; included from bench/CMakeLists.txt when HONE_WITH_CUDA.

# Loads-only ceilings for the matrices' weight sizes and access patterns (no hone library).
add_executable(read_ceiling ${CMAKE_CURRENT_LIST_DIR}/read_ceiling.cu)
target_include_directories(read_ceiling PRIVATE ${PROJECT_SOURCE_DIR}/include
                                                ${PROJECT_SOURCE_DIR}/src
                                                ${PROJECT_SOURCE_DIR}/tests/device)
target_link_libraries(read_ceiling PRIVATE nlohmann_json::nlohmann_json)

# decode.paged acceptance configs: default, every kv_chunk candidate and unsplit, interleaved
# (the op_matrix driver covers the op through its shape list; this one runs exact ragged lengths).
add_executable(decode_paged_bench ${CMAKE_CURRENT_LIST_DIR}/decode_paged_bench.cpp)
target_link_libraries(decode_paged_bench PRIVATE hone CLI11::CLI11 nlohmann_json::nlohmann_json)
target_include_directories(decode_paged_bench PRIVATE ${PROJECT_SOURCE_DIR}/src)

# The loads-only ceiling of a decode step made of separate kernels: the step's launches as
# loads-only reads of their bytes in one CUDA graph, plain, PDL, and PDL with weights requested
# before the wait.
add_executable(step_ceiling ${CMAKE_CURRENT_LIST_DIR}/step_ceiling.cu)
target_include_directories(step_ceiling PRIVATE ${PROJECT_SOURCE_DIR}/src
                                                ${PROJECT_SOURCE_DIR}/tests/device)
# hone_cli: hone step's --quant / --context parsers, and (CUDA builds) hone_model's byte accounting.
target_link_libraries(step_ceiling PRIVATE hone_cli CLI11::CLI11 nlohmann_json::nlohmann_json)

# qmm.affine's mma-path kernels timed (or launched once, QMM_PROBE_ONCE=1) one by one, without
# the op's gate: for profiles and ablations of single kernels (scripts/device/profile.sh).
add_executable(qmm_probe ${CMAKE_CURRENT_LIST_DIR}/qmm_probe.cu)
target_include_directories(qmm_probe PRIVATE ${PROJECT_SOURCE_DIR}/src)
target_link_libraries(qmm_probe PRIVATE hone)

# The qmv.affine and gemv.bf16 kernel harnesses built as programs (their GoogleTest forms are in
# tests/device): every admissible config of every cell timed interleaved with a loads-only read
# of the same rotated weights, in one table (scripts/device/qmv_ring.sh).
foreach(harness qmv_affine gemv_bf16)
  add_executable(${harness}_harness ${PROJECT_SOURCE_DIR}/tests/device/${harness}_kernel_test.cu)
  string(TOUPPER ${harness} upper)
  target_compile_definitions(${harness}_harness PRIVATE HONE_${upper}_KERNEL_TEST_MAIN)
  target_include_directories(${harness}_harness PRIVATE ${PROJECT_SOURCE_DIR}/src
                                                        ${PROJECT_SOURCE_DIR}/tests/device)
  target_link_libraries(${harness}_harness PRIVATE hone)
endforeach()
