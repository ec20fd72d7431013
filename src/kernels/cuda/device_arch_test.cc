// device_arch.h: what the current device may run. Without a GPU nothing is claimed; on one, the
// loaded code's architecture is at most the GPU's, and the Hopper paths follow from the two
// (printed: a Hopper GPU running a default build reports 90 / 90; one running a build whose only
// target is compute_80 reports 90 / 80 and takes the pre-Hopper paths).
#include "kernels/cuda/device_arch.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {
namespace {

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
  // Cached per device: the same answers again.
  EXPECT_EQ(DeviceCc(), device);
  EXPECT_EQ(CodeCc(), code);
}

}  // namespace
}  // namespace herd::cuda
