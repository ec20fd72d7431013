#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {

bool DeviceAvailable(std::string* why) {
  int n = 0;
  const cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess) {
    if (why != nullptr) *why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
    cudaGetLastError();  // clear the sticky error so later calls report their own
    return false;
  }
  if (n == 0) {
    if (why != nullptr) *why = "no CUDA device found";
    return false;
  }
  return true;
}

}  // namespace herd::cuda
