// Internal to kernels/reference: per-type quantize / dequantize entry points and the
// integer unpackers shared by DequantizeRow and VecDot. Unpackers return the integer codes
// of one block in element order, so callers never touch the bit layout.
#pragma once

#include <cstdint>

#include "tensor/quant_blocks.h"

namespace herd::ref::internal {

// ---- Legacy 32-element blocks (quants_legacy.cc). n = elements, a multiple of 32. ----
void QuantizeQ4_0(const float* x, BlockQ4_0* y, int64_t n);
void QuantizeQ4_1(const float* x, BlockQ4_1* y, int64_t n);
void QuantizeQ5_0(const float* x, BlockQ5_0* y, int64_t n);
void QuantizeQ5_1(const float* x, BlockQ5_1* y, int64_t n);
void QuantizeQ8_0(const float* x, BlockQ8_0* y, int64_t n);
void QuantizeQ8_1(const float* x, BlockQ8_1* y, int64_t n);

// q[32]: Q4_0 -> q-8 in [-8,7]; Q4_1 -> [0,15]; Q5_0 -> q-16 in [-16,15]; Q5_1 -> [0,31].
void UnpackQ4_0(const BlockQ4_0& b, int8_t q[32]);
void UnpackQ4_1(const BlockQ4_1& b, int8_t q[32]);
void UnpackQ5_0(const BlockQ5_0& b, int8_t q[32]);
void UnpackQ5_1(const BlockQ5_1& b, int8_t q[32]);

// ---- K-quants, 256-element super-blocks (quants_k.cc, quants_k_quantize.cc). ----
void QuantizeQ2_K(const float* x, BlockQ2_K* y, int64_t n);
void QuantizeQ3_K(const float* x, BlockQ3_K* y, int64_t n);
void QuantizeQ4_K(const float* x, BlockQ4_K* y, int64_t n);
void QuantizeQ5_K(const float* x, BlockQ5_K* y, int64_t n);
void QuantizeQ6_K(const float* x, BlockQ6_K* y, int64_t n);
void QuantizeQ8_K(const float* x, BlockQ8_K* y, int64_t n);

// q: codes in element order; sc/mn: per sub-block scale and min multipliers.
// Q2_K: q in [0,3], 16 sub-blocks of 16, sc/mn in [0,15].  x = d*sc*q - dmin*mn
// Q3_K: q in [-4,3], 16 sub-blocks of 16, sc in [-32,31].  x = d*sc*q
// Q4_K: q in [0,15], 8 sub-blocks of 32, sc/mn in [0,63].   x = d*sc*q - dmin*mn
// Q5_K: q in [0,31], otherwise as Q4_K.
// Q6_K: q in [-32,31], 16 sub-blocks of 16, sc = b.scales (int8). x = d*sc*q
void UnpackQ2_K(const BlockQ2_K& b, uint8_t q[256], uint8_t sc[16], uint8_t mn[16]);
void UnpackQ3_K(const BlockQ3_K& b, int8_t q[256], int8_t sc[16]);
void UnpackQ4_K(const BlockQ4_K& b, uint8_t q[256], uint8_t sc[8], uint8_t mn[8]);
void UnpackQ5_K(const BlockQ5_K& b, uint8_t q[256], uint8_t sc[8], uint8_t mn[8]);
void UnpackQ6_K(const BlockQ6_K& b, int8_t q[256]);

// Packers: the inverse of the unpackers (codes as stored: Q3_K q+4 in [0,7], sc+32 in [0,63];
// Q6_K q+32 in [0,63]). d/dmin are set by the caller.
void PackQ2_K(const uint8_t q[256], const uint8_t sc[16], const uint8_t mn[16], BlockQ2_K* b);
void PackQ3_K(const uint8_t q[256], const uint8_t sc[16], BlockQ3_K* b);
void PackQ4_K(const uint8_t q[256], const uint8_t sc[8], const uint8_t mn[8], BlockQ4_K* b);
void PackQ5_K(const uint8_t q[256], const uint8_t sc[8], const uint8_t mn[8], BlockQ5_K* b);
void PackQ6_K(const uint8_t q[256], const int8_t sc[16], BlockQ6_K* b);

void DequantizeQ2_K(const BlockQ2_K* x, float* y, int64_t n);
void DequantizeQ3_K(const BlockQ3_K* x, float* y, int64_t n);
void DequantizeQ4_K(const BlockQ4_K* x, float* y, int64_t n);
void DequantizeQ5_K(const BlockQ5_K* x, float* y, int64_t n);
void DequantizeQ6_K(const BlockQ6_K* x, float* y, int64_t n);
void DequantizeQ8_K(const BlockQ8_K* x, float* y, int64_t n);

// ---- Scale search (quants_fit.cc). ----
// Asymmetric fit x ≈ scale*L + offset, L in [0, nmax], scale >= 0. offset <= 0 unless
// allow_positive_offset. Tries candidate inverse scales around nmax/(max-min), refits each by
// least squares, then refines by alternating requantization and refit. Returns the squared error.
struct AsymFit {
  float scale;
  float offset;
  float err;
};
AsymFit FitAsym(const float* x, int n, int nmax, bool allow_positive_offset, uint8_t* L);

// Symmetric fit x ≈ scale*L, L in [-nneg, npos] (scale may be negative). Returns the squared error.
struct SymFit {
  float scale;
  float err;
};
SymFit FitSym(const float* x, int n, int nneg, int npos, int8_t* L);

// Quantize with a fixed scale/offset; returns the squared error.
float QuantAsymFixed(const float* x, int n, int nmax, float scale, float offset, uint8_t* L);
float QuantSymFixed(const float* x, int n, int nneg, int npos, float scale, int8_t* L);

}  // namespace herd::ref::internal
