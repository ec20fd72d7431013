// AVX2 + F16C inner loops of the CPU paged attention over a Q8_0 KV cache (kernels/attention.h:
// each [head_dim] vector is head_dim / 32 BlockQ8_0). Same structure as the f16 loops in
// attention_avx2.h: K/V values are widened in registers (int8 -> float) and never written out.
// Header-only; included by ops_cpu.cc when __AVX2__ and __F16C__ are defined.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "base/fp16.h"
#include "kernels/cpu/attention_avx2.h"
#include "tensor/quant_blocks.h"

namespace herd::cpu::avx2 {

// 8 int8 at p -> 8 floats.
inline __m256 WidenI8(const int8_t* p) {
  return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))));
}

// Quantizes n floats (n % 32 == 0) into n / 32 Q8_0 blocks, bit-identical to
// ref::QuantizeRow(kQ8_0): scale = half(amax / 127), q = clamp(round-half-even(x / scale), ±127)
// with the division done as a multiply by the reciprocal of the half-rounded scale.
inline void QuantizeQ8_0(const float* x, int32_t n, BlockQ8_0* y) {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  for (int32_t b = 0; b < n / kQK8_0; ++b, x += kQK8_0) {
    __m256 v[4];
    __m256 amax = _mm256_setzero_ps();
    for (int j = 0; j < 4; ++j) {
      v[j] = _mm256_loadu_ps(x + 8 * j);
      amax = _mm256_max_ps(amax, _mm256_andnot_ps(sign, v[j]));
    }
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(amax), _mm256_extractf128_ps(amax, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_movehdup_ps(m));
    const uint16_t dh = Fp32ToFp16(_mm_cvtss_f32(m) / 127.f);
    const float d = Fp16ToFp32(dh);
    const __m256 id = _mm256_set1_ps(d != 0 ? 1.f / d : 0.f);
    __m256i q[4];
    for (int j = 0; j < 4; ++j) {
      const __m256 r = _mm256_round_ps(_mm256_mul_ps(v[j], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
      q[j] = _mm256_cvtps_epi32(_mm256_min_ps(_mm256_max_ps(r, lo), hi));
    }
    // packs work per 128-bit lane: dword k of the result holds values 4·order[k] .. +3.
    const __m256i q8 = _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3]));
    y[b].d = dh;
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(y[b].qs), _mm256_permutevar8x32_epi32(q8, order));
  }
}

// scores[g * stride + p] = scale · q_g · k_p for G heads, Q8_0 rows of d values (d % 32 == 0).
// k values are d_block · int8 exactly as ref::DequantizeRow computes them.
template <int G>
void ScoresQ8(const float* q, int32_t d, const BlockQ8_0* const* rows, int32_t n, float scale, float* scores,
              int32_t stride) {
  for (int32_t p = 0; p < n; ++p) {
    __m256 acc[G];
    if (p + kPrefetchAhead < n) PrefetchRow(rows[p + kPrefetchAhead], sizeof(BlockQ8_0) * (d / kQK8_0));
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    const BlockQ8_0* k = rows[p];
    for (int32_t b = 0; b < d / kQK8_0; ++b) {
      const __m256 dk = _mm256_set1_ps(_cvtsh_ss(k[b].d));
      for (int j = 0; j < 4; ++j) {
        const __m256 kc = _mm256_mul_ps(dk, WidenI8(k[b].qs + 8 * j));
        const float* qb = q + b * kQK8_0 + 8 * j;
        for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(qb + g * d), kc, acc[g]);
      }
    }
    StoreSums<G>(acc, scale, scores + p, stride);
  }
}

// out[g, :] = Σ_p w[g * stride + p] · v_p for G heads, Q8_0 rows of d values (d % 32 == 0).
// Per 32-value block the block scale is folded into the weights first (wd: scratch of at least
// G · kSumBlock floats), so the inner loop is one int8 widen and G FMAs per 8 values, as for
// f16. Blocks of kSumBlock positions as WeightedSum (the same FMAs per value as one pass over
// all positions); the first pass over a block prefetches the next block's rows.
template <int G>
void WeightedSumQ8(const float* w, int32_t stride, const BlockQ8_0* const* rows, int32_t n, int32_t d, float* wd,
                   float* out) {
  const size_t row_bytes = sizeof(BlockQ8_0) * static_cast<size_t>(d / kQK8_0);
  for (int32_t p0 = 0; p0 < n; p0 += kSumBlock) {
    const int32_t p1 = std::min(n, p0 + kSumBlock);
    if (p0 == 0) {
      for (int32_t p = 0; p < p1; ++p) PrefetchRow(rows[p], row_bytes);
    }
    for (int32_t b = 0; b < d / kQK8_0; ++b) {
      for (int32_t p = p0; p < p1; ++p) {
        if (b == 0 && p + kSumBlock < n) PrefetchRow(rows[p + kSumBlock], row_bytes);
        const float dv = _cvtsh_ss(rows[p][b].d);
        for (int g = 0; g < G; ++g) wd[g * kSumBlock + (p - p0)] = w[g * stride + p] * dv;
      }
      for (int j = 0; j < 4; ++j) {
        float* o = out + b * kQK8_0 + 8 * j;
        __m256 acc[G];
        for (int g = 0; g < G; ++g) acc[g] = p0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(o + g * d);
        for (int32_t p = p0; p < p1; ++p) {
          const __m256 vc = WidenI8(rows[p][b].qs + 8 * j);
          for (int g = 0; g < G; ++g) {
            acc[g] = _mm256_fmadd_ps(_mm256_set1_ps(wd[g * kSumBlock + (p - p0)]), vc, acc[g]);
          }
        }
        for (int g = 0; g < G; ++g) _mm256_storeu_ps(o + g * d, acc[g]);
      }
    }
  }
}

}  // namespace herd::cpu::avx2
