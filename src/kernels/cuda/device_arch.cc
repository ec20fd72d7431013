#include "kernels/cuda/device_arch.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

#include "kernels/cuda/ops_cuda.h"

namespace herd::cuda {
namespace {

struct Arch {
  int device_cc = 0, code_cc = 0, smem = 0;
};

Arch Query(int dev) {
  Arch a;
  int major = 0, minor = 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
      cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) == cudaSuccess) {
    a.device_cc = major * 10 + minor;
  }
  if (ProbeKernels(&a.code_cc) != cudaSuccess) a.code_cc = 0;
  if (cudaDeviceGetAttribute(&a.smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev) != cudaSuccess) a.smem = 0;
  cudaGetLastError();
  if (const char* cap = std::getenv("HERD_CUDA_SMEM_CAP"); cap != nullptr && std::atoi(cap) > 0)
    a.smem = std::min(a.smem, std::atoi(cap));
  return a;
}

// The current device's Arch, queried once per device (64 devices; beyond that, queried each time).
Arch CurrentArch() {
  constexpr int kDevices = 64;
  static std::atomic<bool> known[kDevices];
  static Arch arch[kDevices];  // written before known[d] is set (release), read after (acquire)
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess || dev < 0) {
    cudaGetLastError();
    return {};
  }
  if (dev >= kDevices) return Query(dev);
  if (known[dev].load(std::memory_order_acquire)) return arch[dev];
  static std::atomic_flag busy[kDevices];  // one writer per device
  const Arch a = Query(dev);
  if (!busy[dev].test_and_set(std::memory_order_acq_rel)) {
    arch[dev] = a;
    known[dev].store(true, std::memory_order_release);
  }
  return a;
}

}  // namespace

int DeviceCc() { return CurrentArch().device_cc; }
int CodeCc() { return CurrentArch().code_cc; }

bool Sm90PlusCode() {
  const Arch a = CurrentArch();
  return a.device_cc >= 90 && a.code_cc >= 90;
}

bool DeviceIsSm90() {
  const Arch a = CurrentArch();
  return a.device_cc == 90 && a.code_cc >= 90;
}

int MaxDynamicSmem() { return CurrentArch().smem; }

}  // namespace herd::cuda
