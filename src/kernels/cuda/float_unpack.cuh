// The float GEMVs' weight decoding (matmul_gemv_float.cu, gemv_float_ring.cu): one F16 / BF16
// value of 16 bits, or one 16-byte vector of weights, as float32. Shared so that both kernels
// multiply exactly the same floats. Device code; internal to the CUDA backend.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace herd::cuda::internal::gemv {

template <DType T>
__device__ __forceinline__ float ToFloat(uint32_t bits16) {
  if constexpr (T == DType::kBF16) return __uint_as_float(bits16 << 16);
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits16)));
}

// Eight (F16/BF16) or four (F32) weights of one 16-byte vector as floats.
template <DType T>
__device__ __forceinline__ void Unpack16(const uint4& v, float* f) {
  if constexpr (T == DType::kF32) {
    f[0] = __uint_as_float(v.x), f[1] = __uint_as_float(v.y), f[2] = __uint_as_float(v.z), f[3] = __uint_as_float(v.w);
  } else {
    const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      f[2 * k] = ToFloat<T>(u[k] & 0xFFFFu);
      f[2 * k + 1] = ToFloat<T>(u[k] >> 16);
    }
  }
}

}  // namespace herd::cuda::internal::gemv
