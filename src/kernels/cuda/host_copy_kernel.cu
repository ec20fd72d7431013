// CopySmallByKernel (host_copies.h): a small copy between pinned host memory and the device as
// one CTA of loads and stores through unified addressing, instead of a copy-engine DMA. Between
// two decode graphs the stream otherwise runs the step's id download and the next step's batch
// upload as two DMAs, each adding its own latency to the gap in which the GPU idles.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/host_copies.h"

namespace herd::cuda {
namespace {

constexpr int kThreads = 256;

// Bytes [0, bytes) of src into dst; 16-byte vectors where both are 16-byte aligned.
__global__ void __launch_bounds__(kThreads)
    CopyBytesKernel(uint8_t* dst, const uint8_t* src, size_t bytes, bool vectors) {
  size_t done = 0;
  if (vectors) {
    const size_t n16 = bytes / 16;
    for (size_t i = threadIdx.x; i < n16; i += kThreads) {
      reinterpret_cast<uint4*>(dst)[i] = reinterpret_cast<const uint4*>(src)[i];
    }
    done = 16 * n16;
  }
  for (size_t i = done + threadIdx.x; i < bytes; i += kThreads) dst[i] = src[i];
}

}  // namespace

void CopySmallByKernel(void* dst, const void* src, size_t bytes, cudaStream_t stream) {
  if (bytes == 0) return;
  const bool vectors = ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) & 15u) == 0;
  CopyBytesKernel<<<1, kThreads, 0, stream>>>(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), bytes,
                                              vectors);
  HERD_CUDA_CHECK(cudaGetLastError());
}

}  // namespace herd::cuda
