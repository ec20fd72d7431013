// Activation formats of the CPU matmul kernels (internal to kernels/cpu).
//
// Quantized weight types multiply against activations quantized to int8 here. herd's CPU
// layout is not a GGUF block layout: per token row it stores
//   q[n_pad]            int8 values, n_pad = n_in rounded up to 256 (zero padded)
//   d[n_pad / B]        float scale per block of B (B = 32 legacy types, 256 K-quants)
//   s[n_pad / 16]       float d * (sum of the 16 q of each group of 16)
// so the SIMD kernels load 64 contiguous int8 per step and apply weight offsets/mins with one
// float FMA per 256 elements (y -= sum_g c_g * s_g, see tile_kernels.h). The int8 values and
// scales are bit-identical to the reference quantizers (Q8_0 with its half-rounded scale,
// Q8_1, Q8_K), so results differ from ref::MatMul only by float summation order.
#pragma once

#include <cstddef>
#include <cstdint>

#include "tensor/dtype.h"

namespace herd::cpu::internal {

enum class ActFormat : uint8_t {
  kF32,     // the float rows themselves (F32, F16, BF16 weights)
  kQ8B32H,  // B = 32, scale rounded to half as Q8_0 (Q4_0, Q5_0, Q8_0 weights)
  kQ8B32F,  // B = 32, float scale as Q8_1 (Q4_1, Q5_1 weights)
  kQ8B256,  // B = 256, float scale as Q8_K (K-quants)
};

ActFormat ActFormatFor(DType weight_type);

struct ActLayout {
  ActFormat format = ActFormat::kF32;
  int64_t n_in = 0;
  int64_t n_pad = 0;  // n_in rounded up to 256 (quantized formats), n_in for kF32
  int block = 0;      // B
  size_t d_off = 0;   // byte offsets inside one row
  size_t s_off = 0;
  size_t stride = 0;  // bytes per token row, a multiple of 64
  // Interleaved (the many-token path): inside each 256-element span, q byte 64k + 4g + e holds
  // element 16g + 4k + e (k < 4 steps, g < 16 groups, e < 4), so one 32-bit lane of a
  // vector step always belongs to the same group of 16 and a whole span accumulates into one
  // int32 per group with vpdpbusd / sdot. Adds dg[n_pad / 16] at dg_off: the scale of each
  // group's block (d[g * 16 / B]) as floats, so the kernels load per-group scales directly.
  bool interleaved = false;
  size_t dg_off = 0;

  static ActLayout Make(ActFormat format, int64_t n_in, bool interleaved = false);
};

// Quantizes token rows [t0, t1) of x ([n_tok, n_in] f32) into dst (layout.stride bytes per row,
// 64-byte aligned). For kF32 copies the floats.
void QuantizeActRows(const ActLayout& layout, const float* x, int64_t t0, int64_t t1, uint8_t* dst);

}  // namespace herd::cpu::internal
