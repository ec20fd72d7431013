// Which of herd's GPU code paths the current device may take. Two things decide it: the GPU's
// compute capability, and the architecture of the kernel code the CUDA runtime loaded for it.
// A default build holds sm_90a machine code (Hopper), compute_90 PTX (newer GPUs: the driver
// compiles it) and compute_80 PTX (Ampere and Ada: A100, RTX 30xx / 40xx, L4, L40S). Code
// compiled for compute_80 has the sm_90 paths (programmatic dependent launch, thread-block
// clusters, TMA, wgmma) compiled out, so the host must not choose them for it. A Hopper GPU runs
// the compute_80 code in a build whose targets leave sm_90 out (HERD_CUDA_ARCHS), which is how
// those paths are tested on one. Both values are cached per device (a process may drive GPUs of
// different generations); host code only.
#pragma once

namespace herd::cuda {

// The current device's compute capability as major * 10 + minor (90: H100 / H200; 89: RTX 4090),
// and the architecture the loaded kernel code was compiled for, in the same form (90 or 80 in a
// default build). 0 when unknown (no device, no code for it).
int DeviceCc();
int CodeCc();

// Programmatic dependent launch (griddepcontrol), thread-block clusters and distributed shared
// memory: a GPU of compute capability 9.0 or newer running code compiled for 9.0 or newer.
bool Sm90PlusCode();

// TMA bulk copies, tensor maps, transaction-counted mbarriers and wgmma: sm_90a code on a GPU of
// compute capability exactly 9.0 (where herd's sm_90a kernels run).
bool DeviceIsSm90();

// The most dynamic shared memory one CTA may ask for on the current device (its opt-in limit:
// 227 KB on Hopper, 163 KB on an A100, 99 KB on Ada and consumer Ampere), lowered to
// HERD_CUDA_SMEM_CAP bytes when that is set (to run a smaller GPU's choices on a larger one).
// Kernels whose shared memory exceeds it are not chosen, or fail at launch.
int MaxDynamicSmem();

}  // namespace herd::cuda
