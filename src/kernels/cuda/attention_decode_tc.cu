// Tensor-core paged attention for decode tokens over an F16 KV cache (head_dim 64, GQA group
// <= 16): the query heads of one kv head are the 16 rows of one mma.sync m16n8k16 tile
// (rows past the group are zero and never written), so K and V are read once per kv head.
//
// Same grid and split as the SIMT decode kernel (attention_kernel.cuh: one CTA per (token,
// split, kv head), splits of whole 32-position tiles, partials merged by MergeSplitsKernel), but
// inside a CTA the 4 warps work independently: the split's positions are cut into 16-position
// chunks, warp w takes chunks w, w + 4, ..., and streams them through its own ring of
// kDecodeStages shared-memory stages (cp.async, 16-byte pieces, slots through the block table;
// rows padded by 16 bytes so ldmatrix is conflict-free) with no CTA-wide barrier. Per chunk:
// S = Q·Kᵀ (16 rows × 16 positions, ldmatrix of K rows), online softmax on the accumulators,
// P rounded to f16 as the A fragment of O += P·V (ldmatrix.trans of V rows). At the end the
// 4 warps' (max, sum, O) are combined through shared memory. Numerics as the tensor-core prefill
// kernel: q·scale·log2(e) and P in f16 (2^-11 relative), everything else fp32.
// Cost: the K/V bytes of the context once per (token, kv head), ~4× fewer instructions than the
// SIMT kernel: 128 sequences × 640 positions of llama-3.2-1B in 78 µs against 89 µs
// (bench/results/cuda-pipeline-2026-11-25.md).
#include <cuda_fp16.h>

#include <atomic>
#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_decode_step.cuh"
#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_pdl.cuh"

namespace herd::cuda::attn {
namespace {

constexpr int kWarps = 4;
constexpr int kChunk = 16;        // positions per warp step (the k of P·V)
constexpr int kDecodeStages = 2;  // 3 and 4 measured slower (fewer CTAs per SM)

template <int HD>
constexpr int kStageBytes = 2 * kChunk* kDecodePitch<HD>;  // K rows then V rows of one chunk
// Shared memory: the warps' rings, reused at the end for the warps' O [4][16][HD] floats and
// (max, sum) [4][16] float2.
template <int HD>
constexpr int kRingBytes = kWarps* kDecodeStages* kStageBytes<HD>;
template <int HD>
constexpr int kMergeBytes = kWarps * 16 * HD * 4 + kWarps * 16 * 8;
template <int HD>
constexpr int kSmem = kRingBytes<HD> > kMergeBytes<HD> ? kRingBytes<HD> : kMergeBytes<HD>;

template <int HD>
__global__ void __launch_bounds__(kWarps * 32, HD == 128 ? 3 : 4) DecodeTcKernel(const Params p) {
  extern __shared__ float4 smem4[];
  PdlTrigger();
  uint8_t* smem = reinterpret_cast<uint8_t*>(smem4);
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  int rest = blockIdx.x;  // ((t * head_chunks + hc) * s_max + split) * n_kv_heads + kvh, head_chunks == 1
  const int kvh = rest % p.n_kv_heads;
  rest /= p.n_kv_heads;
  const int split = rest % p.s_max;
  const int t = rest / p.s_max;
  const int seq = p.seq[t], pos0 = p.pos[t];
  if ((t > 0 && p.seq[t - 1] == seq && p.pos[t - 1] == pos0 - 1) ||
      (t + 1 < p.n_tokens && p.seq[t + 1] == seq && p.pos[t + 1] == pos0 + 1)) {
    return;  // part of a prefill run
  }
  // The split of positions [0, ctx), as the SIMT kernel computes it (RunItem).
  const int ctx = pos0 + 1;
  int tile_begin = 0, tile_end = 0;
  const int ns = SplitTiles(p, ctx, split, &tile_begin, &tile_end);
  if (split >= ns) return;
  const int begin = tile_begin * kTile;
  const int end = min(ctx, tile_end * kTile);
  const int n_chunks = (end - begin + kChunk - 1) / kChunk;
  const int mine = n_chunks > warp ? (n_chunks - warp + kWarps - 1) / kWarps : 0;  // chunks warp, warp + 4, ..
  const int nh = p.group, h0 = kvh * p.group;
  const int32_t* table = p.tables[seq];
  uint8_t* ring = smem + warp * kDecodeStages * kStageBytes<HD>;

  // Queues this lane's share of chunk `c` (16 positions × HD / 8 pieces, for K and V) into stage `st`.
  constexpr int kPieces = HD / 8;
  constexpr int kPerLane = kChunk * kPieces / 32;
  auto issue = [&](int c, int st) {
    uint8_t* kd = ring + st * kStageBytes<HD>;
    uint8_t* vd = kd + kChunk * kDecodePitch<HD>;
    const int first = begin + c * kChunk;
#pragma unroll
    for (int i = 0; i < kPerLane; ++i) {
      const int idx = lane + 32 * i, j = idx / kPieces, piece = idx % kPieces;
      const int pp = first + j;
      const bool ok = pp < end;
      int64_t off = 0;
      if (ok) {
        const int lb = p.block_shift >= 0 ? pp >> p.block_shift : pp / p.block_size;
        const int64_t slot = static_cast<int64_t>(table[lb]) * p.block_size + (pp - lb * p.block_size);
        off = (slot * p.n_kv_heads + kvh) * p.vec_bytes + piece * 16;
      }
      CpAsync16(kd + j * kDecodePitch<HD> + piece * 16, p.k + off, ok);
      CpAsync16(vd + j * kDecodePitch<HD> + piece * 16, p.v + off, ok);
    }
  };

  PdlWait();  // K/V of this step and q come from the previous kernels
  if (p.nsplit != nullptr && split == 0 && kvh == 0 && tid == 0) p.nsplit[t] = ns;
#pragma unroll
  for (int s = 0; s < kDecodeStages - 1; ++s) {
    if (s < mine) issue(warp + kWarps * s, s);
    asm volatile("cp.async.commit_group;\n" ::);
  }

  // Q fragments (rows ra = lane / 4 and rb = ra + 8, zero past the group); k-step kk: dims 16 kk ..
  const int ra = lane / 4, rb = ra + 8;
  uint32_t qf[HD / 16][4];
  {
    auto q_pair = [&](int r, int d) -> uint32_t {
      if (r >= nh) return 0u;
      const float2 v = *reinterpret_cast<const float2*>(p.q + (static_cast<int64_t>(t) * p.n_heads + h0 + r) * HD + d);
      return PackHalf2(v.x * p.scale_log2, v.y * p.scale_log2);
    };
#pragma unroll
    for (int kk = 0; kk < HD / 16; ++kk) {
      const int d = kk * 16 + (lane % 4) * 2;
      qf[kk][0] = q_pair(ra, d);
      qf[kk][1] = q_pair(rb, d);
      qf[kk][2] = q_pair(ra, d + 8);
      qf[kk][3] = q_pair(rb, d + 8);
    }
  }
  DecodeRows<HD> st;
  st.Init();
  for (int k = 0; k < mine; ++k) {
    if (k + kDecodeStages - 1 < mine)
      issue(warp + kWarps * (k + kDecodeStages - 1), (k + kDecodeStages - 1) % kDecodeStages);
    asm volatile("cp.async.commit_group;\n" ::);
    asm volatile("cp.async.wait_group %0;\n" ::"n"(kDecodeStages - 1));
    __syncwarp();  // every lane's pieces of chunk k have landed
    const uint8_t* ks = ring + (k % kDecodeStages) * kStageBytes<HD>;
    const uint8_t* vs = ks + kChunk * kDecodePitch<HD>;
    // A chunk holds at least one position before `end`; positions past it (zero-filled) are masked.
    DecodeStep16<HD>(st, qf, ks, vs, begin + (warp + kWarps * k) * kChunk, end, lane);
    __syncwarp();  // the stage is refilled by a later issue
  }
  asm volatile("cp.async.wait_group 0;\n" ::);
  __syncthreads();  // every warp is done with its ring: reuse it for the merge

  // Each warp's unnormalised O rows and (max, sum); a warp without chunks leaves (-inf, 0, 0).
  float* ow = reinterpret_cast<float*>(smem);                     // [4][16][HD]
  float2* ml = reinterpret_cast<float2*>(ow + kWarps * 16 * HD);  // [4][16]
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half == 0 ? ra : rb;
    if (r >= nh) continue;
    float* dst = ow + (warp * 16 + r) * HD;
#pragma unroll
    for (int nt = 0; nt < HD / 8; ++nt) {
      *reinterpret_cast<float2*>(dst + nt * 8 + (lane % 4) * 2) =
          make_float2(st.o[nt][2 * half], st.o[nt][2 * half + 1]);
    }
    if (lane % 4 == 0) ml[warp * 16 + r] = half == 0 ? make_float2(st.m_a, st.l_a) : make_float2(st.m_b, st.l_b);
  }
  __syncthreads();
  for (int i = tid; i < nh * HD; i += kWarps * 32) {
    const int r = i / HD, d = i - r * HD;
    float m = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) m = fmaxf(m, ml[w * 16 + r].x);  // finite: warp 0 has a chunk
    float l = 0.f, acc = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      const float2 x = ml[w * 16 + r];
      const float f = x.y > 0.f ? exp2f(x.x - m) : 0.f;
      l += x.y * f;
      acc += ow[(w * 16 + r) * HD + d] * f;
    }
    const float out = l > 0.f ? acc / l : 0.f;
    const int64_t th = static_cast<int64_t>(t) * p.n_heads + h0 + r;  // token * n_heads + head
    if (ns == 1) {
      StoreOut(p, th * HD + d, out);
    } else {
      const int64_t slot = th * p.s_max + split;
      p.part_o[slot * HD + d] = out;
      if (d == 0) p.part_ml[slot] = make_float2(m, l);
    }
  }
}

template <int HD>
void Launch(const Params& p, unsigned grid, cudaStream_t stream) {
  static std::atomic<uint64_t> raised{0};
  RaiseDynamicSmem(DecodeTcKernel<HD>, kSmem<HD>, raised);
  LaunchPdl(DecodeTcKernel<HD>, grid, kWarps * 32, kSmem<HD>, stream, p);
}

}  // namespace

// head_dim 128 (an instance of the same template, 168 registers and 70 KB of shared memory: 3 CTAs
// per SM) measured on H100 against the SIMT kernel: slower at 128 sequences (128 × 640 positions:
// 142 vs 137 µs) and for one short sequence (1 × 512: 10.0 vs 7.8 µs), faster at 32 sequences
// (44 vs 54 µs) and one long one (1 × 4096: 18.2 vs 19.4 µs); not used until a rule by batch size
// is measured (bench/results/cuda-pipeline-2026-11-25.md).
bool DecodeTcApplies(int head_dim, int group) { return head_dim == 64 && group <= 16; }

void LaunchDecodeTcF16(const Params& p, unsigned grid, cudaStream_t stream) {
  HERD_CHECK(DecodeTcApplies(p.head_dim, p.group) && p.head_chunks == 1);
  Launch<64>(p, grid, stream);
}

}  // namespace herd::cuda::attn
