// herd's K-quant quantizer. Per super-block of 256:
//  1. each sub-block gets its own float scale (and min) from a least-squares search (FitAsym /
//     FitSym in quants_fit.cc);
//  2. the super-block scale(s) d (dmin) are chosen so the largest sub-block scale (min) hits the
//     top integer code, rounded to half, and each sub-block scale (min) is rounded to its integer
//     code;
//  3. each sub-block tries its integer scale/min ±1 and keeps the pair with the least squared
//     error after requantizing its values;
//  4. d (dmin) are refit by least squares over the whole super-block with the integer codes
//     fixed, and steps 3 is repeated; the refit is kept only if the error drops.
// Cost: roughly 100-200 flops per element (see quants_fit.cc); no allocation.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "base/fp16.h"
#include "kernels/reference/quants_internal.h"

namespace herd::ref::internal {
namespace {

constexpr int kK = kQK_K;
constexpr int kLsPasses = 2;

// ---------------- x = d*sc*q - dmin*mn (Q2_K, Q4_K, Q5_K) ----------------
struct AsymSpec {
  int nsub, sublen, nmax, smax;
};
struct AsymSuper {
  uint16_t d, dmin;
  uint8_t sc[16], mn[16];
  uint8_t q[256];
};

// With d/dmin as stored (half), picks each sub-block's codes from the ±1 neighbourhood of
// sc0/mn0. Returns the total squared error.
float EncodeAsym(const float* x, const AsymSpec& s, uint16_t dh, uint16_t dminh, const uint8_t* sc0, const uint8_t* mn0,
                 AsymSuper* out) {
  out->d = dh;
  out->dmin = dminh;
  const float d = Fp16ToFp32(dh), dmin = Fp16ToFp32(dminh);
  float total = 0;
  uint8_t L[32];
  for (int j = 0; j < s.nsub; ++j) {
    const float* xj = x + j * s.sublen;
    float best = std::numeric_limits<float>::infinity();
    for (int a = -1; a <= 1; ++a) {
      const int sc = std::clamp(sc0[j] + a, 0, s.smax);
      if (a != 0 && sc == sc0[j]) continue;
      for (int b = -1; b <= 1; ++b) {
        const int mn = std::clamp(mn0[j] + b, 0, s.smax);
        if (b != 0 && mn == mn0[j]) continue;
        const float err = QuantAsymFixed(xj, s.sublen, s.nmax, d * sc, -dmin * mn, L);
        if (err < best) {
          best = err;
          out->sc[j] = static_cast<uint8_t>(sc);
          out->mn[j] = static_cast<uint8_t>(mn);
          std::memcpy(out->q + j * s.sublen, L, s.sublen);
        }
      }
    }
    total += best;
  }
  return total;
}

void QuantizeAsymSuper(const float* x, const AsymSpec& s, AsymSuper* out) {
  float scale[16], mins[16];
  uint8_t L[32];
  float maxs = 0, maxm = 0;
  for (int j = 0; j < s.nsub; ++j) {
    const AsymFit f = FitAsym(x + j * s.sublen, s.sublen, s.nmax, /*allow_positive_offset=*/false, L);
    scale[j] = f.scale;
    mins[j] = -f.offset;
    maxs = std::max(maxs, scale[j]);
    maxm = std::max(maxm, mins[j]);
  }
  const uint16_t dh = Fp32ToFp16(maxs / s.smax), dminh = Fp32ToFp16(maxm / s.smax);
  const float d = Fp16ToFp32(dh), dmin = Fp16ToFp32(dminh);
  uint8_t sc0[16], mn0[16];
  for (int j = 0; j < s.nsub; ++j) {
    sc0[j] = d > 0 ? static_cast<uint8_t>(std::clamp(static_cast<int>(std::nearbyint(scale[j] / d)), 0, s.smax)) : 0;
    mn0[j] =
        dmin > 0 ? static_cast<uint8_t>(std::clamp(static_cast<int>(std::nearbyint(mins[j] / dmin)), 0, s.smax)) : 0;
  }
  float err = EncodeAsym(x, s, dh, dminh, sc0, mn0, out);

  for (int pass = 0; pass < kLsPasses; ++pass) {
    // Least squares x ≈ u*A + v*B with A = sc*q, B = mn (u = d, v = -dmin).
    double aa = 0, ab = 0, bb = 0, ax = 0, bx = 0;
    for (int i = 0; i < s.nsub * s.sublen; ++i) {
      const double a = static_cast<double>(out->sc[i / s.sublen]) * out->q[i];
      const double b = out->mn[i / s.sublen];
      aa += a * a;
      ab += a * b;
      bb += b * b;
      ax += a * x[i];
      bx += b * x[i];
    }
    double u = 0, v = 0;
    const double det = aa * bb - ab * ab;
    if (bb == 0 && aa > 0) {
      u = ax / aa;
    } else if (det > 1e-12 * aa * bb) {
      u = (ax * bb - bx * ab) / det;
      v = (aa * bx - ab * ax) / det;
    } else {
      break;
    }
    if (!(u > 0) || v > 0) break;
    AsymSuper alt;
    const uint8_t* sc = out->sc;
    const uint8_t* mn = out->mn;
    const float alt_err =
        EncodeAsym(x, s, Fp32ToFp16(static_cast<float>(u)), Fp32ToFp16(static_cast<float>(-v)), sc, mn, &alt);
    if (!(alt_err < err)) break;
    err = alt_err;
    *out = alt;
  }
}

// ---------------- x = d*sc*q (Q3_K, Q6_K) ----------------
struct SymSpec {
  int nsub, sublen, nneg, npos, scmin, scmax;
};
struct SymSuper {
  uint16_t d;
  int8_t sc[16];
  int8_t q[256];
};

float EncodeSym(const float* x, const SymSpec& s, uint16_t dh, const int8_t* sc0, SymSuper* out) {
  out->d = dh;
  const float d = Fp16ToFp32(dh);
  float total = 0;
  int8_t L[32];
  for (int j = 0; j < s.nsub; ++j) {
    const float* xj = x + j * s.sublen;
    float best = std::numeric_limits<float>::infinity();
    for (int a = -1; a <= 1; ++a) {
      const int sc = std::clamp(sc0[j] + a, s.scmin, s.scmax);
      if (a != 0 && sc == sc0[j]) continue;
      const float err = QuantSymFixed(xj, s.sublen, s.nneg, s.npos, d * sc, L);
      if (err < best) {
        best = err;
        out->sc[j] = static_cast<int8_t>(sc);
        std::memcpy(out->q + j * s.sublen, L, s.sublen);
      }
    }
    total += best;
  }
  return total;
}

void QuantizeSymSuper(const float* x, const SymSpec& s, SymSuper* out) {
  float scale[16];
  int8_t L[32];
  float smx = 0;
  for (int j = 0; j < s.nsub; ++j) {
    scale[j] = FitSym(x + j * s.sublen, s.sublen, s.nneg, s.npos, L).scale;
    if (std::fabs(scale[j]) > std::fabs(smx)) smx = scale[j];
  }
  // The largest-magnitude sub-block scale maps to the most negative code (scmin).
  const uint16_t dh = Fp32ToFp16(smx / s.scmin);
  const float d = Fp16ToFp32(dh);
  int8_t sc0[16];
  for (int j = 0; j < s.nsub; ++j) {
    sc0[j] =
        d != 0 ? static_cast<int8_t>(std::clamp(static_cast<int>(std::nearbyint(scale[j] / d)), s.scmin, s.scmax)) : 0;
  }
  float err = EncodeSym(x, s, dh, sc0, out);

  for (int pass = 0; pass < kLsPasses; ++pass) {
    double aa = 0, ax = 0;
    for (int i = 0; i < s.nsub * s.sublen; ++i) {
      const double a = static_cast<double>(out->sc[i / s.sublen]) * out->q[i];
      aa += a * a;
      ax += a * x[i];
    }
    if (!(aa > 0)) break;
    SymSuper alt;
    const float alt_err = EncodeSym(x, s, Fp32ToFp16(static_cast<float>(ax / aa)), out->sc, &alt);
    if (!(alt_err < err)) break;
    err = alt_err;
    *out = alt;
  }
}

constexpr AsymSpec kQ2K{16, 16, 3, 15};
constexpr AsymSpec kQ4K{8, 32, 15, 63};
constexpr AsymSpec kQ5K{8, 32, 31, 63};
constexpr SymSpec kQ3K{16, 16, 4, 3, -32, 31};
constexpr SymSpec kQ6K{16, 16, 32, 31, -128, 127};

}  // namespace

void QuantizeQ2_K(const float* x, BlockQ2_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, x += kK) {
    AsymSuper s;
    QuantizeAsymSuper(x, kQ2K, &s);
    PackQ2_K(s.q, s.sc, s.mn, &y[b]);
    y[b].d = s.d;
    y[b].dmin = s.dmin;
  }
}

void QuantizeQ4_K(const float* x, BlockQ4_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, x += kK) {
    AsymSuper s;
    QuantizeAsymSuper(x, kQ4K, &s);
    PackQ4_K(s.q, s.sc, s.mn, &y[b]);
    y[b].d = s.d;
    y[b].dmin = s.dmin;
  }
}

void QuantizeQ5_K(const float* x, BlockQ5_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, x += kK) {
    AsymSuper s;
    QuantizeAsymSuper(x, kQ5K, &s);
    PackQ5_K(s.q, s.sc, s.mn, &y[b]);
    y[b].d = s.d;
    y[b].dmin = s.dmin;
  }
}

void QuantizeQ3_K(const float* x, BlockQ3_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, x += kK) {
    SymSuper s;
    QuantizeSymSuper(x, kQ3K, &s);
    uint8_t q[256], sc[16];
    for (int i = 0; i < kK; ++i) q[i] = static_cast<uint8_t>(s.q[i] + 4);
    for (int j = 0; j < 16; ++j) sc[j] = static_cast<uint8_t>(s.sc[j] + 32);
    PackQ3_K(q, sc, &y[b]);
    y[b].d = s.d;
  }
}

void QuantizeQ6_K(const float* x, BlockQ6_K* y, int64_t n) {
  for (int64_t b = 0; b < n / kK; ++b, x += kK) {
    SymSuper s;
    QuantizeSymSuper(x, kQ6K, &s);
    uint8_t q[256];
    for (int i = 0; i < kK; ++i) q[i] = static_cast<uint8_t>(s.q[i] + 32);
    PackQ6_K(q, s.sc, &y[b]);
    y[b].d = s.d;
  }
}

}  // namespace herd::ref::internal
