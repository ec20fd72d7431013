// Matrix multiplication op family: y = x · Wᵀ, the hot op of every forward pass.
//
//   w: [n_out, n_in] weight matrix of any type in kWeightTypes (row-major, each row
//      RowBytes(type, n_in) bytes; usually points into the read-only model mapping)
//   x: [n_tok, n_in] float32, contiguous
//   y: [n_tok, n_out] float32, contiguous
//
// For quantized weights the activations are first quantized to VecDotType(w.type) and the
// products are integer dot products; for F16/BF16 the weights are widened in registers.
#pragma once

#include <cstdint>

#include "base/thread_pool.h"
#include "tensor/tensor.h"

namespace herd::ref {
// Scalar oracle: QuantizeRow(VecDotType) on each x row, then VecDot per output element.
void MatMul(const TensorView& w, const float* x, int64_t n_tok, float* y);
}  // namespace herd::ref

namespace herd::cpu {
// SIMD implementation chosen at run time for the CPU (AVX-512 VNNI/BF16, AVX2, NEON,
// portable fallback), parallel over `pool`. Thread-safe for different y buffers.
void MatMul(const TensorView& w, const float* x, int64_t n_tok, float* y, ThreadPool& pool);
// Name of the kernel set in use ("avx512-vnni", "avx2", "neon", "generic").
const char* MatMulIsaName();
}  // namespace herd::cpu
