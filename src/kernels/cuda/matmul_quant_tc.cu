// GemmQuantTc: y = x · Wᵀ for quantized W on the tensor cores, dequantizing inside the kernel
// (no half copy of the weights in device memory). For batches too large for the GEMV kernels
// (continuous-batching decode steps of 9-256 sequences, prompt chunks).
//
// A CTA computes a tile of kTileTok tokens x kTileRows weight rows over a range of K, with
// warp specialization:
//   8 producer warps copy, per superstep of 256 values (the common multiple of every block size),
//   the raw weight bytes of the tile's rows into shared memory (16-byte cp.async, one superstep
//   ahead) and per half-step of 128 values x's half tile [128 tokens x 128] (cp.async); they
//   decode the raw blocks (DecodeChunk, value = fma(sc, q, mn) rounded to half: the same halves
//   as DequantizeRowsToHalf) into a [128 rows x 128] half tile;
//   8 consumer warps multiply the tiles: on sm_90a (Hopper) as two warpgroups issuing wgmma
//   m64nNk16 from shared memory (warpgroup g: weight rows 64 g.. x the first N tokens, N = 32,
//   64 or 128, the fewest covering n_tok), elsewhere (the compute_90 PTX) with mma.sync
//   m16n8k16 (f16 in, f32 accumulate), warp (wm, wn) covering 32 tokens x 64 rows.
// Weight and x tiles are double-buffered; named barriers hand each buffer over (FULL: producers
// -> consumers, EMPTY: consumers -> producers), so decoding half-step h + 1 overlaps the mma of h
// (with wgmma, one half-step's group stays in flight while the next buffer is awaited).
// Weight bytes are read once per token tile (CTAs of one weight tile and different token tiles
// are adjacent in the grid, so later token tiles find them in L2). Split-K over CTAs when there
// are too few weight tiles to fill the GPU: partial sums [split][n_tok][rows] float, added in
// split order by a second kernel (deterministic).
//
// Shared memory: raw 2 x 128 x RawStride(T) (<= 76 KB for Q8_0), weight tiles 2 x 128 x 128
// halves (64 KB) and x tiles 2 x 128 x 128 halves (64 KB) in wgmma's 128-byte swizzle
// (TilePiece: also free of bank conflicts for ldmatrix, the tile stores and the x copies), a
// 1 KiB alignment pad; one CTA (512 threads) per SM.
// Measured (bench/results/cuda-quant-tc-wgmma-2026-11-25.md): at 128 tokens wgmma, the swizzle
// and the x copy loop take the Q4_K down projection (4096 rows x 14336) from 72.7 to 61.6 us;
// 64-token batches gain 6-12%; at 16 tokens (producer-bound) the large weights take 4-11% longer
// than with the mma.sync consumers.
#include <cuda_fp16.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm_split_k.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_decode.cuh"
#include "kernels/cuda/quant_stage.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace herd::cuda::internal {
namespace {

#ifndef HERD_QTC_WGMMA
#define HERD_QTC_WGMMA 1
#endif
constexpr int kTileTok = 128;                  // tokens per CTA tile
constexpr int kTileRows = 128;                 // weight rows per CTA tile
constexpr int kStep = 256;                     // values per superstep (raw staging)
constexpr int kHalfStep = 128;                 // values per dequantized tile
constexpr int kRegionBytes = kTileRows * 128;  // one 64-column half of a half tile
constexpr int kTileBytes = 2 * kRegionBytes;   // a [128][128] half tile
static_assert(kTileTok == kTileRows, "x and weight tiles share one layout");
constexpr int kConsumerWarps = 8;      // mma: 4 (tokens) x 2 (rows) warps of 32 tokens x 64 rows
constexpr int kProducerThreads = 256;  // 8 warps: cp.async copies and decoding
constexpr int kThreads = kConsumerWarps * 32 + kProducerThreads;
constexpr int kMaxSplits = 8;
constexpr int kMaxSegsQ = kMaxSplitSegs;

template <DType T>
constexpr int StepBytes() {
  return QTraits<T>::kBlockBytes * kStep / (32 * QTraits<T>::kChunks);
}
// 16-byte units copied per row and superstep: the step's bytes from a 16-byte aligned start
// (the step's offset in the row may be any even number for Q2_K / Q3_K / Q6_K).
template <DType T>
constexpr int RawUnits() {
  return (15 + StepBytes<T>() + 15) / 16;
}
// Shared bytes per staged row: the units plus one (DecodeChunk reads up to 4 bytes past the last
// byte asked for), an odd number of 16-byte units (16-byte accesses of 8 rows hit distinct banks).
template <DType T>
constexpr int RawStride() {
  return ((RawUnits<T>() + 1) | 1) * 16;
}
template <DType T>
constexpr size_t SmemBytes() {
  return 1024 + 2 * static_cast<size_t>(kTileRows) * RawStride<T>() + 4 * static_cast<size_t>(kTileBytes);
}

struct QtcArgs {
  const uint8_t* w[kMaxSegsQ];
  SegmentLayout seg;  // outputs y [n_tok, n_out[s]] (used without splits), tiles, rows (partials' layout)
  int64_t row_bytes;
  int n_in;
  const __half* x;  // [n_tok, n_in]
  int n_tok;
  int splits;
  int ss_per_split;  // supersteps per split
  float* partial;    // [splits][n_tok][total_rows] when splits > 1
};

// Half tiles (x and dequantized weights, [128 rows][128 halves]) are stored as two regions
// (columns 0-63, 64-127) of 128-byte rows in wgmma's 128-byte swizzle (wgmma.cuh): 16-byte piece
// c of a row at piece (c % 8) ^ (r % 8) of its region. The 8 rows of an ldmatrix 8x8 matrix, a
// quarter-warp's 16-byte tile stores and the cp.async copies of whole 128-byte lines each hit
// all 32 banks once (the padded rows used before cost 2-2.6x the wavefronts on the stores).
// Byte offset of piece c (0-15) of row r:
__device__ __forceinline__ int TilePiece(int r, int c) {
  return (c >> 3) * kRegionBytes + r * 128 + (((c & 7) ^ (r & 7)) << 4);
}

#if !(defined(__CUDA_ARCH_FEAT_SM90_ALL) && HERD_QTC_WGMMA)
__device__ __forceinline__ void LdMatrixX4(uint32_t (&r)[4], uint32_t a) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(a));
}

// c += a · b: A 16x16 (row), B 16x8 (col), f16 in, f32 accumulate.
__device__ __forceinline__ void Mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
      "{%0, %1, %2, %3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif

// Named barriers (ids 1..5; 0 is __syncthreads) between the producer warps (decode) and the
// consumer warps (mma): bar.arrive signals without waiting, bar.sync waits for `count` threads.
__device__ __forceinline__ void BarSync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void BarArrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
constexpr int kBarFull = 1;   // + b: wh[b] and xs[b] hold half-step h (h & 1 == b)
constexpr int kBarEmpty = 3;  // + b: the consumers are done with wh[b] and xs[b]
constexpr int kBarProducers = 5;

// kN: tokens the wgmma consumers compute per tile (32, 64 or 128: the fewest covering n_tok);
// the mma.sync consumers skip 32-token groups past n_tok instead.
template <DType T, int kN>
__global__ void __launch_bounds__(kThreads, 1) GemmQuantTcKernel(const __grid_constant__ QtcArgs a) {
  using Q = QTraits<T>;
  constexpr int kStepBytes = StepBytes<T>();
  constexpr int kUnits = RawUnits<T>();
  constexpr int kRawStride = RawStride<T>();
  extern __shared__ __align__(16) uint8_t smem_unaligned[];
  // 1024-byte aligned base (the swizzle's repeat); every region below is a multiple of 1024 bytes.
  uint8_t* smem =
      smem_unaligned + ((1024 - (static_cast<uint32_t>(__cvta_generic_to_shared(smem_unaligned)) & 1023)) & 1023);
  uint8_t* raw = smem;                              // [2][rows][kRawStride]
  uint8_t* wh = smem + 2 * kTileRows * kRawStride;  // [2] half tiles of the weight rows
  uint8_t* xs = wh + 2 * kTileBytes;                // [2] half tiles of x
  PdlTrigger();

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int tok0 = blockIdx.x * kTileTok;
  const int tile = blockIdx.y / a.splits, split = blockIdx.y % a.splits;
  const TilePos pos = LocateTile(a.seg, tile, kTileRows);
  const int seg = pos.seg, row_in_seg = pos.row_in_seg;
  const int valid_rows = min(kTileRows, a.seg.out.n_out[seg] - row_in_seg);
  const uint8_t* wbase = a.w[seg] + static_cast<int64_t>(row_in_seg) * a.row_bytes;
  const int n_ss = a.n_in / kStep;
  const int ss0 = split * a.ss_per_split;
  const int ss1 = min(n_ss, ss0 + a.ss_per_split);
  const int h0 = 2 * ss0, h1 = 2 * ss1;

  if (warp >= kConsumerWarps) {
    // ---- Producers: copy raw blocks and x tiles in, decode half-steps into wh. ----
    const int pt = tid - kConsumerWarps * 32;  // 0 .. kProducerThreads - 1
    // Raw bytes of superstep ss into buffer b: units [lo, lo + n16) of each row, lo 16-aligned.
    auto load_raw = [&](int ss, int b) {
      const int64_t off = static_cast<int64_t>(ss) * kStepBytes;
      const int shift = static_cast<int>(off & 15);
      const int n16 = (shift + kStepBytes + 15) >> 4;
      uint8_t* dst = raw + b * kTileRows * kRawStride;
      for (int u = pt; u < kTileRows * kUnits; u += kProducerThreads) {
        const int r = u / kUnits, k = u % kUnits;
        if (r < valid_rows && k < n16)
          CpAsync16(dst + r * kRawStride + 16 * k, wbase + r * a.row_bytes + (off & ~int64_t{15}) + 16 * k);
      }
    };
    // x's half tile of half-step h into buffer b: the tile's tokens below n_tok only; the rows
    // past n_tok are zeroed once here (they only reach accumulator rows that are never stored).
    const int x_rows = min(kTileTok, a.n_tok - tok0);
    for (int u = pt; u < 2 * (kTileTok - x_rows) * (kHalfStep / 8); u += kProducerThreads) {
      const int b = u & 1, t = x_rows + ((u >> 1) >> 4), c = (u >> 1) & 15;
      *reinterpret_cast<uint4*>(xs + b * kTileBytes + TilePiece(t, c)) = make_uint4(0, 0, 0, 0);
    }
    // Thread pt copies piece pt % 16 of rows pt / 16 + 16 i: fixed offsets, one add per row.
    const int xc = pt & 15, xt = pt >> 4;
    const __half* x_src = a.x + static_cast<int64_t>(tok0 + xt) * a.n_in + xc * 8;
    const int64_t x_step = static_cast<int64_t>(kProducerThreads / 16) * a.n_in;
    const int x_dst = TilePiece(xt, xc);
    auto load_x = [&](int h, int b) {
      uint8_t* dst = xs + b * kTileBytes + x_dst;
      const __half* src = x_src + h * kHalfStep;
      for (int t = xt; t < x_rows; t += kProducerThreads / 16) {
        CpAsync16(dst, src);
        dst += (kProducerThreads / 16) * 128;
        src += x_step;
      }
    };
    // Decodes half-step h (chunks 4 (h & 1) .. + 3 of its superstep) into wh[h & 1]: 2 chunks
    // (32 values of one row each) a thread. A warp takes 8 rows x 4 chunks; each quarter-warp
    // (one 16-byte store phase) 4 rows x 2 chunks, whose pieces land on 8 distinct bank groups
    // under the swizzle.
    auto dequant = [&](int h) {
      const uint8_t* rb = raw + ((h >> 1) & 1) * kTileRows * kRawStride;
      const int shift = static_cast<int>((static_cast<int64_t>(h >> 1) * kStepBytes) & 15);
      uint8_t* out = wh + (h & 1) * kTileBytes;
      const int pw = pt >> 5, quarter = (pt >> 3) & 3, e = pt & 7;
#pragma unroll
      for (int i = 0; i < kTileRows * 4 / kProducerThreads; ++i) {
        const int r = 8 * (pw + (kProducerThreads / 32) * i) + 4 * (quarter & 1) + (e & 3);
        const int c = 2 * (quarter >> 1) + (e >> 2);
        if (r >= valid_rows) continue;
        const int q = 4 * (h & 1) + c;  // chunk of the superstep
        Chunk ch;
        DecodeChunk<T>(SmemSrc{rb + r * kRawStride}, shift + (q / Q::kChunks) * Q::kBlockBytes, q % Q::kChunks, ch);
        uint32_t hv[16];
        ChunkHalves(ch, hv);  // the same halves as DequantizeRowsToHalf
#pragma unroll
        for (int k = 0; k < 4; ++k)
          *reinterpret_cast<uint4*>(out + TilePiece(r, 4 * c + k)) =
              make_uint4(hv[4 * k], hv[4 * k + 1], hv[4 * k + 2], hv[4 * k + 3]);
      }
    };
    // Per half-step h (buffer b = h & 1): wait until the consumers released buffer b (step
    // h - 2), copy x(h) in; at a superstep's start make its raw bytes (landed during the previous
    // half-step) visible to all producers and start the next superstep's copy; decode h; wait for
    // x(h); signal FULL[b]. cp.async groups in commit order: x(h), then raw(ss + 1) for even h.
    if (h0 < h1) load_raw(ss0, ss0 & 1);  // weights: no kernel of the stream writes them
    CpAsyncCommit();
    PdlWait();  // x comes from the kernel before
    for (int h = h0; h < h1; ++h) {
      const int b = h & 1;
      if (h - 2 >= h0) BarSync(kBarEmpty + b, kThreads);
      load_x(h, b);
      CpAsyncCommit();
      if ((h & 1) == 0) {
        if (h == h0) CpAsyncWait<1>();             // raw(ss0): every earlier raw group landed before x(h - 1)
        BarSync(kBarProducers, kProducerThreads);  // raw(h / 2) visible; raw(h / 2 - 1) no longer read
        if ((h >> 1) + 1 < ss1) load_raw((h >> 1) + 1, ((h >> 1) + 1) & 1);
        CpAsyncCommit();
        dequant(h);
        CpAsyncWait<1>();  // x(h) landed; raw(h / 2 + 1) may still be in flight
      } else {
        dequant(h);
        CpAsyncWait<0>();  // x(h) and raw((h + 1) / 2)
      }
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && HERD_QTC_WGMMA
      FenceProxyAsync();  // the tile stores and copies, before the consumers' wgmma reads
#endif
      BarArrive(kBarFull + b, kThreads);
    }
    return;
  }

  // ---- Consumers: mma over the tiles the producers filled. ----
  PdlWait();  // y may be read by the kernel before
  const uint32_t xs_s = static_cast<uint32_t>(__cvta_generic_to_shared(xs));
  const uint32_t wh_s = static_cast<uint32_t>(__cvta_generic_to_shared(wh));
  // Writes y (or the split's partials) for token tok and tile row r.
  auto store = [&](int tok, int r, float v) {
    if (tok >= a.n_tok || r >= valid_rows) return;
    if (a.splits == 1) {
      a.seg.out.y[seg][static_cast<int64_t>(tok) * a.seg.out.n_out[seg] + row_in_seg + r] = v;
    } else {
      a.partial[(static_cast<int64_t>(split) * a.n_tok + tok) * a.seg.out.total_rows + a.seg.out.row0[seg] +
                row_in_seg + r] = v;
    }
  };
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) && HERD_QTC_WGMMA
  // Two warpgroups, warpgroup g computing D[64 weight rows 64 g.. x kN tokens] with
  // wgmma m64nNk16: A = the weight tile's rows, B = the x tile's first kN rows (both K-major),
  // 8 k-steps per half-step, committed as one group; a buffer is released once its group completed
  // (one group stays in flight while the next buffer is awaited).
  const int wg = warp >> 2;
  float acc[kN / 2];
#pragma unroll
  for (int k = 0; k < kN / 2; ++k) acc[k] = 0.f;
  for (int h = h0; h < h1; ++h) {
    const int b = h & 1;
    BarSync(kBarFull + b, kThreads);
    WgmmaFence();
#pragma unroll
    for (int m = 0; m < kHalfStep / 16; ++m) {
      const uint32_t k_off = (m >> 2) * kRegionBytes + (m & 3) * 32;
      WgmmaM64K16<kN>(acc, WgmmaDesc(wh_s + b * kTileBytes + 64 * wg * 128 + k_off),
                      WgmmaDesc(xs_s + b * kTileBytes + k_off));
    }
    WgmmaCommit();
    WgmmaWait<1>();  // half-step h - 1's group is done (h's may still run): release its buffer
    if (h > h0 && h + 1 < h1) BarArrive(kBarEmpty + (b ^ 1), kThreads);
  }
  WgmmaWait<0>();
  // acc[4 j + 2 half + e]: weight row 64 wg + 16 (warp % 4) + lane / 4 + 8 half, token 8 j + 2 (lane % 4) + e.
  const int r0 = 64 * wg + 16 * (warp & 3) + (lane >> 2), t0 = tok0 + 2 * (lane & 3);
#pragma unroll
  for (int j = 0; j < kN / 8; ++j)
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int e = 0; e < 2; ++e) store(t0 + 8 * j + e, r0 + 8 * half, acc[4 * j + 2 * half + e]);
#else
  const int wm = warp >> 1, wn = warp & 1;  // tokens [32 wm, +32), rows [64 wn, +64)
  const bool active = tok0 + 32 * wm < a.n_tok;
  float acc[2][8][4];
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int k = 0; k < 4; ++k) acc[i][j][k] = 0.f;
  // ldmatrix row addresses for k-step m (k = 16 m): A (tokens) rows lane % 16, piece
  // 2 m + lane / 16; B (weight rows) rows (lane % 8) + 8 (lane / 16), piece 2 m + (lane / 8) % 2.
  // Every row has r % 8 == lane % 8, so step m's address is step 0's ^ ((m % 4) << 5), plus
  // region m / 4 (the tiles are 1024-byte aligned).
  const uint32_t a_addr = xs_s + TilePiece(32 * wm + (lane & 15), lane >> 4);
  const uint32_t b_addr = wh_s + TilePiece(64 * wn + (lane & 7) + ((lane >> 4) << 3), (lane >> 3) & 1);
  for (int h = h0; h < h1; ++h) {
    const int b = h & 1;
    BarSync(kBarFull + b, kThreads);
    if (active) {
      const uint32_t xa = a_addr + b * kTileBytes;
      const uint32_t wb = b_addr + b * kTileBytes;
#pragma unroll
      for (int m = 0; m < kHalfStep / 16; ++m) {
        const uint32_t sw = (m & 3) << 5, region = (m >> 2) * kRegionBytes;
        uint32_t af[2][4];
#pragma unroll
        for (int i = 0; i < 2; ++i) LdMatrixX4(af[i], ((xa + 16 * i * 128) ^ sw) + region);
#pragma unroll
        for (int jp = 0; jp < 4; ++jp) {
          uint32_t bf[4];
          LdMatrixX4(bf, ((wb + 16 * jp * 128) ^ sw) + region);
#pragma unroll
          for (int i = 0; i < 2; ++i) {
            Mma16816(acc[i][2 * jp], af[i], bf[0], bf[1]);
            Mma16816(acc[i][2 * jp + 1], af[i], bf[2], bf[3]);
          }
        }
      }
    }
    if (h + 2 < h1) BarArrive(kBarEmpty + b, kThreads);
  }
  if (!active) return;
  // acc[i][j]: tokens 32 wm + 16 i + g (+8 for [2], [3]), rows 64 wn + 8 j + 2 t (+1).
  const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
  for (int i = 0; i < 2; ++i)
#pragma unroll
    for (int half = 0; half < 2; ++half)
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          store(tok0 + 32 * wm + 16 * i + g + 8 * half, 64 * wn + 8 * j + 2 * t4 + e, acc[i][j][2 * half + e]);
#endif
}

template <DType T, int kN>
void LaunchN(const QtcArgs& a, int tok_tiles, int tiles, cudaStream_t stream) {
  static std::atomic<uint64_t> raised{0};
  RaiseDynamicSmem(GemmQuantTcKernel<T, kN>, static_cast<int>(SmemBytes<T>()), raised);
  LaunchPdl(GemmQuantTcKernel<T, kN>, dim3(static_cast<unsigned>(tok_tiles), static_cast<unsigned>(tiles * a.splits)),
            dim3(kThreads), SmemBytes<T>(), stream, a);
}
template <DType T>
void Launch(const QtcArgs& a, int tok_tiles, int tiles, cudaStream_t stream) {
  if (a.n_tok <= 32) {
    LaunchN<T, 32>(a, tok_tiles, tiles, stream);
  } else if (a.n_tok <= 64) {
    LaunchN<T, 64>(a, tok_tiles, tiles, stream);
  } else {
    LaunchN<T, 128>(a, tok_tiles, tiles, stream);
  }
}

}  // namespace

bool GemmQuantTcSupports(const TensorView& w) {
  bool fits = false;  // a quantized type whose tiles fit the device's shared memory (not Ada's 99 KB)
  DispatchQuant(w.type, [&]<DType T>() { fits = SmemBytes<T>() <= static_cast<size_t>(MaxDynamicSmem()); });
  return fits && w.cols() % kStep == 0 && w.row_bytes() % 16 == 0 && (reinterpret_cast<uintptr_t>(w.data) & 15) == 0 &&
         w.cols() < INT_MAX / 2 && w.rows() < INT_MAX / 2;
}

size_t GemmQuantTcScratchBytes() {
  // splits x tiles x token tiles <= 2 x SMs, so splits x n_tok x rows <= 2 x SMs x 128 x 128.
  return size_t{2} * static_cast<size_t>(MultiProcessors()) * kTileRows * kTileTok * sizeof(float);
}

void GemmQuantTc(std::span<const TensorView> ws, std::span<float* const> ys, const void* x_half, int64_t n_tok,
                 void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  HERD_CHECK(ws.size() == ys.size() && ws.size() <= static_cast<size_t>(kMaxSegsQ));
  if (ws.empty() || n_tok == 0) return;
  const DType type = ws[0].type;
  const int64_t n_in = ws[0].cols();
  QtcArgs a{};
  for (size_t s = 0; s < ws.size(); ++s) {
    const TensorView& w = ws[s];
    HERD_CHECK_MSG(w.type == type && w.cols() == n_in && GemmQuantTcSupports(w),
                   "GemmQuantTc: weights must share a supported type and n_in");
    a.w[s] = static_cast<const uint8_t*>(w.data);
  }
  a.seg = LayoutSegments(ws, ys, kTileRows);
  const int tiles = a.seg.tiles;
  if (tiles == 0) return;
  HERD_CHECK(n_tok < INT_MAX / kTileTok);
  a.row_bytes = static_cast<int64_t>(ws[0].row_bytes());
  a.n_in = static_cast<int>(n_in);
  a.x = static_cast<const __half*>(x_half);
  a.n_tok = static_cast<int>(n_tok);
  const int tok_tiles = static_cast<int>((n_tok + kTileTok - 1) / kTileTok);
  const SplitPlan plan = PlanSplits(static_cast<int64_t>(tiles) * tok_tiles, static_cast<int>(n_in / kStep), kMaxSplits,
                                    n_tok, a.seg.out.total_rows, scratch, scratch_bytes);
  a.splits = plan.splits;
  a.ss_per_split = plan.per_split;
  a.partial = plan.partial;
  const bool ok = DispatchQuant(type, [&]<DType T>() { Launch<T>(a, tok_tiles, tiles, stream); });
  HERD_CHECK(ok);
  if (a.splits > 1) SumSplits(a.seg.out, a.partial, a.splits, n_tok, stream);
}

}  // namespace herd::cuda::internal
