// The small-batch decode attention kernel (LaunchSmallDecode, attention_internal.h): a few decode
// tokens (each its sequence's only token in the batch) over an F16 cache, head_dim 64 / 128,
// GQA group <= 8, short contexts (the host's AttentionBatch::max_context hint; policy in
// attention_cuda.h). The RoPE + K/V store, the split merge and the output conversions run inside
// it: one launch replaces RoPE / decode / merge (+ quantization).
//
// Why a kernel of its own: in a b=1 decode step each layer's attention runs once on a cold
// instruction cache between GEMVs; the SIMT decode kernel (attention_kernel.cuh, 92 KB of code
// for its one-token instance) spent 40% of its issue slots on instruction fetch and its merge
// cost a kernel boundary (8.5 + 4.0 us marginal in the 8B Q4_K_M step against 3.9 for this one;
// bench/results/cuda-session12-2026-11-26.md). So: tensor cores (few instructions per
// position), rolled loops around the copy code (the first, fully unrolled form with NewKvChunk in
// every copy site was 127 KB and slower than the SIMT kernel), one NewKvChunk site.
//
// Grid: n_tokens x n_kv_heads x s_max CTAs of 128 threads (split fastest; with s_max > 1 the
// s_max splits of one (token, kv head) are one thread-block cluster). CTA (t, kvh, split) takes
// the group's query heads as the 16 rows of mma.sync m16n8k16 tiles (rows past the group zero)
// and positions [begin, end) of its split: the context [0, pos + 1) cut into ns <= s_max ranges
// of at least min_split positions (multiples of 16). Per 64-position stage (two in shared
// memory, cp.async; the block-table lookups of the first two before PdlWait, their copies too
// with Params::copy_before_wait), warp w takes positions [16 w, 16 w + 16) of the stage:
// S = Q·Kᵀ (ldmatrix of K rows), online softmax on the accumulators (exp2 domain, per warp),
// P rounded to f16 as the A fragment of O += P·V (ldmatrix.trans of V rows): the numerics of
// attention_decode_tc.cu (q·scale·log2(e) and P in f16, everything else fp32). The 4 warps'
// (max, sum, O) are combined through shared memory; one split (ns == 1, the whole cluster
// knows it) writes the output and the other CTAs leave at once; several put their normalised
// rows and (max, sum) in shared memory and split 0 weighs them through distributed shared
// memory (split order: deterministic), between two cluster barriers.
// Outputs (one thread per 8 consecutive values of the group's rows): out (float), out_half
// (rounded as ConvertActivations) and, for F = Q8_0 / Q8_1 / Q8_K, the O projection's int8
// activations (QuantizeOctet: the bytes QuantizeActivations writes).
// RoPE + K/V store (Params::rope_inv_freq): q rotated as it is staged (f16, shared memory), the
// new position's K/V row built by NewKvChunk (into its stage and the cache) by the split that
// holds it, after PdlWait.
#include <cooperative_groups.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_decode_step.cuh"
#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/attention_rope.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_arch.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/quant_act.cuh"
#include "kernels/cuda/rope_cuda.cuh"

namespace herd::cuda::attn {
namespace {

namespace cg = cooperative_groups;

struct SmallDecodeArgs {
  Params p;
  internal::ActOut act;  // F != kF32
  int32_t min_split;
};

constexpr int kSub = 64;  // positions per shared-memory stage
constexpr int kWarpsS = 4;
constexpr int kMaxCluster = kSmallMaxSplits;  // a portable cluster size

template <int HD>
constexpr int kStageBytes = 2 * kSub* kDecodePitch<HD>;  // K rows then V rows
// Floats after the two stages: the split's output [8][HD] (before it, the q rows as f16
// [16][kDecodePitch]: 64 floats more), its (max, sum) [8], RoPE cos/sin [HD], merge weights
// [8][kMaxCluster].
template <int HD>
constexpr int kPvFloats = kSmallMaxGroup* HD + 64;
static_assert(16 * (2 * 64 + 16) <= 4 * kPvFloats<64> && 16 * (2 * 128 + 16) <= 4 * kPvFloats<128>);
template <int HD>
constexpr int kFloats = kPvFloats<HD> + 2 * kSmallMaxGroup + HD + kSmallMaxGroup* kMaxCluster;
template <int HD>
constexpr int kSmemSmall = 2 * kStageBytes<HD> + 4 * kFloats<HD>;
static_assert(kWarpsS * kSmallMaxGroup * (64 * 4 + 8) <= 2 * kStageBytes<64>, "warp sums fit in the stages");

// F: the int8 format of the O projection's input, or kF32 for float (and half) outputs only.
// kCluster: the grid's splits of one (token, kv head) form a thread-block cluster of s_max CTAs.
template <int HD, DType F, bool kCluster>
__global__ void __launch_bounds__(kWarpsS * 32) SmallDecodeKernel(const SmallDecodeArgs a) {
  extern __shared__ float4 smem4[];
  PdlTrigger();
  const Params& p = a.p;
  uint8_t* smem = reinterpret_cast<uint8_t*>(smem4);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  int rest = blockIdx.x;  // (t * n_kv_heads + kvh) * s_max + split
  const int split = rest % p.s_max;
  rest /= p.s_max;
  const int kvh = rest % p.n_kv_heads;
  const int t = rest / p.n_kv_heads;
  const int pos0 = p.pos[t], ctx = pos0 + 1;
  int ns = min(p.s_max, (ctx + a.min_split - 1) / a.min_split);
  const int per = ((ctx + ns - 1) / ns + 15) / 16 * 16;
  ns = (ctx + per - 1) / per;
  const bool active = split < ns;
  // Splits merged through the cluster only when there are several (ns is the same for the whole
  // cluster); otherwise the one active CTA writes the output and the others leave at once.
  const bool merge = kCluster && ns > 1;
  if (!active && !merge) return;
  const int begin = split * per, end = min(ctx, begin + per);
  const int n_sub = active ? (end - begin + kSub - 1) / kSub : 0;
  const int G = p.group, h0 = kvh * G;
  const int32_t* table = p.tables[p.seq[t]];
  float* pv = reinterpret_cast<float*>(smem + 2 * kStageBytes<HD>);  // [G][HD] this split's output
  float2* pml = reinterpret_cast<float2*>(pv + kPvFloats<HD>);       // [G] its (max, sum)
  float* cs = reinterpret_cast<float*>(pml + kSmallMaxGroup);        // RoPE: [half] cos, [half] sin
  [[maybe_unused]] float* wts = cs + HD;  // [G][kMaxCluster] merge weights (the cluster merge; none below sm_90)
  const bool rope = p.rope_inv_freq != nullptr;
  if (rope && active) RopeAngles(p.rope_positions[t], p.rope_inv_freq, p.rope_half, cs);

  constexpr int kPieces = HD / 8;  // 16-byte pieces per row
  auto slot_offset = [&](int pp) -> int64_t {
    const int lb = p.block_shift >= 0 ? pp >> p.block_shift : pp / p.block_size;
    return ((static_cast<int64_t>(table[lb]) * p.block_size + (pp - lb * p.block_size)) * p.n_kv_heads + kvh) *
           p.vec_bytes;
  };
  // Byte offsets of stage `sub`'s pieces for this thread (-1: past end): the block-table
  // lookups (uploaded data: before PdlWait for the first two stages).
  constexpr int kIt = kSub * kPieces / (kWarpsS * 32);
  auto offsets = [&](int sub, int64_t* off) {
    const int first = begin + sub * kSub;
#pragma unroll
    for (int it = 0; it < kIt; ++it) {
      const int idx = tid + it * kWarpsS * 32, pp = first + idx / kPieces;
      off[it] = pp < end ? slot_offset(pp) + 16 * (idx % kPieces) : -1;
    }
  };
  // Queues stage `sub`'s rows, positions past end zero-filled; pos0's row only without the fused
  // RoPE (with it, new_row builds that row).
  auto issue = [&](int sub, const int64_t* off) {
    uint8_t* kd = smem + (sub & 1) * kStageBytes<HD>;
    uint8_t* vd = kd + kSub * kDecodePitch<HD>;
    const int first = begin + sub * kSub;
#pragma unroll
    for (int it = 0; it < kIt; ++it) {
      const int idx = tid + it * kWarpsS * 32, j = idx / kPieces, c = idx % kPieces;
      const bool ok = off[it] >= 0;
      if (ok && rope && first + j == pos0) continue;
      CpAsync16(kd + j * kDecodePitch<HD> + 16 * c, p.k + (ok ? off[it] : 0), ok);
      CpAsync16(vd + j * kDecodePitch<HD> + 16 * c, p.v + (ok ? off[it] : 0), ok);
    }
  };
  // With the fused RoPE: the new position's row, built from new_k / new_v (after PdlWait) into
  // stage `sub` and the cache, when it lies in that stage.
  auto new_row = [&](int sub) {
    const int j = pos0 - (begin + sub * kSub);
    if (!rope || sub >= n_sub || pos0 >= end || j < 0 || j >= kSub) return;
    uint8_t* kd = smem + (sub & 1) * kStageBytes<HD>;
    for (int c = tid; c < kPieces; c += kWarpsS * 32) {
      NewKvChunk<KvKind::kF16, HD>(p, t, kvh, c, cs, kd + j * kDecodePitch<HD> + 16 * c,
                                   kd + (kSub + j) * kDecodePitch<HD> + 16 * c, slot_offset(pos0) + 16 * c);
    }
  };

  // The first two stages: their block-table lookups before PdlWait (uploaded data), their
  // copies before it too with Params::copy_before_wait (set only with the RoPE fused), else after.
  const bool early = p.copy_before_wait != 0;
  int64_t off01[2][kIt];
#pragma unroll 1
  for (int sub = 0; sub < 2; ++sub) {
    if (sub < n_sub) offsets(sub, off01[sub]);
  }
  __half* qsm = reinterpret_cast<__half*>(pv);  // [16][kDecodePitch] q rows as f16 (pv is free until the end)
#pragma unroll 1
  for (int phase = 0; phase < 2; ++phase) {
    if (phase == 1) {
      if (rope) __syncthreads();  // cs
      PdlWait();                  // q, new_k / new_v, and (unless early) the cache rows
    }
    if (early == (phase == 0)) {
#pragma unroll 1
      for (int sub = 0; sub < 2; ++sub) {
        if (sub < n_sub) issue(sub, off01[sub]);
        asm volatile("cp.async.commit_group;\n" ::);
      }
    }
  }
#pragma unroll 1
  for (int sub = 0; sub < 2; ++sub) new_row(sub);
  // q rows (query heads of the group; rows 16 > r >= G zero), rotated (fused RoPE), times
  // scale * log2(e), rounded to f16 into shared memory, then as mma A fragments.
  for (int i = tid; i < 16 * HD / 2; i += kWarpsS * 32) {
    const int r = i / (HD / 2), pr = i - r * (HD / 2);
    __half2 h = __floats2half2_rn(0.f, 0.f);
    if (r < G) {
      float2 x = *reinterpret_cast<const float2*>(p.q + t * p.q_stride + static_cast<int64_t>(h0 + r) * HD + 2 * pr);
      if (rope && pr < p.rope_half) x = RotatePair(x, cs[pr], cs[p.rope_half + pr]);
      h = __floats2half2_rn(x.x * p.scale_log2, x.y * p.scale_log2);
    }
    *reinterpret_cast<__half2*>(reinterpret_cast<uint8_t*>(qsm) + r * kDecodePitch<HD> + 4 * pr) = h;
  }
  __syncthreads();
  const int ra = lane / 4, rb = ra + 8;  // accumulator rows of this lane
  uint32_t qf[HD / 16][4];
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    const int row = (lane % 8) + 8 * ((lane / 8) % 2);
    LdMatrixX4(qf[kk],
               reinterpret_cast<const uint8_t*>(qsm) + row * kDecodePitch<HD> + (kk * 16 + 8 * (lane / 16)) * 2);
  }
  DecodeRows<HD> st;
  st.Init();

  for (int k = 0; k < n_sub; ++k) {
    asm volatile("cp.async.wait_group 1;\n" ::);
    __syncthreads();                                // stage k (and the new row) visible to all
    const int base = begin + k * kSub + warp * 16;  // this warp's 16 positions
    if (base < end) {
      const uint8_t* ks = smem + (k & 1) * kStageBytes<HD> + warp * 16 * kDecodePitch<HD>;
      const uint8_t* vs = ks + kSub * kDecodePitch<HD>;
      DecodeStep16<HD>(st, qf, ks, vs, base, end, lane);
    }
    __syncthreads();  // the stage is free
    if (k + 2 < n_sub) {
      int64_t off[kIt];
      offsets(k + 2, off);
      issue(k + 2, off);
      new_row(k + 2);
    }
    asm volatile("cp.async.commit_group;\n" ::);
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();

  // The warps' (max, sum, O) rows of the group: ow [4][G][HD], wml [4][G] over the stages.
  float* ow = reinterpret_cast<float*>(smem);
  float2* wml = reinterpret_cast<float2*>(ow + kWarpsS * kSmallMaxGroup * HD);
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half == 0 ? ra : rb;
    if (r < G) {
      float* dst = ow + (warp * G + r) * HD + (lane % 4) * 2;
#pragma unroll
      for (int nt = 0; nt < HD / 8; ++nt) {
        *reinterpret_cast<float2*>(dst + nt * 8) = make_float2(st.o[nt][2 * half], st.o[nt][2 * half + 1]);
      }
      if (lane % 4 == 0) wml[warp * G + r] = half == 0 ? make_float2(st.m_a, st.l_a) : make_float2(st.m_b, st.l_b);
    }
  }
  __syncthreads();
  const int n_val = G * HD / 8;  // threads holding 8 output values each (<= 128)
  const bool mine = tid < n_val;
  const int e0 = 8 * tid, g = mine ? e0 / HD : 0, d0 = e0 - g * HD;
  float v[8] = {};
  if (mine) {
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarpsS; ++w) m = fmaxf(m, wml[w * G + g].x);
    float f[kWarpsS], l = 0.f;
#pragma unroll
    for (int w = 0; w < kWarpsS; ++w) {
      const float2 x = wml[w * G + g];
      f[w] = x.y > 0.f ? exp2f(x.x - m) : 0.f;
      l += x.y * f[w];
    }
    const float inv = l > 0.f ? 1.f / l : 0.f;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
      float acc = 0.f;
#pragma unroll
      for (int w = 0; w < kWarpsS; ++w) acc += ow[(w * G + g) * HD + d0 + i] * f[w];
      v[i] = acc * inv;
    }
    if (merge) {
      *reinterpret_cast<float4*>(pv + e0) = make_float4(v[0], v[1], v[2], v[3]);
      *reinterpret_cast<float4*>(pv + e0 + 4) = make_float4(v[4], v[5], v[6], v[7]);
      if (d0 == 0) pml[g] = make_float2(m, l);
    }
  }
  if (merge) {
#if __CUDA_ARCH__ >= 900
    // Split merge through distributed shared memory: rank 0 (split 0) weighs the ns partials.
    cg::cluster_group cluster = cg::this_cluster();
    cluster.sync();  // every split's pv / pml written
    if (split == 0) {
      for (int r = tid; r < G; r += kWarpsS * 32) {
        float m = -INFINITY;
        for (int s = 0; s < ns; ++s) m = fmaxf(m, cluster.map_shared_rank(pml, s)[r].x);
        float den = 0.f;
        for (int s = 0; s < ns; ++s) {
          const float2 x = cluster.map_shared_rank(pml, s)[r];
          const float w = x.y > 0.f ? x.y * exp2f(x.x - m) : 0.f;
          wts[r * kMaxCluster + s] = w;
          den += w;
        }
        for (int s = 0; s < ns; ++s) wts[r * kMaxCluster + s] /= den;
      }
      __syncthreads();
      if (mine) {
#pragma unroll
        for (int i = 0; i < 8; ++i) v[i] = 0.f;
        for (int s = 0; s < ns; ++s) {
          const float w = wts[g * kMaxCluster + s];
          const float* src = cluster.map_shared_rank(pv, s) + e0;
          const float4 x0 = *reinterpret_cast<const float4*>(src);
          const float4 x1 = *reinterpret_cast<const float4*>(src + 4);
          v[0] += w * x0.x, v[1] += w * x0.y, v[2] += w * x0.z, v[3] += w * x0.w;
          v[4] += w * x1.x, v[5] += w * x1.y, v[6] += w * x1.z, v[7] += w * x1.w;
        }
      }
    }
    cluster.sync();  // rank 0 has read every partial before any CTA exits
    if (split != 0) return;
#else
    __trap();  // no clusters before sm_90: LaunchSmallDecode runs one split there
#endif
  }
  const int64_t row = static_cast<int64_t>(t) * p.n_heads + h0 + g;  // output row (token, head)
  if (mine) {
#pragma unroll
    for (int i = 0; i < 8; ++i) StoreOut(p, row * HD + d0 + i, v[i]);
  }
  if constexpr (F != DType::kF32) {
    if (warp < n_val / 32) internal::QuantizeOctet<F>(v, t, static_cast<int64_t>(h0) * HD + e0, a.act);
  }
}

template <int HD, DType F>
void LaunchOne(const SmallDecodeArgs& a, unsigned grid, cudaStream_t stream) {
  if (a.p.s_max > 1) {
    static std::atomic<uint64_t> raised{0};
    RaiseDynamicSmem(SmallDecodeKernel<HD, F, true>, kSmemSmall<HD>, raised);
    LaunchPdlClustered(PdlEnabled(), dim3(static_cast<unsigned>(a.p.s_max), 1, 1), SmallDecodeKernel<HD, F, true>,
                       dim3(grid), dim3(kWarpsS * 32), kSmemSmall<HD>, stream, a);
  } else {
    static std::atomic<uint64_t> raised{0};
    RaiseDynamicSmem(SmallDecodeKernel<HD, F, false>, kSmemSmall<HD>, raised);
    LaunchPdl(SmallDecodeKernel<HD, F, false>, grid, kWarpsS * 32, kSmemSmall<HD>, stream, a);
  }
}

template <int HD>
void LaunchHd(const SmallDecodeArgs& a, DType format, unsigned grid, cudaStream_t stream) {
  switch (format) {
    case DType::kQ8_0: LaunchOne<HD, DType::kQ8_0>(a, grid, stream); break;
    case DType::kQ8_1: LaunchOne<HD, DType::kQ8_1>(a, grid, stream); break;
    case DType::kQ8_K: LaunchOne<HD, DType::kQ8_K>(a, grid, stream); break;
    default: LaunchOne<HD, DType::kF32>(a, grid, stream); break;
  }
}

}  // namespace

bool SmallDecodeShapeApplies(int head_dim, int group) {
  return (head_dim == 64 || head_dim == 128) && group >= 1 && group <= kSmallMaxGroup;
}

void LaunchSmallDecode(const Params& p, int32_t min_split, DType format, void* buffer,
                       internal::QuantizedActivations* activations, cudaStream_t stream) {
  HERD_CHECK(SmallDecodeShapeApplies(p.head_dim, p.group) && p.s_max >= 1 && p.s_max <= kMaxCluster &&
             min_split >= 16 && min_split % 16 == 0);
  HERD_CHECK_MSG(p.s_max == 1 || Sm90PlusCode(), "split small decode needs thread-block clusters (sm_90 code)");
  SmallDecodeArgs a{p, {}, min_split};
  if (format != DType::kF32) {
    HERD_CHECK((p.group * p.head_dim) % 256 == 0 && buffer != nullptr && activations != nullptr);
    a.act =
        internal::MakeActOut(buffer, internal::MakeActLayout(p.n_tokens, static_cast<int64_t>(p.n_heads) * p.head_dim));
    *activations = internal::ActView(format, a.act);
  }
  const int64_t grid = static_cast<int64_t>(p.n_tokens) * p.s_max * p.n_kv_heads;
  HERD_CHECK(grid > 0 && grid < (1ll << 31));
  if (p.head_dim == 128) {
    LaunchHd<128>(a, format, static_cast<unsigned>(grid), stream);
  } else {
    LaunchHd<64>(a, format, static_cast<unsigned>(grid), stream);
  }
}

}  // namespace herd::cuda::attn
