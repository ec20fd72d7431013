// RoPE of one token, as device functions for the CTA that owns the token (ops_cuda.cu: Rope;
// attention_cuda.cu: the fused RoPE + KV store). Semantics of ref::Rope (kernels/ops.h).
#pragma once

#include <cstdint>

namespace herd::cuda {

// cs[i] = cos, cs[half + i] = sin of pos * inv_freq[i] for i < half, computed in double as the
// reference does (positions up to 2^20 stay exact); strided over the CTA's threads. The caller
// synchronises before reading cs.
__device__ __forceinline__ void RopeAngles(int32_t pos, const float* inv_freq, int32_t half, float* cs) {
  const double p = static_cast<double>(pos);
  for (int i = threadIdx.x; i < half; i += blockDim.x) {
    double s, c;
    sincos(p * static_cast<double>(inv_freq[i]), &s, &c);
    cs[i] = static_cast<float>(c);
    cs[half + i] = static_cast<float>(s);
  }
}

// Pair (a.x, a.y) rotated by the angle of cosine c and sine s, rounded per operation (no
// contraction into FMAs), so every kernel that rotates gives the same bits.
__device__ __forceinline__ float2 RotatePair(float2 a, float c, float s) {
  return make_float2(__fsub_rn(__fmul_rn(a.x, c), __fmul_rn(a.y, s)), __fadd_rn(__fmul_rn(a.x, s), __fmul_rn(a.y, c)));
}

// In place on x: [n_heads, head_dim] of one token: pairs (2i, 2i+1), i < half, rotated by the
// angles in cs; strided over the CTA's threads (each pair read and written by one thread).
__device__ __forceinline__ void RopeRotate(float* x, int64_t n_heads, int64_t head_dim, int32_t half, const float* cs) {
  const int64_t n_pairs = n_heads * half;
  for (int64_t k = threadIdx.x; k < n_pairs; k += blockDim.x) {
    const int64_t h = k / half;
    const int i = static_cast<int>(k - h * half);
    float2* v = reinterpret_cast<float2*>(x + h * head_dim) + i;  // head_dim is even: 8-byte aligned
    *v = RotatePair(*v, cs[i], cs[half + i]);
  }
}

}  // namespace herd::cuda
