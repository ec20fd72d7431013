// TopKRows (topk_cuda.h). One CTA of kThreads per row:
//  1. Radix select over the order-preserving 32-bit image of each value (NaN, -inf skipped; -0
//     counted as +0): three histogram passes (11, 11, 10 bits) narrow down T, the image of the
//     k-th most likely value, and `need`, how many entries equal to T belong to the top k.
//  2. Collection: every entry above T (atomic slots, fewer than k), then the ties at T: all of them
//     when exactly `need` exist, else the `need` lowest indices (tile by tile in index order, a
//     block-wide prefix count per tile).
//  3. The <= k candidates sorted by rank (each thread counts the candidates more likely than its
//     own) and written out.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "base/check.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/topk_cuda.h"

namespace herd::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kMaxK = 64;
constexpr int kBins = 2048;

__device__ __forceinline__ bool Valid(float v) { return v > -INFINITY; }  // false for NaN and -inf
// Larger float -> larger image; +0 and -0 map alike.
__device__ __forceinline__ uint32_t Image(float v) {
  const uint32_t u = v == 0.f ? 0u : __float_as_uint(v);
  return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

__global__ void __launch_bounds__(kThreads) TopKKernel(const float* __restrict__ x, int64_t n_cols, int32_t k,
                                                       int32_t* __restrict__ ids, float* __restrict__ vals) {
  __shared__ uint32_t hist[kBins];
  __shared__ int32_t cand_id[kMaxK];
  __shared__ float cand_v[kMaxK];
  __shared__ uint32_t warp_cnt[kThreads / 32];
  __shared__ uint32_t s_prefix, s_need, s_total, s_eq, s_slots;
  const float* row = x + static_cast<int64_t>(blockIdx.x) * n_cols;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;

  // 1. Radix select.
  uint32_t prefix = 0, prefix_mask = 0, need = static_cast<uint32_t>(k), eq_count = 0;
  bool all = false;  // fewer valid entries than k: take them all
  const int shifts[3] = {21, 10, 0}, widths[3] = {11, 11, 10};
  for (int pass = 0; pass < 3; ++pass) {
    const int shift = shifts[pass];
    const uint32_t bin_mask = (1u << widths[pass]) - 1;
    for (int b = tid; b < kBins; b += kThreads) hist[b] = 0;
    __syncthreads();
    for (int64_t c0 = 0; c0 < n_cols; c0 += kThreads) {  // uniform over the warp
      const int64_t c = c0 + tid;
      uint32_t bin = 0xFFFFFFFFu;  // none
      if (c < n_cols) {
        const float v = row[c];
        const uint32_t im = Image(v);
        if (Valid(v) && (im & prefix_mask) == prefix) bin = (im >> shift) & bin_mask;
      }
      // Lanes with the same bin add once (logits cluster in few bins of the first pass).
      const uint32_t peers = __match_any_sync(0xffffffffu, bin);
      if (bin != 0xFFFFFFFFu && lane == __ffs(peers) - 1) atomicAdd(&hist[bin], static_cast<uint32_t>(__popc(peers)));
    }
    __syncthreads();
    if (warp == 0) {  // lane L sums bins [kBins - 64 (L + 1), kBins - 64 L): lane 0 the highest
      uint32_t sum = 0;
      for (int b = kBins - 64 * (lane + 1); b < kBins - 64 * lane; ++b) sum += hist[b];
      uint32_t incl = sum;  // inclusive prefix over lanes, lane 0 first
      for (int o = 1; o < 32; o <<= 1) {
        const uint32_t y = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += y;
      }
      const uint32_t total = __shfl_sync(0xffffffffu, incl, 31);
      const uint32_t excl = incl - sum;
      if (lane == 0) s_total = total;
      if (total > need && excl < need && incl >= need) {  // the lane holding the need-th entry
        uint32_t above = excl;
        for (int b = kBins - 1 - 64 * lane; b >= kBins - 64 * (lane + 1); --b) {
          if (above + hist[b] >= need) {
            s_prefix = static_cast<uint32_t>(b);
            s_need = need - above;
            s_eq = hist[b];
            break;
          }
          above += hist[b];
        }
      }
    }
    __syncthreads();
    if (s_total <= need) {  // the entries matching the prefix are all taken
      all = pass == 0;
      if (pass > 0) {  // cannot happen: the chosen bin held >= need entries
        eq_count = s_total;
        need = s_total;
      }
      break;
    }
    prefix |= s_prefix << shift;
    prefix_mask |= bin_mask << shift;
    need = s_need;
    eq_count = s_eq;
    __syncthreads();
  }

  // 2. Collection.
  if (tid == 0) s_slots = 0;
  __syncthreads();
  const uint32_t t_img = prefix;  // valid when !all: the image of the k-th value
  for (int64_t c = tid; c < n_cols; c += kThreads) {
    const float v = row[c];
    if (!Valid(v)) continue;
    const uint32_t im = Image(v);
    if (all || im > t_img || (im == t_img && eq_count == need)) {
      const uint32_t slot = atomicAdd(&s_slots, 1u);
      cand_id[slot] = static_cast<int32_t>(c);
      cand_v[slot] = v;
    }
  }
  __syncthreads();
  if (!all && eq_count > need) {  // ties straddle the cut: the lowest indices first
    const uint32_t base_slot = s_slots;
    uint32_t taken = 0;
    for (int64_t base = 0; base < n_cols && taken < need; base += kThreads) {
      const int64_t c = base + tid;
      const float v = c < n_cols ? row[c] : -INFINITY;
      const bool e = Valid(v) && Image(v) == t_img;
      const uint32_t ballot = __ballot_sync(0xffffffffu, e);
      if (lane == 0) warp_cnt[warp] = __popc(ballot);
      __syncthreads();
      uint32_t before = 0, total = 0;
      for (int w = 0; w < kThreads / 32; ++w) {
        before += w < warp ? warp_cnt[w] : 0;
        total += warp_cnt[w];
      }
      const uint32_t pos = taken + before + __popc(ballot & ((1u << lane) - 1u));
      if (e && pos < need) {
        cand_id[base_slot + pos] = static_cast<int32_t>(c);
        cand_v[base_slot + pos] = v;
      }
      taken += total;
      __syncthreads();  // warp_cnt is rewritten by the next tile
    }
    if (tid == 0) s_slots = base_slot + need;
    __syncthreads();
  }

  // 3. Sort by rank and write.
  const int m = static_cast<int>(s_slots);
  int32_t* out_id = ids + static_cast<int64_t>(blockIdx.x) * k;
  float* out_v = vals + static_cast<int64_t>(blockIdx.x) * k;
  if (tid < m) {
    const float v = cand_v[tid];
    const int32_t id = cand_id[tid];
    int rank = 0;
    for (int j = 0; j < m; ++j) rank += cand_v[j] > v || (cand_v[j] == v && cand_id[j] < id);
    out_id[rank] = id;
    out_v[rank] = v;
  } else if (tid < k) {
    out_id[tid] = -1;
    out_v[tid] = -INFINITY;
  }
}

}  // namespace

void TopKRows(const float* x, int64_t n_rows, int64_t n_cols, int32_t k, int32_t* ids, float* vals,
              cudaStream_t stream) {
  HERD_CHECK_MSG(k >= 1 && k <= kMaxK, "TopKRows: k = %d outside [1, %d]", k, kMaxK);
  HERD_CHECK(n_cols < (int64_t{1} << 31) && n_rows < (int64_t{1} << 31));
  if (n_rows <= 0) return;
  TopKKernel<<<static_cast<unsigned>(n_rows), kThreads, 0, stream>>>(x, n_cols, k, ids, vals);
  HERD_CUDA_CHECK_LAUNCH();
}

}  // namespace herd::cuda
