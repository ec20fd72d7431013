// AVX2 + FMA + F16C kernel set (the x86-64-v3 baseline every x86 build runs).
// Integer dot products: vpmaddubsw (u8 x s8 -> s16 pairs) + vpmaddwd (-> s32).
#include <immintrin.h>

#include <cstring>

#define HERD_ISA_NS avx2
#include "kernels/cpu/decode_portable.h"
#include "kernels/cpu/tile_kernels.h"

namespace herd::cpu::internal::avx2 {
namespace {

struct V {
  static constexpr int W = 32;
  static constexpr int FL = 8;
  // u8 codes up to 255 would saturate vpmaddubsw: Q8_0 stays signed (sign trick).
  static constexpr bool kUnsignedQ8 = false;
  using B = __m256i;
  using I = __m256i;
  using S = __m256i;
  using F = __m256;
  static HERD_INLINE B LoadB(const void* p) { return _mm256_loadu_si256(static_cast<const __m256i*>(p)); }
  static HERD_INLINE I ZeroI() { return _mm256_setzero_si256(); }
  static HERD_INLINE I DotK(I acc, B w, B x, S sc) {
    return _mm256_add_epi32(acc, _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), sc));
  }
  static HERD_INLINE I DotL(B w, B x) { return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1)); }
  static HERD_INLINE I DotSS(B w, B x) { return DotL(_mm256_sign_epi8(w, w), _mm256_sign_epi8(x, w)); }
  static HERD_INLINE I DotI(I acc, B w, B x) { return _mm256_add_epi32(acc, DotL(w, x)); }
  static HERD_INLINE I DotISigned(I acc, B w, B x) { return _mm256_add_epi32(acc, DotSS(w, x)); }
  // Chunk k covers groups 2k (int16 lanes 0-7) and 2k+1 (lanes 8-15).
  static HERD_INLINE S KScales(const int16_t* sc16, int k) {
    int32_t pair;
    std::memcpy(&pair, sc16 + 2 * k, 4);
    const __m256i v = _mm256_set1_epi32(pair);
    const __m256i shuf = _mm256_setr_epi8(0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 2, 3, 2, 3, 2, 3, 2, 3, 2, 3,
                                          2, 3, 2, 3, 2, 3);
    return _mm256_shuffle_epi8(v, shuf);
  }
  // 8 block scales; chunk k is block k.
  using F8 = __m256;
  static HERD_INLINE F8 LoadF8(const float* p) { return _mm256_loadu_ps(p); }
  static HERD_INLINE F8 Mul8(F8 a, F8 b) { return _mm256_mul_ps(a, b); }
  static HERD_INLINE F ChunkScale(F8 v, int k) { return _mm256_permutevar8x32_ps(v, _mm256_set1_epi32(k)); }
  static HERD_INLINE F Cvt(I v) { return _mm256_cvtepi32_ps(v); }
  static HERD_INLINE F Fma(F a, F b, F c) { return _mm256_fmadd_ps(a, b, c); }
  static HERD_INLINE F Fnma(F a, F b, F c) { return _mm256_fnmadd_ps(a, b, c); }
  static HERD_INLINE F Mul(F a, F b) { return _mm256_mul_ps(a, b); }
  static HERD_INLINE F Set1(float v) { return _mm256_set1_ps(v); }
  static HERD_INLINE F LoadF(const float* p) { return _mm256_loadu_ps(p); }
  static HERD_INLINE F ZeroF() { return _mm256_setzero_ps(); }
  static HERD_INLINE float HSum(F v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
  }
};

}  // namespace
}  // namespace herd::cpu::internal::avx2

#include "kernels/cpu/decode_avx2.h"

namespace herd::cpu::internal::avx2 {
namespace {

struct F32Dec {
  static constexpr size_t kElemBytes = 4;
  static HERD_INLINE __m256 Load(const uint8_t* p) { return _mm256_loadu_ps(reinterpret_cast<const float*>(p)); }
};
struct F16Dec {
  static constexpr size_t kElemBytes = 2;
  static HERD_INLINE __m256 Load(const uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
};
struct BF16Dec {
  static constexpr size_t kElemBytes = 2;
  static HERD_INLINE __m256 Load(const uint8_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
};

// The portable decoders cost more than the dot products: from 2 tokens on, each row block is
// decoded once into scratch and reused for every token.
template <DType T>
void KKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  QuantKernel<V, T, KQuant<V, PortableKDec<V, T>>, 2, 3, 2, 2, 3>(a, r0, r1);
}
template <DType T>
void LKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  QuantKernel<V, T, LQuant<V, LegacyDec<T>>, 2, 3, 2, 2, 3>(a, r0, r1);
}
template <class D>
void FKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  RunRows<FloatW<V, D>, 3, 4, 4>(a, r0, r1);
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
    LKernel<T>(a, r0, r1);
  }
  template <DType T>
  static void K(const KernelArgs& a, int64_t r0, int64_t r1) {
    KKernel<T>(a, r0, r1);
  }
};

MatKernel Get(DType type) { return KernelTable<Kernels>(type); }

int PackMinTok(DType) { return 2; }

const KernelSet kSet = {"avx2", &Get, 4, &PackMinTok};

}  // namespace
}  // namespace herd::cpu::internal::avx2

namespace herd::cpu::internal {
const KernelSet* Avx2KernelSet() { return &avx2::kSet; }
}  // namespace herd::cpu::internal
