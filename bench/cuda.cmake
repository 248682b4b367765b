# CUDA benchmark programs; included from bench/CMakeLists.txt when HONE_WITH_CUDA.
add_executable(gemv_bf16_matrix ${CMAKE_CURRENT_LIST_DIR}/gemv_bf16_matrix.cpp)
target_link_libraries(gemv_bf16_matrix PRIVATE hone CLI11::CLI11)
target_include_directories(gemv_bf16_matrix PRIVATE ${PROJECT_SOURCE_DIR}/src)
