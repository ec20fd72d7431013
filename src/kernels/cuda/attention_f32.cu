// Paged-attention kernel instances for F32 KV caches (split by type so they compile in parallel).
#include "kernels/cuda/attention_kernel.cuh"

namespace herd::cuda::attn {

void LaunchF32(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream) {
  LaunchForType<KvKind::kF32>(p, rows_small, prefill, grid, stream);
}

}  // namespace herd::cuda::attn
