// Random device data for the CUDA benchmarks (matmul_cuda_bench.cu, ffn_branch_bench.cu; graph
// replay timing: bench_graph.h):
// weight bytes with finite scales in every quantized block, and float activations. Timing data,
// not test data.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "tensor/dtype.h"

namespace herd::cuda::bench {

__device__ __forceinline__ uint32_t Hash(uint64_t i, uint32_t seed) {
  uint64_t x = i * 0x9E3779B97F4A7C15ull + seed;
  x ^= x >> 31;
  x *= 0xBF58476D1CE4E5B9ull;
  x ^= x >> 29;
  return static_cast<uint32_t>(x ^ (x >> 32));
}

// Random bytes; then the 16-bit fields at byte offsets f0 and f1 (-1: none) of blocks of
// `block` bytes) set to a random half in ±[2^-9, 2^-6]; plain F16/BF16: every element a random
// value in ±[2^-4, 2).
__global__ void FillKernel(uint8_t* p, size_t n, uint32_t seed, int block, int f0, int f1, int plain16, bool bf16) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const uint32_t h = Hash(i, seed);
  uint8_t v = static_cast<uint8_t>(h);
  if (plain16) {
    // Sign, exponent 2^-4..2^0, random mantissa; written byte by byte (low byte first).
    const uint32_t e = bf16 ? 123 + (h >> 8) % 5 : 11 + (h >> 8) % 5;
    const uint32_t hv = bf16 ? ((h >> 16) & 0x8000u) | (e << 7) | ((h >> 20) & 0x7F)
                             : ((h >> 16) & 0x8000u) | (e << 10) | ((h >> 18) & 0x3FF);
    v = static_cast<uint8_t>((i & 1) ? hv >> 8 : hv);
    // The two bytes of one element come from different hashes; fine for timing data.
  } else {
    const int off = static_cast<int>(i % block);
    for (int f : {f0, f1}) {
      if (f >= 0 && (off == f || off == f + 1)) {
        const uint32_t hv = ((h >> 16) & 0x8000u) | ((6 + (h >> 8) % 3) << 10) | ((h >> 18) & 0x3FF);
        v = static_cast<uint8_t>(off == f ? hv : hv >> 8);
      }
    }
  }
  p[i] = v;
}

// Floats in scale * [-1, 1) + 0.001.
__global__ void FillFloatKernel(float* p, size_t n, uint32_t seed, float scale = 1.f) {
  const size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n) p[i] = (static_cast<float>(Hash(i, seed) & 0xFFFF) / 32768.f - 1.f) * scale + 0.001f;
}

// Byte offsets of a block's 16-bit scale fields for FillKernel (-1: none).
inline void Fields(DType t, int* f0, int* f1) {
  *f0 = -1, *f1 = -1;
  switch (t) {
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0: *f0 = 0; break;
    case DType::kQ4_1:
    case DType::kQ5_1:
    case DType::kQ4_K:
    case DType::kQ5_K: *f0 = 0, *f1 = 2; break;
    case DType::kQ2_K: *f0 = 80, *f1 = 82; break;
    case DType::kQ3_K: *f0 = 108; break;
    case DType::kQ6_K: *f0 = 208; break;
    default: break;
  }
}

}  // namespace herd::cuda::bench
