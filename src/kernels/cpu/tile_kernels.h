// Register-tiled matmul kernels written once against a small vector interface V, instantiated
// by each ISA file (AVX-512, AVX2, NEON) inside its own namespace HERD_ISA_NS. Internal.
//
// V provides: W (int8 lanes per chunk, divides 256), FL (float lanes, divides 16),
// kUnsignedQ8 (Q8_0 codes biased to u8 and DotL = u8 x s8, else signed codes and DotSS),
// types B (byte vector), I (int32 accumulator), S (K scale vector), F (float vector) and
//   LoadB, ZeroI, DotK(acc, w, x, sc): acc += sum over pairs of sc * (w * x)   (w u8, x s8)
//   DotL(w, x) / DotSS(w, x): int32 lanes of 4-byte dot products (u8 x s8 / s8 x s8)
//   KScales(sc16, k): scale vector for chunk k from the 16 int16 group scales
//   F8 (8 floats: one per block of a span), LoadF8, Mul8, ChunkScale(f8, k): float lanes
//   matching DotL's lanes for chunk k
//   Cvt, Fma(a, b, c) = a*b + c, Fnma(a, b, c) = c - a*b, Mul, Set1, LoadF, ZeroF, HSum.
//
// Work split: a kernel call owns weight rows [r0, r1) and every token. Rows go in blocks that
// fit in L2 (so a prompt reads each weight once from memory); inside a block, R x C register
// tiles (R rows x C tokens) run over the whole row, so each decoded weight chunk is used C
// times and each activation chunk R times.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernels/cpu/kernel_set.h"

#ifndef HERD_ISA_NS
#error "define HERD_ISA_NS before including tile_kernels.h"
#endif

#define HERD_INLINE inline __attribute__((always_inline))
#define HERD_INLINE_LAMBDA __attribute__((always_inline))

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
  HERD_INLINE typename V::F8 DVec() const { return V::LoadF8(dec.d); }
  HERD_INLINE typename V::F C(int h) const { return V::LoadF(dec.c + h * V::FL); }
};

// One 256-element span of a weight row packed for the interleaved path (any quantized type):
// codes in the interleaved order of ActLayout (byte 64k + 4g + e = element 16g + 4k + e), and
// per group of 16: a = the group's scale (d * sc for K-quants, the block scale for legacy
// types) and b = its correction c. sum_i w_i x_i over the span =
//   sum_g dx_g * a_g * (sum_{i in g} q_i xq_i) - b_g * s_g.
struct IPacked {
  alignas(64) uint8_t q[256];
  alignas(64) float a[16];
  float b[16];
};
static_assert(sizeof(IPacked) == 384);

// Software prefetch of in-place weights: the same unit of the rows of the next R-row tile
// (one tile ahead works for short and long rows; prefetches never fault past the end).
template <class Dec, size_t kBytes>
HERD_INLINE void Prefetch(const uint8_t* p) {
  for (size_t o = 0; o < kBytes; o += 64) __builtin_prefetch(p + o);
}

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

template <class V, int R, int C>
HERD_INLINE void Store(const KernelArgs& a, int64_t r, int64_t t, const typename V::F (&acc)[R][C]) {
  for (int i = 0; i < R; ++i) {
    for (int j = 0; j < C; ++j) {
      float& y = a.y[(t + j) * a.ldy + r + i];
      y = a.accumulate ? y + V::HSum(acc[i][j]) : V::HSum(acc[i][j]);
    }
  }
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
    const int64_t u1 = a.u1 < 0 ? a.n_in / 256 : a.u1;
    for (int64_t sb = a.u0; sb < u1; ++sb) {
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = a.w + static_cast<size_t>(r + i - a.w_row0) * a.w_stride + sb * Dec::kBytes;
        Prefetch<Dec, Dec::kBytes>(p + R * a.w_stride);
        dec[i].Begin(p);
      }
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
    Store<V, R, C>(a, r, t, acc);
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
    const int64_t u1 = a.u1 < 0 ? (n_blocks + 7) / 8 : a.u1;
    for (int64_t span = a.u0; span < u1; ++span) {
      const int nb = static_cast<int>(std::min<int64_t>(8, n_blocks - span * 8));
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = a.w + static_cast<size_t>(r + i - a.w_row0) * a.w_stride + span * 8 * Dec::kBytes;
        Prefetch<Dec, 8 * Dec::kBytes>(p + R * a.w_stride);
        dec[i].Begin(p, nb);
      }
      // Block scale products dw * dx of the span's 8 blocks, per (row, token).
      typename V::F8 dd[R][C];
#pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        const typename V::F8 dx = V::LoadF8(x[j].d + span * 8);
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) dd[i][j] = V::Mul8(dec[i].DVec(), dx);
      }
      auto chunk = [&](int k) HERD_INLINE_LAMBDA {
        typename V::B w[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) w[i] = dec[i].Codes(k);
#pragma GCC unroll 8
        for (int j = 0; j < C; ++j) {
          const typename V::B xv = V::LoadB(x[j].q + span * 256 + k * V::W);
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) {
            const typename V::I p = Dec::kSigned ? V::DotSS(w[i], xv) : V::DotL(w[i], xv);
            acc[i][j] = V::Fma(V::Cvt(p), V::ChunkScale(dd[i][j], k), acc[i][j]);
          }
        }
      };
      if (nb == 8) {
#pragma GCC unroll 16
        for (int k = 0; k < kChunks; ++k) chunk(k);
      } else {
        for (int k = 0; k < (nb * 32 + V::W - 1) / V::W; ++k) chunk(k);
      }
#pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        const float* s = x[j].s + span * 16;
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) acc[i][j] = Correct<V>(acc[i][j], dec[i], s);
      }
    }
    Store<V, R, C>(a, r, t, acc);
  }
};

// ---- Float weights (F32, F16, BF16) against float activations. ----
// FDec provides Load(row, k) -> F (FL elements from element k) and kElemBytes.
// Float weights stream straight from memory at decode; the hardware prefetchers alone left
// 10-15% of the bandwidth unused on the 2-core dev VM. Each row of a tile is prefetched
// kFloatPrefetchBytes ahead, and near its end the same offset of the next tile's row, so a new
// tile does not start cold (F16 1B decode: none 10.2, 1 KiB ahead 11.1, + next tile 11.2-11.3
// tok/s in A/B pairs; 512 B 11.0, 2 KiB 10.3, 4 KiB 10.5; bench/results/cpu-models-2026-11-22.md).
inline constexpr int64_t kFloatPrefetchBytes = 1024;

template <class V, class FDec>
struct FloatW {
  template <int R, int C>
  static void Tile(const KernelArgs& a, int64_t r, int64_t t) {
    using F = typename V::F;
    const float* x[C];
    for (int j = 0; j < C; ++j)
      x[j] = reinterpret_cast<const float*>(a.act + static_cast<size_t>(t + j) * a.layout.stride);
    const uint8_t* w[R];
    for (int i = 0; i < R; ++i) w[i] = a.w + static_cast<size_t>(r + i - a.w_row0) * a.w_stride;
    F acc[R][C];
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) acc[i][j] = V::ZeroF();
    const int64_t n = a.n_in;
    const int64_t row_bytes = n * static_cast<int64_t>(FDec::kElemBytes);
    int64_t k = 0;
    for (; k + V::FL <= n; k += V::FL) {
      F wv[R];
      // Software prefetch (never faults, also past the last row).
      {
        // Past the row's end, the same offset in row i + R (the next tile's row i).
        const int64_t off = k * static_cast<int64_t>(FDec::kElemBytes) + kFloatPrefetchBytes;
        const int64_t jump = off >= row_bytes ? R * static_cast<int64_t>(a.w_stride) - row_bytes : 0;
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) __builtin_prefetch(w[i] + off + jump, 0, 3);
      }
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
    Store<V, R, C>(a, r, t, acc);
  }
};

// ---- Row-range drivers. ----
// Tile<R, rem> for a token remainder rem in [1, CMax].
template <class K, int R, int CMax>
HERD_INLINE void TailTile(const KernelArgs& a, int64_t r, int64_t t, int rem) {
  if constexpr (CMax >= 1) {
    if (rem == CMax) {
      K::template Tile<R, CMax>(a, r, t);
    } else {
      TailTile<K, R, CMax - 1>(a, r, t, rem);
    }
  }
}

// Rows [rb, re) against every token: C-token tiles of R rows, then the row and token tails.
template <class K, int R, int C, int R1>
HERD_INLINE void RunBlock(const KernelArgs& a, int64_t rb, int64_t re) {
  int64_t t = 0;
  for (; t + C <= a.n_tok; t += C) {
    int64_t r = rb;
    for (; r + R <= re; r += R) K::template Tile<R, C>(a, r, t);
    for (; r < re; ++r) K::template Tile<1, C>(a, r, t);
  }
  const int rem = static_cast<int>(a.n_tok - t);
  if (rem >= 2) {  // a last, narrower token tile (not rem passes of single tokens)
    int64_t r = rb;
    for (; r + R <= re; r += R) TailTile<K, R, C - 1>(a, r, t, rem);
    for (; r < re; ++r) TailTile<K, 1, C - 1>(a, r, t, rem);
  } else if (rem == 1) {
    int64_t r = rb;
    for (; r + R1 <= re; r += R1) K::template Tile<R1, 1>(a, r, t);
    for (; r < re; ++r) K::template Tile<1, 1>(a, r, t);
  }
}

// As RunBlock with the loops swapped: an R-row tile stays in L1 while every token passes.
template <class K, int R, int C>
HERD_INLINE void RunBlockRowsOuter(const KernelArgs& a, int64_t rb, int64_t re) {
  const int64_t full = a.n_tok / C * C;
  const int rem = static_cast<int>(a.n_tok - full);
  int64_t r = rb;
  for (; r + R <= re; r += R) {
    for (int64_t t = 0; t < full; t += C) K::template Tile<R, C>(a, r, t);
    if (rem > 0) TailTile<K, R, C - 1>(a, r, full, rem);
  }
  for (; r < re; ++r) {
    for (int64_t t = 0; t < full; t += C) K::template Tile<1, C>(a, r, t);
    if (rem > 0) TailTile<K, 1, C - 1>(a, r, full, rem);
  }
}

// Weights read in place, in row blocks that stay in L2 while the token tiles pass over them.
template <class K, int R, int C, int R1 = R>
void RunRows(const KernelArgs& a, int64_t r0, int64_t r1) {
  const int64_t fit = static_cast<int64_t>((512u << 10) / std::max<size_t>(a.w_stride, 1));
  const int64_t rb_rows = std::max<int64_t>(R, fit / R * R);
  for (int64_t rb = r0; rb < r1; rb += rb_rows) RunBlock<K, R, C, R1>(a, rb, std::min(r1, rb + rb_rows));
}

// Decodes each row block once into a per-thread scratch buffer (Decoded units per row:
// super-blocks or 8-block spans), then runs the tiles of K over it. For many tokens the
// decode cost vanishes and the inner loop is the same for every type.
inline constexpr int64_t kSliceUnits = 8;

// ---- Interleaved path: many tokens. ----
// A whole span accumulates into NI = 16 / FL int32 vectors per (row, token), lane = group.
// Per span and (row, token): 256 / W integer dot instructions + 4 * NI float ops.
// kOffset > 0: the type's correction is b = kOffset * a (legacy types without a minimum:
// Q4_0 8, Q5_0 16, Q8_0 biased to u8 128), folded as a * (dg * isum - kOffset * s_g), one float
// op fewer per (row, token) and span.
template <class V, bool kSigned, int kOffset = 0>
struct IQuant {
  template <int R, int C>
  static void Tile(const KernelArgs& a, int64_t r, int64_t t) {
    using F = typename V::F;
    using I = typename V::I;
    constexpr int NI = 16 / V::FL;
    constexpr int kSteps = 256 / V::W;
    const ActLayout& l = a.layout;
    const int8_t* xq[C];
    const float* xs[C];
    const float* xg[C];
    for (int j = 0; j < C; ++j) {
      const uint8_t* row = a.act + static_cast<size_t>(t + j) * l.stride;
      xq[j] = reinterpret_cast<const int8_t*>(row);
      xs[j] = reinterpret_cast<const float*>(row + l.s_off);
      xg[j] = reinterpret_cast<const float*>(row + l.dg_off);
    }
    F acc[R][C];
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) acc[i][j] = V::ZeroF();
    const int64_t u1 = a.u1 < 0 ? (a.n_in + 255) / 256 : a.u1;
    for (int64_t u = a.u0; u < u1; ++u) {
      const IPacked* w[R];
      for (int i = 0; i < R; ++i)
        w[i] =
            reinterpret_cast<const IPacked*>(a.w + static_cast<size_t>(r + i - a.w_row0) * a.w_stride) + (u - a.w_u0);
      I isum[R][C][NI];
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j)
          for (int h = 0; h < NI; ++h) isum[i][j][h] = V::ZeroI();
#pragma GCC unroll 16
      for (int m = 0; m < kSteps; ++m) {
        typename V::B wv[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) wv[i] = V::LoadB(w[i]->q + m * V::W);
#pragma GCC unroll 8
        for (int j = 0; j < C; ++j) {
          const typename V::B xv = V::LoadB(xq[j] + u * 256 + m * V::W);
#pragma GCC unroll 8
          for (int i = 0; i < R; ++i) {
            I& s = isum[i][j][m % NI];
            s = kSigned ? V::DotISigned(s, wv[i], xv) : V::DotI(s, wv[i], xv);
          }
        }
      }
#pragma GCC unroll 4
      for (int h = 0; h < NI; ++h) {
        F av[R], bv[R];
#pragma GCC unroll 8
        for (int i = 0; i < R; ++i) {
          av[i] = V::LoadF(w[i]->a + h * V::FL);
          bv[i] = V::LoadF(w[i]->b + h * V::FL);
        }
#pragma GCC unroll 8
        for (int j = 0; j < C; ++j) {
          const F dg = V::LoadF(xg[j] + u * 16 + h * V::FL);
          const F sg = V::LoadF(xs[j] + u * 16 + h * V::FL);
          if constexpr (kOffset > 0) {
            const F nsg = V::Mul(sg, V::Set1(-static_cast<float>(kOffset)));
#pragma GCC unroll 8
            for (int i = 0; i < R; ++i) acc[i][j] = V::Fma(av[i], V::Fma(V::Cvt(isum[i][j][h]), dg, nsg), acc[i][j]);
          } else {
#pragma GCC unroll 8
            for (int i = 0; i < R; ++i) {
              acc[i][j] = V::Fma(V::Mul(av[i], V::Cvt(isum[i][j][h])), dg, acc[i][j]);
              acc[i][j] = V::Fnma(bv[i], sg, acc[i][j]);
            }
          }
        }
      }
    }
    Store<V, R, C>(a, r, t, acc);
  }
};

// Interleaves 256 natural-order codes into IPacked order.
HERD_INLINE void InterleaveCodes(const uint8_t* codes, uint8_t* q) {
  for (int k = 0; k < 4; ++k)
    for (int g = 0; g < 16; ++g) std::memcpy(q + 64 * k + 4 * g, codes + 16 * g + 4 * k, 4);
}

// Portable packers: one super-block / one span of up to 8 legacy blocks.
template <DType T>
HERD_INLINE void PackSpanK(const uint8_t* p, IPacked* o) {
  KDecoded dec;
  DecodeK<T>(p, &dec);
  for (int g = 0; g < 16; ++g) {
    o->a[g] = dec.d * static_cast<float>(dec.sc[g]);
    o->b[g] = dec.c[g];
  }
  InterleaveCodes(dec.q, o->q);
}
template <DType T, bool kUnsignedQ8>
HERD_INLINE void PackSpanL(const uint8_t* p, int nb, IPacked* o) {
  LDecoded dec;
  DecodeL<T, kUnsignedQ8>(p, nb, &dec);
  for (int g = 0; g < 16; ++g) {
    o->a[g] = dec.d[g / 2];
    o->b[g] = dec.c[g];
  }
  InterleaveCodes(dec.q, o->q);
}

// Per-thread scratch for packed row blocks, shared by every type of this kernel set.
inline IPacked* PackScratch(size_t n) {
  thread_local std::vector<IPacked> scratch;
  if (scratch.size() < n) scratch.resize(n);
  return scratch.data();
}

// Packs one weight row (any quantized type) into spans of IPacked.
template <DType T, bool kUnsignedQ8>
struct PortablePacker {
  // Units (super-blocks / 8-block spans) [u0, u1) of one row -> out[0 .. u1 - u0).
  static void PackRow(const uint8_t* row, int64_t n_in, int64_t u0, int64_t u1, IPacked* out) {
    if constexpr (BlockBytes(T) > 64) {  // super-block types
      for (int64_t sb = u0; sb < u1; ++sb) PackSpanK<T>(row + sb * BlockBytes(T), out + (sb - u0));
    } else {
      const int64_t n_blocks = n_in / 32;
      for (int64_t span = u0; span < u1; ++span) {
        const int nb = static_cast<int>(std::min<int64_t>(8, n_blocks - span * 8));
        PackSpanL<T, kUnsignedQ8>(row + span * 8 * BlockBytes(T), nb, out + (span - u0));
      }
    }
  }
};

// Many tokens (interleaved activations): each block of rows is packed once into a per-thread
// scratch buffer, then R x C tiles run over it in column slices of kSliceUnits spans, so an
// R-row tile of packed weights stays in L1 while every token passes.
template <class V, DType T, int R, int C, class Packer>
void RunRowsInterleaved(const KernelArgs& a, int64_t r0, int64_t r1) {
  constexpr bool kSigned = T == DType::kQ8_0 && !V::kUnsignedQ8;
  constexpr int kOffset = T == DType::kQ4_0 ? 8 : T == DType::kQ5_0 ? 16 : T == DType::kQ8_0 && !kSigned ? 128 : 0;
  const int64_t units = (a.n_in + 255) / 256;
  // Column slice outermost, then row blocks of ~512 KiB packed: the activation slice of every
  // token (n_tok x 2 KiB) and one packed row block share L2; an R-row tile of the block is
  // 12 KiB, in L1 while the tokens pass.
  const int64_t slice = std::min(units, kSliceUnits);
  const size_t row_bytes = static_cast<size_t>(slice) * sizeof(IPacked);
  const int64_t fit = static_cast<int64_t>((512u << 10) / row_bytes);
  const int64_t rb_rows = std::max<int64_t>(R, fit / R * R);
  IPacked* scratch = PackScratch(static_cast<size_t>(rb_rows * slice));
  KernelArgs b = a;
  b.w = reinterpret_cast<const uint8_t*>(scratch);
  b.w_stride = row_bytes;
  for (int64_t u = 0; u < units; u += slice) {
    const int64_t ue = std::min(units, u + slice);
    b.u0 = u;
    b.u1 = ue;
    b.w_u0 = u;
    b.accumulate = u > 0;
    for (int64_t rb = r0; rb < r1; rb += rb_rows) {
      const int64_t re = std::min(r1, rb + rb_rows);
      for (int64_t r = rb; r < re; ++r)
        Packer::PackRow(a.w + static_cast<size_t>(r - a.w_row0) * a.w_stride, a.n_in, u, ue,
                        scratch + (r - rb) * slice);
      b.w_row0 = rb;
      RunBlockRowsOuter<IQuant<V, kSigned, kOffset>, R, C>(b, rb, re);
    }
  }
}

// The whole kernel for a quantized type: weights decoded in place (DirectK, R x C tiles, R1
// rows for single tokens) for natural activations; packed spans (PR x PC tiles) for
// interleaved ones. The driver interleaves from KernelSet::pack_min_tok tokens on.
template <class V, DType T, class DirectK, int R, int C, int R1, int PR, int PC,
          class Packer = PortablePacker<T, V::kUnsignedQ8>>
void QuantKernel(const KernelArgs& a, int64_t r0, int64_t r1) {
  if (a.layout.interleaved) {
    RunRowsInterleaved<V, T, PR, PC, Packer>(a, r0, r1);
  } else {
    RunRows<DirectK, R, C, R1>(a, r0, r1);
  }
}

// The kernel of each weight type, as every kernel set lays it out. Set provides static
// function templates F<FloatDecoder>, L<legacy DType>, K<K-quant DType> with the MatKernel
// signature, and the float decoders F32D, F16D, BF16D as member types.
template <class Set>
MatKernel KernelTable(DType type) {
  switch (type) {
    case DType::kF32: return &Set::template F<typename Set::F32D>;
    case DType::kF16: return &Set::template F<typename Set::F16D>;
    case DType::kBF16: return &Set::template F<typename Set::BF16D>;
    case DType::kQ4_0: return &Set::template L<DType::kQ4_0>;
    case DType::kQ4_1: return &Set::template L<DType::kQ4_1>;
    case DType::kQ5_0: return &Set::template L<DType::kQ5_0>;
    case DType::kQ5_1: return &Set::template L<DType::kQ5_1>;
    case DType::kQ8_0: return &Set::template L<DType::kQ8_0>;
    case DType::kQ2_K: return &Set::template K<DType::kQ2_K>;
    case DType::kQ3_K: return &Set::template K<DType::kQ3_K>;
    case DType::kQ4_K: return &Set::template K<DType::kQ4_K>;
    case DType::kQ5_K: return &Set::template K<DType::kQ5_K>;
    case DType::kQ6_K: return &Set::template K<DType::kQ6_K>;
    default: return nullptr;
  }
}

}  // namespace herd::cpu::internal::HERD_ISA_NS
