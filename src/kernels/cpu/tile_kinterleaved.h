// K-quant kernel for a few tokens (about 4-16) on interleaved activations (internal; included
// by an ISA file after tile_kernels.h and its decoders).
//
// The weights are decoded in registers straight into the interleaved order of ActLayout
// (Dec::ICodes(v): lane g of step v = elements 16g + 4v .. +3), so, as in the packed path
// (IQuant), a span of 256 accumulates into one int32 per group with 4 plain dot instructions
// per (row, token); but nothing goes through a packed scratch copy of the weights, whose
// writing and re-reading cost as much as the products at these token counts.
//
// K-quant activations (kQ8B256) have one scale dx per span, so per span, row and token
//   y += dx * sum_g a_g * isum_g - sum_g c_g * s_g      (a_g = d * sc_g, c_g the correction)
// = 4 integer dots + cvt, mul, fma, fnma; per span and row one decode (BeginI, 4 ICodes, AI, C).
//
// The activations of each tile of up to C tokens are first copied into a per-thread buffer,
// span-major (per span: the C tokens' 256 codes, their dx, their 16 group sums), so the tile
// addresses every token from one pointer with constant offsets: 24 token pointers would not
// fit the general registers, and their spills cost as much as the arithmetic.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

#ifndef HERD_ISA_NS
#error "define HERD_ISA_NS before including tile_kinterleaved.h"
#endif

namespace herd::cpu::internal::HERD_ISA_NS {

// Bytes of one span of a token tile of width c in the compact copy: codes, dx (padded to 64
// bytes), group sums.
constexpr size_t KISpanBytes(int c) { return static_cast<size_t>(c) * 256 + 64 + static_cast<size_t>(c) * 64; }

// Dec::kOffset > 0: the type's correction is c = kOffset * a (Q6_K: 32), folded as
// a * (dx * isum - kOffset * s_g) with the group sums pre-scaled by -kOffset in the copy: one
// float op fewer per (row, token) and span.
template <class V, class Dec>
struct KInterleaved {
  static constexpr int kOffset = Dec::kOffset;

  // Rows [r, r + R) x tokens [t, t + C) over spans [u0, u1); x: the compact copy of the tile
  // from span u0 on (KISpanBytes(C) per span). part: the unreduced accumulators of a row
  // computed in column slices (R x C vectors of FL floats), read unless first, written unless
  // last; the last slice stores the sums into y.
  template <int R, int C>
  static void Tile(const KernelArgs& a, int64_t r, int64_t t, const uint8_t* x, int64_t u0, int64_t u1, float* part,
                   bool first, bool last) {
    using F = typename V::F;
    using I = typename V::I;
    using B = typename V::B;
    constexpr int kSteps = 256 / V::W;
    static_assert(kSteps == 4, "one dword lane per group: 64-byte vectors");
    constexpr size_t kDx = static_cast<size_t>(C) * 256, kS = kDx + 64, kSpan = KISpanBytes(C);
    F acc[R][C];
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) acc[i][j] = first ? V::ZeroF() : V::LoadF(part + (i * C + j) * V::FL);
    Dec dec[R];
    const uint8_t* w0 = a.w + static_cast<size_t>(r - a.w_row0) * a.w_stride;
    for (int64_t sb = u0; sb < u1; ++sb, x += kSpan) {
      B w[R][kSteps];
      F av[R], bv[R];
#pragma GCC unroll 4
      for (int i = 0; i < R; ++i) {
        const uint8_t* p = w0 + i * a.w_stride + sb * Dec::kBytes;
        Prefetch<Dec, Dec::kBytes>(p + R * a.w_stride);
        dec[i].BeginI(p);
#pragma GCC unroll 4
        for (int v = 0; v < kSteps; ++v) w[i][v] = dec[i].ICodes(v);
        av[i] = dec[i].AI();
        if constexpr (!kOffset) bv[i] = dec[i].C(0);
      }
#pragma GCC unroll 16
      for (int j = 0; j < C; ++j) {
        const F dx = V::Set1(*reinterpret_cast<const float*>(x + kDx + 4 * j));
        const F sg = V::LoadF(reinterpret_cast<const float*>(x + kS + 64 * j));
#pragma GCC unroll 4
        for (int i = 0; i < R; ++i) {
          I s = V::ZeroI();
#pragma GCC unroll 4
          for (int v = 0; v < kSteps; ++v) s = V::DotI(s, w[i][v], V::LoadB(x + 256 * j + V::W * v));
          if constexpr (kOffset) {  // sg holds -kOffset * s_g: y += a * (dx * isum - kOffset * s)
            acc[i][j] = V::Fma(av[i], V::Fma(V::Cvt(s), dx, sg), acc[i][j]);
          } else {
            acc[i][j] = V::Fma(V::Mul(av[i], V::Cvt(s)), dx, acc[i][j]);
            acc[i][j] = V::Fnma(bv[i], sg, acc[i][j]);
          }
        }
      }
    }
    if (last) {
      Store<V, R, C>(a, r, t, acc);
    } else {
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) V::StoreF(part + (i * C + j) * V::FL, acc[i][j]);
    }
  }

  // Copies tokens [t, t + c) into the compact span-major form.
  static void CopyTile(const KernelArgs& a, int64_t t, int c, uint8_t* out) {
    const ActLayout& l = a.layout;
    const int64_t units = a.n_in / 256;
    for (int64_t sb = 0; sb < units; ++sb) {
      uint8_t* o = out + sb * KISpanBytes(c);
      for (int j = 0; j < c; ++j) {
        const uint8_t* row = a.act + static_cast<size_t>(t + j) * l.stride;
        std::memcpy(o + 256 * j, row + sb * 256, 256);
        std::memcpy(o + 256 * c + 4 * j, row + l.d_off + 4 * sb, 4);
        float* s = reinterpret_cast<float*>(o + 256 * c + 64 + 64 * j);
        std::memcpy(s, row + l.s_off + 64 * sb, 64);
        if constexpr (kOffset) {
          for (int g = 0; g < 16; ++g) s[g] *= -static_cast<float>(kOffset);
        }
      }
    }
  }

  template <int R, int C>
  static void Rows(const KernelArgs& a, int64_t r0, int64_t r1, int64_t t, const uint8_t* x, int64_t u0, int64_t u1,
                   float* part, bool first, bool last) {
    constexpr size_t kPart = static_cast<size_t>(C) * V::FL;  // floats per row
    int64_t r = r0;
    for (; r + R <= r1; r += R) Tile<R, C>(a, r, t, x, u0, u1, part + (r - r0) * kPart, first, last);
    for (; r < r1; ++r) Tile<1, C>(a, r, t, x, u0, u1, part + (r - r0) * kPart, first, last);
  }
  template <int R, int C>
  static void RowsWidth(int c, const KernelArgs& a, int64_t r0, int64_t r1, int64_t t, const uint8_t* x, int64_t u0,
                        int64_t u1, float* part, bool first, bool last) {
    if constexpr (C >= 1) {
      if (c == C) {
        Rows<R, C>(a, r0, r1, t, x, u0, u1, part, first, last);
      } else {
        RowsWidth<R, C - 1>(c, a, r0, r1, t, x, u0, u1, part, first, last);
      }
    }
  }

  // Rows [r0, r1) x every token, in token tiles of C (the last one narrower). Row blocks stay
  // in L2 while the token tiles pass; inside a block, column slices of kSlice spans keep the
  // tile's compact activations (~21 KiB for 8 tokens) in L1 while the rows pass.
  template <int R, int C>
  static void Run(const KernelArgs& a, int64_t r0, int64_t r1) {
    constexpr int64_t kSlice = 8;
    const int64_t units = a.n_in / 256;
    const int64_t n_tiles = (a.n_tok + C - 1) / C;
    const size_t tile_bytes = static_cast<size_t>(units) * KISpanBytes(C);
    const int64_t fit = static_cast<int64_t>((512u << 10) / std::max<size_t>(a.w_stride, 1));
    const int64_t rb_rows = std::max<int64_t>(R, fit / R * R);
    const size_t part_floats = units > kSlice ? static_cast<size_t>(rb_rows) * C * V::FL : 0;
    thread_local std::vector<uint8_t> scratch;
    const size_t need = static_cast<size_t>(n_tiles) * tile_bytes + part_floats * 4 + 128;
    if (scratch.size() < need) scratch.resize(need);
    uint8_t* base = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(scratch.data()) + 63) & ~uintptr_t{63});
    float* part = reinterpret_cast<float*>(base + n_tiles * tile_bytes);
    for (int64_t k = 0; k < n_tiles; ++k) {
      const int64_t t = k * C;
      CopyTile(a, t, static_cast<int>(std::min<int64_t>(C, a.n_tok - t)), base + k * tile_bytes);
    }
    for (int64_t rb = r0; rb < r1; rb += rb_rows) {
      const int64_t re = std::min(r1, rb + rb_rows);
      for (int64_t k = 0; k < n_tiles; ++k) {
        const int64_t t = k * C;
        const int c = static_cast<int>(std::min<int64_t>(C, a.n_tok - t));
        for (int64_t u = 0; u < units; u += kSlice) {
          const int64_t ue = std::min(units, u + kSlice);
          RowsWidth<R, C>(c, a, rb, re, t, base + k * tile_bytes + u * KISpanBytes(c), u, ue, part, u == 0,
                          ue == units);
        }
      }
    }
  }
};

}  // namespace herd::cpu::internal::HERD_ISA_NS
