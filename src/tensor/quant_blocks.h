// Block layouts of the quantized types, byte-compatible with GGUF files. `d`, `m`, `dmin`
// are IEEE half (uint16_t) unless noted. QK = elements per block; QK_K = 256 (super-block).
#pragma once

#include <cstdint>

namespace herd {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK8_1 = 32;
inline constexpr int kQK_K = 256;
inline constexpr int kKScaleSize = 12;

// x = d * (q - 8), q in [0, 15]; element j in low nibble of qs[j], element j+16 in high nibble.
struct BlockQ4_0 {
  uint16_t d;
  uint8_t qs[kQK4_0 / 2];
};
// x = d * q + m
struct BlockQ4_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qs[kQK4_1 / 2];
};
// x = d * (q - 16), 5-bit q: low 4 bits as Q4_0, bit 4 of element j in bit j of qh.
struct BlockQ5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[kQK5_0 / 2];
};
struct BlockQ5_1 {
  uint16_t d;
  uint16_t m;
  uint8_t qh[4];
  uint8_t qs[kQK5_1 / 2];
};
// x = d * q, q int8.
struct BlockQ8_0 {
  uint16_t d;
  int8_t qs[kQK8_0];
};
// Activation block for Q4_1/Q5_1 dot products: s = d * sum(qs) (float32 here, herd-internal).
struct BlockQ8_1 {
  float d;
  float s;
  int8_t qs[kQK8_1];
};

// 2.625 bits/weight. 16 sub-blocks of 16: scales low nibble = scale, high nibble = min.
// x = d * sc * q - dmin * m
struct BlockQ2_K {
  uint8_t scales[kQK_K / 16];
  uint8_t qs[kQK_K / 4];
  uint16_t d;
  uint16_t dmin;
};
// 3.4375 bits/weight. hmask holds the high bit; 16 6-bit scales packed in 12 bytes.
// x = d * (sc - 32) * (q - 4 if high bit clear else q)
struct BlockQ3_K {
  uint8_t hmask[kQK_K / 8];
  uint8_t qs[kQK_K / 4];
  uint8_t scales[12];
  uint16_t d;
};
// 4.5 bits/weight. 8 sub-blocks of 32 with 6-bit scales and mins packed in 12 bytes.
// x = d * sc * q - dmin * m
struct BlockQ4_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qs[kQK_K / 2];
};
// 5.5 bits/weight, as Q4_K plus one high bit per element in qh.
struct BlockQ5_K {
  uint16_t d;
  uint16_t dmin;
  uint8_t scales[kKScaleSize];
  uint8_t qh[kQK_K / 8];
  uint8_t qs[kQK_K / 2];
};
// 6.5625 bits/weight. 16 sub-blocks of 16 with int8 scales. x = d * sc * (q - 32)
struct BlockQ6_K {
  uint8_t ql[kQK_K / 2];
  uint8_t qh[kQK_K / 4];
  int8_t scales[kQK_K / 16];
  uint16_t d;
};
// Activation block for K-quant dot products: float scale, int8 values, sums of groups of 16.
struct BlockQ8_K {
  float d;
  int8_t qs[kQK_K];
  int16_t bsums[kQK_K / 16];
};

static_assert(sizeof(BlockQ4_0) == 18);
static_assert(sizeof(BlockQ4_1) == 20);
static_assert(sizeof(BlockQ5_0) == 22);
static_assert(sizeof(BlockQ5_1) == 24);
static_assert(sizeof(BlockQ8_0) == 34);
static_assert(sizeof(BlockQ8_1) == 40);
static_assert(sizeof(BlockQ2_K) == 84);
static_assert(sizeof(BlockQ3_K) == 110);
static_assert(sizeof(BlockQ4_K) == 144);
static_assert(sizeof(BlockQ5_K) == 176);
static_assert(sizeof(BlockQ6_K) == 210);
static_assert(sizeof(BlockQ8_K) == 292);

}  // namespace herd
