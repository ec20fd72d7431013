# HTTP transport benchmark (included from bench/CMakeLists.txt). Run:
#   build/bin/herd_http_bench [--events N] [--io-threads T] [--idle N] [--event-bytes B]
add_executable(herd_http_bench ${CMAKE_CURRENT_LIST_DIR}/http_bench.cc)
target_link_libraries(herd_http_bench PRIVATE herd_http)
set_target_properties(herd_http_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
