// CudaMemoryBackend (cuda_backend_memory.h).
#include "kernels/cuda/cuda_backend_memory.h"

#include "base/check.h"
#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {
namespace {

size_t RoundUp(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

CudaMemoryBackend::CudaMemoryBackend(int device, cudaStream_t stream) : device_(device), stream_(stream) {}

CudaMemoryBackend::~CudaMemoryBackend() {
  Bind();
  cudaStreamSynchronize(stream_);
  weights_.FreeAll();
  copies_.FreeAll();
  cudaStreamDestroy(stream_);
}

void* CudaMemoryBackend::Alloc(size_t bytes) {
  BeforeMemoryOp(false);
  Bind();
  const size_t rounded = RoundUp(bytes == 0 ? 1 : bytes, 64);
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, rounded);  // 256-byte aligned
  if (err != cudaSuccess) {
    cudaGetLastError();
    size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    HERD_CHECK_MSG(false, "out of GPU memory allocating %zu bytes (%zu of %zu free): %s", bytes, free_b, total_b,
                   cudaGetErrorString(err));
  }
  HERD_CUDA_CHECK(cudaMemsetAsync(p, 0, rounded, stream_));  // ordered before every later op
  return p;
}

void CudaMemoryBackend::Free(void* ptr) {
  BeforeMemoryOp(false);
  if (ptr == nullptr) return;
  Bind();
  HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));  // queued ops may still use it
  HERD_CUDA_CHECK(cudaFree(ptr));
}

void CudaMemoryBackend::CopyToDevice(void* dst, const void* src, size_t bytes) {
  BeforeMemoryOp(true);
  Bind();
  copies_.ToDevice(dst, src, bytes);
}

void CudaMemoryBackend::CopyToHost(void* dst, const void* src, size_t bytes) {
  BeforeMemoryOp(false);
  Bind();
  copies_.ToHost(dst, src, bytes);
}

void CudaMemoryBackend::CopyOnDevice(void* dst, const void* src, size_t bytes) {
  BeforeMemoryOp(true);
  if (bytes == 0) return;
  Bind();
  HERD_CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
}

uint64_t CudaMemoryBackend::QueueCopyToHost(void* dst, const void* src, size_t bytes) {
  BeforeMemoryOp(false);
  Bind();
  return copies_.Queue(dst, src, bytes);
}

void CudaMemoryBackend::WaitCopyToHost(uint64_t ticket) {
  Bind();
  copies_.Wait(ticket);
}

void CudaMemoryBackend::Synchronize() {
  BeforeMemoryOp(false);
  Bind();
  HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
  copies_.Recycle();
}

TensorView CudaMemoryBackend::PrepareWeight(const TensorView& host) {
  Bind();
  return weights_.Upload(host);
}

void CudaMemoryBackend::PrepareWeightGroup(std::span<const TensorView> hosts, std::span<TensorView> out) {
  Bind();
  weights_.UploadGroup(hosts, out);
}

bool CudaMemoryBackend::DeviceMemory(size_t* free_bytes, size_t* total_bytes) const {
  Bind();
  HERD_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
  return true;
}

void CudaMemoryBackend::Bind() const {
  int current = -1;
  HERD_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device_) HERD_CUDA_CHECK(cudaSetDevice(device_));
}

}  // namespace herd::cuda
