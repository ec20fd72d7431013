// Integer dot products of quantized weight blocks with int8 activations, as the quantized GEMV
// computes them: the same blocks, integer sums and scale arithmetic as ref::VecDot, so the GPU
// and the reference differ only by float summation order. Host and device code (the host test
// quant_dot_test.cu checks every type against ref::VecDot on the CPU).
//
// Work unit: a "step" of 2048 consecutive values of one weight row (kStepBlocks<T> whole blocks,
// staged in shared memory at a 16-byte aligned base; the last step of a row may hold fewer
// blocks). Lane L (0..31) of a warp takes values [64 L, 64 L + 64) of the step:
//   K-quants (256-value blocks): quarter k = L % 4 of block L / 4;
//   32-value blocks: blocks 2L and 2L+1.
// Lane L's 64 activation values arrive as 16 words (4 values each, element 4w+i in byte i of
// word w; words 4g..4g+3 are the g-th group of 16 values) plus the int sums of the 4 groups and
// the activation block scales (ActLane). Each weight type decodes its lane's 64 codes once
// (Lane<T>::Load) and multiplies them with any number of token rows (Lane<T>::Dot).
#pragma once

#include <cuda_fp16.h>

#include <cstdint>
#include <cstring>

#include "base/fp16.h"
#include "tensor/dtype.h"

namespace herd::cuda {

#define HERD_HD __host__ __device__ __forceinline__
// Loop unrolling in code compiled for both sides (the host compiler warns on #pragma unroll).
#ifdef __CUDA_ARCH__
#define HERD_UNROLL _Pragma("unroll")
#else
#define HERD_UNROLL
#endif

inline constexpr int kStepValues = 2048;  // values per GEMV step (32 lanes x 64)

template <DType T>
struct QBlock;
#define HERD_QBLOCK(T, values, bytes)                  \
  template <>                                          \
  struct QBlock<T> {                                   \
    static constexpr int kValues = values;             \
    static constexpr int kBytes = bytes;               \
    static constexpr int kStep = kStepValues / values; \
    static constexpr int kStepBytes = kStep * bytes;   \
    static_assert(kStepBytes % 16 == 0);               \
  };
HERD_QBLOCK(DType::kQ4_0, 32, 18)
HERD_QBLOCK(DType::kQ4_1, 32, 20)
HERD_QBLOCK(DType::kQ5_0, 32, 22)
HERD_QBLOCK(DType::kQ5_1, 32, 24)
HERD_QBLOCK(DType::kQ8_0, 32, 34)
HERD_QBLOCK(DType::kQ2_K, 256, 84)
HERD_QBLOCK(DType::kQ3_K, 256, 110)
HERD_QBLOCK(DType::kQ4_K, 256, 144)
HERD_QBLOCK(DType::kQ5_K, 256, 176)
HERD_QBLOCK(DType::kQ6_K, 256, 210)
#undef HERD_QBLOCK

// Byte offset of value v of an activation row in the GPU's int8 layout: 2048-value spans; in a
// span, value u belongs to lane u / 64 as its word group (u % 64) / 16, stored at 16-byte
// vector 32 * ((u % 64) / 16) + u / 64, so that the 32 lanes' i-th 16-byte loads are 512
// contiguous bytes.
HERD_HD int64_t ActBytePos(int64_t v) {
  const int64_t span = v / kStepValues;
  const int u = static_cast<int>(v % kStepValues);
  return span * kStepValues + (((u & 63) >> 4) * 32 + (u >> 6)) * 16 + (u & 15);
}

// One lane's activation values for one token row and one step.
struct ActLane {
  uint32_t q[16];  // 64 int8 values
  int s[4];        // sum of the int8 values of each group of 16
  float d0, d1;    // K-quants: the Q8_K scale of the block (d0); 32-blocks: scales of blocks 2L, 2L+1
  float m0, m1;    // Q8_1 only: d * sum(q) of blocks 2L, 2L+1 (the reference's BlockQ8_1::s)
};

// ---- primitives (device instructions; portable versions on the host) ----

// sum of the 4 signed byte products of a and b, plus c.
HERD_HD int Dp4a(uint32_t a, uint32_t b, int c) {
#ifdef __CUDA_ARCH__
  return __dp4a(static_cast<int>(a), static_cast<int>(b), c);
#else
  for (int i = 0; i < 4; ++i) c += static_cast<int8_t>(a >> (8 * i)) * static_cast<int8_t>(b >> (8 * i));
  return c;
#endif
}
// The same with the bytes of a unsigned (0..255).
HERD_HD int Dp4aU(uint32_t a, uint32_t b, int c) {
#ifdef __CUDA_ARCH__
  int r;
  asm("dp4a.u32.s32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "r"(c));
  return r;
#else
  for (int i = 0; i < 4; ++i) c += static_cast<int>((a >> (8 * i)) & 0xFF) * static_cast<int8_t>(b >> (8 * i));
  return c;
#endif
}
HERD_HD float HalfBits(uint32_t h16) {
#ifdef __CUDA_ARCH__
  return __half2float(__ushort_as_half(static_cast<unsigned short>(h16)));
#else
  return Fp16ToFp32(static_cast<uint16_t>(h16));
#endif
}
HERD_HD uint32_t U16At(const uint8_t* p) { return *reinterpret_cast<const uint16_t*>(p); }
HERD_HD uint32_t U32At(const uint8_t* p) { return *reinterpret_cast<const uint32_t*>(p); }

// N little-endian words from p (2-byte aligned): aligned 4-byte loads, one funnel shift each.
// Reads only the aligned words that hold bytes p .. p + 4N - 1 (a 4-byte aligned p skips the
// last one), so a block read from global memory never touches the bytes past the 4-byte word
// holding its last byte (gemv_quant_direct.cu reads K-quant blocks in place).
template <int N>
HERD_HD void Words(const uint8_t* p, uint32_t (&out)[N]) {
#ifdef __CUDA_ARCH__
  const uint32_t* a = reinterpret_cast<const uint32_t*>(reinterpret_cast<uintptr_t>(p) & ~uintptr_t{3});
  const uint32_t sh = 8u * static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) & 3);
  uint32_t lo = a[0];
  HERD_UNROLL
  for (int k = 0; k < N; ++k) {
    const uint32_t hi = k + 1 < N || sh != 0 ? a[k + 1] : 0u;
    out[k] = __funnelshift_r(lo, hi, sh);
    lo = hi;
  }
#else
  std::memcpy(out, p, 4 * N);
#endif
}
// The same for a 4-byte aligned p.
template <int N>
HERD_HD void Words4(const uint8_t* p, uint32_t (&out)[N]) {
  HERD_UNROLL
  for (int k = 0; k < N; ++k) out[k] = U32At(p + 4 * k);
}
// The same for a 16-byte aligned p (N a multiple of 4): 16-byte loads.
template <int N>
HERD_HD void Words16(const uint8_t* p, uint32_t (&out)[N]) {
  HERD_UNROLL
  for (int k = 0; k < N / 4; ++k) {
    const uint4 v = reinterpret_cast<const uint4*>(p)[k];
    out[4 * k] = v.x, out[4 * k + 1] = v.y, out[4 * k + 2] = v.z, out[4 * k + 3] = v.w;
  }
}

// dot of 4 words of codes with words [4g, 4g+4) of x.
HERD_HD int Dot16(const uint32_t* w, const ActLane& x, int g) {
  int a = 0;
  HERD_UNROLL
  for (int i = 0; i < 4; ++i) a = Dp4a(w[i], x.q[4 * g + i], a);
  return a;
}
HERD_HD int Dot32(const uint32_t* w, const ActLane& x, int w0) {
  int a = 0;
  HERD_UNROLL
  for (int i = 0; i < 8; ++i) a = Dp4a(w[i], x.q[w0 + i], a);
  return a;
}
// The contribution of 32-value block e (0, 1) of a lane from its integer dot isum = Σ q·x_q, as
// ref::VecDot computes it: "_1" types (kMin) add m · (d_x Σx_q) from the activation block;
// offset types (codes stored as q + kOffset) subtract kOffset · Σx_q in integers first.
template <bool kMin, int kOffset>
HERD_HD float BlockTerm(int isum, float d, float m, const ActLane& x, int e) {
  const float dx = e == 0 ? x.d0 : x.d1;
  if constexpr (kMin) {
    return d * dx * static_cast<float>(isum) + m * (e == 0 ? x.m0 : x.m1);
  } else {
    isum -= kOffset * (x.s[2 * e] + x.s[2 * e + 1]);
    return d * dx * static_cast<float>(isum);
  }
}
// Codes masked to the high nibble (16 * q): dot of q with words [w0, w0+n) of x.
template <int N>
HERD_HD int DotHighNibbles(const uint32_t* w, const ActLane& x, int w0) {
  int a = 0;
  HERD_UNROLL
  for (int i = 0; i < N; ++i) a = Dp4aU(w[i], x.q[w0 + i], a);
  return a >> 4;  // exact: every product is a multiple of 16
}

// Bit 4 of byte i <- bit i of b (b < 16): the fifth bit of four Q5 codes.
HERD_HD uint32_t Bit4OfBytes(uint32_t b) { return (b * 0x02040810u) & 0x10101010u; }

template <DType T>
struct Lane;

// ---- K-quants: lane quarter k of a 256-value block ----

// 6-bit scales and mins of sub-blocks 2k and 2k+1 of a Q4_K/Q5_K block (header words h1..h3 =
// scales bytes 0-3, 4-7, 8-11), byte 0 and 1 of the results.
HERD_HD void ScaleMinK4(uint32_t h1, uint32_t h2, uint32_t h3, int k, uint32_t* sc, uint32_t* mn) {
  uint32_t s, m;
  if (k < 2) {
    s = h1 & 0x3F3F3F3Fu;
    m = h2 & 0x3F3F3F3Fu;
  } else {
    s = (h3 & 0x0F0F0F0Fu) | ((h1 >> 2) & 0x30303030u);
    m = ((h3 >> 4) & 0x0F0F0F0Fu) | ((h2 >> 2) & 0x30303030u);
  }
  *sc = s >> (16 * (k & 1));
  *mn = m >> (16 * (k & 1));
}

// The header of a Q4_K/Q5_K block as one lane quarter k needs it: d, dmin and the 6-bit scales
// and mins of sub-blocks 2k, 2k+1 (h: the block's first 16 bytes); and the lane's contribution
// from the two sub-blocks' integer dots, as ref::VecDot scales them.
struct KHeader45 {
  int sc0, sc1, mn0, mn1;
  float d, dmin;
  HERD_HD void Load(const uint32_t (&h)[4], int k) {
    d = HalfBits(h[0] & 0xFFFF);
    dmin = HalfBits(h[0] >> 16);
    uint32_t sc, mn;
    ScaleMinK4(h[1], h[2], h[3], k, &sc, &mn);
    sc0 = sc & 0xFF, sc1 = (sc >> 8) & 0xFF, mn0 = mn & 0xFF, mn1 = (mn >> 8) & 0xFF;
  }
  HERD_HD float Term(int dot0, int dot1, const ActLane& x) const {
    const int isum = sc0 * dot0 + sc1 * dot1;
    const int msum = mn0 * (x.s[0] + x.s[1]) + mn1 * (x.s[2] + x.s[3]);
    return x.d0 * (d * static_cast<float>(isum) - dmin * static_cast<float>(msum));
  }
};

// Q4_K: d, dmin, scales[12], qs[128]; qs[32c + l] = element 64c + l (low nibble), 64c + 32 + l
// (high nibble). Lane quarter k: qs[32k..32k+31], sub-blocks 2k (words 0-7), 2k+1 (words 8-15).
template <>
struct Lane<DType::kQ4_K> {
  uint32_t lo[8], hi[8];
  KHeader45 hd;
  HERD_HD void Load(const uint8_t* step, int lane) {
    const uint8_t* b = step + 144 * (lane >> 2);
    const int k = lane & 3;
    uint32_t h[4], q[8];
    Words16<4>(b, h);
    Words16<8>(b + 16 + 32 * k, q);
    hd.Load(h, k);
    HERD_UNROLL
    for (int w = 0; w < 8; ++w) lo[w] = q[w] & 0x0F0F0F0Fu, hi[w] = q[w] & 0xF0F0F0F0u;
  }
  HERD_HD float Dot(const ActLane& x) const { return hd.Term(Dot32(lo, x, 0), DotHighNibbles<8>(hi, x, 8), x); }
};

// Q5_K: d, dmin, scales[12], qh[32], qs[128]; as Q4_K plus bit 4 of element 32j + l in bit j of qh[l].
template <>
struct Lane<DType::kQ5_K> {
  uint32_t lo[8], hi[8];
  KHeader45 hd;
  HERD_HD void Load(const uint8_t* step, int lane) {
    const uint8_t* b = step + 176 * (lane >> 2);
    const int k = lane & 3;
    uint32_t h[4], qh[8], q[8];
    Words16<4>(b, h);
    Words16<8>(b + 16, qh);
    Words16<8>(b + 48 + 32 * k, q);
    hd.Load(h, k);
    HERD_UNROLL
    for (int w = 0; w < 8; ++w) {
      const uint32_t hs = qh[w] >> (2 * k);
      lo[w] = (q[w] & 0x0F0F0F0Fu) | ((hs << 4) & 0x10101010u);
      hi[w] = ((q[w] >> 4) & 0x0F0F0F0Fu) | ((hs << 3) & 0x10101010u);
    }
  }
  HERD_HD float Dot(const ActLane& x) const { return hd.Term(Dot32(lo, x, 0), Dot32(hi, x, 8), x); }
};

// Q6_K: ql[128], qh[64], scales[16] (int8), d. Element 128h + 32g + l: nibble g/2 of
// ql[64h + 32(g%2) + l], bits 4-5 from bits 2g of qh[32h + l]; code - 32. Lane quarter k:
// h = k/2, g = 2(k%2) (words 0-7) and 2(k%2)+1 (words 8-15); scales of its groups: bytes 4k..4k+3.
template <>
struct Lane<DType::kQ6_K> {
  uint32_t v[16];  // codes 0..63 (not yet centred)
  uint32_t sc;     // four int8 scales
  float d;
  HERD_HD void Load(const uint8_t* step, int lane) {
    const uint8_t* b = step + 210 * (lane >> 2);
    const int k = lane & 3, h = k >> 1, nib = 4 * (k & 1), g0 = 2 * (k & 1);
    uint32_t ql[16], qh[8], s[1];
    Words<16>(b + 64 * h, ql);
    Words<8>(b + 128 + 32 * h, qh);
    Words<1>(b + 192 + 4 * k, s);
    sc = s[0];
    d = HalfBits(U16At(b + 208));
    HERD_UNROLL
    for (int w = 0; w < 8; ++w) {
      v[w] = ((ql[w] >> nib) & 0x0F0F0F0Fu) | (((qh[w] >> (2 * g0)) & 0x03030303u) << 4);
      v[8 + w] = ((ql[8 + w] >> nib) & 0x0F0F0F0Fu) | (((qh[w] >> (2 * g0 + 2)) & 0x03030303u) << 4);
    }
  }
  HERD_HD float Dot(const ActLane& x) const {
    int isum = 0;
    HERD_UNROLL
    for (int g = 0; g < 4; ++g) isum += static_cast<int8_t>(sc >> (8 * g)) * (Dot16(v + 4 * g, x, g) - 32 * x.s[g]);
    return x.d0 * d * static_cast<float>(isum);
  }
};

// Q3_K: hmask[32], qs[64], scales[12], d. Element 128h + 32g + l: bits 2g of qs[32h + l], high
// bit = bit 4h+g of hmask[l]; code = low | high << 2, minus 4. Scale j (16 values): low nibble
// of byte j (j < 8) or high nibble of byte j-8, bits 4-5 from bits 2(j/4) of byte 8 + j%4;
// minus 32. Lane quarter k: h = k/2, g = 2(k%2), 2(k%2)+1; scales 4k..4k+3.
template <>
struct Lane<DType::kQ3_K> {
  uint32_t v[16];  // codes 0..7 (not yet centred)
  uint32_t sc;     // four scales + 32 (0..63)
  float d;
  HERD_HD void Load(const uint8_t* step, int lane) {
    const uint8_t* b = step + 110 * (lane >> 2);
    const int k = lane & 3, h = k >> 1, g0 = 2 * (k & 1), c0 = 4 * h + g0;
    uint32_t hm[8], qs[8], s[3];
    Words<8>(b, hm);
    Words<8>(b + 32 + 32 * h, qs);
    Words<3>(b + 96, s);
    const uint32_t s01 = (k & 1) ? s[1] : s[0];
    const uint32_t low = k < 2 ? (s01 & 0x0F0F0F0Fu) : ((s01 >> 4) & 0x0F0F0F0Fu);
    sc = low | (((s[2] >> (2 * k)) & 0x03030303u) << 4);
    d = HalfBits(U16At(b + 108));
    HERD_UNROLL
    for (int w = 0; w < 8; ++w) {
      v[w] = ((qs[w] >> (2 * g0)) & 0x03030303u) | (((hm[w] >> c0) & 0x01010101u) << 2);
      v[8 + w] = ((qs[w] >> (2 * g0 + 2)) & 0x03030303u) | (((hm[w] >> (c0 + 1)) & 0x01010101u) << 2);
    }
  }
  HERD_HD float Dot(const ActLane& x) const {
    int isum = 0;
    HERD_UNROLL
    for (int g = 0; g < 4; ++g)
      isum += (static_cast<int>((sc >> (8 * g)) & 0xFF) - 32) * (Dot16(v + 4 * g, x, g) - 4 * x.s[g]);
    return x.d0 * d * static_cast<float>(isum);
  }
};

// Q2_K: scales[16] (scale low nibble, min high nibble), qs[64], d, dmin. Element 128h + 32g + l:
// bits 2g of qs[32h + l]. Lane quarter k: h = k/2, g = 2(k%2), 2(k%2)+1; scales 4k..4k+3.
template <>
struct Lane<DType::kQ2_K> {
  uint32_t v[16];
  uint32_t sc;
  float d, dmin;
  HERD_HD void Load(const uint8_t* step, int lane) {
    const uint8_t* b = step + 84 * (lane >> 2);
    const int k = lane & 3, h = k >> 1, g0 = 2 * (k & 1);
    uint32_t qs[8];
    Words4<8>(b + 16 + 32 * h, qs);
    sc = U32At(b + 4 * k);
    const uint32_t dd = U32At(b + 80);
    d = HalfBits(dd & 0xFFFF);
    dmin = HalfBits(dd >> 16);
    HERD_UNROLL
    for (int w = 0; w < 8; ++w) {
      v[w] = (qs[w] >> (2 * g0)) & 0x03030303u;
      v[8 + w] = (qs[w] >> (2 * g0 + 2)) & 0x03030303u;
    }
  }
  HERD_HD float Dot(const ActLane& x) const {
    int isum = 0, msum = 0;
    HERD_UNROLL
    for (int g = 0; g < 4; ++g) {
      const uint32_t b = sc >> (8 * g);
      isum += static_cast<int>(b & 0xF) * Dot16(v + 4 * g, x, g);
      msum += static_cast<int>((b >> 4) & 0xF) * x.s[g];
    }
    return x.d0 * (d * static_cast<float>(isum) - dmin * static_cast<float>(msum));
  }
};

// ---- 32-value blocks: lane L takes blocks 2L (words 0-7) and 2L+1 (words 8-15) ----
// Each returns the sum over its valid blocks (`n` = 1 or 2 of them).

// Q4_0 (d, qs[16]) / Q4_1 (d, m, qs[16]): element j low nibble of qs[j], j+16 high nibble.
template <DType T>
struct Lane4Bit {
  static constexpr bool kMin = T == DType::kQ4_1;
  static constexpr int kBytes = kMin ? 20 : 18;
  uint32_t lo[2][4], hi[2][4];
  float d[2], m[2];
  int n;
  HERD_HD void Load(const uint8_t* step, int lane, int nb) {
    n = nb - 2 * lane < 2 ? 1 : 2;
    HERD_UNROLL
    for (int e = 0; e < 2; ++e) {
      const uint8_t* b = step + kBytes * (2 * lane + e);
      if (e < n) {
        uint32_t q[4];
        if constexpr (kMin) {
          Words4<4>(b + 4, q);
        } else {
          Words<4>(b + 2, q);
        }
        d[e] = HalfBits(U16At(b));
        m[e] = kMin ? HalfBits(U16At(b + 2)) : 0.f;
        HERD_UNROLL
        for (int w = 0; w < 4; ++w) lo[e][w] = q[w] & 0x0F0F0F0Fu, hi[e][w] = q[w] & 0xF0F0F0F0u;
      }
    }
  }
  HERD_HD float Dot(const ActLane& x) const {
    float r = 0.f;
    HERD_UNROLL
    for (int e = 0; e < 2; ++e) {
      if (e < n) {
        int isum = 0;
        HERD_UNROLL
        for (int w = 0; w < 4; ++w) isum = Dp4a(lo[e][w], x.q[8 * e + w], isum);
        isum += DotHighNibbles<4>(hi[e], x, 8 * e + 4);
        r += BlockTerm<kMin, 8>(isum, d[e], m[e], x, e);
      }
    }
    return r;
  }
};
template <>
struct Lane<DType::kQ4_0> : Lane4Bit<DType::kQ4_0> {};
template <>
struct Lane<DType::kQ4_1> : Lane4Bit<DType::kQ4_1> {};

// Q5_0 (d, qh[4], qs[16]) / Q5_1 (d, m, qh[4], qs[16]): as Q4 plus bit 4 of element j in bit j of qh.
template <DType T>
struct Lane5Bit {
  static constexpr bool kMin = T == DType::kQ5_1;
  static constexpr int kBytes = kMin ? 24 : 22;
  uint32_t v[2][8];
  float d[2], m[2];
  int n;
  HERD_HD void Load(const uint8_t* step, int lane, int nb) {
    n = nb - 2 * lane < 2 ? 1 : 2;
    HERD_UNROLL
    for (int e = 0; e < 2; ++e) {
      const uint8_t* b = step + kBytes * (2 * lane + e);
      if (e < n) {
        uint32_t q[4], qh[1];
        if constexpr (kMin) {
          Words4<1>(b + 4, qh);
          Words4<4>(b + 8, q);
        } else {
          Words<1>(b + 2, qh);
          Words<4>(b + 6, q);
        }
        d[e] = HalfBits(U16At(b));
        m[e] = kMin ? HalfBits(U16At(b + 2)) : 0.f;
        HERD_UNROLL
        for (int w = 0; w < 4; ++w) {
          v[e][w] = (q[w] & 0x0F0F0F0Fu) | Bit4OfBytes((qh[0] >> (4 * w)) & 0xF);
          v[e][4 + w] = ((q[w] >> 4) & 0x0F0F0F0Fu) | Bit4OfBytes((qh[0] >> (16 + 4 * w)) & 0xF);
        }
      }
    }
  }
  HERD_HD float Dot(const ActLane& x) const {
    float r = 0.f;
    HERD_UNROLL
    for (int e = 0; e < 2; ++e) {
      if (e < n) {
        r += BlockTerm<kMin, 16>(Dot32(v[e], x, 8 * e), d[e], m[e], x, e);
      }
    }
    return r;
  }
};
template <>
struct Lane<DType::kQ5_0> : Lane5Bit<DType::kQ5_0> {};
template <>
struct Lane<DType::kQ5_1> : Lane5Bit<DType::kQ5_1> {};

// Q8_0: d, qs[32] (int8).
template <>
struct Lane<DType::kQ8_0> {
  uint32_t v[2][8];
  float d[2];
  int n;
  HERD_HD void Load(const uint8_t* step, int lane, int nb) {
    n = nb - 2 * lane < 2 ? 1 : 2;
    HERD_UNROLL
    for (int e = 0; e < 2; ++e) {
      const uint8_t* b = step + 34 * (2 * lane + e);
      if (e < n) {
        Words<8>(b + 2, v[e]);
        d[e] = HalfBits(U16At(b));
      }
    }
  }
  HERD_HD float Dot(const ActLane& x) const {
    float r = 0.f;
    HERD_UNROLL
    for (int e = 0; e < 2; ++e) {
      if (e < n) r += BlockTerm<false, 0>(Dot32(v[e], x, 8 * e), d[e], 0.f, x, e);
    }
    return r;
  }
};

// Whether lane `lane` has work in a step of `nb` blocks, and its Load call for either block size.
template <DType T>
HERD_HD bool LaneActive(int lane, int nb) {
  if constexpr (QBlock<T>::kValues == 256) {
    return (lane >> 2) < nb;
  } else {
    return 2 * lane < nb;
  }
}
template <DType T>
HERD_HD void LaneLoad(Lane<T>& l, const uint8_t* step, int lane, int nb) {
  if constexpr (QBlock<T>::kValues == 256) {
    l.Load(step, lane);
  } else {
    l.Load(step, lane, nb);
  }
}

}  // namespace herd::cuda
