# JSON mode mask cost per state (included from bench/CMakeLists.txt; needs google benchmark). Run:
#   build/bin/herd_json_constraint_bench [--benchmark_filter=union-128k]
if(benchmark_FOUND)
  add_executable(herd_json_constraint_bench ${CMAKE_CURRENT_LIST_DIR}/json_constraint_bench.cc)
  target_link_libraries(herd_json_constraint_bench PRIVATE herd_sampling herd_tokenizer benchmark::benchmark)
  target_compile_definitions(herd_json_constraint_bench PRIVATE HERD_SHARED_DIR="${PROJECT_SOURCE_DIR}/../shared")
  set_target_properties(herd_json_constraint_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
endif()
