// AVX2 decoders for the legacy 32-blocks (internal; included by matmul_avx2.cc after its vector
// interface V): one block per 32-byte chunk, built in registers from the GGUF blocks. Partial
// spans (row tails) go through the portable decoder. Same contract as PortableLDec.
#include <immintrin.h>

#include <cstring>

namespace herd::cpu::internal::avx2 {

template <DType T>
struct LegacyDec {
  static constexpr size_t kBytes = BlockBytes(T);
  static constexpr bool kQ8 = T == DType::kQ8_0;
  static constexpr bool kSigned = kQ8;  // AVX2 keeps Q8_0 codes signed (see V::kUnsignedQ8)
  static constexpr bool kHasM = T == DType::kQ4_1 || T == DType::kQ5_1;
  static constexpr bool kHasH = T == DType::kQ5_0 || T == DType::kQ5_1;
  static constexpr size_t kQhOff = kHasM ? 4 : 2;
  static constexpr size_t kQsOff = kQhOff + (kHasH ? 4 : 0);
  const uint8_t* p_;
  bool full_;
  __m256 d8;  // the 8 block scales
  __m256 c8;  // the 8 block corrections
  PortableLDec<V, T> slow_;

  HERD_INLINE static __m128i Halves(const uint8_t* p) {
    uint16_t h[8];
    for (int b = 0; b < 8; ++b) std::memcpy(&h[b], p + kBytes * b, 2);
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(h));
  }
  HERD_INLINE void Begin(const uint8_t* p, int nb) {
    full_ = nb == 8;
    if (!full_) {
      slow_.Begin(p, nb);
      return;
    }
    p_ = p;
    d8 = _mm256_cvtph_ps(Halves(p));
    if constexpr (kHasM) {
      c8 = _mm256_sub_ps(_mm256_setzero_ps(), _mm256_cvtph_ps(Halves(p + 2)));
    } else if constexpr (kQ8) {
      c8 = _mm256_setzero_ps();
    } else {
      c8 = _mm256_mul_ps(d8, _mm256_set1_ps(kHasH ? 16.f : 8.f));
    }
  }
  HERD_INLINE __m256i Codes(int k) const {
    if (!full_) return slow_.Codes(k);
    const uint8_t* b = p_ + kBytes * k;
    if constexpr (kQ8) {
      return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + 2));
    } else {
      const __m256i v = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + kQsOff)));
      __m256i q = _mm256_and_si256(_mm256_blend_epi32(v, _mm256_srli_epi16(v, 4), 0xF0), _mm256_set1_epi8(0x0F));
      if constexpr (kHasH) {
        uint32_t qh;
        std::memcpy(&qh, b + kQhOff, 4);
        // Byte i gets qh byte i / 8, then its bit i % 8.
        const __m256i spread = _mm256_shuffle_epi8(_mm256_set1_epi32(static_cast<int>(qh)),
                                                   _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2,
                                                                    2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
        const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ull));
        const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
        q = _mm256_or_si256(q, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
      }
      return q;
    }
  }
  HERD_INLINE __m256 DVec() const { return full_ ? d8 : slow_.DVec(); }
  // Groups 2b and 2b+1 belong to block b: h = 0 covers blocks 0-3, h = 1 blocks 4-7.
  HERD_INLINE __m256 C(int h) const {
    if (!full_) return slow_.C(h);
    const __m256i idx = h == 0 ? _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3) : _mm256_setr_epi32(4, 4, 5, 5, 6, 6, 7, 7);
    return _mm256_permutevar8x32_ps(c8, idx);
  }
};

}  // namespace herd::cpu::internal::avx2
