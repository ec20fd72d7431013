// Quantization op family: converting rows between float32 and every storage type, and the
// dot product of one weight row with one activation row. These are the scalar reference
// implementations (kernels/reference/quants_*.cc): the oracle every SIMD kernel is tested
// against, and what herd's own quantizer (`herd make-model`) uses.
#pragma once

#include <cstdint>

#include "tensor/dtype.h"

namespace herd::ref {

// src: n floats, n a multiple of Traits(type).block_size -> dst: RowBytes(type, n) bytes.
// Handles every type in kWeightTypes plus the activation types Q8_1 and Q8_K.
// K-quants search per-sub-block scale/min to minimise squared error (herd's own quantizer).
void QuantizeRow(DType type, const float* src, void* dst, int64_t n);

// src: RowBytes(type, n) bytes -> dst: n floats. Every type in kWeightTypes, Q8_1, Q8_K.
void DequantizeRow(DType type, const void* src, float* dst, int64_t n);

// Format the activations are converted to before a dot product with weights of `type`:
// F32 for F32/F16/BF16; Q8_0 for Q4_0/Q5_0/Q8_0; Q8_1 for Q4_1/Q5_1; Q8_K for the K-quants.
DType VecDotType(DType weight_type);

// sum_i w[i] * x[i] over n elements: w_row in `type`, x_row in VecDotType(type).
// Quantized types use integer products per block, scaled in float (the same arithmetic the
// SIMD kernels implement, up to float summation order).
float VecDot(DType type, int64_t n, const void* w_row, const void* x_row);

}  // namespace herd::ref
