// Pins the GGUF/ggml bit layouts: hand-built blocks must dequantize to exact values. Expected
// values are computed per element from the published layout formulas (independent of the
// loop structure of the implementation), and a few are spelled out as literals.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "base/fp16.h"
#include "kernels/quants.h"
#include "tensor/quant_blocks.h"

namespace herd::ref {
namespace {

constexpr uint16_t kHalfOne = 0x3C00;       // 1.0
constexpr uint16_t kHalfHalf = 0x3800;      // 0.5
constexpr uint16_t kHalfQuarter = 0x3400;   // 0.25
constexpr uint16_t kHalfMinusOne = 0xBC00;  // -1.0

template <typename Block>
std::vector<float> Decode(DType t, const Block& b, int n) {
  std::vector<float> y(n);
  DequantizeRow(t, &b, y.data(), n);
  return y;
}

TEST(QuantsLayout, HalfConstants) {
  EXPECT_EQ(Fp16ToFp32(kHalfOne), 1.0f);
  EXPECT_EQ(Fp16ToFp32(kHalfHalf), 0.5f);
  EXPECT_EQ(Fp16ToFp32(kHalfQuarter), 0.25f);
  EXPECT_EQ(Fp16ToFp32(kHalfMinusOne), -1.0f);
}

TEST(QuantsLayout, Q4_0) {
  BlockQ4_0 b;
  b.d = kHalfHalf;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = Decode(DType::kQ4_0, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.5f * (j - 8)) << j;
    EXPECT_EQ(y[j + 16], 0.5f * ((15 - j) - 8)) << j;
  }
  EXPECT_EQ(y[0], -4.0f);
  EXPECT_EQ(y[16], 3.5f);
}

TEST(QuantsLayout, Q4_1) {
  BlockQ4_1 b;
  b.d = kHalfQuarter;
  b.m = kHalfMinusOne;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(((3 * j) & 15) | (j << 4));
  const auto y = Decode(DType::kQ4_1, b, 32);
  for (int j = 0; j < 16; ++j) {
    EXPECT_EQ(y[j], 0.25f * ((3 * j) & 15) - 1.0f) << j;
    EXPECT_EQ(y[j + 16], 0.25f * j - 1.0f) << j;
  }
}

TEST(QuantsLayout, Q5_0) {
  BlockQ5_0 b;
  b.d = kHalfOne;
  const uint32_t qh = 0xA5C3F00Fu;
  b.qh[0] = 0x0F;  // little-endian bytes of qh
  b.qh[1] = 0xF0;
  b.qh[2] = 0xC3;
  b.qh[3] = 0xA5;
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(j | ((15 - j) << 4));
  const auto y = Decode(DType::kQ5_0, b, 32);
  for (int j = 0; j < 32; ++j) {
    const int lo = j < 16 ? j : 15 - (j - 16);
    const int q = lo | (((qh >> j) & 1) << 4);
    EXPECT_EQ(y[j], static_cast<float>(q - 16)) << j;
  }
  EXPECT_EQ(y[0], 0.0f);    // lo 0, bit 0 set -> 16 - 16
  EXPECT_EQ(y[4], -12.0f);  // lo 4, bit 4 clear
  EXPECT_EQ(y[31], 0.0f);   // lo 0, bit 31 set
}

TEST(QuantsLayout, Q5_1) {
  BlockQ5_1 b;
  b.d = kHalfHalf;
  b.m = kHalfOne;
  const uint32_t qh = 0x12345678u;
  std::memcpy(b.qh, &qh, 4);  // x86/ARM are little-endian, as GGUF is
  for (int j = 0; j < 16; ++j) b.qs[j] = static_cast<uint8_t>(((j + 5) & 15) | (((7 * j) & 15) << 4));
  const auto y = Decode(DType::kQ5_1, b, 32);
  for (int j = 0; j < 32; ++j) {
    const int lo = j < 16 ? ((j + 5) & 15) : ((7 * (j - 16)) & 15);
    const int q = lo | (((qh >> j) & 1) << 4);
    EXPECT_EQ(y[j], 0.5f * q + 1.0f) << j;
  }
}

TEST(QuantsLayout, Q8_0) {
  BlockQ8_0 b;
  b.d = kHalfQuarter;
  for (int j = 0; j < 32; ++j) b.qs[j] = static_cast<int8_t>(j * 8 - 128);
  const auto y = Decode(DType::kQ8_0, b, 32);
  for (int j = 0; j < 32; ++j) EXPECT_EQ(y[j], 0.25f * (j * 8 - 128)) << j;
}

TEST(QuantsLayout, Q2_K) {
  BlockQ2_K b;
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<uint8_t>((j & 15) | ((15 - j) << 4));
  for (int k = 0; k < 64; ++k) b.qs[k] = static_cast<uint8_t>(k * 37 + 11);
  const auto y = Decode(DType::kQ2_K, b, 256);
  for (int i = 0; i < 256; ++i) {
    const int q = (b.qs[(i / 128) * 32 + i % 32] >> (2 * ((i % 128) / 32))) & 3;
    const int sc = i / 16, mn = 15 - i / 16;
    EXPECT_EQ(y[i], 1.0f * sc * q - 0.5f * mn) << i;
  }
  // Element 165: qs[32 + 5] = (37*37+11)&255 = 0x64, bits 2..3 (group 1) = 1; sub-block 10
  // (sc 10, mn 5).
  EXPECT_EQ(y[165], 7.5f);
}

TEST(QuantsLayout, Q3_K) {
  BlockQ3_K b;
  b.d = kHalfHalf;
  // Stored 6-bit scales v_j = 4j + 3 (decoded sc = v - 32 = 4j - 29), packed by hand:
  // low nibbles of v_j in byte j (j < 8) / high nibble of byte j-8; top bits in bytes 8..11.
  const uint8_t scales[12] = {0x33, 0x77, 0xBB, 0xFF, 0x33, 0x77, 0xBB, 0xFF, 0xE4, 0xE4, 0xE4, 0xE4};
  std::memcpy(b.scales, scales, 12);
  for (int k = 0; k < 32; ++k) b.hmask[k] = static_cast<uint8_t>(k * 73 + 5);
  for (int k = 0; k < 64; ++k) b.qs[k] = static_cast<uint8_t>(k * 29 + 3);
  const auto y = Decode(DType::kQ3_K, b, 256);
  for (int i = 0; i < 256; ++i) {
    const int low = (b.qs[(i / 128) * 32 + i % 32] >> (2 * ((i % 128) / 32))) & 3;
    const int high = (b.hmask[i % 32] >> (i / 32)) & 1;
    const int q = low - (high ? 0 : 4);
    const int sc = 4 * (i / 16) - 29;
    EXPECT_EQ(y[i], 0.5f * sc * q) << i;
  }
  // Element 0: qs[0] = 3 -> low 3; hmask[0] = 5 bit 0 set -> q = 3; sc = -29.
  EXPECT_EQ(y[0], 0.5f * -29 * 3);
  // Element 255: qs[63] = (63*29+3)&255 = 0x26 -> bits 6..7 = 0; hmask[31] = (31*73+5)&255 = 0xDC,
  // bit 7 set -> q = 0.
  EXPECT_EQ(y[255], 0.0f);
  // Element 100: qs[4] = 119 = 0b01110111, group 3 -> 1; hmask[4] = 297&255 = 0x29, bit 3 set -> q = 1;
  // sc = 4*6 - 29 = -5.
  EXPECT_EQ(y[100], 0.5f * -5 * 1);
}

// Hand-packed Q4_K/Q5_K scales: sc = {1,2,3,4,17,18,49,63}, mn = {5,6,7,8,20,40,60,1}.
constexpr uint8_t kK4Scales[12] = {0x41, 0x42, 0xC3, 0xC4, 0x45, 0x86, 0xC7, 0x08, 0x41, 0x82, 0xC1, 0x1F};
constexpr int kK4Sc[8] = {1, 2, 3, 4, 17, 18, 49, 63};
constexpr int kK4Mn[8] = {5, 6, 7, 8, 20, 40, 60, 1};

TEST(QuantsLayout, Q4_K) {
  BlockQ4_K b;
  b.d = kHalfOne;
  b.dmin = kHalfHalf;
  std::memcpy(b.scales, kK4Scales, 12);
  for (int k = 0; k < 128; ++k) b.qs[k] = static_cast<uint8_t>((k & 15) | (((k * 7) & 15) << 4));
  const auto y = Decode(DType::kQ4_K, b, 256);
  for (int i = 0; i < 256; ++i) {
    const uint8_t byte = b.qs[(i / 64) * 32 + i % 32];
    const int q = (i % 64) < 32 ? (byte & 15) : (byte >> 4);
    EXPECT_EQ(y[i], 1.0f * kK4Sc[i / 32] * q - 0.5f * kK4Mn[i / 32]) << i;
  }
  EXPECT_EQ(y[0], -2.5f);     // q 0, sc 1, mn 5
  EXPECT_EQ(y[40], 13.0f);    // qs[8] high nibble 8, sc 2, mn 6
  EXPECT_EQ(y[200], 362.0f);  // qs[104] low nibble 8, sc 49, mn 60
  EXPECT_EQ(y[255], 566.5f);  // qs[127] high nibble 9, sc 63, mn 1
}

TEST(QuantsLayout, Q5_K) {
  BlockQ5_K b;
  b.d = kHalfHalf;
  b.dmin = kHalfOne;
  std::memcpy(b.scales, kK4Scales, 12);
  for (int k = 0; k < 128; ++k) b.qs[k] = static_cast<uint8_t>(k * 13 + 7);
  for (int k = 0; k < 32; ++k) b.qh[k] = static_cast<uint8_t>(k * 91 + 17);
  const auto y = Decode(DType::kQ5_K, b, 256);
  for (int i = 0; i < 256; ++i) {
    const uint8_t byte = b.qs[(i / 64) * 32 + i % 32];
    const int lo = (i % 64) < 32 ? (byte & 15) : (byte >> 4);
    const int q = lo | (((b.qh[i % 32] >> (i / 32)) & 1) << 4);
    EXPECT_EQ(y[i], 0.5f * kK4Sc[i / 32] * q - 1.0f * kK4Mn[i / 32]) << i;
  }
  // Element 33: qs[1] = 20 -> high nibble 1; qh[1] = 108 = 0b01101100, bit 1 clear -> q = 1.
  EXPECT_EQ(y[33], 0.5f * 2 * 1 - 6.0f);
}

TEST(QuantsLayout, Q6_K) {
  BlockQ6_K b;
  b.d = kHalfQuarter;
  for (int j = 0; j < 16; ++j) b.scales[j] = static_cast<int8_t>(j * 17 - 120);
  for (int k = 0; k < 128; ++k) b.ql[k] = static_cast<uint8_t>(k * 45 + 9);
  for (int k = 0; k < 64; ++k) b.qh[k] = static_cast<uint8_t>(k * 59 + 1);
  const auto y = Decode(DType::kQ6_K, b, 256);
  for (int i = 0; i < 256; ++i) {
    const int h = i / 128, g = (i % 128) / 32, l = i % 32;
    const uint8_t lbyte = b.ql[64 * h + l + 32 * (g & 1)];
    const int lo = g < 2 ? (lbyte & 15) : (lbyte >> 4);
    const int hi = (b.qh[32 * h + l] >> (2 * g)) & 3;
    const int q = (lo | (hi << 4)) - 32;
    EXPECT_EQ(y[i], 0.25f * b.scales[i / 16] * q) << i;
  }
  // Element 70 (h 0, g 2, l 6): ql[6] = 279&255 = 0x17 -> high nibble 1; qh[6] = 355&255 = 0x63,
  // bits 4..5 = 2 -> q = (1 | 32) - 32 = 1; scale index 4 -> 4*17-120 = -52.
  EXPECT_EQ(y[70], 0.25f * -52 * 1);
}

TEST(QuantsLayout, Q8_K) {
  BlockQ8_K b;
  b.d = 0.125f;
  for (int i = 0; i < 256; ++i) b.qs[i] = static_cast<int8_t>(i - 128);
  const auto y = Decode(DType::kQ8_K, b, 256);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[i], 0.125f * (i - 128)) << i;
}

// Quantize → pack → unpack stays exact on values the format represents exactly.
TEST(QuantsLayout, ExactlyRepresentableQ4_0RoundTrips) {
  std::vector<float> x(64);
  for (int i = 0; i < 64; ++i) x[i] = 0.5f * ((i * 5) % 16 - 8);  // includes -4 (code 0)
  std::vector<uint8_t> q(RowBytes(DType::kQ4_0, 64));
  QuantizeRow(DType::kQ4_0, x.data(), q.data(), 64);
  std::vector<float> y(64);
  DequantizeRow(DType::kQ4_0, q.data(), y.data(), 64);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(y[i], x[i]) << i;
}

}  // namespace
}  // namespace herd::ref
