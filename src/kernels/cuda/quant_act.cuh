// Device side of the GEMV activation format (QuantizedActivations, matmul_internal.h): the
// layout of the buffer and the per-thread quantization step shared by the plain quantization
// kernel (quant_act.cu) and the kernels that produce x and quantize it in the same pass
// (quant_fused.cu: RmsNorm / AddRmsNorm / SwiGLU + quantization). Internal.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_dot.cuh"

namespace herd::cuda::internal {

// Byte layout of QuantizedActivations for n_tok rows of n_in values in one buffer:
// [q: q_bytes][d: d_bytes][s: d_bytes][sums: g_bytes].
struct ActLayout {
  int64_t q_stride, d_stride, g_stride;
  size_t q_bytes, d_bytes, g_bytes, total;
};
inline ActLayout MakeActLayout(int64_t n_tok, int64_t n_in) {
  ActLayout l;
  l.q_stride = (n_in + kStepValues - 1) / kStepValues * kStepValues;
  l.d_stride = l.q_stride / 32;
  l.g_stride = l.q_stride / 16;
  l.q_bytes = static_cast<size_t>(n_tok * l.q_stride);      // multiple of 2048
  l.d_bytes = static_cast<size_t>(n_tok * l.d_stride) * 4;  // multiple of 256
  l.g_bytes = static_cast<size_t>(n_tok * l.g_stride) * 2;  // multiple of 256
  l.total = l.q_bytes + 2 * l.d_bytes + l.g_bytes;
  return l;
}

// Where a kernel writes the format (the pointers of a buffer laid out by MakeActLayout).
struct ActOut {
  int8_t* q;
  float* d;
  float* s;
  int16_t* sums;
  int64_t q_stride, d_stride, g_stride;
};
inline ActOut MakeActOut(void* buffer, const ActLayout& l) {
  auto* base = static_cast<uint8_t*>(buffer);
  ActOut o;
  o.q = reinterpret_cast<int8_t*>(base);
  o.d = reinterpret_cast<float*>(base + l.q_bytes);
  o.s = reinterpret_cast<float*>(base + l.q_bytes + l.d_bytes);
  o.sums = reinterpret_cast<int16_t*>(base + l.q_bytes + 2 * l.d_bytes);
  o.q_stride = l.q_stride, o.d_stride = l.d_stride, o.g_stride = l.g_stride;
  return o;
}
inline QuantizedActivations ActView(DType format, const ActOut& o) {
  QuantizedActivations a;
  a.format = format;
  a.q = o.q, a.d = o.d, a.s = o.s, a.sums = o.sums;
  a.q_stride = o.q_stride, a.d_stride = o.d_stride, a.g_stride = o.g_stride;
  return a;
}

// Quantizes values [v0, v0 + 8) of token row t (v: this thread's 8 values; zeros for padding
// past n_in up to q_stride) exactly as ref::QuantizeRow(F) does: per block of B values (32, or
// 256 for Q8_K) amax = max |x|, d = amax / 127 (Q8_0: rounded to half and back), id = d != 0 ?
// 1 / d : 0, q = clamp(round-half-even(x * id), -127, 127), with IEEE division and
// multiplication (no fast-math), so every q and d equals the CPU's.
// Contract: v0 is a multiple of 8 and the B / 8 threads of a block are consecutive lanes of one
// warp holding consecutive octets (lane l holds v0 = base + 8 l); all 32 lanes of the warp call
// it together (full-warp shuffles).
template <DType F>
__device__ __forceinline__ void QuantizeOctet(const float (&v)[8], int64_t t, int64_t v0, const ActOut& o) {
  constexpr int kB = F == DType::kQ8_K ? 256 : 32;  // values per block
  constexpr int kLanes = kB / 8;                    // threads per block
  float amax = 0.f;
#pragma unroll
  for (int i = 0; i < 8; ++i) amax = fmaxf(amax, fabsf(v[i]));
#pragma unroll
  for (int o2 = kLanes / 2; o2 > 0; o2 >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o2));
  float d = amax / 127.f;
  if constexpr (F == DType::kQ8_0) d = __half2float(__float2half_rn(d));
  const float id = d != 0.f ? 1.f / d : 0.f;
  uint32_t w[2] = {0, 0};
  int sum = 0;
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    const int q = min(127, max(-127, __float2int_rn(__fmul_rn(v[i], id))));
    w[i / 4] |= (static_cast<uint32_t>(q) & 0xFFu) << (8 * (i % 4));
    sum += q;
  }
  const int64_t span = v0 / kStepValues;
  const int u = static_cast<int>(v0 - span * kStepValues);  // value within the span
  const int m = u / 8;                                      // octet within the span
  int8_t* qrow = o.q + t * o.q_stride + span * kStepValues;
  *reinterpret_cast<uint2*>(qrow + ActBytePos(u)) = make_uint2(w[0], w[1]);
  const int sum16 = sum + __shfl_xor_sync(0xffffffffu, sum, 1);
  if ((m & 1) == 0) o.sums[t * o.g_stride + span * (kStepValues / 16) + m / 2] = static_cast<int16_t>(sum16);
  const int sum32 = sum16 + __shfl_xor_sync(0xffffffffu, sum16, 2);
  if (m % kLanes == 0) {
    const int64_t bi = t * o.d_stride + span * (kStepValues / kB) + m / kLanes;
    o.d[bi] = d;
    if constexpr (F == DType::kQ8_1) o.s[bi] = d * static_cast<float>(sum32);
  }
}

}  // namespace herd::cuda::internal
