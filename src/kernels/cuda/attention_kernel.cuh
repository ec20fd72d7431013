// The split-K paged-attention kernel (SIMT, fp32 math), one template for every KV type. Included
// by attention_{f16,f32,q8}.cu only. Contract and work split: attention_cuda.h, attention_internal.h.
//
// One CTA (128 threads) takes one work item (up to 16 query rows: tokens × query heads of one kv
// head) and one split (a range of 32-position tiles of the context) and loops over the tiles:
//   1. the tile's slot byte offsets from the block table (one thread per position);
//   2. K and V of the tile loaded (16-byte loads), widened to fp32 into shared memory;
//   3. scores: warp w sums dims [w*hd/4, (w+1)*hd/4) of q·k for its lane's position and every
//      row (K read once from shared memory for all rows, Q broadcast), partial sums per warp;
//   4. online softmax, one warp per row, one lane per position (causal mask per row);
//   5. acc = acc * rescale + P · V, each thread owning (row, dim) outputs.
// The epilogue writes the output (one split) or the normalised partial and (max, sum).
#pragma once

#include <cuda_fp16.h>

#include <atomic>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/cuda_check.h"

namespace herd::cuda::attn {

// Values per 16-byte-or-so load of one vector chunk.
template <KvKind T>
constexpr int kChunk = T == KvKind::kF32 ? 4 : 8;

template <KvKind T>
struct Raw;
template <>
struct Raw<KvKind::kF16> {
  uint4 u;
};
template <>
struct Raw<KvKind::kF32> {
  float4 f;
};
template <>
struct Raw<KvKind::kQ8_0> {
  uint16_t d;     // fp16 scale
  uint16_t q[4];  // 8 int8
};

// Chunk c of the vector at `vec` (chunk = kChunk<T> consecutive values).
template <KvKind T>
__device__ __forceinline__ Raw<T> LoadChunk(const uint8_t* __restrict__ vec, int c) {
  Raw<T> r;
  if constexpr (T == KvKind::kF16) {
    r.u = __ldg(reinterpret_cast<const uint4*>(vec) + c);
  } else if constexpr (T == KvKind::kF32) {
    r.f = __ldg(reinterpret_cast<const float4*>(vec) + c);
  } else {
    // Q8_0 block (34 bytes: fp16 scale, 32 int8) holds 4 chunks; only 2-byte alignment is known.
    const uint16_t* b = reinterpret_cast<const uint16_t*>(vec + (c >> 2) * 34);
    r.d = __ldg(b);
    const int q0 = 1 + (c & 3) * 4;
#pragma unroll
    for (int i = 0; i < 4; ++i) r.q[i] = __ldg(b + q0 + i);
  }
  return r;
}

template <KvKind T>
__device__ __forceinline__ void StoreChunk(const Raw<T>& r, float* dst) {
  if constexpr (T == KvKind::kF16) {
    const __half2* h = reinterpret_cast<const __half2*>(&r.u);
    const float2 a = __half22float2(h[0]), b = __half22float2(h[1]), c = __half22float2(h[2]), d = __half22float2(h[3]);
    reinterpret_cast<float4*>(dst)[0] = make_float4(a.x, a.y, b.x, b.y);
    reinterpret_cast<float4*>(dst)[1] = make_float4(c.x, c.y, d.x, d.y);
  } else if constexpr (T == KvKind::kF32) {
    *reinterpret_cast<float4*>(dst) = r.f;
  } else {
    const float d = __half2float(__ushort_as_half(r.d));
    float v[8];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      v[2 * i] = static_cast<float>(static_cast<int8_t>(r.q[i] & 0xff)) * d;
      v[2 * i + 1] = static_cast<float>(static_cast<int8_t>(r.q[i] >> 8)) * d;
    }
    reinterpret_cast<float4*>(dst)[0] = make_float4(v[0], v[1], v[2], v[3]);
    reinterpret_cast<float4*>(dst)[1] = make_float4(v[4], v[5], v[6], v[7]);
  }
}

template <KvKind T>
__device__ __forceinline__ void StoreOrZero(bool ok, const Raw<T>& rk, const Raw<T>& rv, float* kd, float* vd) {
  if (ok) {
    StoreChunk<T>(rk, kd);
    StoreChunk<T>(rv, vd);
  } else {
#pragma unroll
    for (int x = 0; x < kChunk<T>; x += 4) {
      *reinterpret_cast<float4*>(kd + x) = make_float4(0.f, 0.f, 0.f, 0.f);
      *reinterpret_cast<float4*>(vd + x) = make_float4(0.f, 0.f, 0.f, 0.f);
    }
  }
}

__device__ __forceinline__ float WarpMax(float v) {
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float WarpSum(float v) {
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Loads a K/V tile into shared fp32. HD > 0: Issue() starts the global loads of a tile into
// registers (kIters chunks of K and of V per thread) and Commit() stores them later, so the loads
// of tile i + 1 are in flight while tile i is computed. HD == 0 (generic head_dim): Commit() loads
// and stores at once. Positions past the context (offset -1) get zeros (masked; 0 * V stays finite).
template <KvKind T, int HD>
struct TileLoader {
  static constexpr int kC = kChunk<T>;
  static constexpr int kIters = HD > 0 ? kTile*(HD / kC) / kThreads : 1;
  static_assert(HD == 0 || kTile * (HD / kC) % kThreads == 0);
  Raw<T> rk[kIters], rv[kIters];
  bool ok[kIters];

  __device__ void Issue(const Params& p, const int64_t* offs) {
    if constexpr (HD > 0) {
#pragma unroll
      for (int it = 0; it < kIters; ++it) {
        const int idx = threadIdx.x + it * kThreads, j = idx / (HD / kC), c = idx % (HD / kC);
        const int64_t off = offs[j];
        ok[it] = off >= 0;
        if (ok[it]) {
          rk[it] = LoadChunk<T>(p.k + off, c);
          rv[it] = LoadChunk<T>(p.v + off, c);
        }
      }
    }
  }

  __device__ void Commit(const Params& p, const int64_t* offs, int hd, int kp, float* ks, float* vs) {
    if constexpr (HD > 0) {
#pragma unroll
      for (int it = 0; it < kIters; ++it) {
        const int idx = threadIdx.x + it * kThreads, j = idx / (HD / kC), c = idx % (HD / kC);
        StoreOrZero<T>(ok[it], rk[it], rv[it], ks + j * kp + c * kC, vs + j * kp + c * kC);
      }
    } else {
      const int cpv = hd / kC;
      for (int idx = threadIdx.x; idx < kTile * cpv; idx += kThreads) {
        const int j = idx / cpv, c = idx - j * cpv;
        const int64_t off = offs[j];
        Raw<T> a{}, b{};
        if (off >= 0) {
          a = LoadChunk<T>(p.k + off, c);
          b = LoadChunk<T>(p.v + off, c);
        }
        StoreOrZero<T>(off >= 0, a, b, ks + j * kp + c * kC, vs + j * kp + c * kC);
      }
    }
  }
};

// One work item: tokens [t, t + len) (consecutive positions pos0.. of one sequence), query heads
// [h0, h0 + nh) of kv head kvh; rows r = (token r / nh, head r % nh); RM >= len * nh rows.
// HD: head_dim (0: run-time p.head_dim, any multiple of 16 up to kMaxHeadDim).
// leader: the one CTA of the item that records its split count (split 0, kv head 0, chunk 0).
template <KvKind T, int HD, int RM>
__device__ void RunItem(const Params& p, float* smem, int t, int len, int pos0, int h0, int nh, int kvh, int split,
                        bool leader) {
  const int hd = HD > 0 ? HD : p.head_dim;
  const int kp = hd + 4;  // padded K/V row pitch (floats): conflict-free 16-byte column reads
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int rows = len * nh;
  const int ctx = pos0 + len;  // positions [0, ctx) are attended (causally per row)
  const int n_tiles = (ctx + kTile - 1) / kTile;
  int ns = (n_tiles + kMinTilesPerSplit - 1) / kMinTilesPerSplit;
  ns = ns < p.s_max ? ns : p.s_max;
  const int tps = (n_tiles + ns - 1) / ns;
  ns = (n_tiles + tps - 1) / tps;
  if (p.nsplit != nullptr && leader && tid < len) p.nsplit[t + tid] = ns;
  if (split >= ns) return;
  const int tile_begin = split * tps;
  const int tile_end = min(n_tiles, tile_begin + tps);

  // Shared memory, as SmemBytes(hd, RM) counts it.
  int64_t* offs = reinterpret_cast<int64_t*>(smem);  // [2][kTile]: slot byte offsets, double-buffered
  float* qs = smem + 4 * kTile;                      // [RM][hd]
  float* ks = qs + RM * hd;                          // [kTile][kp]
  float* vs = ks + kTile * kp;                       // [kTile][kp]
  float* sp = vs + kTile * kp;                       // [4 warps][RM][kTile]
  float* ps = sp + 4 * RM * kTile;                   // [kTile][RM]
  float* m_run = ps + kTile * RM;
  float* l_run = m_run + RM;
  float* alpha = l_run + RM;

  const int32_t* table = p.tables[p.seq[t]];
  auto slot_offsets = [&](int tile, int64_t* dst) {
    if (tid < kTile) {
      const int pp = tile * kTile + tid;
      int64_t off = -1;
      if (pp < ctx) {
        const int64_t slot = static_cast<int64_t>(table[pp / p.block_size]) * p.block_size + pp % p.block_size;
        off = (slot * p.n_kv_heads + kvh) * p.vec_bytes;
      }
      dst[tid] = off;
    }
  };
  slot_offsets(tile_begin, offs);
  for (int i = tid; i < RM * hd; i += kThreads) {
    const int r = i / hd, d = i - r * hd;
    float x = 0.f;
    if (r < rows) x = p.q[(static_cast<int64_t>(t + r / nh) * p.n_heads + h0 + r % nh) * hd + d] * p.scale_log2;
    qs[i] = x;
  }
  if (tid < RM) {
    m_run[tid] = -INFINITY;
    l_run[tid] = 0.f;
  }
  __syncthreads();
  TileLoader<T, HD> loader;
  loader.Issue(p, offs);

  // Output elements of this thread. hd 64 / 128 (kFixed): one dim d = tid % HD and kElems
  // consecutive rows from (tid / HD) * kElems. Otherwise e = tid + kThreads * i -> (e / hd, e % hd).
  constexpr bool kFixed = HD > 0 && kThreads % (HD > 0 ? HD : 1) == 0;
  constexpr int kElems = kFixed ? RM * HD / kThreads : RM * kMaxHeadDim / kThreads;
  float acc[kElems];
#pragma unroll
  for (int i = 0; i < kElems; ++i) acc[i] = 0.f;

  for (int tile = tile_begin; tile < tile_end; ++tile) {
    const int buf = (tile - tile_begin) & 1;
    if (tile + 1 < tile_end) slot_offsets(tile + 1, offs + (buf ^ 1) * kTile);
    if (tile > tile_begin) __syncthreads();  // the previous tile's P·V is done with vs and ps
    loader.Commit(p, offs + buf * kTile, hd, kp, ks, vs);
    __syncthreads();
    if (tile + 1 < tile_end) loader.Issue(p, offs + (buf ^ 1) * kTile);

    // Partial scores: warp covers a quarter of the dims, lane = position.
    {
      float sc[RM];
#pragma unroll
      for (int r = 0; r < RM; ++r) sc[r] = 0.f;
      const int q4 = hd / 16;  // float4s per quarter
      const float4* krow = reinterpret_cast<const float4*>(ks + lane * kp) + warp * q4;
      const float4* qrow = reinterpret_cast<const float4*>(qs) + warp * q4;
#pragma unroll 4
      for (int i = 0; i < q4; ++i) {
        const float4 kk = krow[i];
#pragma unroll
        for (int r = 0; r < RM; ++r) {
          const float4 qq = qrow[r * (hd / 4) + i];
          sc[r] += kk.x * qq.x + kk.y * qq.y + kk.z * qq.z + kk.w * qq.w;
        }
      }
#pragma unroll
      for (int r = 0; r < RM; ++r) sp[(warp * RM + r) * kTile + lane] = sc[r];
    }
    __syncthreads();

    // Online softmax: warp per row, lane per position.
    const int base = tile * kTile;
    for (int r = warp; r < RM; r += 4) {
      float s = sp[r * kTile + lane] + sp[(RM + r) * kTile + lane] + sp[(2 * RM + r) * kTile + lane] +
                sp[(3 * RM + r) * kTile + lane];
      const bool valid = r < rows && base + lane <= pos0 + r / nh;
      s = valid ? s : -INFINITY;
      const float m_old = m_run[r];
      const float m_new = fmaxf(m_old, WarpMax(s));
      const bool none = m_new == -INFINITY;  // every position so far masked
      const float pr = none ? 0.f : exp2f(s - m_new);
      const float a = none ? 1.f : exp2f(m_old - m_new);
      const float sum = WarpSum(pr);
      ps[lane * RM + r] = pr;
      if (lane == 0) {
        alpha[r] = a;
        m_run[r] = m_new;
        l_run[r] = l_run[r] * a + sum;
      }
    }
    __syncthreads();

    // acc = acc * alpha + P · V.
    if constexpr (kFixed) {
      const int d = tid % HD, r0 = (tid / HD) * kElems;
#pragma unroll
      for (int i = 0; i < kElems; ++i) acc[i] *= alpha[r0 + i];
#pragma unroll 8
      for (int j = 0; j < kTile; ++j) {
        const float vv = vs[j * kp + d];
        const float* pj = ps + j * RM + r0;
        if constexpr (kElems % 4 == 0) {
#pragma unroll
          for (int i = 0; i < kElems; i += 4) {
            const float4 pr = *reinterpret_cast<const float4*>(pj + i);
            acc[i] += pr.x * vv;
            acc[i + 1] += pr.y * vv;
            acc[i + 2] += pr.z * vv;
            acc[i + 3] += pr.w * vv;
          }
        } else {
#pragma unroll
          for (int i = 0; i < kElems; ++i) acc[i] += pj[i] * vv;
        }
      }
    } else {
#pragma unroll
      for (int i = 0; i < kElems; ++i) {
        const int e = tid + i * kThreads;
        if (e < RM * hd) {
          const int r = e / hd, d = e - r * hd;
          float a = acc[i] * alpha[r];
          for (int j = 0; j < kTile; ++j) a += ps[j * RM + r] * vs[j * kp + d];
          acc[i] = a;
        }
      }
    }
  }
  __syncthreads();  // final m_run, l_run

#pragma unroll
  for (int i = 0; i < kElems; ++i) {
    int r, d;
    if constexpr (kFixed) {
      d = tid % HD;
      r = (tid / HD) * kElems + i;
    } else {
      const int e = tid + i * kThreads;
      r = e / hd;
      d = e - r * hd;
    }
    if (r >= rows) continue;
    const float l = l_run[r];
    const float o = l > 0.f ? acc[i] / l : 0.f;
    const int64_t th = static_cast<int64_t>(t + r / nh) * p.n_heads + h0 + r % nh;  // token * n_heads + head
    if (ns == 1) {
      p.out[th * hd + d] = o;
    } else {
      const int64_t slot = th * p.s_max + split;
      p.part_o[slot * hd + d] = o;
      if (d == 0) p.part_ml[slot] = make_float2(m_run[r], l);
    }
  }
}

// The CTA's coordinates (see Params) and its token's neighbours in the batch.
struct Cta {
  int t, hc, split, kvh, seq, pos, h0, nh;
  bool has_prev, has_next, leader;
  __device__ explicit Cta(const Params& p) {
    int rest = blockIdx.x;
    kvh = rest % p.n_kv_heads;
    rest /= p.n_kv_heads;
    split = rest % p.s_max;
    rest /= p.s_max;
    hc = rest % p.head_chunks;
    t = rest / p.head_chunks;
    seq = p.seq[t];
    pos = p.pos[t];
    has_prev = t > 0 && p.seq[t - 1] == seq && p.pos[t - 1] == pos - 1;
    has_next = t + 1 < p.n_tokens && p.seq[t + 1] == seq && p.pos[t + 1] == pos + 1;
    h0 = kvh * p.group + hc * kItemRows;
    nh = min(kItemRows, p.group - hc * kItemRows);
    leader = split == 0 && kvh == 0 && hc == 0;
  }
};

// Decode tokens: no batch neighbour at the previous / next position of the same sequence. One
// item per token, RS >= min(group, 16) rows.
template <KvKind T, int HD, int RS>
__global__ void __launch_bounds__(kThreads) DecodeKernel(const Params p) {
  extern __shared__ float4 smem4[];
  const Cta c(p);
  if (c.has_prev || c.has_next) return;
  RunItem<T, HD, RS>(p, reinterpret_cast<float*>(smem4), c.t, 1, c.pos, c.h0, c.nh, c.kvh, c.split, c.leader);
}

// Runs of consecutive positions (prefill chunks), cut where the position is a multiple of
// run_cap = kItemRows / group, so whether a token starts an item is decided locally.
template <KvKind T, int HD>
__global__ void __launch_bounds__(kThreads) PrefillKernel(const Params p) {
  extern __shared__ float4 smem4[];
  const Cta c(p);
  if (!c.has_prev && !c.has_next) return;
  const int run_cap = p.group >= kItemRows ? 1 : kItemRows / p.group;
  if (c.has_prev && c.pos % run_cap != 0) return;  // inside an item that starts earlier
  int len = 1;
  while (len < run_cap && c.t + len < p.n_tokens && p.seq[c.t + len] == c.seq && p.pos[c.t + len] == c.pos + len &&
         (c.pos + len) % run_cap != 0) {
    ++len;
  }
  RunItem<T, HD, kItemRows>(p, reinterpret_cast<float*>(smem4), c.t, len, c.pos, c.h0, c.nh, c.kvh, c.split, c.leader);
}

// Launches `kernel` with the dynamic shared memory for p.head_dim; raises its limit once per device.
template <typename Kernel>
void LaunchKernel(Kernel kernel, int rm, std::atomic<uint64_t>& raised, const Params& p, unsigned grid,
                  cudaStream_t stream) {
  int dev = 0;
  HERD_CUDA_CHECK(cudaGetDevice(&dev));
  const uint64_t bit = uint64_t{1} << (dev & 63);
  if ((raised.load(std::memory_order_relaxed) & bit) == 0) {
    HERD_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         static_cast<int>(SmemBytes(kMaxHeadDim, rm))));
    raised.fetch_or(bit);
  }
  kernel<<<grid, kThreads, SmemBytes(p.head_dim, rm), stream>>>(p);
  HERD_CUDA_CHECK_LAUNCH();
}

template <KvKind T, int HD>
void LaunchHd(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream) {
  static std::atomic<uint64_t> raised[4];
  if constexpr (HD > 0) {
    if (rows_small == 4) {
      LaunchKernel(DecodeKernel<T, HD, 4>, 4, raised[0], p, grid, stream);
    } else if (rows_small == 8) {
      LaunchKernel(DecodeKernel<T, HD, 8>, 8, raised[1], p, grid, stream);
    } else {
      LaunchKernel(DecodeKernel<T, HD, kItemRows>, kItemRows, raised[2], p, grid, stream);
    }
  } else {
    LaunchKernel(DecodeKernel<T, 0, kItemRows>, kItemRows, raised[2], p, grid, stream);
  }
  if (prefill) LaunchKernel(PrefillKernel<T, HD>, kItemRows, raised[3], p, grid, stream);
}

// The decode kernel (rows_small: 4, 8 or 16 rows) and, when the batch may hold runs of positions
// (prefill), the prefill kernel, for p.head_dim 64, 128 or the generic instance.
template <KvKind T>
void LaunchForType(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream) {
  if (p.head_dim == 128) return LaunchHd<T, 128>(p, rows_small, prefill, grid, stream);
  if (p.head_dim == 64) return LaunchHd<T, 64>(p, rows_small, prefill, grid, stream);
  LaunchHd<T, 0>(p, kItemRows, prefill, grid, stream);
}

}  // namespace herd::cuda::attn
