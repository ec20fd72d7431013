# Embedding requests through the engine: throughput against prefill, cost to decoding streams
# (included from bench/CMakeLists.txt). Run:
#   build/bin/herd_embedding_bench /work/models/llama-3.2-1b-Q4_K_M.gguf 2
add_executable(herd_embedding_bench ${CMAKE_CURRENT_LIST_DIR}/embedding_bench.cc)
target_link_libraries(herd_embedding_bench PRIVATE herd_engine herd_model herd_kv herd_tokenizer herd_kernels herd_io)
set_target_properties(herd_embedding_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
