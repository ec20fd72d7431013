// Kernel sets not compiled for this architecture.
#include "kernels/cpu/kernel_set.h"

namespace herd::cpu::internal {
#if !defined(__x86_64__)
const KernelSet* Avx512KernelSet() { return nullptr; }
const KernelSet* Avx2KernelSet() { return nullptr; }
#endif
#if !defined(__aarch64__)
const KernelSet* NeonKernelSet() { return nullptr; }
#endif
}  // namespace herd::cpu::internal
