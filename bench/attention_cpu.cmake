# CPU paged-attention micro-benchmark (included from bench/CMakeLists.txt). Run:
#   build/bin/herd_attention_cpu_bench [--shape 1b|8b] [--ctx 1024,4096] [--threads 1,2] [--kv f16,q8_0]
add_executable(herd_attention_cpu_bench ${CMAKE_CURRENT_LIST_DIR}/attention_cpu_bench.cc)
target_link_libraries(herd_attention_cpu_bench PRIVATE herd_kernels)
set_target_properties(herd_attention_cpu_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
