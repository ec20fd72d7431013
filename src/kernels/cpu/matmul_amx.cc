// AMX-BF16 matmul (see matmul_amx.h). Compiled with -mamx-tile -mamx-bf16 -mavx512bf16 on x86-64;
// nothing here runs before AmxEnabled() has checked the CPU, the OS and the process permission.
//
// Operand roles: weights are the tile A operand (16 rows × 32 bf16 along K, row-major, so a
// packed weight block is plain rows), activations the B operand in the VNNI layout (tile row k2
// holds, for each of 16 tokens, the bf16 pair k = 2·k2, 2·k2 + 1), so C = 16 weight rows × 16
// tokens and is transposed into y on store. One unit: 2 row tiles × 2 token tiles (C in tmm0-3;
// an odd last token tile runs alone).
#include "kernels/cpu/matmul_amx.h"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "base/check.h"
#include "kernels/cpu/cpu_features.h"

#if defined(__x86_64__)
// GCC 12 reports the deliberately undefined pass-through operand inside the AVX-512 intrinsics.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#endif

namespace herd::cpu {

#if defined(__x86_64__)
namespace {

constexpr int kArchReqXcompPerm = 0x1023;
constexpr int kXfeatureXtiledata = 18;
constexpr int64_t kRowBlock = 32;    // weight rows per packed block (2 A tiles)
constexpr int64_t kTokBlock = 16;    // tokens per B tile (n_tok is padded to this)
constexpr int64_t kTileElems = 512;  // bf16 per 1 KiB tile

struct TileConfig {
  uint8_t palette;
  uint8_t start_row;
  uint8_t reserved[14];
  uint16_t colsb[16];
  uint8_t rows[16];
};

void LoadTileConfig() {
  alignas(64) TileConfig cfg;
  std::memset(&cfg, 0, sizeof(cfg));
  cfg.palette = 1;
  for (int i = 0; i < 8; ++i) {
    cfg.rows[i] = 16;
    cfg.colsb[i] = 64;
  }
  _tile_loadconfig(&cfg);
}

bool RequestTilePermission() { return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0; }

uint16_t SmallIntBf16(int v) {
  const float f = static_cast<float>(v);
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return static_cast<uint16_t>(bits >> 16);  // exact for small integers
}

// One 16×16×32 tile product of small integers against the scalar result (exact in f32).
bool TileSelfTest() {
  alignas(64) uint16_t a[16 * 32];
  alignas(64) uint16_t b[16 * 32];
  alignas(64) float c[16 * 16];
  for (int m = 0; m < 16; ++m)
    for (int k = 0; k < 32; ++k) a[m * 32 + k] = SmallIntBf16((m + 2 * k) % 5 - 2);
  for (int k = 0; k < 32; ++k)
    for (int n = 0; n < 16; ++n) b[(k / 2) * 32 + n * 2 + (k % 2)] = SmallIntBf16((k + 3 * n) % 7 - 3);
  LoadTileConfig();
  _tile_zero(0);
  _tile_loadd(1, a, 64);
  _tile_loadd(2, b, 64);
  _tile_dpbf16ps(0, 1, 2);
  _tile_stored(0, c, 64);
  _tile_release();
  for (int m = 0; m < 16; ++m)
    for (int n = 0; n < 16; ++n) {
      int want = 0;
      for (int k = 0; k < 32; ++k) want += ((m + 2 * k) % 5 - 2) * ((k + 3 * n) % 7 - 3);
      if (c[m * 16 + n] != static_cast<float>(want)) return false;
    }
  return true;
}

bool Decide() {
  const char* env = std::getenv("HERD_AMX");
  if (env != nullptr) {
    for (const char* off : {"0", "off", "false", "no"}) {
      if (std::strcmp(env, off) == 0) return false;
    }
  }
  const CpuFeatures& f = GetCpuFeatures();
  if (!f.amx_bf16 || !f.avx512bf16 || !f.HasAvx512Vnni()) return false;
  const pid_t pid = fork();
  if (pid < 0) return false;
  if (pid == 0) _exit(RequestTilePermission() && TileSelfTest() ? 0 : 1);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return false;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return false;
  return RequestTilePermission() && TileSelfTest();
}

// 32 floats -> bf16 hi (round to nearest) and lo (bf16 of the remainder), 32 each.
inline void SplitBf16(__m512 v0, __m512 v1, uint16_t* hi, uint16_t* lo) {
  const __m256i h0 = (__m256i)_mm512_cvtneps_pbh(v0);
  const __m256i h1 = (__m256i)_mm512_cvtneps_pbh(v1);
  const __m512 f0 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h0), 16));
  const __m512 f1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h1), 16));
  const __m256i l0 = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v0, f0));
  const __m256i l1 = (__m256i)_mm512_cvtneps_pbh(_mm512_sub_ps(v1, f1));
  _mm512_storeu_si512(hi, _mm512_inserti64x4(_mm512_castsi256_si512(h0), h1, 1));
  _mm512_storeu_si512(lo, _mm512_inserti64x4(_mm512_castsi256_si512(l0), l1, 1));
}

inline __mmask16 TailMask(int64_t n) { return n >= 16 ? 0xffff : n <= 0 ? 0 : static_cast<__mmask16>((1u << n) - 1); }

// Activations: token tile j, K step s at (j * n_ks + s) * kTileElems, VNNI pairs. Tokens
// [t0, t1) of the padded range; tokens >= n_tok and columns >= n_in are zero.
void PackActivations(const float* x, int64_t ldx, int64_t n_tok, int64_t n_in, int64_t n_ks, int64_t t0, int64_t t1,
                     uint16_t* xhi, uint16_t* xlo) {
  alignas(64) uint16_t hi[32], lo[32];
  const __m512i idx = _mm512_mullo_epi32(_mm512_set_epi32(15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0),
                                         _mm512_set1_epi32(16 * 4));
  for (int64_t t = t0; t < t1; ++t) {
    const int64_t j = t / 16, n = t % 16;
    for (int64_t s = 0; s < n_ks; ++s) {
      const int64_t k0 = s * 32;
      __m512 v0 = _mm512_setzero_ps(), v1 = _mm512_setzero_ps();
      if (t < n_tok) {
        v0 = _mm512_maskz_loadu_ps(TailMask(n_in - k0), x + t * ldx + k0);
        v1 = _mm512_maskz_loadu_ps(TailMask(n_in - k0 - 16), x + t * ldx + k0 + 16);
      }
      SplitBf16(v0, v1, hi, lo);
      // dword k2 of this token's 32 values goes to tile row k2, column n.
      const int64_t off = (j * n_ks + s) * kTileElems + n * 2;
      _mm512_i32scatter_epi32(xhi + off, idx, _mm512_load_si512(hi), 1);
      _mm512_i32scatter_epi32(xlo + off, idx, _mm512_load_si512(lo), 1);
    }
  }
}

// Weight rows [r0, r0 + 32), columns [k0, k0 + kc) -> whi/wlo [32][kc] bf16 (rows >= n_out and
// columns >= n_in zero; kc a multiple of 32).
void PackWeights(const TensorView& w, int64_t r0, int64_t k0, int64_t kc, uint16_t* whi, uint16_t* wlo) {
  const int64_t n_in = w.cols(), n_out = w.rows();
  for (int64_t rr = 0; rr < kRowBlock; ++rr) {
    uint16_t* hi = whi + rr * kc;
    uint16_t* lo = wlo + rr * kc;
    if (r0 + rr >= n_out) {
      std::memset(hi, 0, kc * 2);
      if (w.type == DType::kF16) std::memset(lo, 0, kc * 2);
      continue;
    }
    const uint16_t* src = reinterpret_cast<const uint16_t*>(w.row(r0 + rr)) + k0;
    for (int64_t k = 0; k < kc; k += 32) {
      const int64_t left = n_in - k0 - k;
      const __mmask32 m = left >= 32 ? 0xffffffffu : left <= 0 ? 0u : static_cast<__mmask32>((1u << left) - 1);
      const __m512i raw = _mm512_maskz_loadu_epi16(m, src + k);
      if (w.type == DType::kBF16) {
        _mm512_storeu_si512(hi + k, raw);
        continue;
      }
      const __m512 v0 = _mm512_cvtph_ps(_mm512_castsi512_si256(raw));
      const __m512 v1 = _mm512_cvtph_ps(_mm512_extracti64x4_epi64(raw, 1));
      SplitBf16(v0, v1, hi + k, lo + k);
    }
  }
}

// C tile (16 weight rows × 16 tokens) -> y, clipped to n_out / n_tok.
void StoreTransposed(const float* c, int64_t r0, int64_t t0, int64_t n_out, int64_t n_tok, float* y, int64_t ldy) {
  const int64_t nr = n_out - r0 < 16 ? n_out - r0 : 16;
  const int64_t nt = n_tok - t0 < 16 ? n_tok - t0 : 16;
  for (int64_t n = 0; n < nt; ++n) {
    float* dst = y + (t0 + n) * ldy + r0;
    for (int64_t m = 0; m < nr; ++m) dst[m] = c[m * 16 + n];
  }
}

struct Scratch {
  uint16_t* p = nullptr;
  size_t cap = 0;
  uint16_t* Get(size_t elems) {
    if (elems > cap) {
      std::free(p);
      const size_t bytes = (elems * 2 + 4095) & ~size_t{4095};
      p = static_cast<uint16_t*>(std::aligned_alloc(64, bytes));
      HERD_CHECK(p != nullptr);
      cap = bytes / 2;
    }
    return p;
  }
  ~Scratch() { std::free(p); }
};

// One unit: weight rows r0..r0+31 (whi/wlo, kc columns) × token tiles 2p and, if kTwo, 2p + 1
// (bh/bl: tile 2p at step 0; the next tile n_ks · 1 KiB on) over K steps [s0, s1). C tiles
// 0/1 = rows 0-15 × tiles 2p/2p+1, 2/3 = rows 16-31; start from `in` (4 × 256 floats) or zero,
// end in `out`.
template <bool kTwo>
void TileUnit(const uint16_t* whi, const uint16_t* wlo, int64_t kc, const uint16_t* bh, const uint16_t* bl,
              int64_t n_ks, int64_t s0, int64_t s1, bool f16, const float* in, float* out) {
  const int64_t lda = kc * 2, next = n_ks * kTileElems;
  if (in == nullptr) {
    _tile_zero(0);
    _tile_zero(2);
    if (kTwo) _tile_zero(1);
    if (kTwo) _tile_zero(3);
  } else {
    _tile_loadd(0, in, 64);
    _tile_loadd(2, in + 512, 64);
    if (kTwo) _tile_loadd(1, in + 256, 64);
    if (kTwo) _tile_loadd(3, in + 768, 64);
  }
  for (int64_t s = s0; s < s1; ++s) {
    const int64_t ko = (s - s0) * 32, xo = s * kTileElems;
    _tile_loadd(4, whi + ko, lda);
    _tile_loadd(5, whi + 16 * kc + ko, lda);
    _tile_loadd(6, bh + xo, 64);
    if (kTwo) _tile_loadd(7, bh + next + xo, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(2, 5, 6);
    if (kTwo) _tile_dpbf16ps(1, 4, 7);
    if (kTwo) _tile_dpbf16ps(3, 5, 7);
    _tile_loadd(6, bl + xo, 64);
    if (kTwo) _tile_loadd(7, bl + next + xo, 64);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(2, 5, 6);
    if (kTwo) _tile_dpbf16ps(1, 4, 7);
    if (kTwo) _tile_dpbf16ps(3, 5, 7);
    if (f16) {
      _tile_loadd(4, wlo + ko, lda);
      _tile_loadd(5, wlo + 16 * kc + ko, lda);
      _tile_loadd(6, bh + xo, 64);
      if (kTwo) _tile_loadd(7, bh + next + xo, 64);
      _tile_dpbf16ps(0, 4, 6);
      _tile_dpbf16ps(2, 5, 6);
      if (kTwo) _tile_dpbf16ps(1, 4, 7);
      if (kTwo) _tile_dpbf16ps(3, 5, 7);
    }
  }
  _tile_stored(0, out, 64);
  _tile_stored(2, out + 512, 64);
  if (kTwo) _tile_stored(1, out + 256, 64);
  if (kTwo) _tile_stored(3, out + 768, 64);
}

// Weight row blocks [b0, b1) against all tokens. K is walked in chunks of 256..1024 outermost,
// so one chunk of the packed activations (n_tok · 128 bytes per step) stays in L2 across all row
// blocks and one packed weight chunk (32 rows, 4 KiB per step) in L1/L2 across all token tiles;
// partial sums live in per-thread tile-layout accumulators (4 KiB per 32 rows × 32 tokens).
void RowBlocks(const TensorView& w, const uint16_t* xhi, const uint16_t* xlo, int64_t n_ks, int64_t n_tt, int64_t n_tok,
               float* y, int64_t b0, int64_t b1) {
  // ~1 MiB of packed activations per chunk (n_tt · 16 tokens · 128 bytes per step), 8..32 steps.
  const int64_t chunk = (int64_t{1} << 20) / (n_tt * 16 * 128);
  const int64_t kChunkSteps = chunk < 8 ? 8 : chunk > 32 ? 32 : chunk;
  thread_local Scratch scratch;
  thread_local std::vector<float> acc_buf;
  const int64_t kc_max = (n_ks < kChunkSteps ? n_ks : kChunkSteps) * 32;
  uint16_t* whi = scratch.Get(2 * kRowBlock * kc_max);
  uint16_t* wlo = whi + kRowBlock * kc_max;
  const int64_t n_units = (n_tt + 1) / 2;  // token tile pairs, the last one maybe single
  const bool chunked = n_ks > kChunkSteps;
  // Row blocks go in groups whose accumulators (4 KiB per block and token pair) take ~512 KiB
  const int64_t group = n_units >= 128 ? 1 : 128 / n_units;
  if (chunked) acc_buf.resize(static_cast<size_t>(group * n_units * 4 * 256 + 16));
  // 64-byte aligned view of the accumulators.
  float* acc = reinterpret_cast<float*>((reinterpret_cast<uintptr_t>(acc_buf.data()) + 63) & ~uintptr_t{63});
  const bool f16 = w.type == DType::kF16;
  const int64_t n_out = w.rows();
  alignas(64) float c[4 * 256];
  LoadTileConfig();
  for (int64_t g0 = b0; g0 < b1; g0 += group) {
    const int64_t g1 = g0 + group < b1 ? g0 + group : b1;
    for (int64_t s0 = 0; s0 < n_ks; s0 += kChunkSteps) {
      const int64_t s1 = s0 + kChunkSteps < n_ks ? s0 + kChunkSteps : n_ks;
      const int64_t kc = (s1 - s0) * 32;
      const bool first = s0 == 0, last = s1 == n_ks;
      for (int64_t b = g0; b < g1; ++b) {
        const int64_t r0 = b * kRowBlock;
        PackWeights(w, r0, s0 * 32, kc, whi, wlo);
        for (int64_t p = 0; p < n_units; ++p) {
          float* ap = acc + ((b - g0) * n_units + p) * 4 * 256;
          float* dst = last ? c : ap;
          const uint16_t* bh = xhi + 2 * p * n_ks * kTileElems;
          const uint16_t* bl = xlo + 2 * p * n_ks * kTileElems;
          const bool two = 2 * p + 1 < n_tt;
          if (two) {
            TileUnit<true>(whi, wlo, kc, bh, bl, n_ks, s0, s1, f16, first ? nullptr : ap, dst);
          } else {
            TileUnit<false>(whi, wlo, kc, bh, bl, n_ks, s0, s1, f16, first ? nullptr : ap, dst);
          }
          if (!last) continue;
          const int64_t t0 = p * 32;
          StoreTransposed(c + 0, r0, t0, n_out, n_tok, y, n_out);
          StoreTransposed(c + 512, r0 + 16, t0, n_out, n_tok, y, n_out);
          if (two) {
            StoreTransposed(c + 256, r0, t0 + 16, n_out, n_tok, y, n_out);
            StoreTransposed(c + 768, r0 + 16, t0 + 16, n_out, n_tok, y, n_out);
          }
        }
      }
    }
  }
  _tile_release();
}

}  // namespace

bool AmxEnabled() {
  static std::once_flag once;
  static bool enabled = false;
  std::call_once(once, [] { enabled = Decide(); });
  return enabled;
}

void MatMulAmx(const TensorView& w, const float* x, int64_t ldx, int64_t n_tok, float* y, ThreadPool& pool) {
  HERD_CHECK(AmxEnabled());
  HERD_CHECK(w.type == DType::kF16 || w.type == DType::kBF16);
  const int64_t n_in = w.cols(), n_out = w.rows();
  HERD_CHECK(ldx >= n_in);
  if (n_out == 0 || n_tok == 0) return;
  const int64_t n_ks = (n_in + 31) / 32;
  const int64_t n_tok_pad = (n_tok + kTokBlock - 1) / kTokBlock * kTokBlock;
  const int64_t n_tt = n_tok_pad / 16;
  thread_local Scratch act;
  const size_t half = static_cast<size_t>(n_tt * n_ks * kTileElems);
  uint16_t* xhi = act.Get(2 * half);
  uint16_t* xlo = xhi + half;
  const int64_t n_blocks = (n_out + kRowBlock - 1) / kRowBlock;
  if (pool.size() == 1) {
    PackActivations(x, ldx, n_tok, n_in, n_ks, 0, n_tok_pad, xhi, xlo);
    RowBlocks(w, xhi, xlo, n_ks, n_tt, n_tok, y, 0, n_blocks);
    return;
  }
  pool.ParallelFor(n_tok_pad, 1,
                   [&](int64_t t0, int64_t t1) { PackActivations(x, ldx, n_tok, n_in, n_ks, t0, t1, xhi, xlo); });
  pool.ParallelFor(n_blocks, 1, [&](int64_t b0, int64_t b1) { RowBlocks(w, xhi, xlo, n_ks, n_tt, n_tok, y, b0, b1); });
}

#else  // !__x86_64__

bool AmxEnabled() { return false; }

void MatMulAmx(const TensorView&, const float*, int64_t, int64_t, float*, ThreadPool&) {
  HERD_CHECK_MSG(false, "AMX is x86-64 only");
}

#endif

}  // namespace herd::cpu
