// AVX-512 kernel set (F, BW, VL, DQ, VNNI): compiled with AVX-512 flags (see CMakeLists.txt)
// and only called after cpuid + xgetbv confirmed the CPU and OS support them.
// Integer dot products: vpdpbusd (u8 x s8 -> s32) and vpmaddubsw + vpdpwssd (group scales).
// GCC 12's AVX-512 headers build some intrinsics from _mm512_undefined_*(), which trips
// -Wuninitialized / -Wmaybe-uninitialized at every use (a known false positive); silenced
// for this file only, before the header is read.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>
#include <type_traits>

#define HERD_ISA_NS avx512
#include "kernels/cpu/decode_portable.h"
#include "kernels/cpu/tile_kernels.h"

namespace herd::cpu::internal::avx512 {
namespace {

alignas(64) const int32_t kBlockIdx8[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
alignas(64) const int16_t kGroupIdx[32] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1,
                                           2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3};

struct V {
  static constexpr int W = 64;
  static constexpr int FL = 16;
  static constexpr bool kUnsignedQ8 = true;
  using B = __m512i;
  using I = __m512i;
  using S = __m512i;
  using F = __m512;
  static HERD_INLINE B LoadB(const void* p) { return _mm512_loadu_si512(p); }
  static HERD_INLINE I ZeroI() { return _mm512_setzero_si512(); }
  static HERD_INLINE I DotK(I acc, B w, B x, S sc) { return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(w, x), sc); }
  static HERD_INLINE I DotL(B w, B x) { return _mm512_dpbusd_epi32(_mm512_setzero_si512(), w, x); }
  static HERD_INLINE I DotI(I acc, B w, B x) { return _mm512_dpbusd_epi32(acc, w, x); }
  static HERD_INLINE I DotISigned(I acc, B w, B x) { return _mm512_add_epi32(acc, DotSS(w, x)); }
  static HERD_INLINE I DotSS(B w, B x) {
    // |w| x sign(w)*x: negate x where w < 0.
    const __mmask64 neg = _mm512_movepi8_mask(w);
    const B xs = _mm512_mask_sub_epi8(x, neg, _mm512_setzero_si512(), x);
    return _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_abs_epi8(w), xs);
  }
  // Chunk k covers groups 4k..4k+3; int16 lane l belongs to group 4k + l / 8.
  static HERD_INLINE S KScales(const int16_t* sc16, int k) {
    const __m512i v = _mm512_broadcast_i64x4(_mm256_load_si256(reinterpret_cast<const __m256i*>(sc16)));
    const __m512i idx = _mm512_add_epi16(_mm512_load_si512(kGroupIdx), _mm512_set1_epi16(static_cast<int16_t>(4 * k)));
    return _mm512_permutexvar_epi16(idx, v);
  }
  // 8 block scales in lanes 0-7; chunk k covers blocks 2k (lanes 0-7) and 2k+1 (lanes 8-15).
  using F8 = __m512;
  static HERD_INLINE F8 LoadF8(const float* p) { return _mm512_zextps256_ps512(_mm256_loadu_ps(p)); }
  static HERD_INLINE F8 Mul8(F8 a, F8 b) { return _mm512_mul_ps(a, b); }
  static HERD_INLINE F ChunkScale(F8 v, int k) {
    return _mm512_permutexvar_ps(_mm512_add_epi32(_mm512_load_si512(kBlockIdx8), _mm512_set1_epi32(2 * k)), v);
  }
  static HERD_INLINE F Cvt(I v) { return _mm512_cvtepi32_ps(v); }
  static HERD_INLINE F Fma(F a, F b, F c) { return _mm512_fmadd_ps(a, b, c); }
  static HERD_INLINE F Fnma(F a, F b, F c) { return _mm512_fnmadd_ps(a, b, c); }
  static HERD_INLINE F Mul(F a, F b) { return _mm512_mul_ps(a, b); }
  static HERD_INLINE F Set1(float v) { return _mm512_set1_ps(v); }
  static HERD_INLINE F LoadF(const float* p) { return _mm512_loadu_ps(p); }
  static HERD_INLINE void StoreF(float* p, F v) { _mm512_storeu_ps(p, v); }
  static HERD_INLINE F ZeroF() { return _mm512_setzero_ps(); }
  // (The maskz_ forms below avoid GCC 12's -Wuninitialized false positives in the plain ones.)
  static HERD_INLINE float HSum(F v) {
    const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_maskz_extractf32x8_ps(0xFF, v, 1));
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace
}  // namespace herd::cpu::internal::avx512

#include "kernels/cpu/decode_avx512.h"
#include "kernels/cpu/tile_kinterleaved.h"

namespace herd::cpu::internal::avx512 {
namespace {

struct F32Dec {
  static constexpr size_t kElemBytes = 4;
  static HERD_INLINE __m512 Load(const uint8_t* p) { return _mm512_loadu_ps(p); }
};
struct F16Dec {
  static constexpr size_t kElemBytes = 2;
  static HERD_INLINE __m512 Load(const uint8_t* p) {
    return _mm512_maskz_cvtph_ps(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};
struct BF16Dec {
  static constexpr size_t kElemBytes = 2;
  static HERD_INLINE __m512 Load(const uint8_t* p) {
    const __m512i v = _mm512_maskz_cvtepu16_epi32(0xFFFF, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(0xFFFF, v, 16));
  }
};

// Q4_K and Q6_K on 2-16 tokens: KInterleaved (tile_kinterleaved.h), tiles of 1 row x 8 tokens
// up to 8 tokens, else one tile of up to 16 (each row decoded once; 2 rows or 4-token tiles
// measured slower: the row decode is then shared by fewer tokens or the accumulators spill).
// From 17 tokens on the packed path is as fast and shares the decode more.
constexpr int kKIRows = 1, kKITok = 8, kKIMaxTok = 16;
constexpr bool HasKInterleaved(DType t) { return t == DType::kQ4_K || t == DType::kQ6_K; }

template <DType T>
struct KDecFor {
  using Type = PortableKDec<V, T>;
};
template <>
struct KDecFor<DType::kQ4_K> {
  using Type = Q45KDec<false>;
};
template <>
struct KDecFor<DType::kQ5_K> {
  using Type = Q45KDec<true>;
};
template <>
struct KDecFor<DType::kQ2_K> {
  using Type = Q23KDec<false>;
};
template <>
struct KDecFor<DType::kQ3_K> {
  using Type = Q23KDec<true>;
};
template <>
struct KDecFor<DType::kQ6_K> {
  using Type = Q6KDec;
};

// Few tokens: decode in registers (R x C tiles 4 x 4, 4 x 1; Q4_K and Q6_K: KInterleaved from
// 2 tokens on). Many tokens (interleaved activations): packed spans, 4 x 3 tiles.
template <DType T>
void KKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  using Dec = typename KDecFor<T>::Type;
  if constexpr (HasKInterleaved(T)) {
    if (a.layout.interleaved && a.n_tok <= kKIMaxTok) {
      if (a.n_tok <= kKITok) {
        KInterleaved<V, Dec>::template Run<kKIRows, kKITok>(a, r0, r1);
      } else {
        KInterleaved<V, Dec>::template Run<kKIRows, kKIMaxTok>(a, r0, r1);
      }
      return;
    }
  }
  if constexpr (std::is_same_v<Dec, PortableKDec<V, T>>) {
    QuantKernel<V, T, KQuant<V, Dec>, 4, 4, 4, 4, 3>(a, r0, r1);
  } else {
    QuantKernel<V, T, KQuant<V, Dec>, 4, 4, 4, 4, 3, KSimdPacker<Dec>>(a, r0, r1);
  }
}
template <DType T>
void LKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  QuantKernel<V, T, LQuant<V, LegacyDec<T>>, 4, 4, 4, 4, 3, LSimdPacker<T>>(a, r0, r1);
}
void Q40Kernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  QuantKernel<V, DType::kQ4_0, Q40Direct, 4, 4, 4, 4, 3, LSimdPacker<DType::kQ4_0>>(a, r0, r1);
}
template <class D>
void FKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  RunRows<FloatW<V, D>, 4, 6, 8>(a, r0, r1);
}

struct Kernels {
  using F32D = F32Dec;
  using F16D = F16Dec;
  using BF16D = BF16Dec;
  template <class D>
  static void F(const KernelArgs& a, int64_t r0, int64_t r1) {
    FKernel<D>(a, r0, r1);
  }
  template <DType T>
  static void L(const KernelArgs& a, int64_t r0, int64_t r1) {
    if constexpr (T == DType::kQ4_0) {
      Q40Kernel(a, r0, r1);
    } else {
      LKernel<T>(a, r0, r1);
    }
  }
  template <DType T>
  static void K(const KernelArgs& a, int64_t r0, int64_t r1) {
    KKernel<T>(a, r0, r1);
  }
};

MatKernel Get(DType type) { return KernelTable<Kernels>(type); }

// Interleaved activations: from 2 tokens on for the KInterleaved types, else from 8 (where the
// packed path overtakes the in-place decode).
int PackMinTok(DType type) { return HasKInterleaved(type) ? 2 : 8; }

const KernelSet kSet = {"avx512-vnni", &Get, 8, &PackMinTok};

}  // namespace
}  // namespace herd::cpu::internal::avx512

namespace herd::cpu::internal {
const KernelSet* Avx512KernelSet() { return &avx512::kSet; }
}  // namespace herd::cpu::internal
