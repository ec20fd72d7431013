// VecDot: one weight row against one activation row in VecDotType(type). Quantized types sum
// integer products per (sub-)block and scale them in float; block results are accumulated in
// double so the oracle's own rounding stays far below any SIMD kernel's tolerance.
#include <cstdint>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/quants.h"
#include "kernels/reference/quants_internal.h"

namespace herd::ref {

using namespace internal;

namespace {

int Dot32(const int8_t* a, const int8_t* b, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}
int Dot32(const uint8_t* a, const int8_t* b, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

// Q4_0 / Q5_0 / Q8_0 weights (symmetric) · Q8_0: sum_b d_w*d_x*sum(q_w*q_x).
template <typename Block, typename F>
double DotSymQ8_0(const void* w, const void* x, int64_t nb, F unpack) {
  const auto* wb = static_cast<const Block*>(w);
  const auto* xb = static_cast<const BlockQ8_0*>(x);
  double sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int8_t q[32];
    unpack(wb[b], q);
    sum += Fp16ToFp32(wb[b].d) * Fp16ToFp32(xb[b].d) * static_cast<float>(Dot32(q, xb[b].qs, 32));
  }
  return sum;
}

// Q4_1 / Q5_1 (x = d*q + m) · Q8_1: sum_b d_w*d_x*sum(q_w*q_x) + m_w*s_x.
template <typename Block, typename F>
double DotAsymQ8_1(const void* w, const void* x, int64_t nb, F unpack) {
  const auto* wb = static_cast<const Block*>(w);
  const auto* xb = static_cast<const BlockQ8_1*>(x);
  double sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int8_t q[32];
    unpack(wb[b], q);
    sum += Fp16ToFp32(wb[b].d) * xb[b].d * static_cast<float>(Dot32(q, xb[b].qs, 32)) + Fp16ToFp32(wb[b].m) * xb[b].s;
  }
  return sum;
}

// K-quants with mins (Q2_K, Q4_K, Q5_K) · Q8_K:
//   d_x * (d * sum_j sc_j * dot_j - dmin * sum_j mn_j * bsum_j)
// where sub-block j spans `sub` elements and bsum_j sums the Q8_K bsums it covers.
template <typename Block, typename F>
double DotKMin(const void* w, const void* x, int64_t nb, int sub, F unpack) {
  const auto* wb = static_cast<const Block*>(w);
  const auto* xb = static_cast<const BlockQ8_K*>(x);
  double sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    uint8_t q[256], sc[16], mn[16];
    unpack(wb[b], q, sc, mn);
    int isum = 0, msum = 0;
    for (int j = 0; j < kQK_K / sub; ++j) {
      isum += sc[j] * Dot32(q + j * sub, xb[b].qs + j * sub, sub);
      int bs = 0;
      for (int k = 0; k < sub / 16; ++k) bs += xb[b].bsums[j * (sub / 16) + k];
      msum += mn[j] * bs;
    }
    sum +=
        xb[b].d * (Fp16ToFp32(wb[b].d) * static_cast<float>(isum) - Fp16ToFp32(wb[b].dmin) * static_cast<float>(msum));
  }
  return sum;
}

double DotQ3_K(const void* w, const void* x, int64_t nb) {
  const auto* wb = static_cast<const BlockQ3_K*>(w);
  const auto* xb = static_cast<const BlockQ8_K*>(x);
  double sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int8_t q[256], sc[16];
    UnpackQ3_K(wb[b], q, sc);
    int isum = 0;
    for (int j = 0; j < 16; ++j) isum += sc[j] * Dot32(q + 16 * j, xb[b].qs + 16 * j, 16);
    sum += xb[b].d * Fp16ToFp32(wb[b].d) * static_cast<float>(isum);
  }
  return sum;
}

double DotQ6_K(const void* w, const void* x, int64_t nb) {
  const auto* wb = static_cast<const BlockQ6_K*>(w);
  const auto* xb = static_cast<const BlockQ8_K*>(x);
  double sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int8_t q[256];
    UnpackQ6_K(wb[b], q);
    int isum = 0;
    for (int j = 0; j < 16; ++j) isum += wb[b].scales[j] * Dot32(q + 16 * j, xb[b].qs + 16 * j, 16);
    sum += xb[b].d * Fp16ToFp32(wb[b].d) * static_cast<float>(isum);
  }
  return sum;
}

template <typename Cvt>
double DotFloat(const void* w, const float* x, int64_t n, Cvt cvt) {
  double sum = 0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(cvt(w, i)) * x[i];
  return sum;
}

}  // namespace

float VecDot(DType type, int64_t n, const void* w_row, const void* x_row) {
  HERD_CHECK(n % Traits(type).block_size == 0);
  const int64_t nb = n / Traits(type).block_size;
  const auto* xf = static_cast<const float*>(x_row);
  switch (type) {
    case DType::kF32:
      return static_cast<float>(
          DotFloat(w_row, xf, n, [](const void* w, int64_t i) { return static_cast<const float*>(w)[i]; }));
    case DType::kF16:
      return static_cast<float>(DotFloat(
          w_row, xf, n, [](const void* w, int64_t i) { return Fp16ToFp32(static_cast<const uint16_t*>(w)[i]); }));
    case DType::kBF16:
      return static_cast<float>(DotFloat(
          w_row, xf, n, [](const void* w, int64_t i) { return Bf16ToFp32(static_cast<const uint16_t*>(w)[i]); }));
    case DType::kQ4_0: return static_cast<float>(DotSymQ8_0<BlockQ4_0>(w_row, x_row, nb, UnpackQ4_0));
    case DType::kQ5_0: return static_cast<float>(DotSymQ8_0<BlockQ5_0>(w_row, x_row, nb, UnpackQ5_0));
    case DType::kQ8_0:
      return static_cast<float>(DotSymQ8_0<BlockQ8_0>(w_row, x_row, nb, [](const BlockQ8_0& b, int8_t q[32]) {
        for (int j = 0; j < 32; ++j) q[j] = b.qs[j];
      }));
    case DType::kQ4_1: return static_cast<float>(DotAsymQ8_1<BlockQ4_1>(w_row, x_row, nb, UnpackQ4_1));
    case DType::kQ5_1: return static_cast<float>(DotAsymQ8_1<BlockQ5_1>(w_row, x_row, nb, UnpackQ5_1));
    case DType::kQ2_K: return static_cast<float>(DotKMin<BlockQ2_K>(w_row, x_row, nb, 16, UnpackQ2_K));
    case DType::kQ4_K: return static_cast<float>(DotKMin<BlockQ4_K>(w_row, x_row, nb, 32, UnpackQ4_K));
    case DType::kQ5_K: return static_cast<float>(DotKMin<BlockQ5_K>(w_row, x_row, nb, 32, UnpackQ5_K));
    case DType::kQ3_K: return static_cast<float>(DotQ3_K(w_row, x_row, nb));
    case DType::kQ6_K: return static_cast<float>(DotQ6_K(w_row, x_row, nb));
    default: break;
  }
  HERD_CHECK_MSG(false, "VecDot: %s is not a weight type", Traits(type).name.data());
}

}  // namespace herd::ref
