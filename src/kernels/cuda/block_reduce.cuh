// Small device helpers shared by the element-wise kernels (ops_cuda.cu) and the fused
// producer + quantization kernels (quant_fused.cu). Internal.
#pragma once

#include <cuda_runtime.h>

namespace herd::cuda {

// Sum over the CTA (blockDim.x a multiple of 32, at most 1024); every thread gets the result,
// the same bits in every run (a fixed reduction order). T: float or double. Callable several
// times in a row (it synchronises before reusing its shared memory).
template <typename T>
__device__ __forceinline__ T BlockSum(T v) {
  __shared__ T partial[32];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();  // partial[] may still be read by a previous call
  if (lane == 0) partial[warp] = v;
  __syncthreads();
  const int n_warps = blockDim.x / 32;
  v = lane < n_warps ? partial[lane] : T(0);
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// silu(g) = g / (1 + e^-g), as ref::SwiGlu computes it.
__device__ __forceinline__ float Silu(float g) { return g / (1.0f + expf(-g)); }

}  // namespace herd::cuda
