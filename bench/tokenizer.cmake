# Tokenizer throughput benchmark (included from bench/CMakeLists.txt). Run:
#   build/bin/herd_tokenizer_bench [--reps N] [--mib M] [-m FILE.gguf ...]
add_executable(herd_tokenizer_bench ${CMAKE_CURRENT_LIST_DIR}/tokenizer_bench.cc)
target_link_libraries(herd_tokenizer_bench PRIVATE herd_tokenizer)
target_compile_definitions(herd_tokenizer_bench PRIVATE HERD_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
set_target_properties(herd_tokenizer_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
