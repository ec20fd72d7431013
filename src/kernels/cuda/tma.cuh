// Hopper (sm_90) tensor memory access and transaction barriers, for kernels that stream tiles
// into shared memory without producer threads doing the copies: one thread issues a
// cp.async.bulk.tensor of a 2-D box described by a CUtensorMap (made on the host by
// EncodeTensorMap2d), the copy's bytes are counted on an mbarrier, and consumers wait on the
// barrier's phase. Internal to the CUDA kernels; device functions only under __CUDA_ARCH__ >= 900.
#pragma once

#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "base/status.h"
#include "kernels/cuda/device_arch.h"

namespace herd::cuda {

// A 2-D row-major tensor [rows][cols] of 2-byte elements (F16 / BF16) at `base`, row stride
// `row_bytes` (a multiple of 16), read in boxes of [box_rows][64] elements into shared memory in
// the 128-byte swizzle (wgmma.cuh's tile layout); elements outside the tensor read as zero.
// Fails (no driver entry point, bad shape) with a Status naming the reason.
Status EncodeTensorMap2d(CUtensorMap* map, const void* base, bool bf16, uint64_t rows, uint64_t cols,
                         uint64_t row_bytes, uint32_t box_rows);

// DeviceIsSm90() (device_arch.h) and the driver encodes tensor maps.
bool TensorMapsUsable();

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ uint32_t SmemAddr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void MbarInit(uint32_t bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
// Makes the initialized barriers visible to the async proxy (the TMA unit) and other threads.
__device__ __forceinline__ void FenceMbarInit() { asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory"); }
// One arrival that also announces `bytes` of transactions to come in the current phase.
__device__ __forceinline__ void MbarArriveExpectTx(uint32_t bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void MbarArrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
// Blocks until the phase with parity `parity` (0, 1, 0, ... for phases 0, 1, 2, ...) completed.
__device__ __forceinline__ void MbarWait(uint32_t bar, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred p;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
      "@!p bra WAIT_%=;\n"
      "}\n" ::"r"(bar),
      "r"(parity)
      : "memory");
}
// Box (x = column c0, y = row r0) of `map` into shared memory at dst (1024-byte aligned for the
// 128-byte swizzle), completing its bytes on mbarrier `bar`.
__device__ __forceinline__ void TmaLoad2d(uint32_t dst, const CUtensorMap* map, int c0, int r0, uint32_t bar) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];\n" ::"r"(
          dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(c0), "r"(r0), "r"(bar)
      : "memory");
}
// `bytes` (a multiple of 16; src and dst 16-byte aligned) from global memory at src into shared
// memory at dst by the TMA unit, completing its bytes on mbarrier `bar` (announced there with
// MbarArriveExpectTx). One thread issues it; no register or LSU work per byte.
__device__ __forceinline__ void BulkLoad(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
__device__ __forceinline__ void PrefetchTensorMap(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
#endif

}  // namespace herd::cuda
