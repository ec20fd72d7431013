// AVX2 + F16C inner loops of the CPU paged attention (x86-64-v3 baseline): scores of G query
// heads against f16 K rows, a vectorised exp, and the V-weighted sum with the accumulators of
// G heads held in registers. Header-only; included by ops_cpu.cc when __AVX2__ is defined.
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace herd::cpu::avx2 {

inline float HorizontalSum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Positions ahead whose K / V rows the loops below prefetch. A kv head's rows are one
// head_dim vector per 1-2 KB slot, so the hardware prefetchers see a strided, block-scattered
// stream and a position's row would otherwise arrive from DRAM only when its FMAs need it
// (measured: 4.5 GB/s of K/V on one thread, bench/attention_cpu_bench.cc).
constexpr int32_t kPrefetchAhead = 32;

// Every cache line of the `bytes` bytes at p into L1 (a prefetch never faults).
inline void PrefetchRow(const void* p, size_t bytes) {
  const char* c = static_cast<const char*>(p);
  for (size_t o = 0; o < bytes; o += 64) _mm_prefetch(c + o, _MM_HINT_T0);
  _mm_prefetch(c + bytes - 1, _MM_HINT_T0);
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

// out[g * stride] = scale · (sum of acc[g]'s 8 lanes) for G heads: four heads at a time through one
// hadd tree (9 instructions for 4 sums instead of ~28), the rest one by one.
template <int G>
inline void StoreSums(const __m256 (&acc)[G], float scale, float* out, int32_t stride) {
  constexpr int kQuads = G / 4;
  for (int i = 0; i < kQuads; ++i) {
    const int g = 4 * i;
    const __m256 h = _mm256_hadd_ps(_mm256_hadd_ps(acc[g], acc[g + 1]), _mm256_hadd_ps(acc[g + 2], acc[g + 3]));
    // lanes 0-3 and 4-7 hold the four heads' sums over the low and high halves
    const __m128 s4 =
        _mm_mul_ps(_mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1)), _mm_set1_ps(scale));
    alignas(16) float v[4];
    _mm_store_ps(v, s4);
    for (int j = 0; j < 4; ++j) out[(g + j) * stride] = v[j];
  }
  for (int g = 4 * kQuads; g < G; ++g) out[g * stride] = HorizontalSum(acc[g]) * scale;
}

// scores[g * stride + p] = scale · q_g · k_p for G heads, f16 rows; d % 8 == 0.
template <int G>
void Scores(const float* q, int32_t d, const uint16_t* const* rows, int32_t n, float scale, float* scores,
            int32_t stride) {
  for (int32_t p = 0; p < n; ++p) {
    if (p + kPrefetchAhead < n) PrefetchRow(rows[p + kPrefetchAhead], static_cast<size_t>(d) * 2);
    __m256 acc[G];
    for (int g = 0; g < G; ++g) acc[g] = _mm256_setzero_ps();
    const uint16_t* k = rows[p];
    for (int32_t i = 0; i < d; i += 8) {
      const __m256 kc = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(k + i)));
      for (int g = 0; g < G; ++g) acc[g] = _mm256_fmadd_ps(_mm256_loadu_ps(q + g * d + i), kc, acc[g]);
    }
    StoreSums<G>(acc, scale, scores + p, stride);
  }
}

// Positions per block of the weighted sums: a block's V rows (2-8 KB) stay in L1 while every
// slice of head_dim passes over them, so each row comes from memory once.
constexpr int32_t kSumBlock = 32;

// acc[k][g] += Σ_{p in [p0, p1)} w[g * stride + p] · v_p[i + 8k .. +8] for K 8-wide slices from dim i
// (f16 rows), positions in order: the same FMAs per value as one pass over all positions.
// prefetch > 0: also prefetches that many bytes of row p + kSumBlock (the next block's) per position.
template <int G, int K>
inline void SumSlices(const float* w, int32_t stride, const uint16_t* const* rows, int32_t p0, int32_t p1, int32_t n,
                      int32_t i, size_t prefetch, __m256 (&acc)[K][G]) {
  for (int32_t p = p0; p < p1; ++p) {
    if (prefetch > 0 && p + kSumBlock < n) PrefetchRow(rows[p + kSumBlock], prefetch);
    __m256 vc[K];
    for (int k = 0; k < K; ++k) {
      vc[k] = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[p] + i + 8 * k)));
    }
    for (int g = 0; g < G; ++g) {
      const __m256 wg = _mm256_set1_ps(w[g * stride + p]);
      for (int k = 0; k < K; ++k) acc[k][g] = _mm256_fmadd_ps(wg, vc[k], acc[k][g]);
    }
  }
}

// out[g, :] = Σ_p w[g * stride + p] · v_p for G heads, f16 rows; d % 8 == 0. Blocks of
// kSumBlock positions; within a block, two 8-wide slices of d at a time (2G accumulators in
// registers, up to G = 6) carry their sums from the previous block through out. The first
// slices' pass over a block prefetches the next block's rows.
template <int G>
void WeightedSum(const float* w, int32_t stride, const uint16_t* const* rows, int32_t n, int32_t d, float* out) {
  constexpr int K = G <= 6 ? 2 : 1;
  for (int32_t p0 = 0; p0 < n; p0 += kSumBlock) {
    const int32_t p1 = std::min(n, p0 + kSumBlock);
    if (p0 == 0) {
      for (int32_t p = 0; p < p1; ++p) PrefetchRow(rows[p], static_cast<size_t>(d) * 2);
    }
    int32_t i = 0;
    auto run = [&](auto k_slices) {
      constexpr int KK = decltype(k_slices)::value;
      __m256 acc[KK][G];
      for (int k = 0; k < KK; ++k) {
        for (int g = 0; g < G; ++g) {
          acc[k][g] = p0 == 0 ? _mm256_setzero_ps() : _mm256_loadu_ps(out + g * d + i + 8 * k);
        }
      }
      SumSlices<G, KK>(w, stride, rows, p0, p1, n, i, i == 0 ? static_cast<size_t>(d) * 2 : 0, acc);
      for (int k = 0; k < KK; ++k) {
        for (int g = 0; g < G; ++g) _mm256_storeu_ps(out + g * d + i + 8 * k, acc[k][g]);
      }
    };
    for (; i + 8 * K <= d; i += 8 * K) run(std::integral_constant<int, K>{});
    for (; i < d; i += 8) run(std::integral_constant<int, 1>{});
  }
}

}  // namespace herd::cpu::avx2
