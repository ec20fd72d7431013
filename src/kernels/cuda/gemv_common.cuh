// Shared by the GEMV kernels of matmul_gemv.cu (quantized weights) and matmul_gemv_float.cu
// (float weights): the work split (a block of kWarps warps covers kWarps / wpr rows of up to
// kMaxSegs weights concatenated), the per-row reduction and the launch helpers. Internal.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <span>

#include "base/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "tensor/tensor.h"

namespace herd::cuda::internal::gemv {

// HERD_GEMV_WARPS / HERD_GEMV_STAGES: compile-time overrides for variant builds
// (bench/cuda/build_variants.sh); the defaults are the ones measured best.
#ifndef HERD_GEMV_WARPS
#define HERD_GEMV_WARPS 4
#endif
#ifndef HERD_GEMV_STAGES
#define HERD_GEMV_STAGES 3
#endif
// HERD_GEMV_MIN_BLOCKS (variant builds): resident blocks per SM the registers of the quantized
// GEMV's one-token instances must allow (__launch_bounds__'s second argument; 0: no constraint).
#ifndef HERD_GEMV_MIN_BLOCKS
#define HERD_GEMV_MIN_BLOCKS 0
#endif
constexpr int kWarps = HERD_GEMV_WARPS;    // warps per thread block
constexpr int kStages = HERD_GEMV_STAGES;  // shared-memory ring depth per warp
constexpr int kMaxTok = 8;                 // tokens per launch
constexpr int kMaxSegs = 4;                // weights per launch
constexpr int kWantWarps = 4096;           // split rows over more warps while the grid has fewer

// j / d by a float reciprocal r = 1.f / d, exact for 0 <= j <= kSmallDivMax and any d >= 1:
// (j + 0.5) / d lies at least 0.5 / d from an integer, and the two float roundings (r, then
// the product; j + 0.5 is exact) move it by less than (j + 0.5) / d * 2^-23 < 0.5 / d.
// Three instructions instead of an integer division's ~20 in the GEMV loops.
inline constexpr int kSmallDivMax = (1 << 21) - 1;
__host__ __device__ __forceinline__ int SmallDiv(int j, float r) {
  return static_cast<int>((static_cast<float>(j) + 0.5f) * r);
}

// The weights of one launch: rows [row0[s], row0[s+1]) of the concatenation are rows of seg s.
struct Segs {
  const uint8_t* w[kMaxSegs];
  float* y[kMaxSegs];
  int n_out[kMaxSegs];
  int row0[kMaxSegs];  // INT_MAX for unused entries
  int total_rows;
};

__device__ __forceinline__ int FindSeg(const Segs& s, int gr) {
  int k = 0;
#pragma unroll
  for (int i = 1; i < kMaxSegs; ++i) k += gr >= s.row0[i];
  return k;
}

// Sums acc over the warp, then over the wpr warps of a row (shared memory), and writes y.
// With wpr > 1 every warp of the block must call it the same number of times (barriers).
template <int NT>
__device__ __forceinline__ void ReduceAndStore(float (&acc)[NT], int wpr, bool valid, float* y, int n_out, int row,
                                               int n_tok) {
  __shared__ float partial[kWarps][NT];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], o);
  }
  if (wpr > 1) {
    if (lane == 0) {
#pragma unroll
      for (int t = 0; t < NT; ++t) partial[warp][t] = acc[t];
    }
    __syncthreads();
    if (warp % wpr == 0) {
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        for (int p = 1; p < wpr; ++p) acc[t] += partial[warp + p][t];
      }
    }
    __syncthreads();  // partial is free for the next row
    if (warp % wpr != 0) return;
  }
  if (valid && lane == 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (t < n_tok) y[t * static_cast<int64_t>(n_out) + row] = acc[t];
  }
}

// Resident blocks of `kernel` on the whole device (SMs x occupancy). The caller caches it per
// kernel (the first device it runs on decides; all GPUs of one process are taken to be alike).
template <typename Args>
int ResidentBlocks(void (*kernel)(Args)) {
  int dev = 0, sms = 0, per_sm = 0;
  HERD_CUDA_CHECK(cudaGetDevice(&dev));
  HERD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  HERD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWarps * 32, 0));
  return std::max(1, sms * per_sm);
}

// Launches kernel K<T, NT> over `groups` row groups, `per_block` of them per thread block (0:
// persistent, at most one wave of blocks, each taking an equal number of row groups).
template <template <DType, int> class K, DType T, int NT, typename Args>
void LaunchGrid(const Args& a, int groups, int per_block, bool pdl, cudaStream_t stream) {
  if (per_block == 0) {
    static const int resident = ResidentBlocks(K<T, NT>::kFn);
    per_block = (groups + resident - 1) / resident;
  }
  LaunchPdlIf(pdl, K<T, NT>::kFn, dim3(static_cast<unsigned>((groups + per_block - 1) / per_block)), dim3(kWarps * 32),
              0, stream, a);
}

// The kernel instance for n tokens (1..8): 1, 2, 4 or 8 accumulators.
template <template <DType, int> class K, DType T, typename Args>
void LaunchByTok(const Args& a, int blocks, int per_block, bool pdl, cudaStream_t stream) {
  if (a.n_tok <= 1) {
    LaunchGrid<K, T, 1>(a, blocks, per_block, pdl, stream);
  } else if (a.n_tok <= 2) {
    LaunchGrid<K, T, 2>(a, blocks, per_block, pdl, stream);
  } else if (a.n_tok <= 4) {
    LaunchGrid<K, T, 4>(a, blocks, per_block, pdl, stream);
  } else {
    LaunchGrid<K, T, 8>(a, blocks, per_block, pdl, stream);
  }
}

inline bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Warps per row: split rows (up to 4 ways, at most one part per unit of work) while a part has
// more than `per_part` units or the grid has fewer than `want` warps.
// min_units: a split must leave each part at least that many units.
inline int WarpsPerRow(int64_t rows, int64_t units, int64_t per_part, int64_t want = kWantWarps,
                       int64_t min_units = 1) {
  int wpr = 1;
  while (wpr < kWarps && (min_units > 1 ? units >= 2 * wpr * min_units : wpr < units) &&
         ((units + wpr - 1) / wpr > per_part || rows * wpr < want)) {
    wpr *= 2;
  }
  return wpr;
}

// Fills segs from ws[first, first+n) and ys; returns the total row count.
inline void MakeSegs(std::span<const TensorView> ws, std::span<float* const> ys, size_t first, size_t n, Segs* s) {
  int rows = 0;
  for (int k = 0; k < kMaxSegs; ++k) {
    if (static_cast<size_t>(k) < n) {
      const TensorView& w = ws[first + k];
      HERD_CHECK(w.rows() < INT_MAX - rows);
      s->w[k] = static_cast<const uint8_t*>(w.data);
      s->y[k] = ys[first + k];
      s->n_out[k] = static_cast<int>(w.rows());
      s->row0[k] = rows;
      rows += static_cast<int>(w.rows());
    } else {
      s->w[k] = nullptr;
      s->y[k] = nullptr;
      s->n_out[k] = 0;
      s->row0[k] = INT_MAX;
    }
  }
  s->total_rows = rows;
}

// The float GEMV's share of SetGemvOptions (matmul_gemv_float.cu).
void SetFloatGemvOptions(const GemvOptions& options);

// One-token float GEMV with the weights streamed through a shared-memory ring (gemv_float_ring.cu)
// for rows of at most kMaxIn values, x 16-byte aligned and an sm_90 GPU: segs' rows (GLU mode,
// glu_out set: segs = {gate, up} of n_glu rows each, glu_out[j] = silu(gate_j) * up_j). False,
// launching nothing, where it does not apply.
constexpr int64_t kMaxIn = 8192;
bool LaunchFloatRing(DType type, const Segs& segs, int64_t n_in, const float* x, float* glu_out, int n_glu, bool pdl,
                     cudaStream_t stream);

// Whether the current device's peak memory bandwidth (memory clock x bus width) is at least
// 4 TB/s: H200 (4.8) yes, H100 SXM (3.35) no. Read once, on the first call (matmul_gemv_float.cu);
// GEMV launch choices measured on both differ by it.
bool HighBandwidthDevice();

}  // namespace herd::cuda::internal::gemv
