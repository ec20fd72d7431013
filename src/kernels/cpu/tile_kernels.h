// Register-tiled matmul kernels written once against a small vector interface V, instantiated
// by each ISA file (AVX-512, AVX2, NEON) inside its own namespace HERD_ISA_NS. Internal.
//
// V provides: W (int8 lanes per chunk, divides 256), FL (float lanes, divides 16),
// kUnsignedQ8 (Q8_0 codes biased to u8 and DotL = u8 x s8, else signed codes and DotSS),
// types B (byte vector), I (int32 accumulator), S (K scale vector), F (float vector) and
//   LoadB, ZeroI, DotK(acc, w, x, sc): acc += sum over pairs of sc * (w * x)   (w u8, x s8)
//   DotL(w, x) / DotSS(w, x): int32 lanes of 4-byte dot products (u8 x s8 / s8 x s8)
//   KScales(sc16, k): scale vector for chunk k from the 16 int16 group scales
//   BlockScale(d8, k): float lanes matching DotL's lanes for chunk k, from 8 block scales
//   Cvt, Fma(a, b, c) = a*b + c, Fnma(a, b, c) = c - a*b, Mul, Set1, LoadF, ZeroF, HSum.
//
// Work split: a kernel call owns weight rows [r0, r1) and every token. Rows go in blocks that
// fit in L2 (so a prompt reads each weight once from memory); inside a block, R x C register
// tiles (R rows x C tokens) run over the whole row, so each decoded weight chunk is used C
// times and each activation chunk R times.
#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "kernels/cpu/kernel_set.h"

#ifndef HERD_ISA_NS
#error "define HERD_ISA_NS before including tile_kernels.h"
#endif

#define HERD_INLINE inline __attribute__((always_inline))

namespace herd::cpu::internal::HERD_ISA_NS {

// ---- Decoders over the portable decode (any type, any V). ----
template <class V, DType T>
struct PortableKDec {
  static constexpr size_t kBytes = BlockBytes(T);
  KDecoded dec;
  HERD_INLINE void Begin(const uint8_t* p) { DecodeK<T>(p, &dec); }
  HERD_INLINE typename V::B Codes(int k) const { return V::LoadB(dec.q + k * V::W); }
  HERD_INLINE typename V::S Scales(int k) const { return V::KScales(dec.sc, k); }
  HERD_INLINE float d() const { return dec.d; }
  HERD_INLINE typename V::F C(int h) const { return V::LoadF(dec.c + h * V::FL); }
};

template <class V, DType T>
struct PortableLDec {
  static constexpr size_t kBytes = BlockBytes(T);
  static constexpr bool kSigned = T == DType::kQ8_0 && !V::kUnsignedQ8;
  LDecoded dec;
  HERD_INLINE void Begin(const uint8_t* p, int nb) { DecodeL<T, V::kUnsignedQ8>(p, nb, &dec); }
  HERD_INLINE typename V::B Codes(int k) const { return V::LoadB(dec.q + k * V::W); }
  HERD_INLINE typename V::F DScale(int k) const { return V::BlockScale(dec.d, k); }
  HERD_INLINE typename V::F C(int h) const { return V::LoadF(dec.c + h * V::FL); }
};

// Activation row pointers of one token.
struct ActRow {
  const int8_t* q;
  const float* d;
  const float* s;
};
HERD_INLINE ActRow GetActRow(const KernelArgs& a, int64_t t) {
  const uint8_t* row = a.act + static_cast<size_t>(t) * a.layout.stride;
  return {reinterpret_cast<const int8_t*>(row), reinterpret_cast<const float*>(row + a.layout.d_off),
          reinterpret_cast<const float*>(row + a.layout.s_off)};
}

// acc -= sum_g c_g * s_g over the 16 groups of one 256-element span.
template <class V, class Dec>
HERD_INLINE typename V::F Correct(typename V::F acc, const Dec& dec, const float* s) {
#pragma GCC unroll 4
  for (int h = 0; h < 16 / V::FL; ++h) acc = V::Fnma(dec.C(h), V::LoadF(s + h * V::FL), acc);
  return acc;
}

// ---- K-quants: one int32 accumulator per (row, token) and super-block. ----
template <class V, class Dec>
struct KQuant {
  template <int R, int C>
  static void Tile(const KernelArgs& a, int64_t r, int64_t t) {
    using F = typename V::F;
    using I = typename V::I;
    constexpr int kChunks = 256 / V::W;
    ActRow x[C];
    for (int j = 0; j < C; ++j) x[j] = GetActRow(a, t + j);
    F acc[R][C];
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) acc[i][j] = V::ZeroF();
    Dec dec[R];
    const int64_t nsb = a.n_in / 256;
    for (int64_t sb = 0; sb < nsb; ++sb) {
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) dec[i].Begin(a.w + static_cast<size_t>(r + i) * a.w_stride + sb * Dec::kBytes);
      I isum[R][C];
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) isum[i][j] = V::ZeroI();
#pragma GCC unroll 16
      for (int k = 0; k < kChunks; ++k) {
        typename V::B w[R];
        typename V::S sc[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          w[i] = dec[i].Codes(k);
          sc[i] = dec[i].Scales(k);
        }
#pragma GCC unroll 8
        for (int j = 0; j < C; ++j) {
          const typename V::B xv = V::LoadB(x[j].q + sb * 256 + k * V::W);
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) isum[i][j] = V::DotK(isum[i][j], w[i], xv, sc[i]);
        }
      }
#pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        const float dx = x[j].d[sb];
        const float* s = x[j].s + sb * 16;
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          acc[i][j] = V::Fma(V::Cvt(isum[i][j]), V::Set1(dec[i].d() * dx), acc[i][j]);
          acc[i][j] = Correct<V>(acc[i][j], dec[i], s);
        }
      }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) a.y[(t + j) * a.ldy + r + i] = V::HSum(acc[i][j]);
  }
};

// ---- Legacy 32-blocks: float scale per block, spans of 8 blocks (256 elements). ----
template <class V, class Dec>
struct LQuant {
  template <int R, int C>
  static void Tile(const KernelArgs& a, int64_t r, int64_t t) {
    using F = typename V::F;
    constexpr int kChunks = 256 / V::W;
    ActRow x[C];
    for (int j = 0; j < C; ++j) x[j] = GetActRow(a, t + j);
    F acc[R][C];
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) acc[i][j] = V::ZeroF();
    Dec dec[R];
    const int64_t n_blocks = a.n_in / 32;
    for (int64_t span = 0; span * 8 < n_blocks; ++span) {
      const int nb = static_cast<int>(std::min<int64_t>(8, n_blocks - span * 8));
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i)
        dec[i].Begin(a.w + static_cast<size_t>(r + i) * a.w_stride + span * 8 * Dec::kBytes, nb);
      const int kc = nb == 8 ? kChunks : (nb * 32 + V::W - 1) / V::W;
#pragma GCC unroll 16
      for (int k = 0; k < kc; ++k) {
        typename V::B w[R];
        F dw[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          w[i] = dec[i].Codes(k);
          dw[i] = dec[i].DScale(k);
        }
#pragma GCC unroll 8
        for (int j = 0; j < C; ++j) {
          const typename V::B xv = V::LoadB(x[j].q + span * 256 + k * V::W);
          const F dx = V::BlockScale(x[j].d + span * 8, k);
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) {
            const typename V::I p = Dec::kSigned ? V::DotSS(w[i], xv) : V::DotL(w[i], xv);
            acc[i][j] = V::Fma(V::Cvt(p), V::Mul(dw[i], dx), acc[i][j]);
          }
        }
      }
#pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        const float* s = x[j].s + span * 16;
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) acc[i][j] = Correct<V>(acc[i][j], dec[i], s);
      }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) a.y[(t + j) * a.ldy + r + i] = V::HSum(acc[i][j]);
  }
};

// ---- Float weights (F32, F16, BF16) against float activations. ----
// FDec provides Load(row, k) -> F (FL elements from element k) and kElemBytes.
template <class V, class FDec>
struct FloatW {
  template <int R, int C>
  static void Tile(const KernelArgs& a, int64_t r, int64_t t) {
    using F = typename V::F;
    const float* x[C];
    for (int j = 0; j < C; ++j)
      x[j] = reinterpret_cast<const float*>(a.act + static_cast<size_t>(t + j) * a.layout.stride);
    const uint8_t* w[R];
    for (int i = 0; i < R; ++i) w[i] = a.w + static_cast<size_t>(r + i) * a.w_stride;
    F acc[R][C];
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) acc[i][j] = V::ZeroF();
    const int64_t n = a.n_in;
    int64_t k = 0;
    for (; k + V::FL <= n; k += V::FL) {
      F wv[R];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) wv[i] = FDec::Load(w[i] + k * FDec::kElemBytes);
#pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        const F xv = V::LoadF(x[j] + k);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) acc[i][j] = V::Fma(wv[i], xv, acc[i][j]);
      }
    }
    if (k < n) {  // tail: copy into zero-padded buffers
      const int rem = static_cast<int>(n - k);
      alignas(64) uint8_t wbuf[V::FL * 4];
      alignas(64) float xbuf[V::FL];
      F wv[R];
      for (int i = 0; i < R; ++i) {
        std::fill(wbuf, wbuf + sizeof(wbuf), uint8_t{0});
        std::copy(w[i] + k * FDec::kElemBytes, w[i] + n * FDec::kElemBytes, wbuf);
        wv[i] = FDec::Load(wbuf);
      }
      for (int j = 0; j < C; ++j) {
        std::fill(xbuf, xbuf + V::FL, 0.f);
        std::copy(x[j] + k, x[j] + k + rem, xbuf);
        const F xv = V::LoadF(xbuf);
        for (int i = 0; i < R; ++i) acc[i][j] = V::Fma(wv[i], xv, acc[i][j]);
      }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) a.y[(t + j) * a.ldy + r + i] = V::HSum(acc[i][j]);
  }
};

// ---- Row-range driver: L2 row blocks x token tiles x register tiles. ----
// K::Tile<R, C> for the main tile, <1, C> for row tails, <R, 1>/<1, 1> for token tails.
template <class K, int R, int C, int R1 = R>
void RunRows(const KernelArgs& a, int64_t r0, int64_t r1) {
  const int64_t fit = static_cast<int64_t>((512u << 10) / std::max<size_t>(a.w_stride, 1));
  const int64_t rb_rows = std::max<int64_t>(R, fit / R * R);
  for (int64_t rb = r0; rb < r1; rb += rb_rows) {
    const int64_t re = std::min(r1, rb + rb_rows);
    int64_t t = 0;
    for (; t + C <= a.n_tok; t += C) {
      int64_t r = rb;
      for (; r + R <= re; r += R) K::template Tile<R, C>(a, r, t);
      for (; r < re; ++r) K::template Tile<1, C>(a, r, t);
    }
    for (; t < a.n_tok; ++t) {
      int64_t r = rb;
      for (; r + R1 <= re; r += R1) K::template Tile<R1, 1>(a, r, t);
      for (; r < re; ++r) K::template Tile<1, 1>(a, r, t);
    }
  }
}

}  // namespace herd::cpu::internal::HERD_ISA_NS
