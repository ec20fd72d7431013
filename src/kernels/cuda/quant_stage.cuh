// Copying weight bytes from global to shared memory: asynchronous 16-byte copies (cp.async,
// sm_80+) for aligned rows, synchronous 2-byte copies for the rest, and streaming loads that
// skip L1 (weights are read once per call; L1 is kept for the activations).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace herd::cuda {

__device__ __forceinline__ void CpAsync16(void* smem, const void* gmem) {
  const uint32_t s = static_cast<uint32_t>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void CpAsyncCommit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void CpAsyncWait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// 16 bytes from global memory that no other thread of this kernel writes, not kept in L1.
__device__ __forceinline__ uint4 LoadStreaming(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

// `bytes` (even) from src to dst by the `n` threads numbered `tid` of a group: 16-byte copies
// (cp.async; the caller commits and waits) when `aligned` (src, dst and bytes multiples of 16),
// else 2-byte loads and stores (complete on return).
__device__ __forceinline__ void StageCopy(uint8_t* dst, const uint8_t* src, int bytes, bool aligned, int tid, int n) {
  if (aligned) {
    for (int off = tid * 16; off < bytes; off += n * 16) CpAsync16(dst + off, src + off);
  } else {
    for (int off = tid * 2; off < bytes; off += n * 2)
      *reinterpret_cast<uint16_t*>(dst + off) = *reinterpret_cast<const uint16_t*>(src + off);
  }
}

}  // namespace herd::cuda
