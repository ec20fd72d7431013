// Programmatic dependent launch (PDL) of the backend's kernels (element-wise, norm, RoPE/KV-store,
// attention, GEMV and activation conversion). In a decode step (one CUDA graph of a few hundred short kernels) each
// kernel otherwise waits for its predecessor to finish before it is even launched; with PDL the
// next kernel's CTAs are launched while the previous one runs its tail, and block in PdlWait().
//
// Contract of a kernel launched by LaunchPdl (transitively, earlier kernels of the stream may
// still run until PdlWait returns, since every kernel lets its successor start at entry):
//  - before PdlWait(): read only memory that no kernel of the stream writes (weights, the batch
//    description uploaded before the step, constants) and write nothing;
//  - PdlWait() returns once the previous kernel (hence all earlier ones) has finished and its
//    writes are visible; a kernel not launched with PDL returns at once.
// Every kernel here calls PdlTrigger() at entry: a PDL kernel after it may begin launching (it
// cannot start computing before its own PdlWait). Kernels after these launched without PDL are
// ordered as usual. HERD_CUDA_PDL=0 launches them without the attribute (A/B runs).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <utility>

#include "base/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_arch.h"

namespace herd::cuda {

// HERD_CUDA_PDL != "0" (read once).
bool PdlEnabled();

// Code compiled for GPUs before sm_90 (a build's compute_80 PTX) has no PDL: both are no-ops
// there, and the host never launches such code with the attribute (PdlEnabled).
__device__ __forceinline__ void PdlWait() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void PdlTrigger() {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif
}

// kernel<<<grid, block, smem, stream>>>(args...), with programmatic stream serialization when
// `pdl` is true, in thread-block clusters of `cluster` CTAs when that is not 1 x 1 x 1 (the grid
// a multiple of it in each dimension).
template <typename... KArgs, typename... Args>
void LaunchPdlClustered(bool pdl, dim3 cluster, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem,
                        cudaStream_t stream, Args&&... args) {
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cudaLaunchAttribute attr[2];
  unsigned n = 0;
  const bool sm90 = Sm90PlusCode();  // code without griddepcontrol must not overlap its predecessor
  HERD_CHECK_MSG(sm90 || cluster.x * cluster.y * cluster.z == 1, "thread-block clusters need sm_90 code");
  if (pdl && sm90) {
    attr[n].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[n++].val.programmaticStreamSerializationAllowed = 1;
  }
  if (cluster.x * cluster.y * cluster.z > 1) {
    attr[n].id = cudaLaunchAttributeClusterDimension;
    attr[n].val.clusterDim.x = cluster.x;
    attr[n].val.clusterDim.y = cluster.y;
    attr[n++].val.clusterDim.z = cluster.z;
  }
  cfg.attrs = attr;
  cfg.numAttrs = n;
  HERD_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...));
}

// Without clusters.
template <typename... KArgs, typename... Args>
void LaunchPdlIf(bool pdl, void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream,
                 Args&&... args) {
  LaunchPdlClustered(pdl, dim3(1, 1, 1), kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

// The same, with programmatic stream serialization unless HERD_CUDA_PDL=0.
template <typename... KArgs, typename... Args>
void LaunchPdl(void (*kernel)(KArgs...), dim3 grid, dim3 block, size_t smem, cudaStream_t stream, Args&&... args) {
  LaunchPdlIf(PdlEnabled(), kernel, grid, block, smem, stream, std::forward<Args>(args)...);
}

// Raises `kernel`'s dynamic shared-memory limit to `bytes` on the current device, once per device:
// the attribute belongs to the device, so a process with a model on each of several GPUs must set
// it on every one (`raised`: the caller's per-kernel record, bit d for device d; devices past 63
// share bits with lower ones and then may miss the call: fine while all GPUs of a process are
// alike, as the GEMV launch helpers assume too).
// At most to the device's limit (MaxDynamicSmem): a launch asking for more then fails (the
// callers choose kernels that fit; the limits of some depend on the launch, e.g. head_dim).
template <typename... KArgs>
void RaiseDynamicSmem(void (*kernel)(KArgs...), int bytes, std::atomic<uint64_t>& raised) {
  int dev = 0;
  HERD_CUDA_CHECK(cudaGetDevice(&dev));
  const uint64_t bit = uint64_t{1} << (dev & 63);
  if ((raised.load(std::memory_order_relaxed) & bit) != 0) return;
  const int limit = MaxDynamicSmem();
  HERD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                       limit > 0 && bytes > limit ? limit : bytes));
  raised.fetch_or(bit);
}

}  // namespace herd::cuda
