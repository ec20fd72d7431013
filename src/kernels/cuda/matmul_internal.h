// The launchers behind MatMulRunner and GetRows (matmul_gemv.cu, dequantize_cuda.cu), shared by
// the runner, its test and its benchmark. All queue work on `stream` and return at once; all
// pointers are device memory. Not part of the backend interface.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>
#include <span>

#include "tensor/tensor.h"

namespace herd::cuda::internal {

// Integer-GEMV activation format, produced once per call for every quantized weight type.
// Each 32-element chunk c of a token row is scaled by its own d_c = max|x|/127 (round to
// nearest even, clamped to ±127). Layout, chosen so that 32 lanes reading chunks c..c+31 read
// 512 contiguous bytes per load:
//   q: [n_tok][q_stride] int8; chunk c's elements 0-15 at (c/32)*1024 + (c%32)*16, 16-31 at
//      the same + 512 (q_stride = n_in rounded up to 1024);
//   d: [n_tok][c_stride] float d_c;  s: [n_tok][c_stride] float2 {d_c*sum(q[0..15]), d_c*sum(q[16..31])}
//      (c_stride = n_in/32 rounded up to 32).
struct QuantizedActivations {
  const int8_t* q;
  const float* d;
  const float2* s;
  int64_t q_stride, c_stride;
};
// Device bytes QuantizeActivations needs for n_tok rows of n_in (a multiple of 32).
size_t QuantizedActivationBytes(int64_t n_tok, int64_t n_in);
// Writes the format into `buffer` (QuantizedActivationBytes, 256-byte aligned). Cost: one read
// of x, ~1.4 bytes written per element.
QuantizedActivations QuantizeActivations(const float* x, int64_t n_tok, int64_t n_in, void* buffer,
                                         cudaStream_t stream);

// out[i] = x[i] rounded to half (bf16 = false) or bfloat16 (bf16 = true), n elements.
void ConvertActivations(const float* x, int64_t n, bool bf16, void* out, cudaStream_t stream);

// ys[k][t, o] = sum_i ws[k][o, i] * x[t, i] for quantized weights of one type and one n_in
// (any n_tok; weights are streamed once per group of 8 tokens; up to 4 weights per launch),
// from the activation format above, which the kernel right before in the stream must have
// written (the GEMV starts its weight loads before waiting for that kernel: programmatic
// dependent launch). Rows 16-byte aligned: 16-byte asynchronous copies into shared memory;
// otherwise the same kernels with 2-byte copies.
void GemvQuant(std::span<const TensorView> ws, std::span<float* const> ys, const QuantizedActivations& x, int64_t n_tok,
               cudaStream_t stream);

// Launch choices of the GEMV kernels, settable for A/B benchmarks (process-wide; the defaults
// are the ones measured best on H100): programmatic dependent launch of the activation
// quantization and quantized GEMV (pdl) and of the float GEMV (float_pdl); row groups per
// block of the quantized kernels (0: persistent, one wave of blocks looping over rows); rows
// split over up to 4 warps while a warp would have more than split_stages stages.
struct GemvOptions {
  bool pdl = true;
  bool float_pdl = false;
  int groups_per_block = 1;
  int split_stages = 2;
};
bool GemvProgrammaticLaunch();
void SetGemvOptions(const GemvOptions& options);

// The same for F32/F16/BF16 weights of one type with float32 x (products and sums in float32).
void GemvFloat(std::span<const TensorView> ws, std::span<float* const> ys, const float* x, int64_t n_tok,
               cudaStream_t stream);

// Rows [row0, row0 + n_rows) of a quantized w dequantized to half: out [n_rows, w.cols()].
// Each value is computed in float exactly as ref::DequantizeRow does, then rounded to half.
void DequantizeRowsToHalf(const TensorView& w, int64_t row0, int64_t n_rows, void* out, cudaStream_t stream);

}  // namespace herd::cuda::internal
