// Portable decoders from GGUF weight blocks to the form the integer tile kernels consume
// (internal to kernels/cpu; included by each ISA file inside its own namespace HERD_ISA_NS,
// so every kernel set gets its own copy compiled with its own flags).
//
// K-quants, one 256-element super-block -> KDecoded:
//   w_i = d * sc[g] * q[i] - c[g] / dx_scale_free   i.e.  sum_i w_i x_i =
//   d * dx * sum_g sc[g] * sum_{i in g} q[i] * xq[i]  -  sum_g c[g] * (dx * sum_{i in g} xq[i])
//   with q[i] unsigned codes in [0, 63], g = i / 16 (16 groups of 16), sc int16.
// Legacy types, up to 8 blocks of 32 -> LDecoded:
//   sum_i w_i x_i = sum_b d[b] * dx_b * sum_{i in b} q[i] * xq[i]  -  sum_g c[g] * s_g
//   with q unsigned in [0, 31] (Q8_0: q + 128 in [1, 255] when kUnsignedQ8, else signed q, c = 0).
// Missing blocks of a partial span decode to zeros.
#include <cstdint>
#include <cstring>

#include "base/fp16.h"
#include "tensor/dtype.h"
#include "tensor/quant_blocks.h"

#ifndef HERD_ISA_NS
#error "define HERD_ISA_NS before including decode_portable.h"
#endif

namespace herd::cpu::internal::HERD_ISA_NS {

struct KDecoded {
  alignas(64) uint8_t q[256];
  alignas(64) float c[16];
  alignas(32) int16_t sc[16];
  float d;
};

struct LDecoded {
  alignas(64) uint8_t q[256];
  alignas(64) float c[16];
  alignas(32) float d[8];
};

inline float H(uint16_t h) { return Fp16ToFp32(h); }

// Bytes per block (legacy) or super-block (K-quants), as a compile-time constant.
constexpr size_t BlockBytes(DType t) {
  switch (t) {
    case DType::kQ4_0: return sizeof(BlockQ4_0);
    case DType::kQ4_1: return sizeof(BlockQ4_1);
    case DType::kQ5_0: return sizeof(BlockQ5_0);
    case DType::kQ5_1: return sizeof(BlockQ5_1);
    case DType::kQ8_0: return sizeof(BlockQ8_0);
    case DType::kQ2_K: return sizeof(BlockQ2_K);
    case DType::kQ3_K: return sizeof(BlockQ3_K);
    case DType::kQ4_K: return sizeof(BlockQ4_K);
    case DType::kQ5_K: return sizeof(BlockQ5_K);
    case DType::kQ6_K: return sizeof(BlockQ6_K);
    default: return 0;
  }
}

// 6-bit scale and min j of a Q4_K / Q5_K block (12 packed bytes).
inline void ScaleMinK4(int j, const uint8_t* s, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

template <DType T>
void DecodeK(const uint8_t* p, KDecoded* o);

template <>
inline void DecodeK<DType::kQ4_K>(const uint8_t* p, KDecoded* o) {
  BlockQ4_K b;
  std::memcpy(&b, p, sizeof(b));
  o->d = H(b.d);
  const float dmin = H(b.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    ScaleMinK4(j, b.scales, &sc, &m);
    o->sc[2 * j] = o->sc[2 * j + 1] = static_cast<int16_t>(sc);
    o->c[2 * j] = o->c[2 * j + 1] = dmin * static_cast<float>(m);
  }
  for (int j = 0; j < 4; ++j) {
    for (int l = 0; l < 32; ++l) {
      o->q[64 * j + l] = b.qs[32 * j + l] & 0xF;
      o->q[64 * j + 32 + l] = b.qs[32 * j + l] >> 4;
    }
  }
}

template <>
inline void DecodeK<DType::kQ5_K>(const uint8_t* p, KDecoded* o) {
  BlockQ5_K b;
  std::memcpy(&b, p, sizeof(b));
  o->d = H(b.d);
  const float dmin = H(b.dmin);
  for (int j = 0; j < 8; ++j) {
    int sc, m;
    ScaleMinK4(j, b.scales, &sc, &m);
    o->sc[2 * j] = o->sc[2 * j + 1] = static_cast<int16_t>(sc);
    o->c[2 * j] = o->c[2 * j + 1] = dmin * static_cast<float>(m);
  }
  for (int j = 0; j < 4; ++j) {
    for (int l = 0; l < 32; ++l) {
      o->q[64 * j + l] = static_cast<uint8_t>((b.qs[32 * j + l] & 0xF) | (((b.qh[l] >> (2 * j)) & 1) << 4));
      o->q[64 * j + 32 + l] = static_cast<uint8_t>((b.qs[32 * j + l] >> 4) | (((b.qh[l] >> (2 * j + 1)) & 1) << 4));
    }
  }
}

template <>
inline void DecodeK<DType::kQ6_K>(const uint8_t* p, KDecoded* o) {
  BlockQ6_K b;
  std::memcpy(&b, p, sizeof(b));
  o->d = H(b.d);
  for (int g = 0; g < 16; ++g) {
    o->sc[g] = b.scales[g];
    o->c[g] = o->d * 32.f * static_cast<float>(b.scales[g]);
  }
  for (int n = 0; n < 2; ++n) {
    const uint8_t* ql = b.ql + 64 * n;
    const uint8_t* qh = b.qh + 32 * n;
    uint8_t* q = o->q + 128 * n;
    for (int l = 0; l < 32; ++l) {
      q[l] = static_cast<uint8_t>((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4));
      q[l + 32] = static_cast<uint8_t>((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4));
      q[l + 64] = static_cast<uint8_t>((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4));
      q[l + 96] = static_cast<uint8_t>((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4));
    }
  }
}

template <>
inline void DecodeK<DType::kQ2_K>(const uint8_t* p, KDecoded* o) {
  BlockQ2_K b;
  std::memcpy(&b, p, sizeof(b));
  o->d = H(b.d);
  const float dmin = H(b.dmin);
  for (int g = 0; g < 16; ++g) {
    o->sc[g] = b.scales[g] & 0xF;
    o->c[g] = dmin * static_cast<float>(b.scales[g] >> 4);
  }
  for (int n = 0; n < 2; ++n) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) o->q[128 * n + 32 * j + l] = (b.qs[32 * n + l] >> (2 * j)) & 3;
    }
  }
}

template <>
inline void DecodeK<DType::kQ3_K>(const uint8_t* p, KDecoded* o) {
  BlockQ3_K b;
  std::memcpy(&b, p, sizeof(b));
  o->d = H(b.d);
  for (int g = 0; g < 16; ++g) {
    const int low = g < 8 ? (b.scales[g] & 0xF) : (b.scales[g - 8] >> 4);
    const int high = (b.scales[8 + g % 4] >> (2 * (g / 4))) & 3;
    const int sc = (low | (high << 4)) - 32;
    o->sc[g] = static_cast<int16_t>(sc);
    o->c[g] = o->d * 4.f * static_cast<float>(sc);
  }
  for (int n = 0; n < 2; ++n) {
    for (int j = 0; j < 4; ++j) {
      for (int l = 0; l < 32; ++l) {
        const int low = (b.qs[32 * n + l] >> (2 * j)) & 3;
        const int high = (b.hmask[l] >> (4 * n + j)) & 1;
        o->q[128 * n + 32 * j + l] = static_cast<uint8_t>(low | (high << 2));
      }
    }
  }
}

// Legacy blocks. Nibble layout: element j in the low nibble of qs[j], j + 16 in the high one.
template <DType T, bool kUnsignedQ8>
void DecodeLBlock(const uint8_t* p, uint8_t* q, float* d, float* c);

template <>
inline void DecodeLBlock<DType::kQ4_0, true>(const uint8_t* p, uint8_t* q, float* d, float* c) {
  BlockQ4_0 b;
  std::memcpy(&b, p, sizeof(b));
  *d = H(b.d);
  *c = 8.f * *d;
  for (int j = 0; j < 16; ++j) {
    q[j] = b.qs[j] & 0xF;
    q[j + 16] = b.qs[j] >> 4;
  }
}
template <>
inline void DecodeLBlock<DType::kQ4_1, true>(const uint8_t* p, uint8_t* q, float* d, float* c) {
  BlockQ4_1 b;
  std::memcpy(&b, p, sizeof(b));
  *d = H(b.d);
  *c = -H(b.m);
  for (int j = 0; j < 16; ++j) {
    q[j] = b.qs[j] & 0xF;
    q[j + 16] = b.qs[j] >> 4;
  }
}
template <>
inline void DecodeLBlock<DType::kQ5_0, true>(const uint8_t* p, uint8_t* q, float* d, float* c) {
  BlockQ5_0 b;
  std::memcpy(&b, p, sizeof(b));
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  *d = H(b.d);
  *c = 16.f * *d;
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<uint8_t>((b.qs[j] & 0xF) | (((qh >> j) & 1) << 4));
    q[j + 16] = static_cast<uint8_t>((b.qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
  }
}
template <>
inline void DecodeLBlock<DType::kQ5_1, true>(const uint8_t* p, uint8_t* q, float* d, float* c) {
  BlockQ5_1 b;
  std::memcpy(&b, p, sizeof(b));
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  *d = H(b.d);
  *c = -H(b.m);
  for (int j = 0; j < 16; ++j) {
    q[j] = static_cast<uint8_t>((b.qs[j] & 0xF) | (((qh >> j) & 1) << 4));
    q[j + 16] = static_cast<uint8_t>((b.qs[j] >> 4) | (((qh >> (j + 16)) & 1) << 4));
  }
}
template <>
inline void DecodeLBlock<DType::kQ8_0, true>(const uint8_t* p, uint8_t* q, float* d, float* c) {
  BlockQ8_0 b;
  std::memcpy(&b, p, sizeof(b));
  *d = H(b.d);
  *c = 128.f * *d;
  for (int j = 0; j < 32; ++j) q[j] = static_cast<uint8_t>(b.qs[j] ^ 0x80);
}
template <>
inline void DecodeLBlock<DType::kQ8_0, false>(const uint8_t* p, uint8_t* q, float* d, float* c) {
  BlockQ8_0 b;
  std::memcpy(&b, p, sizeof(b));
  *d = H(b.d);
  *c = 0;
  std::memcpy(q, b.qs, 32);
}
// The other legacy types have no signed variant: their codes are unsigned either way.
template <>
inline void DecodeLBlock<DType::kQ4_0, false>(const uint8_t* p, uint8_t* q, float* d, float* c) {
  DecodeLBlock<DType::kQ4_0, true>(p, q, d, c);
}
template <>
inline void DecodeLBlock<DType::kQ4_1, false>(const uint8_t* p, uint8_t* q, float* d, float* c) {
  DecodeLBlock<DType::kQ4_1, true>(p, q, d, c);
}
template <>
inline void DecodeLBlock<DType::kQ5_0, false>(const uint8_t* p, uint8_t* q, float* d, float* c) {
  DecodeLBlock<DType::kQ5_0, true>(p, q, d, c);
}
template <>
inline void DecodeLBlock<DType::kQ5_1, false>(const uint8_t* p, uint8_t* q, float* d, float* c) {
  DecodeLBlock<DType::kQ5_1, true>(p, q, d, c);
}

template <DType T, bool kUnsignedQ8>
inline void DecodeL(const uint8_t* p, int nb, LDecoded* o) {
  constexpr size_t bytes = BlockBytes(T);
  for (int b = 0; b < nb; ++b) {
    float c;
    DecodeLBlock<T, kUnsignedQ8>(p + bytes * b, o->q + 32 * b, &o->d[b], &c);
    o->c[2 * b] = o->c[2 * b + 1] = c;
  }
  for (int b = nb; b < 8; ++b) {
    std::memset(o->q + 32 * b, 0, 32);
    o->d[b] = 0;
    o->c[2 * b] = o->c[2 * b + 1] = 0;
  }
}

}  // namespace herd::cpu::internal::HERD_ISA_NS
