#include "kernels/cpu/act_quant.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__x86_64__)
// GCC 12's AVX-512 intrinsics build some results from _mm512_undefined_*() and trip
// -W(maybe-)uninitialized at every use (false positive); silenced for this file, as in
// matmul_avx512.cc.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#endif

#include "base/check.h"
#include "base/fp16.h"

namespace herd::cpu::internal {

ActFormat ActFormatFor(DType weight_type) {
  switch (weight_type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return ActFormat::kF32;
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0: return ActFormat::kQ8B32H;
    case DType::kQ4_1:
    case DType::kQ5_1: return ActFormat::kQ8B32F;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K: return ActFormat::kQ8B256;
    default: HERD_CHECK_MSG(false, "no CPU matmul for weight type %u", static_cast<unsigned>(weight_type));
  }
}

ActLayout ActLayout::Make(ActFormat format, int64_t n_in, bool interleaved) {
  ActLayout l;
  l.format = format;
  l.n_in = n_in;
  if (format == ActFormat::kF32) {
    l.n_pad = n_in;
    l.stride = (static_cast<size_t>(n_in) * 4 + 63) & ~size_t{63};
    return l;
  }
  l.block = format == ActFormat::kQ8B256 ? 256 : 32;
  HERD_CHECK_MSG(n_in % l.block == 0, "n_in %lld not a multiple of %d", static_cast<long long>(n_in), l.block);
  l.n_pad = (n_in + 255) / 256 * 256;
  l.d_off = static_cast<size_t>(l.n_pad);
  l.s_off = l.d_off + 4 * static_cast<size_t>(l.n_pad / l.block);
  l.stride = (l.s_off + 4 * static_cast<size_t>(l.n_pad / 16) + 63) & ~size_t{63};
  if (interleaved) {
    l.interleaved = true;
    l.dg_off = l.stride;
    l.stride += 4 * static_cast<size_t>(l.n_pad / 16);
  }
  return l;
}

namespace {

// One block of `bs` values, as the reference quantizers do it (nearbyint, clamp to ±127).
// Returns the scale the kernels use (half-rounded for kQ8B32H).
float QuantizeBlock(const float* x, int bs, bool half_scale, int8_t* q) {
  float amax = 0;
  for (int i = 0; i < bs; ++i) amax = std::max(amax, std::fabs(x[i]));
  float d = amax / 127.f;
  if (half_scale) d = Fp16ToFp32(Fp32ToFp16(d));
  const float id = d != 0 ? 1.f / d : 0.f;
  for (int i = 0; i < bs; ++i) q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * id), -127.f, 127.f));
  return d;
}

#if defined(__x86_64__) && defined(__GNUC__)
#define HERD_ACT_AVX512 1
// QuantizeBlock for a whole row of blocks with AVX-512 (bs a multiple of 16), plus the group
// sums s. Bit-identical to the scalar path: the same max, division and half rounding (scalar,
// once per block); rounding by vcvtps2dq in the default round-to-nearest-even mode equals
// nearbyint, and clamping before or after rounding to integer bounds is the same.
__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq"))) void QuantizeRowAvx512(const float* x, int64_t nb, int bs,
                                                                                     bool half, int8_t* q, float* d,
                                                                                     float* s) {
  const __m512 lo = _mm512_set1_ps(-127.f), hi = _mm512_set1_ps(127.f);
  for (int64_t b = 0; b < nb; ++b) {
    const float* xb = x + b * bs;
    __m512 m = _mm512_setzero_ps();
    for (int i = 0; i < bs; i += 16) m = _mm512_max_ps(m, _mm512_abs_ps(_mm512_loadu_ps(xb + i)));
    float db = _mm512_reduce_max_ps(m) / 127.f;
    if (half) db = Fp16ToFp32(Fp32ToFp16(db));
    d[b] = db;
    const __m512 id = _mm512_set1_ps(db != 0 ? 1.f / db : 0.f);
    for (int i = 0; i < bs; i += 16) {
      const __m512 v = _mm512_min_ps(_mm512_max_ps(_mm512_mul_ps(_mm512_loadu_ps(xb + i), id), lo), hi);
      const __m512i qi = _mm512_cvtps_epi32(v);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(q + b * bs + i), _mm512_cvtepi32_epi8(qi));
      s[(b * bs + i) / 16] = db * static_cast<float>(_mm512_reduce_add_epi32(qi));
    }
  }
}
bool HasAvx512() {
  static const bool has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                          __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
  return has;
}
#endif

}  // namespace

void QuantizeActRows(const ActLayout& l, const float* x, int64_t t0, int64_t t1, uint8_t* dst) {
  for (int64_t t = t0; t < t1; ++t) {
    const float* xr = x + t * l.n_in;
    uint8_t* row = dst + static_cast<size_t>(t) * l.stride;
    if (l.format == ActFormat::kF32) {
      std::memcpy(row, xr, static_cast<size_t>(l.n_in) * 4);
      continue;
    }
    auto* q = reinterpret_cast<int8_t*>(row);
    auto* d = reinterpret_cast<float*>(row + l.d_off);
    auto* s = reinterpret_cast<float*>(row + l.s_off);
    const bool half = l.format == ActFormat::kQ8B32H;
    const int64_t nb = l.n_in / l.block;
    int64_t g0 = 0;  // groups of 16 whose sums s are still to compute
#ifdef HERD_ACT_AVX512
    if (HasAvx512()) {
      QuantizeRowAvx512(xr, nb, l.block, half, q, d, s);
      g0 = l.n_in / 16;
    } else
#endif
    {
      for (int64_t b = 0; b < nb; ++b) d[b] = QuantizeBlock(xr + b * l.block, l.block, half, q + b * l.block);
    }
    for (int64_t b = nb; b < l.n_pad / l.block; ++b) d[b] = 0;
    std::memset(q + l.n_in, 0, static_cast<size_t>(l.n_pad - l.n_in));
    for (int64_t g = g0; g < l.n_pad / 16; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += q[16 * g + i];
      s[g] = d[g * 16 / l.block] * static_cast<float>(sum);
    }
    if (l.interleaved) {
      auto* dg = reinterpret_cast<float*>(row + l.dg_off);
      for (int64_t g = 0; g < l.n_pad / 16; ++g) dg[g] = d[g * 16 / l.block];
      int8_t span[256];
      for (int64_t o = 0; o < l.n_pad; o += 256) {
        std::memcpy(span, q + o, 256);
        for (int k = 0; k < 4; ++k)
          for (int g = 0; g < 16; ++g) std::memcpy(q + o + 64 * k + 4 * g, span + 16 * g + 4 * k, 4);
      }
    }
  }
}

}  // namespace herd::cpu::internal
