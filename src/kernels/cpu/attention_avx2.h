// AVX2 + F16C inner loops of the CPU paged attention (x86-64-v3 baseline): scores of G query
// heads against f16 K rows, a vectorised exp, and the V-weighted sum with the accumulators of
// G heads held in registers. Header-only; included by ops_cpu.cc when __AVX2__ is defined.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace herd::cpu::avx2 {

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// e^x for x in [-87, 88] (clamped outside): 2^(x log2 e) split into 2^n · 2^f, f in
// [-0.5, 0.5], 2^f by its degree-6 Taylor series (relative error < 2e-7).
inline __m256 Exp(__m256 x) {
  x = _mm256_min_ps(_mm256_max_ps(x, _mm256_set1_ps(-87.0f)), _mm256_set1_ps(88.0f));
  const __m256 t = _mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f));
  const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 f = _mm256_mul_ps(_mm256_sub_ps(t, n), _mm256_set1_ps(0.693147180559945309f));
  __m256 p = _mm256_set1_ps(1.0f / 720);
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 120));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 24));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f / 6));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(0.5f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
}

// s[i] = exp(s[i] - max) for i < n; returns the sum.
inline float ExpInPlace(float* s, int32_t n, float max) {
  const __m256 m = _mm256_set1_ps(max);
  __m256 acc = _mm256_setzero_ps();
  int32_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 e = Exp(_mm256_sub_ps(_mm256_loadu_ps(s + i), m));
    _mm256_storeu_ps(s + i, e);
    acc = _mm256_add_ps(acc, e);
  }
  float sum = HorizontalSum(acc);
  if (i < n) {
    float tail[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    for (int32_t j = i; j < n; ++j) tail[j - i] = s[j];
    float out[8];
    _mm256_storeu_ps(out, Exp(_mm256_sub_ps(_mm256_loadu_ps(tail), m)));
    for (int32_t j = i; j < n; ++j) {
      s[j] = out[j - i];
      sum += out[j - i];
    }
  }
  return sum;
}

// scores[g * stride + p] = scale · q_g · k_p for G heads, f16 rows; d % 8 == 0.
template <int G>
void Scores(const float* q, int32_t d, const uint16_t* const* rows, int32_t n, float scale, float* scores,
            int32_t stride) {
  for (int32_t p = 0; p < n; ++p) {
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    const uint16_t* k = rows[p];
    for (int32_t i = 0; i < d; i += 8) {
      const __m256 kc = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i)));
      for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(q + g * d + i), kc, acc[g]);
    }
    for (int g = 0; g < G; ++g) scores[g * stride + p] = HorizontalSum(acc[g]) * scale;
  }
}

// out[g, :] = Σ_p w[g * stride + p] · v_p for G heads, f16 rows; d % 8 == 0. The G
// accumulators of one 8-wide slice of d stay in registers across all positions.
template <int G>
void WeightedSum(const float* w, int32_t stride, const uint16_t* const* rows, int32_t n, int32_t d, float* out) {
  for (int32_t i = 0; i < d; i += 8) {
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    for (int32_t p = 0; p < n; ++p) {
      const __m256 vc = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[p] + i)));
      for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(_mm256_set1_ps(w[g * stride + p]), vc, acc[g]);
    }
    for (int g = 0; g < G; ++g) _mm256_storeu_ps(out + g * d + i, acc[g]);
  }
}

}  // namespace herd::cpu::avx2
