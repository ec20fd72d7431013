// DrawRows (draw_cuda.h): the steps of ref::DrawRow with one 1024-thread block per row. Passes
// over the row (coalesced, kUnroll loads in flight per thread: a row is one SM's, so a pass is
// bound by the loads one SM keeps in flight) give the max / argmax / count, the nucleus
// normalizer and the temperature normalizer as double sums reduced in a fixed order; the nucleus
// threshold comes from four 8-bit radix passes whose histograms hold fixed-point masses (uint64:
// the sums do not depend on the order of the shared-memory atomics; each warp adds into a
// histogram of its own, 64 KB of dynamic shared memory in all, summed per bin after the pass,
// with per-lane 32-bit atomics on a low and a high word; per-lane atomics there beat summing a
// warp's lanes per bin first with __match_any_sync and __reduce_add_sync: 423 against 661 us for
// 128 rows of 128,256 on H100, with 64-bit atomics); the draw sums the
// fixed-point masses of groups of 256 consecutive ids (one warp a group), scans the group sums in
// id order and lets warp 0 walk the group that holds u. Only expf and the order of the double
// sums differ from the host reference: ids differ only where u or top_p falls within ~1e-7 of a
// boundary.
#include <atomic>
#include <cfloat>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/draw_cuda.h"
#include "kernels/cuda/launch_pdl.cuh"

namespace herd::cuda {
namespace {

constexpr int kThreads = 1024;
constexpr int kWarps = kThreads / 32;
static_assert(kThreads == 32 * 32, "ExclusiveScan: 32 values per lane of one warp");

__device__ __forceinline__ long long BlockMaxI(long long v, long long* scratch) {
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < kWarps ? scratch[lane] : -1;
  for (int o = 16; o > 0; o >>= 1) v = max(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

// Inclusive prefix sum over the lanes of a warp.
__device__ __forceinline__ uint64_t WarpInclusiveSum(uint64_t v, int lane) {
  for (int o = 1; o < 32; o <<= 1) {
    const uint64_t y = __shfl_up_sync(0xffffffffu, v, o);
    if (lane >= o) v += y;
  }
  return v;
}

// Run by warp 0 alone: the kThreads values of `ranges` replaced by their exclusive prefix sums
// (each lane scans 32 in order, then the lanes).
__device__ __forceinline__ void ExclusiveScan(uint64_t* ranges, int lane) {
  uint64_t local = 0;
  for (int j = 0; j < 32; ++j) local += ranges[lane * 32 + j];
  uint64_t run = WarpInclusiveSum(local, lane) - local;
  for (int j = 0; j < 32; ++j) {
    const uint64_t v = ranges[lane * 32 + j];
    ranges[lane * 32 + j] = run;
    run += v;
  }
}

constexpr int kUnroll = 8;  // loads of a row in flight per thread
// The draw's groups: kGroupIds consecutive ids, one warp each (kGroupIds / 32 per lane); rows of
// more than kMaxGroups * kGroupIds ids take larger groups.
constexpr int kGroupIds = 256;
constexpr int kMaxGroups = 2 * kThreads;

// Calls f(i, v) with v = row[i] for this thread's ids i = threadIdx.x + j * kThreads, in
// increasing order, kUnroll loads in flight. Every lane of a warp makes the same calls (f may use
// warp-synchronous intrinsics): ids past n come as -inf, with i >= n.
template <typename F>
__device__ __forceinline__ void ForEachOfThread(const float* __restrict__ row, int64_t n, F&& f) {
  const int lane = threadIdx.x % 32;
  for (int64_t base = threadIdx.x - lane; base < n; base += int64_t{kUnroll} * kThreads) {
    float v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      const int64_t i = base + int64_t{k} * kThreads + lane;
      v[k] = i < n ? row[i] : -INFINITY;
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) f(base + int64_t{k} * kThreads + lane, v[k]);
  }
}

// Calls visit(i, row[i]) for this lane's ids of the draw group starting at id `first` (lane l
// takes first + 32 j + l for j < per_lane; -inf past n), in order, kUnroll loads in flight.
// visit returns true to stop; it must return the same on every lane (warp-uniform).
template <class Visit>
__device__ __forceinline__ void ForEachGroupId(const float* __restrict__ row, int64_t n, int64_t first,
                                               int64_t per_lane, int lane, Visit visit) {
  for (int64_t j0 = 0; j0 < per_lane; j0 += kUnroll) {
    int64_t ids[kUnroll];
    float v[kUnroll];
#pragma unroll
    for (int k = 0; k < kUnroll; ++k) {
      ids[k] = first + (j0 + k) * 32 + lane;
      v[k] = j0 + k < per_lane && ids[k] < n ? row[ids[k]] : -INFINITY;
    }
#pragma unroll
    for (int k = 0; k < kUnroll; ++k)
      if (visit(ids[k], v[k])) return;
  }
}

// Pass-1 state: the largest number, the first index of the largest non-NaN value (ArgMaxRows),
// the count of numbers (> -inf).
struct Scan1 {
  float m;
  float best_v;
  int64_t best_i;
  int64_t count;
};

__device__ __forceinline__ void Merge(Scan1& a, const Scan1& b) {
  a.m = fmaxf(a.m, b.m);
  if (b.best_i >= 0 && (a.best_i < 0 || b.best_v > a.best_v || (b.best_v == a.best_v && b.best_i < a.best_i))) {
    a.best_v = b.best_v;
    a.best_i = b.best_i;
  }
  a.count += b.count;
}

__device__ __forceinline__ Scan1 Shfl(const Scan1& s, int o) {
  Scan1 r;
  r.m = __shfl_xor_sync(0xffffffffu, s.m, o);
  r.best_v = __shfl_xor_sync(0xffffffffu, s.best_v, o);
  r.best_i = __shfl_xor_sync(0xffffffffu, s.best_i, o);
  r.count = __shfl_xor_sync(0xffffffffu, s.count, o);
  return r;
}

__device__ __forceinline__ uint32_t KeyOf(float v) { return DrawKey(__float_as_uint(v)); }

__global__ void __launch_bounds__(kThreads)
    DrawRowsKernel(const float* __restrict__ x, int64_t n, const RowDraw* __restrict__ draws,
                   int32_t* __restrict__ ids) {
  PdlTrigger();
  // Each warp's nucleus histogram: its lanes' fixed-point masses per bin as low and high words
  // ([kWarps][256] each; its own, so the atomics of different warps never meet on the few bins
  // that hold most of a row). A high word holds its bin's sum >> 32: about 2^28 at most, as a
  // row's shares sum to about 2^60.
  extern __shared__ unsigned warp_words[];
  unsigned* const warp_lo = warp_words;
  unsigned* const warp_hi = warp_words + kWarps * 256;
  __shared__ long long iscratch[kWarps];
  __shared__ Scan1 s1scratch[kWarps];
  __shared__ unsigned long long mass[256];
  __shared__ unsigned cnt[256];
  __shared__ uint64_t range_sum[kThreads];
  __shared__ uint64_t group_sum[kMaxGroups];
  __shared__ long long s_group;
  __shared__ uint64_t s_before;
  __shared__ uint32_t s_prefix;
  __shared__ uint64_t s_above;
  __shared__ int s_chosen;
  __shared__ long long s_tie_last;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int64_t r = blockIdx.x;
  const RowDraw d = draws[r];  // uploaded before the pass (not written by kernels of the stream)
  PdlWait();
  const float* row = x + r * n;
  const float neg_inf = -INFINITY;

  // Pass 1.
  Scan1 s{neg_inf, -FLT_MAX, -1, 0};
  ForEachOfThread(row, n, [&](int64_t i, float v) {
    if (i >= n) return;
    if (v == v && (s.best_i < 0 || v > s.best_v)) s.best_v = v, s.best_i = i;
    if (v > neg_inf) ++s.count, s.m = fmaxf(s.m, v);
  });
  for (int o = 16; o > 0; o >>= 1) Merge(s, Shfl(s, o));
  if (lane == 0) s1scratch[warp] = s;
  __syncthreads();
  s = s1scratch[0];
  for (int w = 1; w < kWarps; ++w) Merge(s, s1scratch[w]);
  const float m = s.m;
  if (d.temperature <= 0.0f || s.count <= 1) {
    if (tid == 0) ids[r] = s.count == 0 && d.temperature > 0.0f ? -1 : static_cast<int32_t>(s.best_i);
    return;
  }

  // Nucleus.
  bool cut = false;
  uint32_t theta = 0;
  int64_t tie_last = n;
  if (d.top_p < 1.0f) {
    double part = 0.0;
    ForEachOfThread(row, n, [&](int64_t, float v) {
      if (v > neg_inf) part += static_cast<double>(expf(v - m));
    });
    const double inv1 = 1.0 / BlockSum(part);
    const uint64_t target = DrawFixed(d.top_p);
    if (tid == 0) s_prefix = 0, s_above = 0;
    for (int shift = 24; shift >= 0; shift -= 8) {
      for (int b = tid; b < 256; b += kThreads) cnt[b] = 0;
      for (int b = tid; b < kWarps * 256; b += kThreads) warp_lo[b] = 0, warp_hi[b] = 0;
      __syncthreads();
      const uint32_t prefix = s_prefix;
      const uint32_t hi = shift == 24 ? 0u : ~((1u << (shift + 8)) - 1u);
      ForEachOfThread(row, n, [&](int64_t, float v) {
        const uint32_t k = KeyOf(v);
        const bool in = v > neg_inf && (k & hi) == prefix;
        if (in) {
          const uint32_t bin = (k >> shift) & 255u;
          // A 64-bit add as two native 32-bit ones (a u64 shared atomicAdd is a compare-and-swap
          // loop, which lanes of a warp on one bin retry): the low word's wrap carries into the
          // high word, exactly, whatever the order.
          const uint64_t share = DrawShare(expf(v - m), inv1);
          const unsigned lo = static_cast<unsigned>(share), hi = static_cast<unsigned>(share >> 32);
          const unsigned before = atomicAdd(&warp_lo[warp * 256 + bin], lo);
          const unsigned carry = before + lo < before ? 1u : 0u;
          if (hi + carry != 0) atomicAdd(&warp_hi[warp * 256 + bin], hi + carry);
          if (shift == 0) atomicAdd(&cnt[bin], 1u);
        }
      });
      __syncthreads();
      for (int b = tid; b < 256; b += kThreads) {
        unsigned long long sum = 0;
        for (int w = 0; w < kWarps; ++w) {
          sum += (static_cast<unsigned long long>(warp_hi[w * 256 + b]) << 32) + warp_lo[w * 256 + b];
        }
        mass[b] = sum;
      }
      __syncthreads();
      if (tid == 0) {
        uint64_t above = s_above;
        const int chosen = NucleusBin(mass, target, &above);
        s_chosen = chosen;
        s_tie_last = n;
        if (chosen >= 0) {
          s_above = above;
          s_prefix = prefix | static_cast<uint32_t>(chosen) << shift;
          if (shift == 0) {
            const uint64_t j = NucleusTiesTaken(mass[chosen], cnt[chosen], target, above);
            s_tie_last = j < cnt[chosen] ? -static_cast<long long>(j) : n;  // < 0: find the j-th tie below
          }
        }
      }
      __syncthreads();
      if (s_chosen < 0) break;  // the row falls short by rounding: no cut
      if (shift == 0) {
        cut = true;
        theta = s_prefix;
        tie_last = s_tie_last;
      }
    }
    if (cut && tie_last < 0) {  // the (-tie_last)-th entry at theta in id order
      const int64_t j = -tie_last;
      const int64_t chunk = (n + kThreads - 1) / kThreads;
      const int64_t c0 = min(n, tid * chunk), c1 = min(n, c0 + chunk);
      auto at_theta = [&](float v) { return v > neg_inf && KeyOf(v) == theta; };
      uint64_t ties = 0;
      for (int64_t i = c0; i < c1; ++i) ties += at_theta(row[i]) ? 1 : 0;
      __syncthreads();  // every thread has read s_tie_last above before it is reused
      range_sum[tid] = ties;
      __syncthreads();
      if (warp == 0) ExclusiveScan(range_sum, lane);
      __syncthreads();
      const int64_t before = static_cast<int64_t>(range_sum[tid]);
      if (j > before && j <= before + static_cast<int64_t>(ties)) {  // exactly one thread
        int64_t seen = before;
        for (int64_t i = c0; i < c1; ++i) {
          if (at_theta(row[i]) && ++seen == j) {
            s_tie_last = i;
            break;
          }
        }
      }
      __syncthreads();
      tie_last = s_tie_last;
    }
  }
  auto kept = [&](int64_t i, float v) {
    if (!(v > neg_inf)) return false;
    if (cut) {
      const uint32_t k = KeyOf(v);
      if (k < theta || (k == theta && i > tie_last)) return false;
    }
    return d.min_p <= 0.0f || expf(v - m) >= d.min_p;
  };
  const float t = d.temperature;
  const float mt = t != 1.0f ? m / t : m;
  auto weight = [&](float v) { return expf((t != 1.0f ? v / t : v) - mt); };
  double part = 0.0;
  ForEachOfThread(row, n, [&](int64_t i, float v) {
    if (kept(i, v)) part += static_cast<double>(weight(v));
  });
  const double inv2 = 1.0 / BlockSum(part);

  // The draw, the inverse CDF in id order: ids in groups of g_ids consecutive ids (warp w sums
  // groups w, w + 32, ...: lane l takes ids l, l + 32, ... of the group), the groups' fixed-point
  // masses scanned in id order, then the warp-0 walk of the group holding u.
  const int64_t per_lane =
      n <= int64_t{kMaxGroups} * kGroupIds ? kGroupIds / 32 : (n + int64_t{32} * kMaxGroups - 1) / (32 * kMaxGroups);
  const int64_t g_ids = 32 * per_lane;
  const int64_t n_groups = (n + g_ids - 1) / g_ids;  // <= kMaxGroups
  long long last_positive = -1, last = -1;
  for (int64_t g = warp; g < n_groups; g += kWarps) {
    uint64_t sum = 0;
    ForEachGroupId(row, n, g * g_ids, per_lane, lane, [&](int64_t i, float v) {
      if (!kept(i, v)) return false;
      const float p = static_cast<float>(static_cast<double>(weight(v)) * inv2);
      sum += DrawFixed(p);
      last = max(last, static_cast<long long>(i));
      if (p > 0.0f) last_positive = max(last_positive, static_cast<long long>(i));
      return false;
    });
    for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    if (lane == 0) group_sum[g] = sum;
  }
  if (tid == 0) s_group = -1;
  __syncthreads();
  // Thread t: groups 2t and 2t + 1.
  const uint64_t sa = 2 * tid < n_groups ? group_sum[2 * tid] : 0;
  const uint64_t sb = 2 * tid + 1 < n_groups ? group_sum[2 * tid + 1] : 0;
  range_sum[tid] = sa + sb;
  __syncthreads();
  if (warp == 0) ExclusiveScan(range_sum, lane);
  __syncthreads();
  const uint64_t u = static_cast<uint64_t>(d.u * static_cast<double>(uint64_t{1} << kDrawFracBits));
  const uint64_t before = range_sum[tid];
  if (u >= before && u < before + sa) {  // at most one thread
    s_group = 2 * tid;
    s_before = before;
  } else if (u >= before + sa && u < before + sa + sb) {
    s_group = 2 * tid + 1;
    s_before = before + sa;
  }
  __syncthreads();
  const long long group = s_group;
  if (group >= 0) {
    if (warp == 0) {  // the first id of the group at which the mass passes u
      uint64_t cum = s_before;
      ForEachGroupId(row, n, group * g_ids, per_lane, lane, [&](int64_t i, float v) {
        const uint64_t incl = WarpInclusiveSum(kept(i, v) ? DrawShare(weight(v), inv2) : 0, lane);
        const unsigned hits = __ballot_sync(0xffffffffu, u < cum + incl);
        if (hits != 0) {
          if (lane == __ffs(hits) - 1) ids[r] = static_cast<int32_t>(i);
          return true;
        }
        cum += __shfl_sync(0xffffffffu, incl, 31);
        return false;
      });
    }
  } else {  // u at or past the total mass (rounding): the last kept id with p > 0, else the last kept id
    const long long lp = BlockMaxI(last_positive, iscratch);
    const long long la = BlockMaxI(last, iscratch);
    if (tid == 0) ids[r] = static_cast<int32_t>(lp >= 0 ? lp : la);
  }
}

__global__ void __launch_bounds__(128)
    PenalizeRowsKernel(float* __restrict__ x, int64_t n, const RowPenalty* __restrict__ penalties,
                       const PenaltyEntry* __restrict__ entries) {
  PdlTrigger();
  const int64_t r = blockIdx.x;
  const RowPenalty p = penalties[r];  // uploaded before the pass
  PdlWait();
  for (int32_t e = p.begin + static_cast<int32_t>(threadIdx.x); e < p.end; e += blockDim.x) {
    const PenaltyEntry pe = entries[e];
    float& l = x[r * n + pe.id];
    // AdjustLogit, rounded per operation (no contraction) as on the host.
    float v = l;
    if ((pe.flags & PenaltyEntry::kBiased) != 0) v = __fadd_rn(v, pe.bias);
    if ((pe.flags & PenaltyEntry::kPenalized) != 0) {
      if (p.repeat != 1.0f) v = v > 0.0f ? __fdiv_rn(v, p.repeat) : __fmul_rn(v, p.repeat);
      v = __fsub_rn(v, pe.subtrahend);
    }
    l = v;
  }
}

__global__ void __launch_bounds__(kThreads)
    LogprobStatsKernel(const float* __restrict__ x, int64_t n, const int32_t* __restrict__ ids,
                       RowLogprobStats* __restrict__ stats) {
  PdlTrigger();
  __shared__ float fscratch[kWarps];
  const int64_t r = blockIdx.x;
  PdlWait();
  const float* row = x + r * n;
  const float neg_inf = -INFINITY;
  float m = neg_inf;
  ForEachOfThread(row, n, [&](int64_t, float v) { m = v > m ? v : m; });  // NaN never wins
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  if (threadIdx.x % 32 == 0) fscratch[threadIdx.x / 32] = m;
  __syncthreads();
  m = fscratch[0];
  for (int w = 1; w < kWarps; ++w) m = fmaxf(m, fscratch[w]);
  double part = 0.0;
  if (m > neg_inf) {
    ForEachOfThread(row, n, [&](int64_t, float v) {
      if (v > neg_inf) part += static_cast<double>(expf(v - m));
    });
  }
  const double sum = BlockSum(part);
  if (threadIdx.x == 0) {
    RowLogprobStats st;
    st.log_z = m > neg_inf ? static_cast<double>(m) + log(sum) : -INFINITY;
    const int32_t id = ids[r];
    st.id_logit = id >= 0 && id < n ? row[id] : NAN;
    st.reserved = 0.0f;
    stats[r] = st;
  }
}

}  // namespace

void LogprobStatsRows(const float* x, int64_t n_rows, int64_t n_cols, const int32_t* ids, RowLogprobStats* stats,
                      cudaStream_t stream) {
  if (n_rows <= 0) return;
  HERD_CHECK_MSG(n_rows <= 65535, "LogprobStatsRows: %lld rows (at most 65,535)", static_cast<long long>(n_rows));
  LaunchPdl(LogprobStatsKernel, dim3(static_cast<unsigned>(n_rows)), dim3(kThreads), 0, stream, x, n_cols, ids, stats);
}

void PenalizeRows(float* x, int64_t n_rows, int64_t n_cols, const RowPenalty* penalties, const PenaltyEntry* entries,
                  cudaStream_t stream) {
  if (n_rows <= 0) return;
  HERD_CHECK_MSG(n_rows <= 65535, "PenalizeRows: %lld rows (at most 65,535)", static_cast<long long>(n_rows));
  LaunchPdl(PenalizeRowsKernel, dim3(static_cast<unsigned>(n_rows)), dim3(128), 0, stream, x, n_cols, penalties,
            entries);
}

void DrawRows(const float* x, int64_t n_rows, int64_t n_cols, const RowDraw* draws, int32_t* ids, cudaStream_t stream) {
  if (n_rows <= 0) return;
  HERD_CHECK_MSG(n_rows <= 65535, "DrawRows: %lld rows (at most 65,535)", static_cast<long long>(n_rows));
  constexpr size_t kWarpMassBytes = 2 * sizeof(unsigned) * kWarps * 256;
  static std::atomic<uint64_t> raised{0};
  RaiseDynamicSmem(DrawRowsKernel, int{kWarpMassBytes}, raised);
  LaunchPdl(DrawRowsKernel, dim3(static_cast<unsigned>(n_rows)), dim3(kThreads), kWarpMassBytes, stream, x, n_cols,
            draws, ids);
}

}  // namespace herd::cuda
