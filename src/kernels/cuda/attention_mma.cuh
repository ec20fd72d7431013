// Warp-level tensor-core helpers of the F16 attention kernels (attention_prefill_tc.cu,
// attention_decode_tc.cu): mma.sync m16n8k16 (f16 inputs, fp32 accumulators), ldmatrix and
// 16-byte cp.async. Fragment layouts are PTX's ("Matrix Fragments for mma.m16n8k16"): for an
// accumulator c[4] of lane l, rows l/4 (c[0], c[1]) and l/4 + 8 (c[2], c[3]), columns
// 2 (l%4) + {0, 1}.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

namespace herd::cuda::attn {

__device__ __forceinline__ uint32_t PackHalf2(float a, float b) {
  const __half2 h = __floats2half2_rn(a, b);
  return *reinterpret_cast<const uint32_t*>(&h);
}

// c += a · b for one m16n8k16 tile: a = 4 A-fragment registers, b0 / b1 the B fragment.
__device__ __forceinline__ void Mma(float* c, const uint32_t* a, uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Four 8x8 b16 matrices from shared memory; lane l gives the address of row l % 8 of matrix l / 8.
__device__ __forceinline__ void LdMatrixX4(uint32_t* r, const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}
// The same, each matrix transposed.
__device__ __forceinline__ void LdMatrixX4Trans(uint32_t* r, const void* p) {
  const unsigned a = static_cast<unsigned>(__cvta_generic_to_shared(p));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// 16 bytes global -> shared, asynchronously; !valid writes zeros (nothing is read).
__device__ __forceinline__ void CpAsync16(void* dst, const void* src, bool valid) {
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(d), "l"(src), "r"(valid ? 16 : 0));
}

}  // namespace herd::cuda::attn
