// A device buffer that only grows (MatMulRunner's scratch). It must not grow while the stream is
// being captured. A grown-out buffer is kept until the owner goes: CUDA graphs captured earlier
// (the backend's decode graphs) still point at it and may be replayed after the growth.
// Internal to the CUDA backend.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <vector>

#include "base/check.h"
#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {

struct DeviceBuffer {
  void* ptr = nullptr;
  size_t cap = 0;
  std::vector<void*> retired;

  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr != nullptr) cudaFree(ptr);
    for (void* p : retired) cudaFree(p);
  }

  // At least `bytes` (grown in 1 MiB steps); aborts when it would grow during a capture.
  void* Get(size_t bytes, cudaStream_t stream) {
    if (bytes <= cap) return ptr;
    cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
    HERD_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
    HERD_CHECK_MSG(capture == cudaStreamCaptureStatusNone,
                   "MatMulRunner: scratch must grow to %zu bytes during graph capture; call Reserve first", bytes);
    if (ptr != nullptr) retired.push_back(ptr);
    constexpr size_t kStep = size_t{1} << 20;
    cap = (bytes + kStep - 1) / kStep * kStep;
    HERD_CUDA_CHECK(cudaMalloc(&ptr, cap));
    return ptr;
  }
};

}  // namespace herd::cuda
