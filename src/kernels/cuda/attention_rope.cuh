// The decode kernel's fused RoPE + K/V store (Params::rope_inv_freq, attention_kernel.cuh): the
// new token's K/V row, built from the projections in registers in place of its copy from the
// cache. Included by attention_kernel.cuh only.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/rope_cuda.cuh"

namespace herd::cuda::attn {

// Chunk c (16 bytes of the cache row: 8 F16 or 4 F32 values) of token t's K and V rows of kv
// head kvh: k rotated by the angles cs ([half] cos, [half] sin) where its pair is rotated, both
// rounded as the cache stores them (as RopeStoreKv: same bits), written to kd / vd (shared
// memory, the tile's row) and to the caches at byte offset off. F16 / F32 caches, HD > 0.
template <KvKind T, int HD>
__device__ __forceinline__ void NewKvChunk(const Params& p, int t, int kvh, int c, const float* cs, uint8_t* kd,
                                           uint8_t* vd, int64_t off) {
  if constexpr (HD > 0 && T != KvKind::kQ8_0) {
    constexpr int kE = T == KvKind::kF16 ? 8 : 4;  // values per chunk
    const int64_t col = static_cast<int64_t>(kvh) * HD + c * kE;
    const float* kr = p.new_k + t * p.new_k_stride + col;
    const float* vr = p.new_v + t * p.new_v_stride + col;
    float kx[kE], vx[kE];
#pragma unroll
    for (int m = 0; m < kE / 4; ++m) {
      const float4 a = reinterpret_cast<const float4*>(kr)[m];
      const float4 b = reinterpret_cast<const float4*>(vr)[m];
      kx[4 * m] = a.x, kx[4 * m + 1] = a.y, kx[4 * m + 2] = a.z, kx[4 * m + 3] = a.w;
      vx[4 * m] = b.x, vx[4 * m + 1] = b.y, vx[4 * m + 2] = b.z, vx[4 * m + 3] = b.w;
    }
#pragma unroll
    for (int m = 0; m < kE / 2; ++m) {
      const int i = c * kE / 2 + m;  // pair index
      if (i < p.rope_half) {
        const float2 r = RotatePair(make_float2(kx[2 * m], kx[2 * m + 1]), cs[i], cs[p.rope_half + i]);
        kx[2 * m] = r.x, kx[2 * m + 1] = r.y;
      }
    }
    uint4 kw, vw;
    if constexpr (T == KvKind::kF16) {
      __half2 hk[4], hv[4];
#pragma unroll
      for (int m = 0; m < 4; ++m) {
        hk[m] = __floats2half2_rn(kx[2 * m], kx[2 * m + 1]);  // each value rounded as __float2half_rn
        hv[m] = __floats2half2_rn(vx[2 * m], vx[2 * m + 1]);
      }
      kw = *reinterpret_cast<const uint4*>(hk);
      vw = *reinterpret_cast<const uint4*>(hv);
    } else {
      kw = make_uint4(__float_as_uint(kx[0]), __float_as_uint(kx[1]), __float_as_uint(kx[2]), __float_as_uint(kx[3]));
      vw = make_uint4(__float_as_uint(vx[0]), __float_as_uint(vx[1]), __float_as_uint(vx[2]), __float_as_uint(vx[3]));
    }
    *reinterpret_cast<uint4*>(kd) = kw;
    *reinterpret_cast<uint4*>(vd) = vw;
    *reinterpret_cast<uint4*>(p.kc + off) = kw;
    *reinterpret_cast<uint4*>(p.vc + off) = vw;
  }
}

// Value d of the query row at qr (unrotated, head_dim floats) as the decode kernels keep it:
// rotated by the angles cs where the fused RoPE rotates its pair, times scale * log2(e).
__device__ __forceinline__ float ScaledQ(const Params& p, const float* qr, int d, bool rope, const float* cs) {
  float x;
  if (rope && d / 2 < p.rope_half) {
    const float2 y = RotatePair(reinterpret_cast<const float2*>(qr)[d / 2], cs[d / 2], cs[p.rope_half + d / 2]);
    x = d % 2 == 0 ? y.x : y.y;
  } else {
    x = qr[d];
  }
  return x * p.scale_log2;
}

}  // namespace herd::cuda::attn
