// Legacy 32-element block formats (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1): quantizers and the
// integer unpackers. Layout (ggml/GGUF): element j of a block is the low nibble of qs[j],
// element j+16 the high nibble; Q5 fifth bits: bit j of the little-endian uint32 qh.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/fp16.h"
#include "kernels/reference/quants_internal.h"

namespace herd::ref::internal {
namespace {

constexpr int kQK = 32;

// Nibble-pack 32 codes in [0,15].
void PackNibbles(const uint8_t L[kQK], uint8_t qs[kQK / 2]) {
  for (int j = 0; j < kQK / 2; ++j) qs[j] = static_cast<uint8_t>((L[j] & 0xF) | ((L[j + kQK / 2] & 0xF) << 4));
}
void UnpackNibbles(const uint8_t qs[kQK / 2], uint8_t L[kQK]) {
  for (int j = 0; j < kQK / 2; ++j) {
    L[j] = qs[j] & 0xF;
    L[j + kQK / 2] = qs[j] >> 4;
  }
}
uint32_t HighBits(const uint8_t L[kQK]) {
  uint32_t qh = 0;
  for (int j = 0; j < kQK; ++j) qh |= static_cast<uint32_t>((L[j] >> 4) & 1) << j;
  return qh;
}

// Symmetric block: fit scale, round it to half, requantize with the stored scale.
// Codes returned offset by nneg (unsigned).
uint16_t QuantizeSymBlock(const float* x, int nneg, int npos, uint8_t L[kQK]) {
  int8_t l[kQK];
  const SymFit fit = FitSym(x, kQK, nneg, npos, l);
  const uint16_t dh = Fp32ToFp16(fit.scale);
  QuantSymFixed(x, kQK, nneg, npos, Fp16ToFp32(dh), l);
  for (int j = 0; j < kQK; ++j) L[j] = static_cast<uint8_t>(l[j] + nneg);
  return dh;
}

// Asymmetric block (x = d*q + m, m any sign): returns d and m as half.
void QuantizeAsymBlock(const float* x, int nmax, uint8_t L[kQK], uint16_t* dh, uint16_t* mh) {
  const AsymFit fit = FitAsym(x, kQK, nmax, /*allow_positive_offset=*/true, L);
  *dh = Fp32ToFp16(fit.scale);
  *mh = Fp32ToFp16(fit.offset);
  QuantAsymFixed(x, kQK, nmax, Fp16ToFp32(*dh), Fp16ToFp32(*mh), L);
}

float AbsMax(const float* x, int n) {
  float amax = 0;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

}  // namespace

void QuantizeQ4_0(const float* x, BlockQ4_0* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    uint8_t L[kQK];
    y[i].d = QuantizeSymBlock(x, 8, 7, L);
    PackNibbles(L, y[i].qs);
  }
}

void QuantizeQ4_1(const float* x, BlockQ4_1* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    uint8_t L[kQK];
    QuantizeAsymBlock(x, 15, L, &y[i].d, &y[i].m);
    PackNibbles(L, y[i].qs);
  }
}

void QuantizeQ5_0(const float* x, BlockQ5_0* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    uint8_t L[kQK];
    y[i].d = QuantizeSymBlock(x, 16, 15, L);
    PackNibbles(L, y[i].qs);
    const uint32_t qh = HighBits(L);
    std::memcpy(y[i].qh, &qh, 4);
  }
}

void QuantizeQ5_1(const float* x, BlockQ5_1* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    uint8_t L[kQK];
    QuantizeAsymBlock(x, 31, L, &y[i].d, &y[i].m);
    PackNibbles(L, y[i].qs);
    const uint32_t qh = HighBits(L);
    std::memcpy(y[i].qh, &qh, 4);
  }
}

void QuantizeQ8_0(const float* x, BlockQ8_0* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    y[i].d = Fp32ToFp16(AbsMax(x, kQK) / 127.f);
    const float d = Fp16ToFp32(y[i].d);
    const float id = d != 0 ? 1.f / d : 0.f;
    for (int j = 0; j < kQK; ++j)
      y[i].qs[j] = static_cast<int8_t>(std::clamp(std::nearbyint(x[j] * id), -127.f, 127.f));
  }
}

void QuantizeQ8_1(const float* x, BlockQ8_1* y, int64_t n) {
  for (int64_t i = 0; i < n / kQK; ++i, x += kQK) {
    const float d = AbsMax(x, kQK) / 127.f;
    const float id = d != 0 ? 1.f / d : 0.f;
    int sum = 0;
    for (int j = 0; j < kQK; ++j) {
      y[i].qs[j] = static_cast<int8_t>(std::clamp(std::nearbyint(x[j] * id), -127.f, 127.f));
      sum += y[i].qs[j];
    }
    y[i].d = d;
    y[i].s = d * static_cast<float>(sum);
  }
}

void UnpackQ4_0(const BlockQ4_0& b, int8_t q[32]) {
  uint8_t L[kQK];
  UnpackNibbles(b.qs, L);
  for (int j = 0; j < kQK; ++j) q[j] = static_cast<int8_t>(L[j] - 8);
}

void UnpackQ4_1(const BlockQ4_1& b, int8_t q[32]) {
  uint8_t L[kQK];
  UnpackNibbles(b.qs, L);
  for (int j = 0; j < kQK; ++j) q[j] = static_cast<int8_t>(L[j]);
}

void UnpackQ5_0(const BlockQ5_0& b, int8_t q[32]) {
  uint8_t L[kQK];
  UnpackNibbles(b.qs, L);
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  for (int j = 0; j < kQK; ++j) q[j] = static_cast<int8_t>((L[j] | (((qh >> j) & 1) << 4)) - 16);
}

void UnpackQ5_1(const BlockQ5_1& b, int8_t q[32]) {
  uint8_t L[kQK];
  UnpackNibbles(b.qs, L);
  uint32_t qh;
  std::memcpy(&qh, b.qh, 4);
  for (int j = 0; j < kQK; ++j) q[j] = static_cast<int8_t>(L[j] | (((qh >> j) & 1) << 4));
}

}  // namespace herd::ref::internal
