// AVX-512 decoders for the priority weight types (internal; included by matmul_avx512.cc
// after its vector interface V). Same contract as the portable decoders in tile_kernels.h
// (codes in element order, group scales, correction c), built in registers straight from the
// GGUF blocks: a 64-element chunk costs 2-6 vector ops instead of ~100 scalar ones.
#include <immintrin.h>

#include <cstring>

namespace herd::cpu::internal::avx512 {

HERD_INLINE float HalfAt(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return _cvtsh_ss(h);
}

alignas(64) inline const int16_t kPairIdx[32] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                                 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
alignas(64) inline const int32_t kHalfIdx[16] = {0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7};
alignas(64) inline const int32_t kBlockIdx[16] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1};
alignas(64) inline const int32_t kHalfIdxHi[16] = {8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13, 14, 14, 15, 15};
// Q4_K's 12 scale bytes s[] -> lanes 0-7 scales, 8-15 mins (6 bits each):
//   sc_j = s[j] & 63 (j < 4), (s[j + 4] & 15) | (s[j - 4] >> 6) << 4 (j >= 4)
//   m_j = s[j + 4] & 63 (j < 4), (s[j + 4] >> 4) | (s[j] >> 6) << 4 (j >= 4)
alignas(64) inline const int32_t kQ4KLoIdx[16] = {0, 1, 2, 3, 8, 9, 10, 11, 4, 5, 6, 7, 8, 9, 10, 11};
alignas(64) inline const int32_t kQ4KLoShift[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 4, 4};
alignas(64) inline const int32_t kQ4KLoMask[16] = {63, 63, 63, 63, 15, 15, 15, 15, 63, 63, 63, 63, 15, 15, 15, 15};
alignas(64) inline const int32_t kQ4KHiIdx[16] = {0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 0, 0, 4, 5, 6, 7};
alignas(64) inline const int32_t kQ4KHiMask[16] = {0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30,
                                                   0, 0, 0, 0, 0x30, 0x30, 0x30, 0x30};

// Q4_K (kFive = false) and Q5_K: 8 sub-blocks of 32 with 6-bit scales and mins.
// Chunk k = elements 64k..64k+63 = low nibbles of qs[32k..32k+31], then their high nibbles.
template <bool kFive>
struct Q45KDec {
  static constexpr size_t kBytes = kFive ? sizeof(BlockQ5_K) : sizeof(BlockQ4_K);
  static constexpr int kOffset = 0;  // correction c not a multiple of A()
  const uint8_t* qs;
  const uint8_t* qh;
  __m512i sc;  // int16 lanes 0..7: the 8 sub-block scales
  __m512 c;    // c_g = dmin * m[g / 2]
  __m512 a_;   // BeginI only: a_g = d * sc[g / 2]
  float d_;

  // For KInterleaved (Q4_K): qs, c and a_ only, the scales unpacked with vector ops.
  HERD_INLINE void BeginI(const uint8_t* p) {
    static_assert(!kFive);
    qs = p + 16;
    const __m512i b = _mm512_cvtepu8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 4)));
    const __m512i lo = _mm512_and_si512(
        _mm512_srlv_epi32(_mm512_permutexvar_epi32(_mm512_load_si512(kQ4KLoIdx), b), _mm512_load_si512(kQ4KLoShift)),
        _mm512_load_si512(kQ4KLoMask));
    const __m512i hi = _mm512_srli_epi32(_mm512_permutexvar_epi32(_mm512_load_si512(kQ4KHiIdx), b), 2);
    const __m512i v = _mm512_ternarylogic_epi32(lo, hi, _mm512_load_si512(kQ4KHiMask), 0xF8);  // lo | (hi & mask)
    const __m128 dm = _mm_cvtph_ps(_mm_loadu_si32(p));                                         // d, dmin
    const __m512 dd = _mm512_permutexvar_ps(_mm512_load_si512(kBlockIdx), _mm512_zextps128_ps512(dm));
    const __m512 prod = _mm512_mul_ps(_mm512_cvtepi32_ps(v), dd);  // d * sc_j, dmin * m_j
    a_ = _mm512_permutexvar_ps(_mm512_load_si512(kHalfIdx), prod);
    c = _mm512_permutexvar_ps(_mm512_load_si512(kHalfIdxHi), prod);
  }
  HERD_INLINE __m512 AI() const { return a_; }

  HERD_INLINE void Begin(const uint8_t* p) {
    d_ = HalfAt(p);
    const float dmin = HalfAt(p + 2);
    uint32_t u[4];
    std::memcpy(u, p + 4, 12);
    // Unpack 12 bytes of 6-bit values: bytes 0-7 scales, 8-15 mins.
    u[3] = ((u[2] >> 4) & 0x0f0f0f0f) | (((u[1] >> 6) & 0x03030303) << 4);
    const uint32_t mins_lo = u[1] & 0x3f3f3f3f;
    u[1] = (u[2] & 0x0f0f0f0f) | (((u[0] >> 6) & 0x03030303) << 4);
    u[2] = mins_lo;
    u[0] &= 0x3f3f3f3f;
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(u));
    sc = _mm512_zextsi128_si512(_mm_cvtepu8_epi16(b));
    const __m512 m = _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_srli_si128(b, 8)));
    c = _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_load_si512(kHalfIdx), m), _mm512_set1_ps(dmin));
    qh = p + 16;
    qs = p + (kFive ? 48 : 16);
  }
  HERD_INLINE __m512i Codes(int k) const {
    const __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * k)));
    __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(v, 0xFFFF0000u, v, 4), _mm512_set1_epi8(0x0F));
    if constexpr (kFive) {
      const __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh)));
      const __m512i bit =
          _mm512_mask_blend_epi8(0xFFFFFFFF00000000ull, _mm512_set1_epi8(static_cast<char>(1 << (2 * k))),
                                 _mm512_set1_epi8(static_cast<char>(1 << (2 * k + 1))));
      q = _mm512_mask_add_epi8(q, _mm512_test_epi8_mask(h, bit), q, _mm512_set1_epi8(16));
    }
    return q;
  }
  // Chunk k holds sub-blocks 2k (int16 lanes 0-15) and 2k+1 (lanes 16-31).
  HERD_INLINE __m512i Scales(int k) const {
    return _mm512_permutexvar_epi16(
        _mm512_add_epi16(_mm512_load_si512(kPairIdx), _mm512_set1_epi16(static_cast<int16_t>(2 * k))), sc);
  }
  HERD_INLINE float d() const { return d_; }
  HERD_INLINE __m512 C(int) const { return c; }
  // d * scale of each group of 16 (the packed path's a).
  HERD_INLINE __m512 A() const {
    const __m512 s = _mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(sc)));
    return _mm512_mul_ps(_mm512_permutexvar_ps(_mm512_load_si512(kHalfIdx), s), _mm512_set1_ps(d_));
  }
  // Step v of the interleaved order (ActLayout): lane g = elements 16g + 4v .. +3, i.e. the
  // dword 8(g/4) + 4(g%2) + v of qs, high nibble where g & 2. Q4_K only. 3 ops.
  HERD_INLINE __m512i ICodes(int v) const {
    static_assert(!kFive);
    const __m512i lo = _mm512_loadu_si512(qs), hi = _mm512_loadu_si512(qs + 64);
    const __m512i idx = _mm512_add_epi32(_mm512_setr_epi32(0, 4, 0, 4, 8, 12, 8, 12, 16, 20, 16, 20, 24, 28, 24, 28),
                                         _mm512_set1_epi32(v));
    const __m512i q = _mm512_permutex2var_epi32(lo, idx, hi);
    return _mm512_and_si512(_mm512_mask_srli_epi32(q, 0xCCCC, q, 4), _mm512_set1_epi8(0x0F));
  }
};

// Q6_K: ql[128] low nibbles, qh[64] 2 high bits, 16 int8 scales, d. Chunk pair n (k = 2n, 2n+1)
// reads ql[64n..64n+63] and qh[32n..32n+31]: chunk 2n = low nibbles | qh bits 0-1 (first 32)
// and bits 2-3 (next 32), chunk 2n+1 = high nibbles | bits 4-5, 6-7.
struct Q6KDec {
  static constexpr size_t kBytes = sizeof(BlockQ6_K);
  static constexpr int kOffset = 32;  // c = 32 * A()
  const uint8_t* p_;
  __m512i sc;  // int16 lanes 0..15: the group scales
  __m512 c;    // c_g = 32 * d * sc_g
  float d_;

  HERD_INLINE void Begin(const uint8_t* p) {
    p_ = p;
    d_ = HalfAt(p + 208);
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 192));
    sc = _mm512_zextsi256_si512(_mm256_cvtepi8_epi16(s8));
    c = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(s8)), _mm512_set1_ps(32.f * d_));
  }
  HERD_INLINE __m512i Codes(int k) const {
    const int n = k >> 1;
    const __m512i l = _mm512_loadu_si512(p_ + 64 * n);
    const __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p_ + 128 + 32 * n)));
    const __m512i hs = _mm512_mask_srli_epi16(h, 0xFFFF0000u, h, 2);  // [qh, qh >> 2]
    const __m512i base = (k & 1) ? _mm512_srli_epi16(l, 4) : l;
    const __m512i high = (k & 1) ? hs : _mm512_slli_epi16(hs, 4);
    // (base & 0x0F) | (high & ~0x0F), then keep 6 bits.
    const __m512i q = _mm512_ternarylogic_epi32(base, high, _mm512_set1_epi8(0x0F), 0xE4);
    return _mm512_and_si512(q, _mm512_set1_epi8(0x3F));
  }
  HERD_INLINE __m512i Scales(int k) const {
    return _mm512_permutexvar_epi16(
        _mm512_add_epi16(_mm512_load_si512(kGroupIdx), _mm512_set1_epi16(static_cast<int16_t>(4 * k))), sc);
  }
  HERD_INLINE float d() const { return d_; }
  HERD_INLINE __m512 C(int) const { return c; }
  HERD_INLINE __m512 A() const {
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(sc))), _mm512_set1_ps(d_));
  }
  HERD_INLINE void BeginI(const uint8_t* p) { Begin(p); }
  HERD_INLINE __m512 AI() const { return A(); }
  // Step v of the interleaved order: lane g = elements 16g + 4v .. +3 = chunk g/4, offset
  // m = 16(g%4) + 4v: ql dword 16(g/8) + 4(g%4) + v (high nibble where g & 4) and qh dword
  // 8(g/8) + 4(g%2) + v, bits s = 4((g>>2)&1) + 2((g>>1)&1) rotated to bits 4-5. 6 ops.
  HERD_INLINE __m512i ICodes(int v) const {
    const __m512i lo = _mm512_loadu_si512(p_), hi = _mm512_loadu_si512(p_ + 64);
    const __m512i qh = _mm512_loadu_si512(p_ + 128);
    const __m512i vv = _mm512_set1_epi32(v);
    const __m512i il =
        _mm512_add_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 4, 8, 12, 16, 20, 24, 28, 16, 20, 24, 28), vv);
    const __m512i ih = _mm512_add_epi32(_mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 8, 12, 8, 12, 8, 12, 8, 12), vv);
    const __m512i rot = _mm512_setr_epi32(4, 4, 2, 2, 0, 0, 30, 30, 4, 4, 2, 2, 0, 0, 30, 30);
    __m512i l = _mm512_permutex2var_epi32(lo, il, hi);
    l = _mm512_mask_srli_epi32(l, 0xF0F0, l, 4);
    const __m512i h = _mm512_rolv_epi32(_mm512_permutexvar_epi32(ih, qh), rot);
    // (l & 0x0F) | (h & 0xF0), then keep 6 bits.
    return _mm512_and_si512(_mm512_ternarylogic_epi32(l, h, _mm512_set1_epi8(0x0F), 0xE4), _mm512_set1_epi8(0x3F));
  }
};

// Q2_K (kThree = false) and Q3_K: 2-bit codes, element 128n + 32j + l = (qs[32n + l] >> 2j) & 3
// (+ 4 * bit 4n + j of hmask[l] for Q3_K); 16 groups of 16 with their own scales.
// Chunk k: n = k / 2, j = 2 (k & 1) for its first 32 elements and j + 1 for the next 32.
template <bool kThree>
struct Q23KDec {
  static constexpr size_t kBytes = kThree ? sizeof(BlockQ3_K) : sizeof(BlockQ2_K);
  static constexpr size_t kQsOff = kThree ? 32 : 16;
  const uint8_t* p_;
  __m512i sc;  // int16 lanes 0..15: group scales (Q3_K: already minus 32)
  __m512 c;
  float d_;

  HERD_INLINE void Begin(const uint8_t* p) {
    p_ = p;
    __m128i s8;
    if constexpr (kThree) {
      d_ = HalfAt(p + 108);
      uint32_t aux[3], a[4];
      std::memcpy(aux, p + 96, 12);
      a[0] = (aux[0] & 0x0f0f0f0f) | (((aux[2] >> 0) & 0x03030303) << 4);
      a[1] = (aux[1] & 0x0f0f0f0f) | (((aux[2] >> 2) & 0x03030303) << 4);
      a[2] = ((aux[0] >> 4) & 0x0f0f0f0f) | (((aux[2] >> 4) & 0x03030303) << 4);
      a[3] = ((aux[1] >> 4) & 0x0f0f0f0f) | (((aux[2] >> 6) & 0x03030303) << 4);
      s8 = _mm_sub_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a)), _mm_set1_epi8(32));
      sc = _mm512_zextsi256_si512(_mm256_cvtepi8_epi16(s8));
      c = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(s8)), _mm512_set1_ps(4.f * d_));
    } else {
      d_ = HalfAt(p + 80);
      const __m128i raw = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      s8 = _mm_and_si128(raw, _mm_set1_epi8(0x0F));
      sc = _mm512_zextsi256_si512(_mm256_cvtepu8_epi16(s8));
      const __m128i m8 = _mm_and_si128(_mm_srli_epi16(raw, 4), _mm_set1_epi8(0x0F));
      c = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(m8)), _mm512_set1_ps(HalfAt(p + 82)));
    }
  }
  HERD_INLINE __m512i Codes(int k) const {
    const int n = k >> 1, j0 = 2 * (k & 1);
    const __m512i v =
        _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p_ + kQsOff + 32 * n)));
    __m512i z = j0 ? _mm512_srli_epi16(v, 2 * j0) : v;
    z = _mm512_and_si512(_mm512_mask_srli_epi16(z, 0xFFFF0000u, z, 2), _mm512_set1_epi8(3));
    if constexpr (kThree) {
      const __m512i h = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p_)));
      const __m512i bit =
          _mm512_mask_blend_epi8(0xFFFFFFFF00000000ull, _mm512_set1_epi8(static_cast<char>(1 << (4 * n + j0))),
                                 _mm512_set1_epi8(static_cast<char>(1 << (4 * n + j0 + 1))));
      z = _mm512_mask_add_epi8(z, _mm512_test_epi8_mask(h, bit), z, _mm512_set1_epi8(4));
    }
    return z;
  }
  HERD_INLINE __m512i Scales(int k) const {
    return _mm512_permutexvar_epi16(
        _mm512_add_epi16(_mm512_load_si512(kGroupIdx), _mm512_set1_epi16(static_cast<int16_t>(4 * k))), sc);
  }
  HERD_INLINE float d() const { return d_; }
  HERD_INLINE __m512 C(int) const { return c; }
  HERD_INLINE __m512 A() const {
    return _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi16_epi32(_mm512_castsi512_si256(sc))), _mm512_set1_ps(d_));
  }
  // Step v of the interleaved order: lane g = elements 16g + 4v .. +3 = chunk g/4, offset
  // m = 16(g%4) + 4v: ql dword 16(g/8) + 4(g%4) + v (high nibble where g & 4) and qh dword
  // 8(g/8) + 4(g%2) + v, bits s = 4((g>>2)&1) + 2((g>>1)&1) rotated to bits 4-5. 6 ops.
  HERD_INLINE __m512i ICodes(int v) const {
    const __m512i lo = _mm512_loadu_si512(p_), hi = _mm512_loadu_si512(p_ + 64);
    const __m512i qh = _mm512_loadu_si512(p_ + 128);
    const __m512i vv = _mm512_set1_epi32(v);
    const __m512i il =
        _mm512_add_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 4, 8, 12, 16, 20, 24, 28, 16, 20, 24, 28), vv);
    const __m512i ih = _mm512_add_epi32(_mm512_setr_epi32(0, 4, 0, 4, 0, 4, 0, 4, 8, 12, 8, 12, 8, 12, 8, 12), vv);
    const __m512i rot = _mm512_setr_epi32(4, 4, 2, 2, 0, 0, 30, 30, 4, 4, 2, 2, 0, 0, 30, 30);
    __m512i l = _mm512_permutex2var_epi32(lo, il, hi);
    l = _mm512_mask_srli_epi32(l, 0xF0F0, l, 4);
    const __m512i h = _mm512_rolv_epi32(_mm512_permutexvar_epi32(ih, qh), rot);
    // (l & 0x0F) | (h & 0xF0), then keep 6 bits.
    return _mm512_and_si512(_mm512_ternarylogic_epi32(l, h, _mm512_set1_epi8(0x0F), 0xE4), _mm512_set1_epi8(0x3F));
  }
};

// Legacy 32-blocks (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) over a span of 8 blocks; partial spans
// (row tails) go through the portable decoder.
template <DType T>
struct LegacyDec {
  static constexpr size_t kBytes = BlockBytes(T);
  static constexpr bool kSigned = false;
  static constexpr bool kQ8 = T == DType::kQ8_0;
  static constexpr bool kHasM = T == DType::kQ4_1 || T == DType::kQ5_1;
  static constexpr bool kHasH = T == DType::kQ5_0 || T == DType::kQ5_1;
  static constexpr size_t kQhOff = kHasM ? 4 : 2;
  static constexpr size_t kQsOff = kQhOff + (kHasH ? 4 : 0);
  const uint8_t* p_;
  bool full_;
  __m512 d16;  // lanes 0..7: block scales
  __m512 c;
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
    const __m256 d8 = _mm256_cvtph_ps(Halves(p));
    d16 = _mm512_zextps256_ps512(d8);
    __m512 c8;
    if constexpr (kHasM) {
      c8 = _mm512_zextps256_ps512(_mm256_sub_ps(_mm256_setzero_ps(), _mm256_cvtph_ps(Halves(p + 2))));
    } else {
      constexpr float kOffset = kQ8 ? 128.f : (kHasH ? 16.f : 8.f);
      c8 = _mm512_mul_ps(d16, _mm512_set1_ps(kOffset));
    }
    c = _mm512_permutexvar_ps(_mm512_load_si512(kHalfIdx), c8);
  }
  HERD_INLINE __m512i Codes(int k) const {
    if (!full_) return slow_.Codes(k);
    const uint8_t* b0 = p_ + kBytes * 2 * k;
    const uint8_t* b1 = b0 + kBytes;
    if constexpr (kQ8) {
      const __m512i z =
          _mm512_inserti64x4(_mm512_zextsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(b0 + 2))),
                             _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b1 + 2)), 1);
      return _mm512_xor_si512(z, _mm512_set1_epi8(static_cast<char>(0x80)));
    } else {
      // [qs0, qs0, qs1, qs1]: two broadcast loads and one insert.
      const __m512i z = _mm512_inserti64x4(
          _mm512_castsi256_si512(
              _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b0 + kQsOff)))),
          _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b1 + kQsOff))), 1);
      __m512i q = _mm512_and_si512(_mm512_mask_srli_epi16(z, 0xFF00FF00u, z, 4), _mm512_set1_epi8(0x0F));
      if constexpr (kHasH) {
        uint32_t h0, h1;
        std::memcpy(&h0, b0 + kQhOff, 4);
        std::memcpy(&h1, b1 + kQhOff, 4);
        const __mmask64 m = static_cast<__mmask64>(h0) | (static_cast<__mmask64>(h1) << 32);
        q = _mm512_mask_add_epi8(q, m, q, _mm512_set1_epi8(16));
      }
      return q;
    }
  }
  HERD_INLINE __m512 DVec() const { return full_ ? d16 : slow_.DVec(); }
  HERD_INLINE __m512 C(int h) const { return full_ ? c : slow_.C(h); }
  HERD_INLINE __m512 A() const { return _mm512_permutexvar_ps(_mm512_load_si512(kHalfIdx), d16); }
  HERD_INLINE bool full() const { return full_; }
};

// Q4_0 in place against natural-order activations (the few-token path). The 16 qs bytes of
// 4 blocks fill one vector q (a load and 3 inserts): q & 15 holds elements 0-15 of each
// block, q >> 4 elements 16-31; the activations are permuted to match with one vpermt2q per 64
// bytes, shared by the R rows. Two vpdpbusd per 4 blocks leave 4 int32 lanes per block, so a
// span of 8 blocks costs 2 int->float conversions and 2 FMAs per (row, token) instead of 4.
// The -8 offset is the usual correction (c = 8 d per group of 16). Full spans only; a partial
// last span (n_in % 256 != 0) goes through LQuant.
struct Q40Direct {
  static constexpr size_t kB = sizeof(BlockQ4_0);
  static_assert(kB == 18);
  // Word indices of the 8 block scales inside [p, p + 128).
  alignas(64) static constexpr int16_t kDIdx[32] = {0, 9, 18, 27, 36, 45, 54, 63};
  alignas(64) static constexpr int32_t kQuadIdx[32] = {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3,
                                                       4, 4, 4, 4, 5, 5, 5, 5, 6, 6, 6, 6, 7, 7, 7, 7};

  template <int R, int C>
  static void Tile(const KernelArgs& a, int64_t r, int64_t t) {
    const int64_t n_blocks = a.n_in / 32;
    const int64_t full = n_blocks / 8;
    const int64_t u1 = a.u1 < 0 ? (n_blocks + 7) / 8 : a.u1;
    const int64_t ue = std::min(u1, full);
    ActRow x[C];
    for (int j = 0; j < C; ++j) x[j] = GetActRow(a, t + j);
    __m512 acc[R][C];
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) acc[i][j] = _mm512_setzero_ps();
    const __m512i d_idx = _mm512_load_si512(kDIdx);
    const __m512i quad0 = _mm512_load_si512(kQuadIdx);
    const __m512i quad1 = _mm512_load_si512(kQuadIdx + 16);
    const __m512i lo_idx = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13);
    const __m512i hi_idx = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    const uint8_t* rows[R];
    for (int i = 0; i < R; ++i) rows[i] = a.w + static_cast<size_t>(r + i - a.w_row0) * a.w_stride;
    for (int64_t span = a.u0; span < ue; ++span) {
      __m512 dw[R], c[R];
      __m512i lo[R][2], hi[R][2];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = rows[i] + span * 8 * kB;
        Prefetch<Q40Direct, 8 * kB>(p + R * a.w_stride);
        const __m512i l0 = _mm512_loadu_si512(p);
        const __m512i l1 = _mm512_loadu_si512(p + 64);
        dw[i] =
            _mm512_zextps256_ps512(_mm256_cvtph_ps(_mm512_castsi512_si128(_mm512_permutex2var_epi16(l0, d_idx, l1))));
        c[i] = _mm512_permutexvar_ps(_mm512_load_si512(kHalfIdx), _mm512_mul_ps(dw[i], _mm512_set1_ps(8.f)));
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const uint8_t* q = p + h * 4 * kB;
          __m512i z = _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 2)));
          z = _mm512_inserti32x4(z, _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + kB + 2)), 1);
          z = _mm512_inserti32x4(z, _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 2 * kB + 2)), 2);
          z = _mm512_inserti32x4(z, _mm_loadu_si128(reinterpret_cast<const __m128i*>(q + 3 * kB + 2)), 3);
          lo[i][h] = _mm512_and_si512(z, m4);
          hi[i][h] = _mm512_and_si512(_mm512_srli_epi16(z, 4), m4);
        }
      }
#pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        const int8_t* xq = x[j].q + span * 256;
        const __m512 dx = _mm512_zextps256_ps512(_mm256_loadu_ps(x[j].d + span * 8));
        const float* s = x[j].s + span * 16;
#pragma GCC unroll 2
        for (int h = 0; h < 2; ++h) {
          const __m512i x0 = _mm512_loadu_si512(xq + 128 * h);
          const __m512i x1 = _mm512_loadu_si512(xq + 128 * h + 64);
          const __m512i xl = _mm512_permutex2var_epi64(x0, lo_idx, x1);
          const __m512i xh = _mm512_permutex2var_epi64(x0, hi_idx, x1);
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) {
            const __m512i p =
                _mm512_dpbusd_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), lo[i][h], xl), hi[i][h], xh);
            const __m512 dd = _mm512_permutexvar_ps(h ? quad1 : quad0, _mm512_mul_ps(dw[i], dx));
            acc[i][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), dd, acc[i][j]);
          }
        }
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) acc[i][j] = _mm512_fnmadd_ps(c[i], _mm512_loadu_ps(s), acc[i][j]);
      }
    }
    Store<V, R, C>(a, r, t, acc);
    if (u1 > full) {  // the partial last span
      KernelArgs b = a;
      b.u0 = std::max(a.u0, full);
      b.accumulate = true;
      LQuant<V, LegacyDec<DType::kQ4_0>>::Tile<R, C>(b, r, t);
    }
  }
};

// Natural-order codes of one span (4 chunks of 64) -> IPacked order: a 4 x 4 transpose of
// 32-bit units inside each chunk, then a 4 x 4 transpose of 128-bit lanes across chunks.
HERD_INLINE void InterleaveStore(const __m512i (&z)[4], uint8_t* q) {
  const __m512i idx = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  __m512i t[4];
  for (int c = 0; c < 4; ++c) t[c] = _mm512_permutexvar_epi32(idx, z[c]);
  const __m512i u0 = _mm512_shuffle_i32x4(t[0], t[1], 0x44);
  const __m512i u1 = _mm512_shuffle_i32x4(t[0], t[1], 0xEE);
  const __m512i u2 = _mm512_shuffle_i32x4(t[2], t[3], 0x44);
  const __m512i u3 = _mm512_shuffle_i32x4(t[2], t[3], 0xEE);
  _mm512_store_si512(q, _mm512_shuffle_i32x4(u0, u2, 0x88));
  _mm512_store_si512(q + 64, _mm512_shuffle_i32x4(u0, u2, 0xDD));
  _mm512_store_si512(q + 128, _mm512_shuffle_i32x4(u1, u3, 0x88));
  _mm512_store_si512(q + 192, _mm512_shuffle_i32x4(u1, u3, 0xDD));
}

// Packers for the interleaved path built on the register decoders above.
template <class Dec>
struct KSimdPacker {
  static void PackRow(const uint8_t* row, int64_t, int64_t u0, int64_t u1, IPacked* out) {
    Dec dec;
    for (int64_t sb = u0; sb < u1; ++sb) {
      dec.Begin(row + sb * Dec::kBytes);
      const __m512i z[4] = {dec.Codes(0), dec.Codes(1), dec.Codes(2), dec.Codes(3)};
      IPacked& o = out[sb - u0];
      InterleaveStore(z, o.q);
      _mm512_store_ps(o.a, dec.A());
      _mm512_storeu_ps(o.b, dec.C(0));
    }
  }
};

template <DType T>
struct LSimdPacker {
  static void PackRow(const uint8_t* row, int64_t n_in, int64_t u0, int64_t u1, IPacked* out) {
    LegacyDec<T> dec;
    const int64_t n_blocks = n_in / 32;
    for (int64_t span = u0; span < u1; ++span) {
      const int nb = static_cast<int>(std::min<int64_t>(8, n_blocks - span * 8));
      const uint8_t* p = row + span * 8 * LegacyDec<T>::kBytes;
      IPacked& o = out[span - u0];
      if (nb < 8) {
        PackSpanL<T, V::kUnsignedQ8>(p, nb, &o);
        continue;
      }
      dec.Begin(p, nb);
      const __m512i z[4] = {dec.Codes(0), dec.Codes(1), dec.Codes(2), dec.Codes(3)};
      InterleaveStore(z, o.q);
      _mm512_store_ps(o.a, dec.A());
      _mm512_storeu_ps(o.b, dec.C(0));
    }
  }
};

}  // namespace herd::cpu::internal::avx512
