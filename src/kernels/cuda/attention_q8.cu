// Paged-attention kernel instances for Q8_0 KV caches (split by type so they compile in parallel).
#include "kernels/cuda/attention_kernel.cuh"

namespace herd::cuda::attn {

void LaunchQ8_0(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream) {
  LaunchForType<KvKind::kQ8_0>(p, rows_small, prefill, grid, stream);
}

}  // namespace herd::cuda::attn
