// Tensor-core math for the split-K decode kernel (attention_kernel.cuh, RunItem<..., kMma>): the
// same CTA, tiles and cp.async pipeline, with the two products of a 32-position tile on mma.sync
// m16n8k16 instead of SIMT FMAs. F16 caches, head_dim 64 or 128, up to 16 query rows (rows past
// the item's are zero and never written). Per tile and warp w:
//   scores:  S[rows][8 w .. 8 w + 8) = Q · Kᵀ over every dim (HD / 16 mma; Q as f16 A fragments
//            held in registers, K rows through ldmatrix), written to shared memory [rows][32];
//   (the softmax, one warp per row as in the SIMT path, writes P as f16 [rows][kPPitch])
//   P · V:   O[rows][w HD/4 .. (w + 1) HD/4) += P · V over the tile's 32 positions (2 k-steps x
//            HD / 32 n-tiles, V rows through ldmatrix.trans), accumulators in registers.
// Numerics as the tensor-core prefill and decode kernels: q * scale * log2(e) and P rounded to
// f16 (2^-11 relative), sums and the softmax in fp32.
// Shared memory: V rows padded like K rows (16 bytes: ldmatrix rows on distinct banks).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_mma.cuh"
#include "kernels/cuda/attention_simt_ops.cuh"

namespace herd::cuda::attn {

#ifndef HERD_ATTN_MMA_STAGES
#define HERD_ATTN_MMA_STAGES 3  // compile-time override for variant builds (bench/cuda/build_variants.sh)
#endif
constexpr int kMmaStages = HERD_ATTN_MMA_STAGES;  // K/V tiles in shared memory
constexpr int kPPitch = 40;  // halves per row of P in shared memory (32 positions + 8: no bank conflicts)

// Shared memory of the mma variant: raw K and V (both RowPitch), then floats: Q [rm][hd], scores
// [rm][kTile], P as halves [rm][kPPitch], max / sum / rescale [rm], RoPE angles [hd].
constexpr size_t MmaSmemBytes(int vec_bytes, int hd, int rm) {
  return static_cast<size_t>(kMmaStages) * kTile * 2 * RowPitch(KvKind::kF16, vec_bytes) +
         sizeof(float) * (static_cast<size_t>(rm) * hd + rm * kTile + rm * kPPitch / 2 + 3 * rm + hd);
}

#ifdef __CUDACC__
// The online softmax of one 32-position tile (base: its first position), a warp per row r =
// warp, warp + 4, .. < RM, a lane per position: reads the row's scores from sp ([RM][kTile];
// SIMT: 4 warps' partial sums [4][RM][kTile]), masks rows >= rows and positions past
// pos0 + r / nh, updates m_run / l_run, writes the rescale alpha [RM] and the weights to ps
// (SIMT: floats [kTile][RM]; kMma: halves [RM][kPPitch]). The caller syncs before and after.
template <int RM, bool kMma>
__device__ __forceinline__ void SoftmaxRows(const float* sp, float* ps, float* m_run, float* l_run, float* alpha,
                                            int warp, int lane, int rows, int base, int pos0, int nh) {
  for (int r = warp; r < RM; r += 4) {
    float s = sp[r * kTile + lane];
    if constexpr (!kMma) {
      s += sp[(RM + r) * kTile + lane] + sp[(2 * RM + r) * kTile + lane] + sp[(3 * RM + r) * kTile + lane];
    }
    const bool valid = r < rows && base + lane <= pos0 + r / nh;
    s = valid ? s : -INFINITY;
    const float m_old = m_run[r];
    const float m_new = fmaxf(m_old, WarpMax(s));
    const bool none = m_new == -INFINITY;  // every position so far masked
    const float pr = none ? 0.f : exp2f(s - m_new);
    const float a = none ? 1.f : exp2f(m_old - m_new);
    const float sum = WarpSum(pr);
    if constexpr (kMma) {
      reinterpret_cast<__half*>(ps)[r * kPPitch + lane] = __float2half_rn(pr);
    } else {
      ps[lane * RM + r] = pr;
    }
    __syncwarp();  // every lane has read m_run[r] / l_run[r]
    if (lane == 0) {
      alpha[r] = a;
      m_run[r] = m_new;
      l_run[r] = l_run[r] * a + sum;
    }
  }
}

// Q's A fragments for the HD / 16 k-steps: rows lane / 4 (+ 8), dims 16 kk + 2 (lane % 4) (+ 8);
// qs: [RM][HD] floats (rows past the item's zero). Rows >= RM are zero.
template <int HD, int RM>
__device__ __forceinline__ void MmaQFragments(const float* qs, int lane, uint32_t (&qf)[HD / 16][4]) {
  const int g = lane / 4, c = lane % 4;
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    const int d = kk * 16 + 2 * c;
    auto pair = [&](int r, int col) -> uint32_t {  // rows 8-15 exist only for RM > 8 (compile time)
      if ((r >= 8 && RM <= 8) || r >= RM) return 0u;
      const float2 v = *reinterpret_cast<const float2*>(qs + r * HD + col);
      return PackHalf2(v.x, v.y);
    };
    qf[kk][0] = pair(g, d);
    qf[kk][1] = pair(g + 8, d);
    qf[kk][2] = pair(g, d + 8);
    qf[kk][3] = pair(g + 8, d + 8);
  }
}

// Where K / V rows sit in shared memory: At(j, c) is the 16-byte chunk c (values 8c .. 8c + 7)
// of the tile's row j. PaddedRows: rows `pitch` bytes apart (cp.async tiles, pitch = row + 16
// bytes). SwizzledRows: the layout of TMA boxes of 64 values x kTile rows in the 128-byte
// swizzle, one box per 64 values of the row ([HD / 64][kTile][128 bytes]; chunk c of row j at
// chunk (c % 8) ^ (j % 8) of its 128-byte line), base 1024-byte aligned.
struct PaddedRows {
  const uint8_t* base;
  int pitch;
  __device__ __forceinline__ const uint8_t* At(int j, int c) const { return base + j * pitch + c * 16; }
};
struct SwizzledRows {
  const uint8_t* base;
  __device__ __forceinline__ const uint8_t* At(int j, int c) const {
    return base + (c >> 3) * (kTile * 128) + j * 128 + (((c & 7) ^ (j & 7)) << 4);
  }
};

// Warp w's scores of the tile (positions 8 w .. 8 w + 7) into sp [RM][kTile]; ks: the tile's K
// rows.
template <int HD, int RM, typename Rows>
__device__ __forceinline__ void MmaScores(const Rows ks, const uint32_t (&qf)[HD / 16][4], int warp, int lane,
                                          float* sp) {
  float s[4] = {0.f, 0.f, 0.f, 0.f};
  const int j = warp * 8 + (lane & 7);  // matrix lane / 8: dims +8 each
#pragma unroll
  for (int k2 = 0; k2 < HD / 32; ++k2) {
    uint32_t b[4];
    LdMatrixX4(b, ks.At(j, k2 * 4 + (lane >> 3)));
    // Rows 8-15 of Q are zero for RM <= 8: constants, so their registers are not kept.
    const uint32_t a0[4] = {qf[2 * k2][0], RM > 8 ? qf[2 * k2][1] : 0u, qf[2 * k2][2], RM > 8 ? qf[2 * k2][3] : 0u};
    const uint32_t a1[4] = {qf[2 * k2 + 1][0], RM > 8 ? qf[2 * k2 + 1][1] : 0u, qf[2 * k2 + 1][2],
                            RM > 8 ? qf[2 * k2 + 1][3] : 0u};
    Mma(s, a0, b[0], b[1]);
    Mma(s, a1, b[2], b[3]);
  }
  const int g = lane / 4, col = warp * 8 + 2 * (lane % 4);
  if (g < RM) *reinterpret_cast<float2*>(sp + g * kTile + col) = make_float2(s[0], s[1]);
  if (RM > 8 && g + 8 < RM) *reinterpret_cast<float2*>(sp + (g + 8) * kTile + col) = make_float2(s[2], s[3]);
}

// o = o * alpha + P · V for warp w's dims [w HD / 4, (w + 1) HD / 4) (HD / 32 n-tiles of 8);
// ph: P [RM][kPPitch] halves; vs: the tile's V rows.
template <int HD, int RM, typename Rows>
__device__ __forceinline__ void MmaPV(const Rows vs, const __half* ph, const float* alpha, int warp, int lane,
                                      float (&o)[HD / 32][4]) {
  const int g = lane / 4, c = lane % 4;
  const float al_a = g < RM ? alpha[g] : 1.f, al_b = RM > 8 && g + 8 < RM ? alpha[g + 8] : 1.f;
#pragma unroll
  for (int nt = 0; nt < HD / 32; ++nt) {
    o[nt][0] *= al_a;
    o[nt][1] *= al_a;
    o[nt][2] *= al_b;
    o[nt][3] *= al_b;
  }
  auto pair = [&](int r, int col) -> uint32_t {
    return (r < 8 || RM > 8) && r < RM ? *reinterpret_cast<const uint32_t*>(ph + r * kPPitch + col) : 0u;
  };
  const int c0 = warp * (HD / 32);  // the warp's first 16-byte chunk of a row
#pragma unroll
  for (int k = 0; k < 2; ++k) {  // positions 16 k .. 16 k + 15
    const uint32_t a[4] = {pair(g, 16 * k + 2 * c), pair(g + 8, 16 * k + 2 * c), pair(g, 16 * k + 8 + 2 * c),
                           pair(g + 8, 16 * k + 8 + 2 * c)};
    // lanes 0-7: positions i at dims nt*8; 8-15: positions +8; 16-31: dims +8.
    const int j = 16 * k + (lane & 7) + ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int nt = 0; nt < HD / 32; nt += 2) {
      uint32_t b[4];
      LdMatrixX4Trans(b, vs.At(j, c0 + (lane >> 4) + nt));
      Mma(o[nt], a, b[0], b[1]);
      Mma(o[nt + 1], a, b[2], b[3]);
    }
  }
}
#endif  // __CUDACC__

}  // namespace herd::cuda::attn
