#include <cfloat>

#include "kernels/cuda/argmax_cuda.h"
#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {
namespace {

constexpr int kThreads = 512;

// (value, index) pairs ordered by value, then by the lower index; index -1 is "no number".
struct Best {
  float v;
  int32_t i;
};

__device__ __forceinline__ Best Better(Best a, Best b) {
  if (a.i < 0) return b;
  if (b.i < 0) return a;
  if (b.v > a.v || (b.v == a.v && b.i < a.i)) return b;
  return a;
}

__global__ void ArgMaxRowsKernel(const float* __restrict__ x, int64_t n_cols, int32_t* __restrict__ ids) {
  const float* row = x + static_cast<int64_t>(blockIdx.x) * n_cols;
  Best best{-FLT_MAX, -1};
  for (int64_t c = threadIdx.x; c < n_cols; c += kThreads) {  // coalesced; ascending per thread
    const float v = row[c];
    if (v == v && (best.i < 0 || v > best.v)) best = {v, static_cast<int32_t>(c)};
  }
  for (int off = 16; off > 0; off >>= 1) {
    const Best o{__shfl_down_sync(0xffffffffu, best.v, off), __shfl_down_sync(0xffffffffu, best.i, off)};
    best = Better(best, o);
  }
  __shared__ Best warp_best[kThreads / 32];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_best[warp] = best;
  __syncthreads();
  if (warp == 0) {
    best = lane < kThreads / 32 ? warp_best[lane] : Best{-FLT_MAX, -1};
    for (int off = 16; off > 0; off >>= 1) {
      const Best o{__shfl_down_sync(0xffffffffu, best.v, off), __shfl_down_sync(0xffffffffu, best.i, off)};
      best = Better(best, o);
    }
    if (lane == 0) ids[blockIdx.x] = best.i;
  }
}

__global__ void ResolveFedBackIdsKernel(int32_t* __restrict__ ids, int64_t n, const int32_t* __restrict__ prev) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i < n && ids[i] < 0) ids[i] = max(prev[-ids[i] - 1], 0);
}

}  // namespace

void ResolveFedBackIds(int32_t* ids, int64_t n, const int32_t* prev, cudaStream_t stream) {
  if (n <= 0) return;
  constexpr int kBlock = 256;
  ResolveFedBackIdsKernel<<<static_cast<unsigned>((n + kBlock - 1) / kBlock), kBlock, 0, stream>>>(ids, n, prev);
  HERD_CUDA_CHECK_LAUNCH();
}

void ArgMaxRows(const float* x, int64_t n_rows, int64_t n_cols, int32_t* ids, cudaStream_t stream) {
  if (n_rows <= 0) return;
  ArgMaxRowsKernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(x, n_cols, ids);
  HERD_CUDA_CHECK_LAUNCH();
}

}  // namespace herd::cuda
