// The launchers behind MatMulRunner and GetRows (matmul_gemv.cu, dequantize_cuda.cu), shared by
// the runner, its test and its benchmark. All queue work on `stream` and return at once; all
// pointers are device memory. Not part of the backend interface.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "tensor/tensor.h"

namespace herd::cuda::internal {

// Integer-GEMV activation format, produced once per call for every quantized weight type:
//   xq: [n_tok, n_in] int8, each 32-element chunk c scaled by its own d_c = max|x|/127
//       (round to nearest even, clamped to ±127);
//   xm: [n_tok, n_in/32] float4 {d_c, d_c*sum(q[0..15]), d_c*sum(q[16..31]), 0}.
// n_in a multiple of 32. Cost: one read of x, 1.5 bytes written per element.
void QuantizeActivations(const float* x, int64_t n_tok, int64_t n_in, int8_t* xq, float4* xm, cudaStream_t stream);

// out[i] = x[i] rounded to half (bf16 = false) or bfloat16 (bf16 = true), n elements.
void ConvertActivations(const float* x, int64_t n, bool bf16, void* out, cudaStream_t stream);

// y[t, o] = sum_i w[o, i] * x[t, i] for a quantized w (any n_tok; weights are streamed once per
// group of 8 tokens), from the activation format above. Fast path (16-byte asynchronous copies
// into shared memory) when rows start 16-byte aligned; otherwise the same kernel with 2-byte
// copies.
void GemvQuant(const TensorView& w, const int8_t* xq, const float4* xm, int64_t n_tok, float* y, cudaStream_t stream);

// The same for F32/F16/BF16 w with float32 x (products and sums in float32).
void GemvFloat(const TensorView& w, const float* x, int64_t n_tok, float* y, cudaStream_t stream);

// Rows [row0, row0 + n_rows) of a quantized w dequantized to half: out [n_rows, w.cols()].
// Each value is computed in float exactly as ref::DequantizeRow does, then rounded to half.
void DequantizeRowsToHalf(const TensorView& w, int64_t row0, int64_t n_rows, void* out, cudaStream_t stream);

}  // namespace herd::cuda::internal
