// Device-side decoding of every quantized weight type (GGUF block layouts, tensor/quant_blocks.h)
// in units of one "chunk": 32 consecutive elements of a row. Every kernel of the matmul family
// (GEMV, dequantize-to-f16, GetRows) reads weights through DecodeChunk, so one set of bit
// manipulations serves them all.
//
// A chunk decodes to
//   w[8]    32 int8 codes packed 4 per word (element 4k+i in byte i of w[k]), already centred
//           for the symmetric types (Q4_0: q-8, Q5_0: q-16, Q3_K: q-4, Q6_K: q-32);
//   sc[2]   float scale of elements 0-15 and 16-31 (equal for types with 32-element scales);
//   mn[2]   float offset of the two halves: element value = sc[h] * w + mn[h] (0 if symmetric).
// The bytes come from SmemSrc (below): shared memory staged by the caller at a 16-byte aligned
// base, blocks at multiples of the block size from it.
#pragma once

#include <cuda_fp16.h>

#include <cstdint>

#include "tensor/dtype.h"

namespace herd::cuda {

// Compile-time facts of a quantized type: bytes and 32-element chunks per block, and the
// number of blocks in an "aligned group" (the fewest whole blocks whose size is a multiple of
// 16 bytes, so that a row of whole groups can be copied with 16-byte loads).
template <DType T>
struct QTraits;
#define HERD_QTRAITS(T, bytes, chunks, ag, mins) \
  template <>                                    \
  struct QTraits<T> {                            \
    static constexpr int kBlockBytes = bytes;    \
    static constexpr int kChunks = chunks;       \
    static constexpr int kGroupBlocks = ag;      \
    static constexpr bool kMins = mins;          \
  };
HERD_QTRAITS(DType::kQ4_0, 18, 1, 8, false)
HERD_QTRAITS(DType::kQ4_1, 20, 1, 4, true)
HERD_QTRAITS(DType::kQ5_0, 22, 1, 8, false)
HERD_QTRAITS(DType::kQ5_1, 24, 1, 2, true)
HERD_QTRAITS(DType::kQ8_0, 34, 1, 8, false)
HERD_QTRAITS(DType::kQ2_K, 84, 8, 4, true)
HERD_QTRAITS(DType::kQ3_K, 110, 8, 8, false)
HERD_QTRAITS(DType::kQ4_K, 144, 8, 1, true)
HERD_QTRAITS(DType::kQ5_K, 176, 8, 1, true)
HERD_QTRAITS(DType::kQ6_K, 210, 8, 8, false)
#undef HERD_QTRAITS

// Calls f.template operator()<T>() for a quantized weight type; returns false for others.
template <typename F>
bool DispatchQuant(DType t, F&& f) {
  switch (t) {
    case DType::kQ4_0: f.template operator()<DType::kQ4_0>(); return true;
    case DType::kQ4_1: f.template operator()<DType::kQ4_1>(); return true;
    case DType::kQ5_0: f.template operator()<DType::kQ5_0>(); return true;
    case DType::kQ5_1: f.template operator()<DType::kQ5_1>(); return true;
    case DType::kQ8_0: f.template operator()<DType::kQ8_0>(); return true;
    case DType::kQ2_K: f.template operator()<DType::kQ2_K>(); return true;
    case DType::kQ3_K: f.template operator()<DType::kQ3_K>(); return true;
    case DType::kQ4_K: f.template operator()<DType::kQ4_K>(); return true;
    case DType::kQ5_K: f.template operator()<DType::kQ5_K>(); return true;
    case DType::kQ6_K: f.template operator()<DType::kQ6_K>(); return true;
    default: return false;
  }
}

// Bytes in shared memory at any even offset. Reads up to 4 bytes past the last byte asked for,
// so staging buffers carry kSmemPad bytes of slack.
inline constexpr int kSmemPad = 16;
struct SmemSrc {
  const uint8_t* base;
  __device__ __forceinline__ uint32_t u8(int off) const { return base[off]; }
  __device__ __forceinline__ uint32_t u16(int off) const { return *reinterpret_cast<const uint16_t*>(base + off); }
  __device__ __forceinline__ float f16(int off) const { return __half2float(__ushort_as_half(u16(off))); }
  // N consecutive little-endian words starting at byte `off` (any alignment): aligned 4-byte
  // loads and one funnel shift per word.
  template <int N>
  __device__ __forceinline__ void words(int off, uint32_t (&out)[N]) const {
    const uint32_t* p = reinterpret_cast<const uint32_t*>(base + (off & ~3));
    const uint32_t sh = 8u * static_cast<uint32_t>(off & 3);
    uint32_t lo = p[0];
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const uint32_t hi = p[k + 1];
      out[k] = __funnelshift_r(lo, hi, sh);
      lo = hi;
    }
  }
  // The same when `off` is a multiple of 16 (N a multiple of 4): 16-byte loads.
  template <int N>
  __device__ __forceinline__ void words16(int off, uint32_t (&out)[N]) const {
    const uint4* p = reinterpret_cast<const uint4*>(base + off);
#pragma unroll
    for (int k = 0; k < N / 4; ++k) {
      const uint4 v = p[k];
      out[4 * k] = v.x, out[4 * k + 1] = v.y, out[4 * k + 2] = v.z, out[4 * k + 3] = v.w;
    }
  }
};

struct Chunk {
  int w[8];
  float sc[2];
  float mn[2];
};

// Bit 4 of byte i <- bit i of the low nibble of b (the fifth bit of Q5 codes).
__device__ __forceinline__ uint32_t SpreadBit4(uint32_t b) {
  return ((b & 1u) << 4) | ((b & 2u) << 11) | ((b & 4u) << 18) | ((b & 8u) << 25);
}

// Decodes chunk `c` (0..kChunks-1) of the block at byte offset `blk` of `s`.
template <DType T>
__device__ __forceinline__ void DecodeChunk(const SmemSrc& s, int blk, int c, Chunk& o) {
  if constexpr (T == DType::kQ4_0 || T == DType::kQ4_1) {
    constexpr bool kM = T == DType::kQ4_1;
    uint32_t q[4];
    s.words<4>(blk + (kM ? 4 : 2), q);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint32_t lo = q[k] & 0x0F0F0F0Fu, hi = (q[k] >> 4) & 0x0F0F0F0Fu;
      if constexpr (!kM) {
        lo = __vsub4(lo, 0x08080808u);
        hi = __vsub4(hi, 0x08080808u);
      }
      o.w[k] = static_cast<int>(lo);
      o.w[k + 4] = static_cast<int>(hi);
    }
    o.sc[0] = o.sc[1] = s.f16(blk);
    o.mn[0] = o.mn[1] = kM ? s.f16(blk + 2) : 0.f;
  } else if constexpr (T == DType::kQ5_0 || T == DType::kQ5_1) {
    constexpr bool kM = T == DType::kQ5_1;
    uint32_t qh[1], q[4];
    s.words<1>(blk + (kM ? 4 : 2), qh);
    s.words<4>(blk + (kM ? 8 : 6), q);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      uint32_t lo = (q[k] & 0x0F0F0F0Fu) | SpreadBit4((qh[0] >> (4 * k)) & 0xFu);
      uint32_t hi = ((q[k] >> 4) & 0x0F0F0F0Fu) | SpreadBit4((qh[0] >> (16 + 4 * k)) & 0xFu);
      if constexpr (!kM) {
        lo = __vsub4(lo, 0x10101010u);
        hi = __vsub4(hi, 0x10101010u);
      }
      o.w[k] = static_cast<int>(lo);
      o.w[k + 4] = static_cast<int>(hi);
    }
    o.sc[0] = o.sc[1] = s.f16(blk);
    o.mn[0] = o.mn[1] = kM ? s.f16(blk + 2) : 0.f;
  } else if constexpr (T == DType::kQ8_0) {
    uint32_t q[8];
    s.words<8>(blk + 2, q);
#pragma unroll
    for (int k = 0; k < 8; ++k) o.w[k] = static_cast<int>(q[k]);
    o.sc[0] = o.sc[1] = s.f16(blk);
    o.mn[0] = o.mn[1] = 0.f;
  } else if constexpr (T == DType::kQ2_K) {
    // scales@0 (16), qs@16 (64), d@80, dmin@82. Element 128h+32g+l: bits 2g of qs[32h+l].
    const int h = c >> 2, g = c & 3;
    uint32_t q[8];
    s.words<8>(blk + 16 + 32 * h, q);
#pragma unroll
    for (int k = 0; k < 8; ++k) o.w[k] = static_cast<int>((q[k] >> (2 * g)) & 0x03030303u);
    const float d = s.f16(blk + 80), dmin = s.f16(blk + 82);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const uint32_t sm = s.u8(blk + 2 * c + i);
      o.sc[i] = d * static_cast<float>(sm & 0xF);
      o.mn[i] = -dmin * static_cast<float>(sm >> 4);
    }
  } else if constexpr (T == DType::kQ3_K) {
    // hmask@0 (32), qs@32 (64), scales@96 (12), d@108. High bit of element 32c+l: bit c of hmask[l].
    const int h = c >> 2, g = c & 3;
    uint32_t q[8], hm[8];
    s.words<8>(blk + 32 + 32 * h, q);
    s.words<8>(blk, hm);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const uint32_t v = ((q[k] >> (2 * g)) & 0x03030303u) | (((hm[k] >> c) & 0x01010101u) << 2);
      o.w[k] = static_cast<int>(__vsub4(v, 0x04040404u));
    }
    const float d = s.f16(blk + 108);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const int j = 2 * c + i;
      const uint32_t lo = j < 8 ? (s.u8(blk + 96 + j) & 0xF) : (s.u8(blk + 96 + j - 8) >> 4);
      const uint32_t hi = (s.u8(blk + 96 + 8 + (j & 3)) >> (2 * (j >> 2))) & 3;
      o.sc[i] = d * static_cast<float>(static_cast<int>(lo | (hi << 4)) - 32);
      o.mn[i] = 0.f;
    }
  } else if constexpr (T == DType::kQ4_K || T == DType::kQ5_K) {
    // d@0, dmin@2, scales@4 (12), [Q5_K: qh@16 (32)], qs@16|48 (128).
    // Block sizes 144 and 176 are multiples of 16, so with a 16-byte aligned base these fields are too.
    constexpr bool k5 = T == DType::kQ5_K;
    uint32_t q[8];
    s.words16<8>(blk + (k5 ? 48 : 16) + 32 * (c >> 1), q);
    const int nib = 4 * (c & 1);
    if constexpr (k5) {
      uint32_t qh[8];
      s.words16<8>(blk + 16, qh);
#pragma unroll
      for (int k = 0; k < 8; ++k)
        o.w[k] = static_cast<int>(((q[k] >> nib) & 0x0F0F0F0Fu) | (((qh[k] >> c) & 0x01010101u) << 4));
    } else {
#pragma unroll
      for (int k = 0; k < 8; ++k) o.w[k] = static_cast<int>((q[k] >> nib) & 0x0F0F0F0Fu);
    }
    const int sb = blk + 4;
    uint32_t sc, m;
    if (c < 4) {
      sc = s.u8(sb + c) & 63;
      m = s.u8(sb + c + 4) & 63;
    } else {
      sc = (s.u8(sb + c + 4) & 0xF) | ((s.u8(sb + c - 4) >> 6) << 4);
      m = (s.u8(sb + c + 4) >> 4) | ((s.u8(sb + c) >> 6) << 4);
    }
    o.sc[0] = o.sc[1] = s.f16(blk) * static_cast<float>(sc);
    o.mn[0] = o.mn[1] = -s.f16(blk + 2) * static_cast<float>(m);
  } else if constexpr (T == DType::kQ6_K) {
    // ql@0 (128), qh@128 (64), scales@192 (16 x int8), d@208. Element 128h+32g+l: nibble g>>1 of
    // ql[64h + 32(g&1) + l], bits 4-5 from bits 2g of qh[32h+l].
    const int h = c >> 2, g = c & 3;
    uint32_t ql[8], qh[8];
    s.words<8>(blk + 64 * h + 32 * (g & 1), ql);
    s.words<8>(blk + 128 + 32 * h, qh);
    const int nib = 4 * (g >> 1);
#pragma unroll
    for (int k = 0; k < 8; ++k) {
      const uint32_t v = ((ql[k] >> nib) & 0x0F0F0F0Fu) | (((qh[k] >> (2 * g)) & 0x03030303u) << 4);
      o.w[k] = static_cast<int>(__vsub4(v, 0x20202020u));
    }
    const float d = s.f16(blk + 208);
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      o.sc[i] = d * static_cast<float>(static_cast<int8_t>(s.u8(blk + 192 + 2 * c + i)));
      o.mn[i] = 0.f;
    }
  }
}

// Byte i of u = (4 packed int8 codes) ^ 0x80808080 as the float code, exactly and without an
// int -> float conversion: the byte c + 128 as the low mantissa bits of 2^23 is the float
// 2^23 + 128 + c, and subtracting 2^23 + 128 is exact (one PRMT and one FADD on the GPU).
__host__ __device__ __forceinline__ float CodeAt(uint32_t u, int i) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(__byte_perm(u, 0x4B000000u, 0x7540 + i)) - 8388736.f;
#else
  const uint32_t bits = 0x4B000000u | ((u >> (8 * i)) & 0xFFu);
  float f;
  __builtin_memcpy(&f, &bits, 4);
  return f - 8388736.f;
#endif
}

// The chunk's 32 values fma(sc, code, mn) in float32 (element 4k + i in f[4k + i]): the
// arithmetic of ref::DequantizeRow, so every dequantizing kernel gives the same values.
__device__ __forceinline__ void ChunkValues(const Chunk& ch, float (&f)[32]) {
#pragma unroll
  for (int k = 0; k < 8; ++k) {
    const uint32_t u = static_cast<uint32_t>(ch.w[k]) ^ 0x80808080u;
#pragma unroll
    for (int i = 0; i < 4; ++i) f[4 * k + i] = __fmaf_rn(ch.sc[k >> 2], CodeAt(u, i), ch.mn[k >> 2]);
  }
}

// The same values rounded to half, two per word (element 2k in the low half of h[k]).
__device__ __forceinline__ void ChunkHalves(const Chunk& ch, uint32_t (&h)[16]) {
  float f[32];
  ChunkValues(ch, f);
#pragma unroll
  for (int k = 0; k < 16; ++k) {
    const __half2 p = __floats2half2_rn(f[2 * k], f[2 * k + 1]);
    h[k] = *reinterpret_cast<const uint32_t*>(&p);
  }
}

}  // namespace herd::cuda
