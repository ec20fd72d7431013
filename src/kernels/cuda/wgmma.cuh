// Hopper warpgroup MMA (wgmma, sm_90a only: compile under __CUDA_ARCH_FEAT_SM90_ALL) on tiles in
// shared memory with the 128-byte swizzle: K-major tiles of [rows][64 halves], 128-byte rows,
// 16-byte piece c of row r stored at piece c ^ (r & 7), each 8-row group 1024 bytes apart and the
// tile 1024-byte aligned (the hardware applies the XOR to address bits 4-6 from bits 7-9). A
// k-step of 16 halves inside the 64 is a descriptor whose start is advanced by 32 bytes.
// Internal to the CUDA kernels.
#pragma once

#include <cstdint>

namespace herd::cuda {

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// Shared-memory matrix descriptor: start address >> 4 (bits 0-13), leading byte offset >> 4
// (bits 16-29, unused for swizzled K-major tiles: 1), stride byte offset >> 4 (bits 32-45: 1024,
// one 8-row group), swizzle mode 1 = 128 bytes (bits 62-63).
__device__ __forceinline__ uint64_t WgmmaDesc(uint32_t smem_addr) {
  return static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4) | (uint64_t{1} << 16) | (uint64_t{1024 >> 4} << 32) |
         (uint64_t{1} << 62);
}
__device__ __forceinline__ void WgmmaFence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void WgmmaCommit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int N>
__device__ __forceinline__ void WgmmaWait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
// Orders this thread's earlier generic-proxy writes of shared memory (st.shared, cp.async) before
// later reads by the async proxy (wgmma operands) of threads it synchronizes with.
__device__ __forceinline__ void FenceProxyAsync() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

// d[64 x N] += A[64 x 16] * B[16 x N] (N = 32, 64, 128), f16 (kBf16: bf16) in, f32 accumulate,
// A and B K-major from shared memory. Warp w of the warpgroup holds rows 16 w + lane / 4 (+8) and,
// for n8 block j, columns 8 j + 2 (lane % 4) (+1): d[4 j + 0..3] = (r, c), (r, c + 1), (r + 8, c),
// (r + 8, c + 1). The asm statements differ only in N and the element type.
template <int N, bool kBf16 = false>
__device__ __forceinline__ void WgmmaM64K16(float (&d)[N / 2], uint64_t a, uint64_t b);
#define HERD_WGMMA_N32(TY)                                                                                            \
  asm volatile("wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY                                                \
               " "                                                                                                    \
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, 1, 1, 1, 0, 0;\n"   \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),      \
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]) \
               : "l"(a), "l"(b))
template <>
__device__ __forceinline__ void WgmmaM64K16<32, false>(float (&d)[16], uint64_t a, uint64_t b) {
  HERD_WGMMA_N32("f16");
}
template <>
__device__ __forceinline__ void WgmmaM64K16<32, true>(float (&d)[16], uint64_t a, uint64_t b) {
  HERD_WGMMA_N32("bf16");
}
#undef HERD_WGMMA_N32
#define HERD_WGMMA_N64(TY)                                                                                             \
  asm volatile("wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                                 \
               " "                                                                                                     \
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
               "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, %32, %33, 1, 1, 1, 0, 0;\n"                         \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),       \
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),            \
                 "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),            \
                 "+f"(d[30]), "+f"(d[31])                                                                              \
               : "l"(a), "l"(b))
template <>
__device__ __forceinline__ void WgmmaM64K16<64, false>(float (&d)[32], uint64_t a, uint64_t b) {
  HERD_WGMMA_N64("f16");
}
template <>
__device__ __forceinline__ void WgmmaM64K16<64, true>(float (&d)[32], uint64_t a, uint64_t b) {
  HERD_WGMMA_N64("bf16");
}
#undef HERD_WGMMA_N64
#define HERD_WGMMA_N128(TY)                                                                                            \
  asm volatile("wgmma.mma_async.sync.aligned.m64n128k16.f32." TY "." TY                                                \
               " "                                                                                                     \
               "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
               "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "  \
               "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "  \
               "%62, %63}, %64, %65, 1, 1, 1, 0, 0;\n"                                                                 \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),       \
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), \
                 "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]),            \
                 "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]),            \
                 "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]),            \
                 "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]),            \
                 "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]),            \
                 "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]),            \
                 "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])                          \
               : "l"(a), "l"(b))
template <>
__device__ __forceinline__ void WgmmaM64K16<128, false>(float (&d)[64], uint64_t a, uint64_t b) {
  HERD_WGMMA_N128("f16");
}
template <>
__device__ __forceinline__ void WgmmaM64K16<128, true>(float (&d)[64], uint64_t a, uint64_t b) {
  HERD_WGMMA_N128("bf16");
}
#undef HERD_WGMMA_N128

// Calls f(k, t, r) for each of a thread's m64nN accumulators d[k] where the B operand's N columns
// are tokens and A's rows are weight rows: d[4 j + 2 half + e] is token t = 8 j + e (+ 2 (lane %
// 4)) and weight row r = 8 half past the thread's first (16 w + lane / 4).
template <int N, typename F>
__device__ __forceinline__ void ForEachWgmmaAcc(F f) {
#pragma unroll
  for (int j = 0; j < N / 8; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int e = 0; e < 2; ++e) f(4 * j + 2 * half + e, 8 * j + e, 8 * half);
}
#endif

}  // namespace herd::cuda
