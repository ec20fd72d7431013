# Server cost per streamed token (HTTP + JSON + SSE/NDJSON over the engine), included from
# bench/CMakeLists.txt. Run: build/bin/herd_serve_overhead_bench [--model F] [--streams S] [--tokens T]
add_executable(herd_serve_overhead_bench ${CMAKE_CURRENT_LIST_DIR}/serve_overhead_bench.cc)
target_link_libraries(herd_serve_overhead_bench PRIVATE herd_server herd_model_testing)
set_target_properties(herd_serve_overhead_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
