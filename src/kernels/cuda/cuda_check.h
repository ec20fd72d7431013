// Error checks for CUDA runtime and cuBLAS calls, usable from .cu and .cc files.
// A failed call inside the backend is a bug or a broken device (not bad user input): it aborts
// with file:line and the CUDA error string, like HERD_CHECK. Recoverable conditions (no GPU,
// out of device memory at load time) are checked by the callers and returned as Status.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "base/check.h"

#define HERD_CUDA_CHECK(call)                                                                           \
  do {                                                                                                  \
    const cudaError_t herd_cuda_err_ = (call);                                                          \
    HERD_CHECK_MSG(herd_cuda_err_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(herd_cuda_err_)); \
  } while (0)

// After a kernel launch: catches bad launch configurations at once.
#define HERD_CUDA_CHECK_LAUNCH() HERD_CUDA_CHECK(cudaGetLastError())

#define HERD_CUBLAS_CHECK(call)                                                                   \
  do {                                                                                            \
    const int herd_cublas_status_ = static_cast<int>(call);                                       \
    HERD_CHECK_MSG(herd_cublas_status_ == 0, "%s: cuBLAS status %d", #call, herd_cublas_status_); \
  } while (0)

namespace herd::cuda {

// True when a CUDA device can be used; otherwise false and *why says what is missing (no
// driver, no device, driver older than the runtime). Cheap after the first call.
bool DeviceAvailable(std::string* why = nullptr);

}  // namespace herd::cuda
