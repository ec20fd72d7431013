// The split-K paged-attention kernels (SIMT, fp32 math), one template for every KV type.
// Included by attention_{f16,f32,q8}.cu only. Contract and work split: attention_cuda.h,
// attention_internal.h.
//
// One CTA (128 threads) takes one work item (up to 16 query rows: tokens × query heads of one kv
// head) and one split (a range of 32-position tiles of the context) and loops over the tiles:
//   1. raw K and V bytes of the tile are copied to shared memory with cp.async, kStages - 1
//      tiles ahead of the one computed (slots found through the block table per position);
//   2. scores: warp w sums dims [w*hd/4, (w+1)*hd/4) of q·k for its lane's position and every
//      row (K read once from shared memory for all rows and widened in registers, Q broadcast);
//   3. online softmax, one warp per row, one lane per position (causal mask per row);
//   4. acc = acc * rescale + P · V, each thread owning (row, dim) outputs.
// The epilogue writes the output (one split) or the normalised partial and (max, sum).
// Launched with programmatic dependent launch: the CTA's coordinates, split and first tiles'
// slot offsets come from the uploaded batch description and are computed before PdlWait().
#pragma once

#include <cuda_fp16.h>

#include <atomic>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_rope.cuh"
#include "kernels/cuda/attention_simt_mma.cuh"
#include "kernels/cuda/attention_simt_ops.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/rope_cuda.cuh"

namespace herd::cuda::attn {

// One work item: tokens [t, t + len) (consecutive positions pos0.. of one sequence), query heads
// [h0, h0 + nh) of kv head kvh; rows r = (token r / nh, head r % nh); RM >= len * nh rows.
// HD: head_dim (0: run-time p.head_dim, any multiple of 16 up to kMaxHeadDim).
// leader: the one CTA of the item that records its split count (split 0, kv head 0, chunk 0).
// kMma: the tile's two products on tensor cores (attention_simt_mma.cuh; F16, HD 64 / 128).
template <KvKind T, int HD, int RM, bool kMma = false>
__device__ void RunItem(const Params& p, uint8_t* smem, int t, int len, int pos0, int h0, int nh, int kvh, int split,
                        bool leader) {
  const int hd = HD > 0 ? HD : p.head_dim;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int rows = len * nh;
  const int ctx = pos0 + len;  // positions [0, ctx) are attended (causally per row)
  int tile_begin = 0, tile_end = 0;
  const int ns = SplitTiles(p, ctx, split, &tile_begin, &tile_end);
  if (split >= ns) return;

  static_assert(!kMma || (T == KvKind::kF16 && (HD == 64 || HD == 128) && RM <= 16));
  constexpr int kSt = kMma ? kMmaStages : kStages;  // shared-memory stages
  // Shared memory, as SmemBytes (MmaSmemBytes) counts it: kSt × (K tile, V tile) raw, then floats.
  const int vec = p.vec_bytes;
  const int pitch = RowPitch(T, vec);                // K rows
  const int vpitch = kMma ? pitch : VRowPitch(vec);  // V rows
  const int stage_bytes = kTile * (pitch + vpitch);
  float* qs = reinterpret_cast<float*>(smem + kSt * stage_bytes);  // [RM][hd]
  float* sp = qs + RM * hd;                                        // [4 warps][RM][kTile]; kMma: [RM][kTile]
  float* ps = sp + (kMma ? 1 : 4) * RM * kTile;                    // [kTile][RM]; kMma: halves [RM][kPPitch]
  __half* const ph = reinterpret_cast<__half*>(ps);
  float* m_run = ps + (kMma ? RM * kPPitch / 2 : kTile * RM);
  float* l_run = m_run + RM;
  float* alpha = l_run + RM;
  float* const cs = alpha + RM;  // fused RoPE: [half] cos, [half] sin (F16 / F32 caches)

  const int32_t* table = p.tables[p.seq[t]];
  const int copy = CopyBytes<T>(vec);
  // Copies per row: compile-time for HD > 0, so the block-table loads of a tile are all issued
  // before its cp.asyncs.
  constexpr int kCpr = HD == 0 ? 0 : (T == KvKind::kF16 ? HD / 8 : (T == KvKind::kF32 ? HD / 4 : HD / 32 * 34 / 4));
  const int cpr = HD > 0 ? kCpr : vec / copy;
  auto slot_offset = [&](int pp, int c) -> int64_t {  // byte offset of copy c of position pp's vector
    const int lb = p.block_shift >= 0 ? pp >> p.block_shift : pp / p.block_size;
    const int in_block = pp - lb * p.block_size;
    return ((static_cast<int64_t>(table[lb]) * p.block_size + in_block) * p.n_kv_heads + kvh) * vec + c * copy;
  };
  // Fused RoPE (Params::rope_inv_freq; HD > 0, F16 / F32): the angles go to cs (a region of their
  // own: the tile holding position pos0 may be issued after the first scores), computed before
  // the wait (they read only uploaded data); the split whose tiles hold pos0 takes that row of K
  // and V from new_k / new_v (k rotated, both rounded as the cache stores them) instead of
  // copying it, and writes it to the cache as well.
  const bool rope = HD > 0 && T != KvKind::kQ8_0 && p.rope_inv_freq != nullptr;
  const bool stores = rope && tile_begin * kTile <= pos0 && pos0 < tile_end * kTile;
  if (rope) {
    RopeAngles(p.rope_positions[t], p.rope_inv_freq, p.rope_half, cs);
    __syncthreads();
  }
  // Byte offsets of this thread's copies of tile `tile` (-1: past the context). HD > 0 only.
  constexpr int kC = kCpr > 0 ? kCpr : 1;
  constexpr int kIters = (kTile * kC + kThreads - 1) / kThreads;
  auto offsets = [&](int tile, int64_t* off) {
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int idx = tid + it * kThreads, j = idx / kC, c = idx - j * kC;
      const int pp = tile * kTile + j;
      off[it] = idx < kTile * kC && pp < ctx ? slot_offset(pp, c) : -1;
    }
  };
  // Queues the copies of tile `tile` (offsets from `offsets`) into stage `st`. HD > 0 only.
  // part: 0 every chunk, 1 all but the new row's (stores), 2 only the new row's (NewKvChunk).
  auto copies = [&](const int64_t* off, int tile, int st, int part = 0) {
    uint8_t* kd = smem + st * stage_bytes;
    uint8_t* vd = kd + kTile * pitch;
#pragma unroll
    for (int it = 0; it < kIters; ++it) {
      const int idx = tid + it * kThreads, j = idx / kC, c = idx - j * kC;
      if (idx < kTile * kC) {
        if (stores && tile * kTile + j == pos0) {
          if (part != 1)
            NewKvChunk<T, HD>(p, t, kvh, c, cs, kd + j * pitch + c * copy, vd + j * vpitch + c * copy, off[it]);
          continue;
        }
        if (part == 2) continue;
        CopyAsync(kd + j * pitch + c * copy, p.k + (off[it] < 0 ? 0 : off[it]), copy, off[it] >= 0);
        CopyAsync(vd + j * vpitch + c * copy, p.v + (off[it] < 0 ? 0 : off[it]), copy, off[it] >= 0);
      }
    }
  };
  // Queues the copies of tile `tile` into stage `st` (the caller commits the group).
  auto issue = [&](int tile, int st) {
    if constexpr (HD > 0) {
      int64_t off[kIters];
      offsets(tile, off);
      copies(off, tile, st);
    } else {
      uint8_t* kd = smem + st * stage_bytes;
      uint8_t* vd = kd + kTile * pitch;
      for (int idx = tid; idx < kTile * cpr; idx += kThreads) {
        const int j = idx / cpr, c = idx - j * cpr;
        const int pp = tile * kTile + j;
        const int64_t off = pp < ctx ? slot_offset(pp, c) : 0;
        CopyAsync(kd + j * pitch + c * copy, p.k + off, copy, pp < ctx);
        CopyAsync(vd + j * vpitch + c * copy, p.v + off, copy, pp < ctx);
      }
    }
  };
  // The first tiles: slot offsets from the block table before waiting for the previous kernel
  // (it may still write this step's K/V and q), copies after — except with
  // Params::copy_before_wait (one decode token per item, fused RoPE + K/V store): then every
  // copied row is of an earlier position, written by an earlier step, and only the new row
  // (NewKvChunk, from new_k / new_v) waits.
  if constexpr (HD > 0) {
    int64_t off[kSt - 1][kIters];
#pragma unroll
    for (int st = 0; st < kSt - 1; ++st) {
      if (tile_begin + st < tile_end) offsets(tile_begin + st, off[st]);
    }
    if (p.copy_before_wait && rope && len == 1) {
#pragma unroll
      for (int st = 0; st < kSt - 1; ++st) {
        if (tile_begin + st < tile_end) copies(off[st], tile_begin + st, st, 1);
        CommitGroup();
      }
      PdlWait();
      if (stores) {
#pragma unroll
        for (int st = 0; st < kSt - 1; ++st) {
          if (tile_begin + st < tile_end) copies(off[st], tile_begin + st, st, 2);
        }
      }
    } else {
      PdlWait();
#pragma unroll
      for (int st = 0; st < kSt - 1; ++st) {
        if (tile_begin + st < tile_end) copies(off[st], tile_begin + st, st);
        CommitGroup();
      }
    }
  } else {
    PdlWait();
#pragma unroll
    for (int st = 0; st < kSt - 1; ++st) {
      if (tile_begin + st < tile_end) issue(tile_begin + st, st);
      CommitGroup();
    }
  }
  if (p.nsplit != nullptr && leader && tid < len) p.nsplit[t + tid] = ns;
  for (int i = tid; i < RM * hd; i += kThreads) {
    const int r = i / hd, d = i - r * hd;
    const float* qr = p.q + static_cast<int64_t>(t + r / nh) * p.q_stride + static_cast<int64_t>(h0 + r % nh) * hd;
    qs[i] = r < rows ? ScaledQ(p, qr, d, rope, cs) : 0.f;
  }
  if (tid < RM) {
    m_run[tid] = -INFINITY;
    l_run[tid] = 0.f;
  }

  // Output elements of this thread. hd 64 / 128 (kFixed): one dim d = tid % HD and kElems
  // consecutive rows from (tid / HD) * kElems. Otherwise e = tid + kThreads * i -> (e / hd, e % hd).
  constexpr bool kFixed = HD > 0 && kThreads % (HD > 0 ? HD : 1) == 0;
  constexpr int kElems = kFixed ? RM * HD / kThreads : RM * kMaxHeadDim / kThreads;
  float acc[kElems];
#pragma unroll
  for (int i = 0; i < kElems; ++i) acc[i] = 0.f;
  // kMma: Q's f16 fragments (after every thread's qs rows) and warp w's [16][HD / 4] output tile.
  constexpr int kQk = kMma ? HD / 16 : 1, kNt = kMma ? HD / 32 : 2;
  uint32_t qf[kQk][4];
  float o[kNt][4];
  if constexpr (kMma) {
    __syncthreads();
    MmaQFragments<HD, RM>(qs, lane, qf);
#pragma unroll
    for (int i = 0; i < kNt; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  }

  for (int tile = tile_begin, it = 0; tile < tile_end; ++tile, ++it) {
    WaitGroup<kSt - 2>();  // this thread's copies of `tile` have landed
    __syncthreads();       // everyone's; and the previous tile's P·V is done with its stage
    if (tile + kSt - 1 < tile_end) issue(tile + kSt - 1, (it + kSt - 1) % kSt);
    CommitGroup();
    const uint8_t* ks = smem + (it % kSt) * stage_bytes;
    const uint8_t* vs = ks + kTile * pitch;

    // Partial scores: warp covers a quarter of the dims, lane = position (kMma: warp w positions
    // 8 w .. 8 w + 7, every dim).
    if constexpr (kMma) {
      MmaScores<HD, RM>(PaddedRows{ks, pitch}, qf, warp, lane, sp);
    } else {
      float sc[RM];
#pragma unroll
      for (int r = 0; r < RM; ++r) sc[r] = 0.f;
      DotQuarter<T, HD, RM>(ks + lane * pitch, qs, hd, warp * (hd / 4), hd / 4, sc);
#pragma unroll
      for (int r = 0; r < RM; ++r) sp[(warp * RM + r) * kTile + lane] = sc[r];
    }
    __syncthreads();

    // Online softmax: warp per row, lane per position.
    SoftmaxRows<RM, kMma>(sp, ps, m_run, l_run, alpha, warp, lane, rows, tile * kTile, pos0, nh);
    __syncthreads();

    // acc = acc * alpha + P · V.
    if constexpr (kMma) {
      MmaPV<HD, RM>(PaddedRows{vs, vpitch}, ph, alpha, warp, lane, o);
    } else if constexpr (kFixed) {
      const int d = tid % HD, r0 = (tid / HD) * kElems;
#pragma unroll
      for (int i = 0; i < kElems; ++i) acc[i] *= alpha[r0 + i];
#pragma unroll 8
      for (int j = 0; j < kTile; ++j) {
        const float vv = KvValue<T>(vs + j * vpitch, d);
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
          for (int j = 0; j < kTile; ++j) a += ps[j * RM + r] * KvValue<T>(vs + j * vpitch, d);
          acc[i] = a;
        }
      }
    }
  }
  WaitGroup<0>();   // no copy may still target shared memory when the CTA exits
  __syncthreads();  // final m_run, l_run

  auto store = [&](int r, int d, float acc_rd) {
    const float l = l_run[r];
    const float out = l > 0.f ? acc_rd / l : 0.f;
    const int64_t th = static_cast<int64_t>(t + r / nh) * p.n_heads + h0 + r % nh;  // token * n_heads + head
    if (ns == 1) {
      StoreOut(p, th * hd + d, out);
    } else {
      const int64_t slot = th * p.s_max + split;
      p.part_o[slot * hd + d] = out;
      if (d == 0) p.part_ml[slot] = make_float2(m_run[r], l);
    }
  };
  if constexpr (kMma) {  // o[nt]: rows lane / 4 (+ 8), dims w HD / 4 + 8 nt + 2 (lane % 4) (+ 1)
    const int g = lane / 4, d = warp * (HD / 4) + 2 * (lane % 4);
#pragma unroll
    for (int nt = 0; nt < kNt; ++nt) {
      if (g < rows) store(g, d + 8 * nt, o[nt][0]), store(g, d + 8 * nt + 1, o[nt][1]);
      if (g + 8 < rows) store(g + 8, d + 8 * nt, o[nt][2]), store(g + 8, d + 8 * nt + 1, o[nt][3]);
    }
  } else {
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
      if (r < rows) store(r, d, acc[i]);
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
template <KvKind T, int HD, int RS, bool kMma = false>
__global__ void __launch_bounds__(kThreads) DecodeKernel(const Params p) {
  extern __shared__ float4 smem4[];
  PdlTrigger();
  const Cta c(p);
  if (c.has_prev || c.has_next) return;
  RunItem<T, HD, RS, kMma>(p, reinterpret_cast<uint8_t*>(smem4), c.t, 1, c.pos, c.h0, c.nh, c.kvh, c.split, c.leader);
}

// Runs of consecutive positions (prefill chunks), cut where the position is a multiple of
// run_cap = kItemRows / group, so whether a token starts an item is decided locally.
template <KvKind T, int HD>
__global__ void __launch_bounds__(kThreads) PrefillKernel(const Params p) {
  extern __shared__ float4 smem4[];
  PdlTrigger();
  const Cta c(p);
  if (!c.has_prev && !c.has_next) return;
  const int run_cap = p.group >= kItemRows ? 1 : kItemRows / p.group;
  if (c.has_prev && c.pos % run_cap != 0) return;  // inside an item that starts earlier
  int len = 1;
  while (len < run_cap && c.t + len < p.n_tokens && p.seq[c.t + len] == c.seq && p.pos[c.t + len] == c.pos + len &&
         (c.pos + len) % run_cap != 0) {
    ++len;
  }
  RunItem<T, HD, kItemRows>(p, reinterpret_cast<uint8_t*>(smem4), c.t, len, c.pos, c.h0, c.nh, c.kvh, c.split,
                            c.leader);
}

// Launches `kernel` with its dynamic shared memory; raises its limit once per device.
template <KvKind T, typename Kernel>
void LaunchKernel(Kernel kernel, int rm, std::atomic<uint64_t>& raised, const Params& p, unsigned grid,
                  cudaStream_t stream, bool mma = false) {
  if (mma) {
    const size_t smem = MmaSmemBytes(p.vec_bytes, p.head_dim, rm);
    RaiseDynamicSmem(kernel, static_cast<int>(smem), raised);
    return LaunchPdl(kernel, grid, kThreads, smem, stream, p);
  }
  const size_t smem = SmemBytes(T, p.vec_bytes, p.head_dim, rm);
  // E.g. an F32 cache of head_dim 128 (~116 KB) on Ada's 99 KB: KvCache::Create refuses such
  // caches (Backend::CheckKvCache, AttentionFitsDevice), so this is an invariant.
  HERD_CHECK_MSG(static_cast<int>(smem) <= MaxDynamicSmem(),
                 "attention: %zu bytes of shared memory per block, over this GPU's %d (a cache CheckKvCache refuses)",
                 smem, MaxDynamicSmem());
  // The most any head_dim needs (vector bytes of head_dim kMaxHeadDim).
  const int max_vec =
      T == KvKind::kF16 ? 2 * kMaxHeadDim : (T == KvKind::kF32 ? 4 * kMaxHeadDim : kMaxHeadDim / 32 * 34);
  RaiseDynamicSmem(kernel, static_cast<int>(SmemBytes(T, max_vec, kMaxHeadDim, rm)), raised);
  LaunchPdl(kernel, grid, kThreads, smem, stream, p);
}

template <KvKind T, int HD>
void LaunchHd(const Params& p, int rows_small, bool prefill, unsigned grid, cudaStream_t stream) {
  static std::atomic<uint64_t> raised[7];
  if constexpr (T == KvKind::kF16 && (HD == 64 || HD == 128)) {
    if (DecodeMmaEnabled() && p.n_tokens >= kMmaMinTokens) {
      if (LaunchDecodeTmaF16(p, rows_small, grid, stream)) {
        // the same math with tiles from TMA (attention_decode_tma.cu)
      } else if (rows_small == 4) {
        LaunchKernel<T>(DecodeKernel<T, HD, 4, true>, 4, raised[4], p, grid, stream, true);
      } else if (rows_small == 8) {
        LaunchKernel<T>(DecodeKernel<T, HD, 8, true>, 8, raised[5], p, grid, stream, true);
      } else {
        LaunchKernel<T>(DecodeKernel<T, HD, kItemRows, true>, kItemRows, raised[6], p, grid, stream, true);
      }
      if (prefill) LaunchKernel<T>(PrefillKernel<T, HD>, kItemRows, raised[3], p, grid, stream);
      return;
    }
  }
  if constexpr (HD > 0) {
    if (rows_small == 4) {
      LaunchKernel<T>(DecodeKernel<T, HD, 4>, 4, raised[0], p, grid, stream);
    } else if (rows_small == 8) {
      LaunchKernel<T>(DecodeKernel<T, HD, 8>, 8, raised[1], p, grid, stream);
    } else {
      LaunchKernel<T>(DecodeKernel<T, HD, kItemRows>, kItemRows, raised[2], p, grid, stream);
    }
  } else {
    LaunchKernel<T>(DecodeKernel<T, 0, kItemRows>, kItemRows, raised[2], p, grid, stream);
  }
  if (prefill) LaunchKernel<T>(PrefillKernel<T, HD>, kItemRows, raised[3], p, grid, stream);
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
