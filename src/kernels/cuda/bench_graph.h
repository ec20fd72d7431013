// Replay timing of CUDA graphs for the CUDA benchmarks (matmul_cuda_bench.cu,
// ffn_branch_bench.cu, attention_cuda_bench.cu, layer_chain_bench.cu) and the median of their
// samples. Host code; timing only.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <vector>

#include "kernels/cuda/cuda_check.h"

namespace herd::cuda::bench {

// The median of v (the upper middle value of an even count).
inline float Median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// Milliseconds of each of `reps` launches of `exec` on `stream`, one after the other, each
// bracketed by events and waited for (so a replay's time excludes the host's next launch).
inline std::vector<float> GraphReplayMs(cudaGraphExec_t exec, cudaStream_t stream, int reps) {
  cudaEvent_t e0, e1;
  HERD_CUDA_CHECK(cudaEventCreate(&e0));
  HERD_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int r = 0; r < reps; ++r) {
    HERD_CUDA_CHECK(cudaEventRecord(e0, stream));
    HERD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
    HERD_CUDA_CHECK(cudaEventRecord(e1, stream));
    HERD_CUDA_CHECK(cudaEventSynchronize(e1));
    float t = 0.f;
    HERD_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    ms.push_back(t);
  }
  HERD_CUDA_CHECK(cudaEventDestroy(e0));
  HERD_CUDA_CHECK(cudaEventDestroy(e1));
  return ms;
}

}  // namespace herd::cuda::bench
