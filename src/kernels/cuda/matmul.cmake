# Matmul part of the CUDA backend (MatMulRunner, GetRows): its GPU test and its benchmark.
#   build/bin/herd_cuda_matmul_bench [--models 8b,1b] [--types F16,Q4_K] [--tok 1,8,512] [--paths gemv,tc]
herd_cuda_test(herd_cuda_matmul_test SOURCES matmul_cuda_test.cc matmul_quant_tc_test.cc gemm_split_k_test.cc
               gemm_tuned_test.cc gemv_float_ring_test.cu quant_act_test.cc)

add_executable(herd_cuda_matmul_bench ${CMAKE_CURRENT_LIST_DIR}/matmul_cuda_bench.cu)
target_link_libraries(herd_cuda_matmul_bench PRIVATE herd_kernels_cuda)
target_compile_options(herd_cuda_matmul_bench PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:${HERD_CUDA_ARCHS};--expt-relaxed-constexpr;-lineinfo>)
set_target_properties(herd_cuda_matmul_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# cuBLASLt's algorithms for the tensor-core GEMM shapes against cublasGemmEx's default pick.
#   build/bin/herd_cuda_cublaslt_bench [--shapes 6144:4096,...] [--tok 128]
add_executable(herd_cuda_cublaslt_bench ${CMAKE_CURRENT_LIST_DIR}/cublaslt_bench.cc)
target_link_libraries(herd_cuda_cublaslt_bench PRIVATE CUDA::cublas CUDA::cublasLt CUDA::cudart)
set_target_properties(herd_cuda_cublaslt_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# The GEMV's per-lane dot products against ref::VecDot, on the host (needs no GPU).
herd_cuda_test(herd_cuda_quant_dot_test SOURCES quant_dot_test.cu)
# Norm / SwiGLU fused with the GEMV's activation quantization (quant_fused.cu, PrepareMatMulInput);
# Q/K/V as one GEMM read in place by the attention (MatMulConcatenated); the norm inside the
# gate/up GEMV (GemvQuantAddNorm); the down projection in K slices added by the norm (MatMulSlicedK).
herd_cuda_test(herd_cuda_fused_input_test SOURCES fused_input_test.cc qkv_concat_test.cc gemv_add_norm_test.cc
               sliced_k_test.cc)
# GemvQuantAddNorm's ring shape (PlanAddNormRing), on the host (needs no GPU).
herd_cuda_test(herd_cuda_add_norm_plan_test SOURCES gemv_add_norm_plan_test.cc)

# The decode feed-forward as one stream against two concurrent graph branches (timing only).
#   build/bin/herd_cuda_ffn_branch_bench [--layers 32] [--frac 0.5]
add_executable(herd_cuda_ffn_branch_bench ${CMAKE_CURRENT_LIST_DIR}/ffn_branch_bench.cu)
target_link_libraries(herd_cuda_ffn_branch_bench PRIVATE herd_kernels_cuda)
target_compile_options(herd_cuda_ffn_branch_bench PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:${HERD_CUDA_ARCHS};--expt-relaxed-constexpr;-lineinfo>)
set_target_properties(herd_cuda_ffn_branch_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# The one-token F16 GEMV chain of a layer stack as launches against one persistent kernel with
# grid barriers (what a persistent layer kernel could save; timing and a one-layer check).
#   build/bin/herd_cuda_layer_chain_bench [--layers 16] [--embd 2048] [--qkv 3072] [--ff 8192]
add_executable(herd_cuda_layer_chain_bench ${CMAKE_CURRENT_LIST_DIR}/layer_chain_bench.cu)
target_link_libraries(herd_cuda_layer_chain_bench PRIVATE herd_kernels_cuda)
target_compile_options(herd_cuda_layer_chain_bench PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:${HERD_CUDA_ARCHS};--expt-relaxed-constexpr;-lineinfo>)
set_target_properties(herd_cuda_layer_chain_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)

# Residual add + RmsNorm feeding a one-token GEMV: norm kernel + GEMV against the norm inside
# GemvQuantAddNorm (gemv_add_norm.cu; timing).
#   build/bin/herd_cuda_gemv_norm_bench [--reps 20] [--hot 1] [--only "1b gate/up"]
add_executable(herd_cuda_gemv_norm_bench ${CMAKE_CURRENT_LIST_DIR}/gemv_norm_bench.cu)
target_link_libraries(herd_cuda_gemv_norm_bench PRIVATE herd_kernels_cuda)
target_compile_options(herd_cuda_gemv_norm_bench PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:${HERD_CUDA_ARCHS};--expt-relaxed-constexpr;-lineinfo>)
set_target_properties(herd_cuda_gemv_norm_bench PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
