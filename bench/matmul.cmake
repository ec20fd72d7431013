# Matmul micro-benchmark (included from bench/CMakeLists.txt). Run:
#   build/bin/herd_matmul_bench [--threads 1,2] [--types Q4_K,Q6_K] [--isa avx512-vnni] [--bandwidth]
add_executable(herd_matmul_bench ${CMAKE_CURRENT_LIST_DIR}/matmul_bench.cc)
target_link_libraries(herd_matmul_bench PRIVATE herd_kernels_cpu herd_kernels_ref)
set_target_properties(herd_matmul_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
