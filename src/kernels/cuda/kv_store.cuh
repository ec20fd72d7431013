// One token's K/V store into the paged cache, as device functions for the CTA that owns the
// token (attention_cuda.cu: StoreKv, RopeStoreKv). Semantics of ref::StoreKv
// (kernels/attention.h); the decode kernel's fused store (attention_kernel.cuh) rounds alike.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "tensor/dtype.h"

namespace herd::cuda {

// Vector index (kv head 0) of token t's slot: block_tables[seq[t]][pos[t] / block_size] *
// block_size + pos[t] % block_size, times n_kv_heads. Reads only the uploaded batch description.
__device__ __forceinline__ int64_t SlotRow(const int32_t* __restrict__ pos, const int32_t* __restrict__ seq,
                                           const int32_t* const* __restrict__ tables, int32_t block_size,
                                           int32_t n_kv_heads, int64_t t) {
  const int32_t p = pos[t];
  return (static_cast<int64_t>(tables[seq[t]][p / block_size]) * block_size + p % block_size) * n_kv_heads;
}

// Writes one token's K and V vectors (kt, vt: [n_kv_heads * head_dim]) at vector row row0 of the
// caches, strided over the CTA. F16 / F32: thread per value. Q8_0: warp per 32-value block,
// quantized as ref::QuantizeRow (scale = fp16(amax / 127), q = clamp(rint(x / scale'), -127, 127)
// with scale' the rounded scale; IEEE division and rint give the reference's bytes).
// kt may point to shared memory (the fused RoPE kernel's rotated head).
template <DType T>
__device__ __forceinline__ void StoreToken(uint8_t* kc, uint8_t* vc, int64_t row0, int32_t n_kv_heads, int32_t head_dim,
                                           int32_t vec_bytes, const float* kt, const float* vt) {
  const int n = n_kv_heads * head_dim;
  if constexpr (T == DType::kF16 || T == DType::kF32) {
    using E = std::conditional_t<T == DType::kF16, __half, float>;
    E* kd = reinterpret_cast<E*>(kc) + row0 * head_dim;  // vectors of one slot are contiguous
    E* vd = reinterpret_cast<E*>(vc) + row0 * head_dim;
    for (int i = threadIdx.x; i < n; i += blockDim.x) {
      if constexpr (T == DType::kF16) {
        kd[i] = __float2half_rn(kt[i]);
        vd[i] = __float2half_rn(vt[i]);
      } else {
        kd[i] = kt[i];
        vd[i] = vt[i];
      }
    }
  } else {
    const int lane = threadIdx.x % 32;
    const int blocks_per_vec = head_dim / 32;
    const int n_blocks = n / 32;  // Q8_0 blocks of K (and of V) for this token
    for (int b = threadIdx.x / 32; b < 2 * n_blocks; b += blockDim.x / 32) {
      const bool is_v = b >= n_blocks;
      const int bb = is_v ? b - n_blocks : b;
      const int h = bb / blocks_per_vec, j = bb % blocks_per_vec;
      const float x = (is_v ? vt : kt)[bb * 32 + lane];
      float amax = fabsf(x);
      for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
      const __half d = __float2half_rn(amax / 127.f);
      const float df = __half2float(d);
      const float id = df != 0.f ? 1.f / df : 0.f;
      const float q = fminf(fmaxf(rintf(x * id), -127.f), 127.f);
      uint8_t* blk = (is_v ? vc : kc) + (row0 + h) * vec_bytes + j * 34;
      blk[2 + lane] = static_cast<uint8_t>(static_cast<int8_t>(q));
      if (lane == 0) *reinterpret_cast<__half*>(blk) = d;  // 2-byte aligned: vec_bytes and 34 are even
    }
  }
}

}  // namespace herd::cuda
