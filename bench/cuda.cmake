# CUDA benchmark programs; included from bench/CMakeLists.txt when HONE_WITH_CUDA.
foreach(program gemv_bf16_matrix qmv_affine_matrix)
  add_executable(${program} ${CMAKE_CURRENT_LIST_DIR}/${program}.cpp)
  target_link_libraries(${program} PRIVATE hone CLI11::CLI11)
  target_include_directories(${program} PRIVATE ${PROJECT_SOURCE_DIR}/src)
endforeach()
