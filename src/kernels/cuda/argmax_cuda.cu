// ArgMaxRows and ResolveFedBackIds (argmax_cuda.h): greedy choices on the device.
#include <cooperative_groups.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/argmax_cuda.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_arch.h"
#include "kernels/cuda/launch_pdl.cuh"

namespace herd::cuda {
namespace {

namespace cg = cooperative_groups;

constexpr int kThreads = 1024;
constexpr int kUnroll = 4;         // float4 loads in flight per thread
constexpr int kClusterBlocks = 8;  // blocks per row for few rows (a portable cluster size)
constexpr int kClusterRows = 16;   // "few"

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

// Takes value v at column c when it beats best; a thread visits its columns in ascending order,
// so the strict > keeps the first of equal values.
__device__ __forceinline__ void Take(Best& best, float v, int64_t c) {
  if (v == v && (best.i < 0 || v > best.v)) best = {v, static_cast<int32_t>(c)};
}

// Block (c, r) takes columns [c * chunk, (c + 1) * chunk) of row r (chunk a multiple of 4;
// gridDim.x blocks per row, one thread-block cluster). vec4: read as float4 (x 16-byte aligned,
// n_cols % 4 == 0), thread t taking vectors t, t + kThreads, ... with kUnroll loads in flight.
// Several blocks per row (few rows): the cluster's rank 0 reduces the blocks' results through
// distributed shared memory, in rank (column) order. Programmatic launch: x is read after
// PdlWait.
__global__ void __launch_bounds__(kThreads)
    ArgMaxRowsKernel(const float* __restrict__ x, int64_t n_cols, int64_t chunk, bool vec4, int32_t* __restrict__ ids) {
  PdlTrigger();
  const float* row = x + static_cast<int64_t>(blockIdx.y) * n_cols;
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * chunk;
  const int64_t c1 = min(n_cols, c0 + chunk);
  Best best{-FLT_MAX, -1};
  PdlWait();
  if (vec4) {
    const float4* row4 = reinterpret_cast<const float4*>(row);
    const int64_t e4 = c1 / 4;
    for (int64_t base = c0 / 4 + threadIdx.x; base < e4; base += static_cast<int64_t>(kThreads) * kUnroll) {
      float4 v[kUnroll];
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t k = base + static_cast<int64_t>(u) * kThreads;
        v[u] = k < e4 ? __ldg(row4 + k) : make_float4(NAN, NAN, NAN, NAN);
      }
#pragma unroll
      for (int u = 0; u < kUnroll; ++u) {
        const int64_t c = 4 * (base + static_cast<int64_t>(u) * kThreads);
        Take(best, v[u].x, c);
        Take(best, v[u].y, c + 1);
        Take(best, v[u].z, c + 2);
        Take(best, v[u].w, c + 3);
      }
    }
  } else {
    for (int64_t c = c0 + threadIdx.x; c < c1; c += kThreads) Take(best, row[c], c);  // coalesced
  }
  for (int off = 16; off > 0; off >>= 1) {
    const Best o{__shfl_down_sync(0xffffffffu, best.v, off), __shfl_down_sync(0xffffffffu, best.i, off)};
    best = Better(best, o);
  }
  __shared__ Best warp_best[kThreads / 32];
  __shared__ Best block_best;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0) warp_best[warp] = best;
  __syncthreads();
  if (warp == 0) {
    best = lane < kThreads / 32 ? warp_best[lane] : Best{-FLT_MAX, -1};
    for (int off = 16; off > 0; off >>= 1) {
      const Best o{__shfl_down_sync(0xffffffffu, best.v, off), __shfl_down_sync(0xffffffffu, best.i, off)};
      best = Better(best, o);
    }
    if (lane == 0) block_best = best;
  }
  if (gridDim.x == 1) {
    if (threadIdx.x == 0) ids[blockIdx.y] = block_best.i;
    return;
  }
#if __CUDA_ARCH__ >= 900
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // every block's block_best is written
  if (blockIdx.x == 0 && threadIdx.x == 0) {
    Best b{-FLT_MAX, -1};
    for (unsigned r = 0; r < gridDim.x; ++r) b = Better(b, *cluster.map_shared_rank(&block_best, r));
    ids[blockIdx.y] = b.i;
  }
  cluster.sync();  // rank 0 has read them before any block exits
#else
  __trap();  // no clusters before sm_90: the host launches one block per row there
#endif
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
  const bool vec4 = reinterpret_cast<uintptr_t>(x) % 16 == 0 && n_cols % 4 == 0;
  // Few rows: a cluster of kClusterBlocks blocks per row, so more than one SM's loads are in
  // flight (8B vocabulary, one row: 18 us with one 512-thread block of scalar loads).
  const int per_row = n_rows <= kClusterRows && n_cols >= kClusterBlocks * 4096 && Sm90PlusCode() ? kClusterBlocks : 1;
  const int64_t chunk = ((n_cols + per_row - 1) / per_row + 3) & ~int64_t{3};
  constexpr int64_t kMaxGridY = 65535;  // rows per launch
  for (int64_t r0 = 0; r0 < n_rows; r0 += kMaxGridY) {
    const auto rows = static_cast<unsigned>(std::min(kMaxGridY, n_rows - r0));
    LaunchPdlClustered(PdlEnabled(), dim3(static_cast<unsigned>(per_row)), ArgMaxRowsKernel,
                       dim3(static_cast<unsigned>(per_row), rows), dim3(kThreads), 0, stream, x + r0 * n_cols, n_cols,
                       chunk, vec4, ids + r0);
  }
}

}  // namespace herd::cuda
