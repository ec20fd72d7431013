// Per-thread building blocks of the split-K SIMT decode kernel (attention_kernel.cuh): cp.async
// of raw K/V vectors, KV values widened to float, the quarter-row q·k products and warp
// reductions. Included by attention_kernel.cuh only.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/attention_internal.h"

namespace herd::cuda::attn {

// Bytes per cp.async of one vector: 16 for F16/F32 rows; Q8_0 rows (34-byte blocks) are only
// 4-byte aligned when head_dim % 64 == 0, else 2 (copied with plain loads and stores).
template <KvKind T>
__device__ __forceinline__ int CopyBytes(int vec_bytes) {
  if constexpr (T != KvKind::kQ8_0) return 16;
  return vec_bytes % 4 == 0 ? 4 : 2;
}

// Copies `bytes` (16, 4 or 2) from global to shared memory; !valid writes zeros instead (a
// position past the context: masked, and 0 * V must stay finite).
__device__ __forceinline__ void CopyAsync(void* dst, const void* src, int bytes, bool valid) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  if (bytes == 16) {
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0));
  } else if (bytes == 4) {
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 4 : 0));
  } else {
    *static_cast<uint16_t*>(dst) = valid ? __ldg(static_cast<const uint16_t*>(src)) : uint16_t{0};
  }
}
__device__ __forceinline__ void CommitGroup() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void WaitGroup() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// int8 (low byte of b) -> float exactly, without the quarter-rate I2F: 2^23 + (b ^ 0x80) - 2^23 - 128.
__device__ __forceinline__ float S8ToFloat(uint32_t b) {
  return __int_as_float(0x4B000000 | ((b & 0xffu) ^ 0x80u)) - 8388736.f;
}

// Value i of a raw vector in shared memory.
template <KvKind T>
__device__ __forceinline__ float KvValue(const uint8_t* row, int i) {
  if constexpr (T == KvKind::kF16) {
    return __half2float(reinterpret_cast<const __half*>(row)[i]);
  } else if constexpr (T == KvKind::kF32) {
    return reinterpret_cast<const float*>(row)[i];
  } else {
    const uint8_t* b = row + (i >> 5) * 34;
    return __half2float(*reinterpret_cast<const __half*>(b)) * S8ToFloat(b[2 + (i & 31)]);
  }
}

// sc[r] += q_r · k over dims [d0, d0 + n) of the raw K row `row`; qs: [RM][hd] floats.
// HD > 0: vectorised (n = HD / 4: 16-byte reads for F16/F32, one Q8_0 block or half of one).
template <KvKind T, int HD, int RM>
__device__ __forceinline__ void DotQuarter(const uint8_t* row, const float* qs, int hd, int d0, int n, float* sc) {
  if constexpr (HD > 0 && T == KvKind::kF16) {
    const uint4* kr = reinterpret_cast<const uint4*>(row + 2 * d0);
#pragma unroll
    for (int i = 0; i < HD / 32; ++i) {
      const uint4 u = kr[i];
      const __half2* h = reinterpret_cast<const __half2*>(&u);
      float k[8];
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const float2 f = __half22float2(h[x]);
        k[2 * x] = f.x;
        k[2 * x + 1] = f.y;
      }
#pragma unroll
      for (int r = 0; r < RM; ++r) {
        const float4 a = *reinterpret_cast<const float4*>(qs + r * HD + d0 + 8 * i);
        const float4 b = *reinterpret_cast<const float4*>(qs + r * HD + d0 + 8 * i + 4);
        sc[r] += k[0] * a.x + k[1] * a.y + k[2] * a.z + k[3] * a.w + k[4] * b.x + k[5] * b.y + k[6] * b.z + k[7] * b.w;
      }
    }
  } else if constexpr (HD > 0 && T == KvKind::kF32) {
    const float4* kr = reinterpret_cast<const float4*>(row + 4 * d0);
#pragma unroll 4
    for (int i = 0; i < HD / 16; ++i) {
      const float4 k = kr[i];
#pragma unroll
      for (int r = 0; r < RM; ++r) {
        const float4 a = *reinterpret_cast<const float4*>(qs + r * HD + d0 + 4 * i);
        sc[r] += k.x * a.x + k.y * a.y + k.z * a.z + k.w * a.w;
      }
    }
  } else if constexpr (HD > 0 && T == KvKind::kQ8_0) {
    static_assert(HD == 64 || HD == 128);  // a quarter lies in one block
    const uint8_t* b = row + (d0 >> 5) * 34;
    const float scale = __half2float(*reinterpret_cast<const __half*>(b));
    const uint16_t* qv = reinterpret_cast<const uint16_t*>(b + 2 + (d0 & 31));
    float part[RM];
#pragma unroll
    for (int r = 0; r < RM; ++r) part[r] = 0.f;
#pragma unroll
    for (int i = 0; i < HD / 16; ++i) {  // 4 values per step: two 2-byte reads, one float4 of q per row
      const uint32_t u = qv[2 * i] | (static_cast<uint32_t>(qv[2 * i + 1]) << 16);
      const float k0 = S8ToFloat(u), k1 = S8ToFloat(u >> 8), k2 = S8ToFloat(u >> 16), k3 = S8ToFloat(u >> 24);
#pragma unroll
      for (int r = 0; r < RM; ++r) {
        const float4 a = *reinterpret_cast<const float4*>(qs + r * HD + d0 + 4 * i);
        part[r] += k0 * a.x + k1 * a.y + k2 * a.z + k3 * a.w;
      }
    }
#pragma unroll
    for (int r = 0; r < RM; ++r) sc[r] += scale * part[r];
  } else {
    for (int i = 0; i < n; ++i) {
      const float k = KvValue<T>(row, d0 + i);
#pragma unroll
      for (int r = 0; r < RM; ++r) sc[r] += k * qs[r * hd + d0 + i];
    }
  }
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

}  // namespace herd::cuda::attn
