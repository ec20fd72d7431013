// Scale / offset search shared by herd's quantizers. Cost: about 2*kSteps+4 passes over the
// n values per call (n = 16..32), i.e. O(50 n) flops.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/reference/quants_internal.h"

namespace herd::ref::internal {
namespace {

constexpr int kSteps = 5;          // candidates k = -kSteps..kSteps
constexpr float kStepSize = 0.2f;  // in units of quantization levels
constexpr int kRefineIters = 3;

inline int RoundClamp(float v, int lo, int hi) {
  const int q = static_cast<int>(std::nearbyint(v));
  return std::clamp(q, lo, hi);
}

// Least squares x ≈ s*L + b over the given codes, with s >= 0 and (unless allowed) b <= 0.
AsymFit SolveAsym(const float* x, const uint8_t* L, int n, bool allow_positive_offset) {
  double sl = 0, sll = 0, slx = 0, sx = 0;
  for (int i = 0; i < n; ++i) {
    sl += L[i];
    sll += static_cast<double>(L[i]) * L[i];
    slx += static_cast<double>(L[i]) * x[i];
    sx += x[i];
  }
  const double det = n * sll - sl * sl;
  double s = 0, b = sx / n;
  if (det > 0) {
    s = (n * slx - sl * sx) / det;
    b = (sll * sx - sl * slx) / det;
  }
  if (!allow_positive_offset && b > 0) {
    b = 0;
    s = sll > 0 ? slx / sll : 0;
  }
  if (s < 0) {
    s = 0;
    b = allow_positive_offset ? sx / n : std::min(sx / n, 0.0);
  }
  AsymFit f{static_cast<float>(s), static_cast<float>(b), 0.f};
  double err = 0;
  for (int i = 0; i < n; ++i) {
    const double e = static_cast<double>(f.scale) * L[i] + f.offset - x[i];
    err += e * e;
  }
  f.err = static_cast<float>(err);
  return f;
}

// Least squares x ≈ s*L; returns s and the squared error.
SymFit SolveSym(const float* x, const int8_t* L, int n) {
  double sll = 0, slx = 0, sxx = 0;
  for (int i = 0; i < n; ++i) {
    sll += static_cast<double>(L[i]) * L[i];
    slx += static_cast<double>(L[i]) * x[i];
    sxx += static_cast<double>(x[i]) * x[i];
  }
  if (sll <= 0) return {0.f, static_cast<float>(sxx)};
  const double s = slx / sll;
  return {static_cast<float>(s), static_cast<float>(std::max(0.0, sxx - s * slx))};
}

}  // namespace

float QuantAsymFixed(const float* x, int n, int nmax, float scale, float offset, uint8_t* L) {
  double err = 0;
  const float inv = scale > 0 ? 1.f / scale : 0.f;
  for (int i = 0; i < n; ++i) {
    L[i] = scale > 0 ? static_cast<uint8_t>(RoundClamp((x[i] - offset) * inv, 0, nmax)) : 0;
    const double e = static_cast<double>(scale) * L[i] + offset - x[i];
    err += e * e;
  }
  return static_cast<float>(err);
}

float QuantSymFixed(const float* x, int n, int nneg, int npos, float scale, int8_t* L) {
  double err = 0;
  const float inv = scale != 0 ? 1.f / scale : 0.f;
  for (int i = 0; i < n; ++i) {
    L[i] = scale != 0 ? static_cast<int8_t>(RoundClamp(x[i] * inv, -nneg, npos)) : 0;
    const double e = static_cast<double>(scale) * L[i] - x[i];
    err += e * e;
  }
  return static_cast<float>(err);
}

AsymFit FitAsym(const float* x, int n, int nmax, bool allow_positive_offset, uint8_t* L) {
  float lo = *std::min_element(x, x + n);
  const float hi = *std::max_element(x, x + n);
  if (!allow_positive_offset) lo = std::min(lo, 0.f);
  if (!(hi > lo)) {
    // All values equal (to lo): the offset alone represents them exactly.
    std::fill_n(L, n, 0);
    AsymFit f{0.f, lo, 0.f};
    for (int i = 0; i < n; ++i) f.err += (x[i] - lo) * (x[i] - lo);
    return f;
  }
  uint8_t cand[256];
  AsymFit best{0.f, 0.f, std::numeric_limits<float>::infinity()};
  for (int k = -kSteps; k <= kSteps; ++k) {
    const float iscale = (nmax + k * kStepSize) / (hi - lo);
    if (iscale <= 0) continue;
    for (int i = 0; i < n; ++i) cand[i] = static_cast<uint8_t>(RoundClamp((x[i] - lo) * iscale, 0, nmax));
    const AsymFit f = SolveAsym(x, cand, n, allow_positive_offset);
    if (f.err < best.err) {
      best = f;
      std::copy_n(cand, n, L);
    }
  }
  // Alternate: requantize with the fitted scale/offset, refit. Stops when no longer improving.
  for (int it = 0; it < kRefineIters && best.scale > 0; ++it) {
    QuantAsymFixed(x, n, nmax, best.scale, best.offset, cand);
    const AsymFit f = SolveAsym(x, cand, n, allow_positive_offset);
    if (!(f.err < best.err)) break;
    best = f;
    std::copy_n(cand, n, L);
  }
  return best;
}

SymFit FitSym(const float* x, int n, int nneg, int npos, int8_t* L) {
  float amax = 0, mx = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      mx = x[i];
    }
  }
  std::fill_n(L, n, 0);
  if (amax == 0) return {0.f, 0.f};
  int8_t cand[256];
  SymFit best{0.f, std::numeric_limits<float>::infinity()};
  // Map the largest-magnitude value near the most negative code, or near the most positive.
  for (const float target : {-static_cast<float>(nneg), static_cast<float>(npos)}) {
    for (int k = -kSteps; k <= kSteps; ++k) {
      const float t = target + (target < 0 ? -1.f : 1.f) * k * kStepSize;
      if (t * target <= 0) continue;
      const float iscale = t / mx;
      for (int i = 0; i < n; ++i) cand[i] = static_cast<int8_t>(RoundClamp(x[i] * iscale, -nneg, npos));
      const SymFit f = SolveSym(x, cand, n);
      if (f.err < best.err) {
        best = f;
        std::copy_n(cand, n, L);
      }
    }
  }
  for (int it = 0; it < kRefineIters && best.scale != 0; ++it) {
    QuantSymFixed(x, n, nneg, npos, best.scale, cand);
    const SymFit f = SolveSym(x, cand, n);
    if (!(f.err < best.err)) break;
    best = f;
    std::copy_n(cand, n, L);
  }
  return best;
}

}  // namespace herd::ref::internal
