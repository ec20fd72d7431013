// device_arch.h: what the current device may run. Without a GPU nothing is claimed; on one, the
// loaded code's architecture (checked against a kernel that writes its own __CUDA_ARCH__) is at
// most the GPU's, and the Hopper paths follow from the two (printed: a Hopper GPU running a
// default build reports 90 / 90; one running a build whose only target is compute_80 reports
// 90 / 80 and takes the pre-Hopper paths).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_arch.h"

namespace herd::cuda {
namespace {

// Writes the __CUDA_ARCH__ its code was compiled for (800, 900): the ground truth CodeCc()
// reads from the runtime's function attributes (this binary is built for the same targets).
__global__ void ArchProbeKernel(int* out) {
#ifdef __CUDA_ARCH__
  *out = __CUDA_ARCH__;
#endif
}

TEST(DeviceArchTest, PathsFollowTheGpuAndTheLoadedCode) {
  std::string why;
  if (!DeviceAvailable(&why)) {
    EXPECT_FALSE(Sm90PlusCode());
    EXPECT_FALSE(DeviceIsSm90());
    GTEST_SKIP() << "no GPU: " << why;
  }
  const int device = DeviceCc(), code = CodeCc();
  std::printf("device compute capability %d, loaded code %d, shared memory per block %d bytes\n", device, code,
              MaxDynamicSmem());
  EXPECT_GE(device, 80);  // herd's oldest target
  EXPECT_GE(code, 80);
  EXPECT_LE(code, device);  // the driver never loads code for a newer GPU
  EXPECT_EQ(Sm90PlusCode(), device >= 90 && code >= 90);
  EXPECT_EQ(DeviceIsSm90(), device == 90 && code >= 90);
  EXPECT_GE(MaxDynamicSmem(), 48 * 1024);
  int* d = nullptr;
  HERD_CUDA_CHECK(cudaMalloc(&d, sizeof(int)));
  HERD_CUDA_CHECK(cudaMemset(d, 0, sizeof(int)));
  ArchProbeKernel<<<1, 1>>>(d);
  HERD_CUDA_CHECK_LAUNCH();
  int arch = 0;
  HERD_CUDA_CHECK(cudaMemcpy(&arch, d, sizeof(int), cudaMemcpyDeviceToHost));
  HERD_CUDA_CHECK(cudaFree(d));
  EXPECT_EQ(code, arch / 10) << "the loaded code's __CUDA_ARCH__ is " << arch;
  // Cached per device: the same answers again.
  EXPECT_EQ(DeviceCc(), device);
  EXPECT_EQ(CodeCc(), code);
}

}  // namespace
}  // namespace herd::cuda
