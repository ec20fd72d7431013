// K-quant super-block layouts (ggml/GGUF, QK_K = 256): packers, unpackers, dequantizers, and
// the Q8_K activation quantizer. Loops follow the published bit layouts:
//  - Q2_K/Q3_K low bits: qs[32*h + l] holds elements 128h + l + 32g (g = 0..3) at bits 2g..2g+1.
//  - Q3_K high bit of element i: bit i/32 of hmask[i%32]; 16 6-bit scales (stored sc+32) in 12
//    bytes: low nibbles of scale j in byte j (j<8) or the high nibble of byte j-8, top two bits
//    in byte 8 + j%4 at bit 2*(j/4).
//  - Q4_K/Q5_K: qs[32c + l] holds element 64c + l (low nibble) and 64c + 32 + l (high nibble);
//    6-bit scales/mins packed as in ggml's get_scale_min_k4; Q5_K fifth bit of element i is
//    bit i/32 of qh[i%32].
//  - Q6_K: ql[64h + l + 32(g&1)] holds element 128h + 32g + l in its low (g<2) or high nibble,
//    bits 4..5 in qh[32h + l] at bit 2g.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "base/fp16.h"
#include "kernels/reference/quants_internal.h"

namespace herd::ref::internal {
namespace {

constexpr int kK = kQK_K;

void PackLow2(const uint8_t q[256], uint8_t qs[64]) {
  for (int h = 0; h < 2; ++h) {
    for (int l = 0; l < 32; ++l) {
      const uint8_t* e = q + 128 * h + l;
      qs[32 * h + l] = static_cast<uint8_t>((e[0] & 3) | ((e[32] & 3) << 2) | ((e[64] & 3) << 4) | ((e[96] & 3) << 6));
    }
  }
}
void UnpackLow2(const uint8_t qs[64], uint8_t q[256]) {
  for (int h = 0; h < 2; ++h) {
    for (int g = 0; g < 4; ++g) {
      for (int l = 0; l < 32; ++l) q[128 * h + 32 * g + l] = (qs[32 * h + l] >> (2 * g)) & 3;
    }
  }
}

void PackNibbles256(const uint8_t q[256], uint8_t qs[128]) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l)
      qs[32 * c + l] = static_cast<uint8_t>((q[64 * c + l] & 0xF) | ((q[64 * c + 32 + l] & 0xF) << 4));
  }
}
void UnpackNibbles256(const uint8_t qs[128], uint8_t q[256]) {
  for (int c = 0; c < 4; ++c) {
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = qs[32 * c + l] & 0xF;
      q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
    }
  }
}

// 8 6-bit scales and 8 6-bit mins in 12 bytes (get_scale_min_k4 layout).
void PackScaleMinK4(const uint8_t sc[8], const uint8_t mn[8], uint8_t s[12]) {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<uint8_t>((sc[j] & 63) | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<uint8_t>((mn[j] & 63) | ((mn[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<uint8_t>((sc[j + 4] & 0xF) | ((mn[j + 4] & 0xF) << 4));
  }
}
void UnpackScaleMinK4(const uint8_t s[12], uint8_t sc[8], uint8_t mn[8]) {
  for (int j = 0; j < 4; ++j) {
    sc[j] = s[j] & 63;
    mn[j] = s[j + 4] & 63;
    sc[j + 4] = static_cast<uint8_t>((s[j + 8] & 0xF) | ((s[j] >> 6) << 4));
    mn[j + 4] = static_cast<uint8_t>((s[j + 8] >> 4) | ((s[j + 4] >> 6) << 4));
  }
}

void HighBitsToMask(const uint8_t q[256], int bit, uint8_t mask[32]) {
  std::memset(mask, 0, 32);
  for (int i = 0; i < kK; ++i) mask[i % 32] |= static_cast<uint8_t>(((q[i] >> bit) & 1) << (i / 32));
}

}  // namespace

void PackQ2_K(const uint8_t q[256], const uint8_t sc[16], const uint8_t mn[16], BlockQ2_K* b) {
  for (int j = 0; j < 16; ++j) b->scales[j] = static_cast<uint8_t>((sc[j] & 0xF) | ((mn[j] & 0xF) << 4));
  PackLow2(q, b->qs);
}
void UnpackQ2_K(const BlockQ2_K& b, uint8_t q[256], uint8_t sc[16], uint8_t mn[16]) {
  for (int j = 0; j < 16; ++j) {
    sc[j] = b.scales[j] & 0xF;
    mn[j] = b.scales[j] >> 4;
  }
  UnpackLow2(b.qs, q);
}

void PackQ3_K(const uint8_t q[256], const uint8_t sc[16], BlockQ3_K* b) {
  PackLow2(q, b->qs);
  HighBitsToMask(q, 2, b->hmask);
  std::memset(b->scales, 0, 12);
  for (int j = 0; j < 16; ++j) {
    const uint8_t v = sc[j] & 63;
    if (j < 8) {
      b->scales[j] = v & 0xF;
    } else {
      b->scales[j - 8] |= static_cast<uint8_t>((v & 0xF) << 4);
    }
    b->scales[8 + j % 4] |= static_cast<uint8_t>((v >> 4) << (2 * (j / 4)));
  }
}
void UnpackQ3_K(const BlockQ3_K& b, int8_t q[256], int8_t sc[16]) {
  for (int j = 0; j < 16; ++j) {
    const int lo = j < 8 ? (b.scales[j] & 0xF) : (b.scales[j - 8] >> 4);
    const int hi = (b.scales[8 + j % 4] >> (2 * (j / 4))) & 3;
    sc[j] = static_cast<int8_t>((lo | (hi << 4)) - 32);
  }
  uint8_t low[256];
  UnpackLow2(b.qs, low);
  for (int i = 0; i < kK; ++i) {
    const bool high = (b.hmask[i % 32] >> (i / 32)) & 1;
    q[i] = static_cast<int8_t>(low[i] - (high ? 0 : 4));
  }
}

void PackQ4_K(const uint8_t q[256], const uint8_t sc[8], const uint8_t mn[8], BlockQ4_K* b) {
  PackScaleMinK4(sc, mn, b->scales);
  PackNibbles256(q, b->qs);
}
void UnpackQ4_K(const BlockQ4_K& b, uint8_t q[256], uint8_t sc[8], uint8_t mn[8]) {
  UnpackScaleMinK4(b.scales, sc, mn);
  UnpackNibbles256(b.qs, q);
}

void PackQ5_K(const uint8_t q[256], const uint8_t sc[8], const uint8_t mn[8], BlockQ5_K* b) {
  PackScaleMinK4(sc, mn, b->scales);
  PackNibbles256(q, b->qs);
  HighBitsToMask(q, 4, b->qh);
}
void UnpackQ5_K(const BlockQ5_K& b, uint8_t q[256], uint8_t sc[8], uint8_t mn[8]) {
  UnpackScaleMinK4(b.scales, sc, mn);
  UnpackNibbles256(b.qs, q);
  for (int i = 0; i < kK; ++i) q[i] = static_cast<uint8_t>(q[i] | (((b.qh[i % 32] >> (i / 32)) & 1) << 4));
}

void PackQ6_K(const uint8_t q[256], const int8_t sc[16], BlockQ6_K* b) {
  std::memcpy(b->scales, sc, 16);
  for (int h = 0; h < 2; ++h) {
    const uint8_t* e = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      b->ql[64 * h + l] = static_cast<uint8_t>((e[l] & 0xF) | ((e[l + 64] & 0xF) << 4));
      b->ql[64 * h + l + 32] = static_cast<uint8_t>((e[l + 32] & 0xF) | ((e[l + 96] & 0xF) << 4));
      b->qh[32 * h + l] = static_cast<uint8_t>(((e[l] >> 4) & 3) | (((e[l + 32] >> 4) & 3) << 2) |
                                               (((e[l + 64] >> 4) & 3) << 4) | (((e[l + 96] >> 4) & 3) << 6));
    }
  }
}
void UnpackQ6_K(const BlockQ6_K& b, int8_t q[256]) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = b.ql + 64 * h;
    const uint8_t* qh = b.qh + 32 * h;
    int8_t* e = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      e[l] = static_cast<int8_t>(((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32);
      e[l + 32] = static_cast<int8_t>(((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32);
      e[l + 64] = static_cast<int8_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
      e[l + 96] = static_cast<int8_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
    }
  }
}

void DequantizeQ2_K(const BlockQ2_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, y += kK) {
    uint8_t q[256], sc[16], mn[16];
    UnpackQ2_K(x[b], q, sc, mn);
    const float d = Fp16ToFp32(x[b].d), dmin = Fp16ToFp32(x[b].dmin);
    for (int i = 0; i < kK; ++i) y[i] = d * sc[i / 16] * q[i] - dmin * mn[i / 16];
  }
}

void DequantizeQ3_K(const BlockQ3_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, y += kK) {
    int8_t q[256], sc[16];
    UnpackQ3_K(x[b], q, sc);
    const float d = Fp16ToFp32(x[b].d);
    for (int i = 0; i < kK; ++i) y[i] = d * sc[i / 16] * q[i];
  }
}

void DequantizeQ4_K(const BlockQ4_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, y += kK) {
    uint8_t q[256], sc[8], mn[8];
    UnpackQ4_K(x[b], q, sc, mn);
    const float d = Fp16ToFp32(x[b].d), dmin = Fp16ToFp32(x[b].dmin);
    for (int i = 0; i < kK; ++i) y[i] = d * sc[i / 32] * q[i] - dmin * mn[i / 32];
  }
}

void DequantizeQ5_K(const BlockQ5_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, y += kK) {
    uint8_t q[256], sc[8], mn[8];
    UnpackQ5_K(x[b], q, sc, mn);
    const float d = Fp16ToFp32(x[b].d), dmin = Fp16ToFp32(x[b].dmin);
    for (int i = 0; i < kK; ++i) y[i] = d * sc[i / 32] * q[i] - dmin * mn[i / 32];
  }
}

void DequantizeQ6_K(const BlockQ6_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, y += kK) {
    int8_t q[256];
    UnpackQ6_K(x[b], q);
    const float d = Fp16ToFp32(x[b].d);
    for (int i = 0; i < kK; ++i) y[i] = d * x[b].scales[i / 16] * q[i];
  }
}

void DequantizeQ8_K(const BlockQ8_K* x, float* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, y += kK) {
    for (int i = 0; i < kK; ++i) y[i] = x[b].d * x[b].qs[i];
  }
}

void QuantizeQ8_K(const float* x, BlockQ8_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, x += kK) {
    float amax = 0;
    for (int i = 0; i < kK; ++i) amax = std::max(amax, std::fabs(x[i]));
    const float d = amax / 127.f;
    const float id = d != 0 ? 1.f / d : 0.f;
    y[b].d = d;
    for (int i = 0; i < kK; ++i) y[b].qs[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * id), -127.f, 127.f));
    for (int j = 0; j < kK / 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += y[b].qs[16 * j + i];
      y[b].bsums[j] = static_cast<int16_t>(sum);
    }
  }
}

}  // namespace herd::ref::internal
