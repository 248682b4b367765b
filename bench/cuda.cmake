# CUDA benchmark programs; included from bench/CMakeLists.txt when HONE_WITH_CUDA.
foreach(program gemv_bf16_matrix qmv_affine_matrix)
  add_executable(${program} ${CMAKE_CURRENT_LIST_DIR}/${program}.cpp)
  target_link_libraries(${program} PRIVATE hone CLI11::CLI11)
  target_include_directories(${program} PRIVATE ${PROJECT_SOURCE_DIR}/src)
endforeach()

# Loads-only ceilings for the matrices' weight sizes and access patterns (no hone library).
add_executable(read_ceiling ${CMAKE_CURRENT_LIST_DIR}/read_ceiling.cu)
target_include_directories(read_ceiling PRIVATE ${PROJECT_SOURCE_DIR}/include
                                                ${PROJECT_SOURCE_DIR}/src
                                                ${PROJECT_SOURCE_DIR}/tests/device)
target_link_libraries(read_ceiling PRIVATE nlohmann_json::nlohmann_json)
