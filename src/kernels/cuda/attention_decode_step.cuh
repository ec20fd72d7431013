// The 16-position tensor-core step of the F16 decode attention kernels (attention_decode_tc.cu,
// attention_decode_small.cu): one warp, the query heads of one kv head as the 16 rows of an
// mma.sync m16n8k16 tile, 16 K/V rows in shared memory. Internal.
#pragma once

#include <cuda_fp16.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_mma.cuh"

namespace herd::cuda::attn {

// Bytes per K / V row in shared memory: HD halves plus 16 bytes, so ldmatrix is conflict-free.
template <int HD>
constexpr int kDecodePitch = HD * 2 + 16;

// One warp's online-softmax state: this lane's accumulator rows ra = lane / 4 (o[.][0..1],
// m_a, l_a) and rb = ra + 8 (o[.][2..3], m_b, l_b); O unnormalised, m in log2 units.
template <int HD>
struct DecodeRows {
  float o[HD / 8][4];
  float m_a, m_b, l_a, l_b;

  __device__ __forceinline__ void Init() {
#pragma unroll
    for (int i = 0; i < HD / 8; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
    m_a = m_b = -INFINITY;
    l_a = l_b = 0.f;
  }
};

// Folds 16 positions into st: S = Q·Kᵀ (qf: Q as A fragments, rows scaled by scale·log2(e),
// k-step kk = dims 16 kk ..), masked past `end`, online softmax, O = O·alpha + P·V with P
// rounded to f16. ks / vs: the 16 K rows and 16 V rows ([16][kDecodePitch<HD>] bytes each);
// first: the position of row 0. Needs at least one position before `end` (finite maxima).
// Cost: HD / 8 mma for S, HD / 8 for P·V, 8 exp2 per lane.
template <int HD>
__device__ __forceinline__ void DecodeStep16(DecodeRows<HD>& st, const uint32_t (&qf)[HD / 16][4], const uint8_t* ks,
                                             const uint8_t* vs, int first, int end, int lane) {
  constexpr int kPitch = kDecodePitch<HD>;
  float s[2][4] = {{0.f, 0.f, 0.f, 0.f}, {0.f, 0.f, 0.f, 0.f}};  // two n-tiles of 8 positions
#pragma unroll
  for (int kk = 0; kk < HD / 16; ++kk) {
    // lanes 0-7: positions i at dims kk*16; 8-15: same positions, +8 dims; 16-31: positions +8.
    const int row = (lane & 7) + ((lane >> 4) << 3);
    const int col = kk * 16 + ((lane >> 3) & 1) * 8;
    uint32_t b[4];
    LdMatrixX4(b, ks + row * kPitch + col * 2);
    Mma(s[0], qf[kk], b[0], b[1]);
    Mma(s[1], qf[kk], b[2], b[3]);
  }
  // A row spans the 4 lanes of a quad; this lane holds positions cb + {0, 1} and cb + 8 + {0, 1}.
  const int cb = first + (lane % 4) * 2;
  float mx_a = -INFINITY, mx_b = -INFINITY;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      if (cb + nt * 8 + e >= end) s[nt][e] = s[nt][2 + e] = -INFINITY;
      mx_a = fmaxf(mx_a, s[nt][e]);
      mx_b = fmaxf(mx_b, s[nt][2 + e]);
    }
  }
  QuadMax(mx_a, mx_b);
  const float mn_a = fmaxf(st.m_a, mx_a), mn_b = fmaxf(st.m_b, mx_b);
  const float al_a = exp2f(st.m_a - mn_a), al_b = exp2f(st.m_b - mn_b);  // 0 on the first step
  st.m_a = mn_a;
  st.m_b = mn_b;
  uint32_t pf[4];  // P as the A fragment of the 16-position k-step
  float sum_a = 0.f, sum_b = 0.f;
#pragma unroll
  for (int nt = 0; nt < 2; ++nt) {
    const float p0 = exp2f(s[nt][0] - mn_a), p1 = exp2f(s[nt][1] - mn_a);
    const float p2 = exp2f(s[nt][2] - mn_b), p3 = exp2f(s[nt][3] - mn_b);
    sum_a += p0 + p1;
    sum_b += p2 + p3;
    pf[nt * 2] = PackHalf2(p0, p1);
    pf[nt * 2 + 1] = PackHalf2(p2, p3);
  }
  QuadSum(sum_a, sum_b);
  st.l_a = st.l_a * al_a + sum_a;
  st.l_b = st.l_b * al_b + sum_b;
  // O = O * alpha + P V: n-tiles of 8 dims, two per ldmatrix.x4.trans.
#pragma unroll
  for (int nt = 0; nt < HD / 8; nt += 2) {
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      st.o[nt + u][0] *= al_a;
      st.o[nt + u][1] *= al_a;
      st.o[nt + u][2] *= al_b;
      st.o[nt + u][3] *= al_b;
    }
    // lanes 0-7: positions i at dims nt*8; 8-15: positions +8; 16-31: dims +8.
    const int row = (lane & 7) + (((lane >> 3) & 1) << 3);
    const int col = nt * 8 + ((lane >> 4) << 3);
    uint32_t b[4];
    LdMatrixX4Trans(b, vs + row * kPitch + col * 2);
    Mma(st.o[nt], pf, b[0], b[1]);
    Mma(st.o[nt + 1], pf, b[2], b[3]);
  }
}

}  // namespace herd::cuda::attn
