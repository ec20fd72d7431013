# CudaBackend part (memory, element-wise ops, StoreKv / PagedAttention): GPU tests and the decode
# attention benchmark.
#   build/bin/herd_cuda_attention_bench [--kv f16,q8_0,f32] [--quick]
herd_cuda_test(herd_cuda_backend_test SOURCES cuda_backend_test.cc backend_switches_test.cc device_arch_test.cu)
herd_cuda_test(herd_cuda_attention_test SOURCES attention_cuda_test.cc attention_decode_fused_test.cc)
# The split count per item (attn::SplitsPerItem), on the host.
herd_cuda_test(herd_cuda_attention_split_test SOURCES attention_split_test.cc)

add_executable(herd_cuda_attention_bench ${CMAKE_CURRENT_LIST_DIR}/attention_cuda_bench.cu)
target_link_libraries(herd_cuda_attention_bench PRIVATE herd_kernels_cuda)
target_compile_options(herd_cuda_attention_bench PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:${HERD_CUDA_ARCHS};--expt-relaxed-constexpr;-lineinfo;-diag-suppress=2810>)
set_target_properties(herd_cuda_attention_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# How fast a paged F16 KV cache streams with the decode kernel's access pattern, per layout.
#   build/bin/herd_cuda_kv_stream_bench [--seqs 128] [--ctx 576]
add_executable(herd_cuda_kv_stream_bench ${CMAKE_CURRENT_LIST_DIR}/kv_stream_bench.cu)
target_link_libraries(herd_cuda_kv_stream_bench PRIVATE herd_kernels_cuda)
target_compile_options(herd_cuda_kv_stream_bench PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:${HERD_CUDA_ARCHS};-lineinfo>)
set_target_properties(herd_cuda_kv_stream_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
herd_cuda_test(herd_cuda_draw_test SOURCES draw_cuda_test.cc)
