// aarch64 NEON kernel set (armv8.2-a + dotprod): int8 dot products with sdot (vdotq_s32).
// Compiled only for aarch64; tested under qemu-aarch64 (tests/neon/).
#include <arm_neon.h>

#include <cstring>

#define HERD_ISA_NS neon
#include "kernels/cpu/decode_portable.h"
#include "kernels/cpu/tile_kernels.h"

namespace herd::cpu::internal::neon {
namespace {

struct V {
  static constexpr int W = 16;  // one group of 16 per chunk
  static constexpr int FL = 4;
  static constexpr bool kUnsignedQ8 = false;  // sdot is s8 x s8: codes must stay below 128
  using B = int8x16_t;
  using I = int32x4_t;
  using S = int32x4_t;
  using F = float32x4_t;
  static HERD_INLINE B LoadB(const void* p) { return vld1q_s8(static_cast<const int8_t*>(p)); }
  static HERD_INLINE I ZeroI() { return vdupq_n_s32(0); }
  static HERD_INLINE I DotK(I acc, B w, B x, S sc) { return vmlaq_s32(acc, vdotq_s32(vdupq_n_s32(0), w, x), sc); }
  static HERD_INLINE I DotL(B w, B x) { return vdotq_s32(vdupq_n_s32(0), w, x); }
  static HERD_INLINE I DotSS(B w, B x) { return vdotq_s32(vdupq_n_s32(0), w, x); }
  static HERD_INLINE I DotI(I acc, B w, B x) { return vdotq_s32(acc, w, x); }
  static HERD_INLINE I DotISigned(I acc, B w, B x) { return vdotq_s32(acc, w, x); }
  static HERD_INLINE S KScales(const int16_t* sc16, int k) { return vdupq_n_s32(sc16[k]); }
  // 8 block scales; chunk k is half of block k / 2.
  struct F8 {
    float32x4_t lo, hi;
  };
  static HERD_INLINE F8 LoadF8(const float* p) { return {vld1q_f32(p), vld1q_f32(p + 4)}; }
  static HERD_INLINE F8 Mul8(F8 a, F8 b) { return {vmulq_f32(a.lo, b.lo), vmulq_f32(a.hi, b.hi)}; }
  static HERD_INLINE F ChunkScale(F8 v, int k) {
    float s[8];
    vst1q_f32(s, v.lo);
    vst1q_f32(s + 4, v.hi);
    return vdupq_n_f32(s[k / 2]);
  }
  static HERD_INLINE F Cvt(I v) { return vcvtq_f32_s32(v); }
  static HERD_INLINE F Fma(F a, F b, F c) { return vfmaq_f32(c, a, b); }
  static HERD_INLINE F Fnma(F a, F b, F c) { return vfmsq_f32(c, a, b); }
  static HERD_INLINE F Mul(F a, F b) { return vmulq_f32(a, b); }
  static HERD_INLINE F Set1(float v) { return vdupq_n_f32(v); }
  static HERD_INLINE F LoadF(const float* p) { return vld1q_f32(p); }
  static HERD_INLINE F ZeroF() { return vdupq_n_f32(0); }
  static HERD_INLINE float HSum(F v) { return vaddvq_f32(v); }
};

struct F32Dec {
  static constexpr size_t kElemBytes = 4;
  static HERD_INLINE float32x4_t Load(const uint8_t* p) { return vld1q_f32(reinterpret_cast<const float*>(p)); }
};
struct F16Dec {
  static constexpr size_t kElemBytes = 2;
  static HERD_INLINE float32x4_t Load(const uint8_t* p) {
    return vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p))));
  }
};
struct BF16Dec {
  static constexpr size_t kElemBytes = 2;
  static HERD_INLINE float32x4_t Load(const uint8_t* p) {
    return vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(reinterpret_cast<const uint16_t*>(p)), 16));
  }
};

// The portable decoders cost more than the dot products: from 2 tokens on, each row block is
// decoded once into scratch and reused for every token.
template <DType T>
void KKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  QuantKernel<V, T, KQuant<V, PortableKDec<V, T>>, 2, 4, 2, 2, 3>(a, r0, r1);
}
template <DType T>
void LKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  QuantKernel<V, T, LQuant<V, PortableLDec<V, T>>, 2, 4, 2, 2, 3>(a, r0, r1);
}
template <class D>
void FKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  RunRows<FloatW<V, D>, 4, 4, 4>(a, r0, r1);
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

const KernelSet kSet = {"neon", &Get, 4, &PackMinTok};

}  // namespace
}  // namespace herd::cpu::internal::neon

namespace herd::cpu::internal {
const KernelSet* NeonKernelSet() { return &neon::kSet; }
}  // namespace herd::cpu::internal
