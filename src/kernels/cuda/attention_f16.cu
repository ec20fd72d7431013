// Paged-attention kernel instances for F16 KV caches (split by type so they compile in parallel).
#include "kernels/cuda/attention_kernel.cuh"

namespace herd::cuda::attn {

void LaunchF16(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream) {
  LaunchForType<KvKind::kF16>(p, rows_small, prefill, grid, stream);
}

}  // namespace herd::cuda::attn
