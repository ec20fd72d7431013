// The split-K decode kernel's tensor-core variant (attention_kernel.cuh, RunItem<kF16, HD, RM, true>)
// with its K/V tiles loaded by TMA: same grid, splits, tiles, math and bits, but a fifth warp
// produces the tiles while the 4 math warps only compute.
//
// The caches are seen as 2-D tensors [n_slots][n_kv_heads * HD] of halves; one TMA box is 64
// values of one kv head x min(block_size, 32) consecutive slots (one block, or the tile's part of
// one), landing in the 128-byte swizzle (SwizzledRows). Producer (one lane), per 32-position
// tile: waits for the stage's `empty` mbarrier, announces the bytes on its `full` mbarrier and
// issues the boxes of the blocks that start before the context's end (block table -> slot). Math
// warps, per tile: wait on `full`; in the context's last tile zero the V rows past it (the boxes
// bring whole blocks: 0 * NaN must not reach O) and, with the fused RoPE, write the new
// position's rotated K / V row over the loaded one (NewKvChunk, also into the caches), then a
// barrier; S = Q·Kᵀ (MmaScores), barrier, SoftmaxRows, barrier, O += P·V (MmaPV), arrive on
// `empty`. Two CTA barriers a tile over the math warps (the cp.async kernel has three), no copy
// instructions or block-table loads in them, kTmaStages tiles in flight.
// Measured (bench/results/cuda-session18-2026-11-28.md; 8B, 128 sequences x 576 positions): 109.2
// us with 3 stages (4 CTAs per SM; 4 stages 111.2, 6 115.7, 2 108.6) against 118.6 for the cp.async
// kernel. Not kept: one bulk copy per 256-byte row (64 per tile, no tensor map) 138.5 us; two kv
// heads per CTA as one stream of tiles (half the grid, one wave) 126.6 us.
#include <cuda.h>
#include <cuda_fp16.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/attention_internal.h"
#include "kernels/cuda/attention_kernel.cuh"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/tma.cuh"

namespace herd::cuda::attn {
namespace {

#ifndef HERD_ATTN_TMA_STAGES
#define HERD_ATTN_TMA_STAGES 3  // compile-time override for variant builds (bench/cuda/build_variants.sh)
#endif
constexpr int kTmaStages = HERD_ATTN_TMA_STAGES;
constexpr int kMathWarps = 4;
constexpr int kTmaThreads = 32 * (kMathWarps + 1);

template <int HD>
constexpr int kHalfBytes = kTile* HD * 2;  // K (or V) rows of one tile, unpadded
// Shared memory: up to 1 KB of alignment, S stages of K then V (1024-byte aligned), then floats:
// Q [RM][HD], scores [RM][kTile], P as halves [RM][kPPitch], max / sum / rescale [RM], RoPE
// angles [HD]; then full[S], empty[S] mbarriers.
template <int HD, int RM>
constexpr size_t kSmemBytes = 1024 + static_cast<size_t>(kTmaStages) * 2 * kHalfBytes<HD> +
                              sizeof(float) * (RM * HD + RM * kTile + RM * kPPitch / 2 + 3 * RM + HD) + 16 * kTmaStages;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ void MathSync() { asm volatile("bar.sync 1, %0;\n" ::"n"(32 * kMathWarps) : "memory"); }
#endif

template <int HD, int RM>
__global__ void __launch_bounds__(kTmaThreads)
    DecodeTmaKernel(const Params p, const __grid_constant__ CUtensorMap km, const __grid_constant__ CUtensorMap vm) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(1024) uint8_t smem_raw[];
  PdlTrigger();
  const Cta c(p);
  if (c.has_prev || c.has_next) return;
  const int t = c.t, kvh = c.kvh, pos0 = c.pos, nh = c.nh, ctx = pos0 + 1;
  int tile_begin = 0, tile_end = 0;
  const int ns = SplitTiles(p, ctx, c.split, &tile_begin, &tile_end);
  if (c.split >= ns) return;
  const int n_tiles = tile_end - tile_begin;
  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  uint8_t* ring = smem_raw + ((1024 - (SmemAddr(smem_raw) & 1023)) & 1023);
  float* qs = reinterpret_cast<float*>(ring + kTmaStages * 2 * kHalfBytes<HD>);
  float* sp = qs + RM * HD;
  float* ps = sp + RM * kTile;  // P as halves [RM][kPPitch]
  float* m_run = ps + RM * kPPitch / 2;
  float* l_run = m_run + RM;
  float* alpha = l_run + RM;
  float* cs = alpha + RM;
  const uint32_t full0 = SmemAddr(cs + HD), empty0 = full0 + 8 * kTmaStages;
  const bool rope = p.rope_inv_freq != nullptr;
  if (tid == 0) {
    for (int s = 0; s < kTmaStages; ++s) {
      MbarInit(full0 + 8 * s, 1);
      MbarInit(empty0 + 8 * s, kMathWarps);
    }
    FenceMbarInit();
  }
  if (rope) RopeAngles(p.rope_positions[t], p.rope_inv_freq, p.rope_half, cs);
  __syncthreads();
  const int32_t* table = p.tables[c.seq];

  if (warp == kMathWarps) {  // the producer: lane 0 only
    if (lane != 0) return;
    PrefetchTensorMap(&km);
    PrefetchTensorMap(&vm);
    const int box = min(p.block_size, kTile);  // rows per box
    auto issue = [&](int k) {
      const int st = k % kTmaStages, base = (tile_begin + k) * kTile;
      const int n_boxes = (min(kTile, ctx - base) + box - 1) / box;  // boxes starting before ctx
      MbarArriveExpectTx(full0 + 8 * st, static_cast<uint32_t>(n_boxes * box * HD * 2 * 2));
      const uint32_t kd = SmemAddr(ring + st * 2 * kHalfBytes<HD>), vd = kd + kHalfBytes<HD>;
      for (int b = 0; b < n_boxes; ++b) {
        const int pp = base + b * box;
        const int lb = pp >> p.block_shift;
        const int slot = table[lb] * p.block_size + (pp - lb * p.block_size);
#pragma unroll
        for (int h = 0; h < HD / 64; ++h) {
          const uint32_t off = static_cast<uint32_t>(h * kTile * 128 + b * box * 128);
          TmaLoad2d(kd + off, &km, kvh * HD + h * 64, slot, full0 + 8 * st);
          TmaLoad2d(vd + off, &vm, kvh * HD + h * 64, slot, full0 + 8 * st);
        }
      }
    };
    int k = 0;
    if (p.copy_before_wait && rope) {  // rows of earlier positions only (see Params)
      for (; k < min(kTmaStages, n_tiles); ++k) issue(k);
    }
    PdlWait();  // before the other tiles: their stages are freed by math that follows the wait
    for (; k < n_tiles; ++k) {
      if (k >= kTmaStages) MbarWait(empty0 + 8 * (k % kTmaStages), (k / kTmaStages - 1) & 1);
      issue(k);
    }
    return;
  }

  // The math warps: as RunItem<kF16, HD, RM, true> from its q load on.
  PdlWait();  // q, new_k and new_v come from the kernels before
  if (p.nsplit != nullptr && c.leader && tid == 0) p.nsplit[t] = ns;
  for (int i = tid; i < RM * HD; i += 32 * kMathWarps) {
    const int r = i / HD, d = i - r * HD;
    const float* qr = p.q + static_cast<int64_t>(t) * p.q_stride + static_cast<int64_t>(c.h0 + r) * HD;
    qs[i] = r < nh ? ScaledQ(p, qr, d, rope, cs) : 0.f;
  }
  if (tid < RM) {
    m_run[tid] = -INFINITY;
    l_run[tid] = 0.f;
  }
  MathSync();
  uint32_t qf[HD / 16][4];
  MmaQFragments<HD, RM>(qs, lane, qf);
  float o[HD / 32][4];
#pragma unroll
  for (int i = 0; i < HD / 32; ++i) o[i][0] = o[i][1] = o[i][2] = o[i][3] = 0.f;
  const __half* ph = reinterpret_cast<const __half*>(ps);
  for (int k = 0; k < n_tiles; ++k) {
    const int st = k % kTmaStages, base = (tile_begin + k) * kTile;
    MbarWait(full0 + 8 * st, (k / kTmaStages) & 1);
    uint8_t* kt = ring + st * 2 * kHalfBytes<HD>;
    const SwizzledRows ks{kt}, vs{kt + kHalfBytes<HD>};
    if (base + kTile > ctx || (rope && base + kTile > pos0)) {  // the context's last tile
      for (int i = tid; i < kTile * (HD / 8); i += 32 * kMathWarps) {
        const int j = i / (HD / 8), ch = i - j * (HD / 8);
        uint8_t* kc = const_cast<uint8_t*>(ks.At(j, ch));
        uint8_t* vc = const_cast<uint8_t*>(vs.At(j, ch));
        if (base + j >= ctx) {
          *reinterpret_cast<uint4*>(vc) = make_uint4(0u, 0u, 0u, 0u);
        } else if (rope && base + j == pos0) {
          const int lb = pos0 >> p.block_shift;
          const int64_t slot = static_cast<int64_t>(table[lb]) * p.block_size + (pos0 - lb * p.block_size);
          NewKvChunk<KvKind::kF16, HD>(p, t, kvh, ch, cs, kc, vc, (slot * p.n_kv_heads + kvh) * p.vec_bytes + ch * 16);
        }
      }
      MathSync();
    }
    MmaScores<HD, RM>(ks, qf, warp, lane, sp);
    MathSync();  // every warp's scores; and the previous tile's P·V is done with P and alpha
    SoftmaxRows<RM, true>(sp, ps, m_run, l_run, alpha, warp, lane, nh, base, pos0, nh);
    MathSync();
    MmaPV<HD, RM>(vs, ph, alpha, warp, lane, o);
    __syncwarp();
    if (lane == 0) MbarArrive(empty0 + 8 * st);
  }
  // m_run / l_run were last written before the loop's last MathSync.
  const int g = lane / 4, d0 = warp * (HD / 4) + 2 * (lane % 4);
  auto store = [&](int r, int d, float acc) {
    const float l = l_run[r];
    const float out = l > 0.f ? acc / l : 0.f;
    const int64_t th = static_cast<int64_t>(t) * p.n_heads + c.h0 + r;  // token * n_heads + head
    if (ns == 1) {
      StoreOut(p, th * HD + d, out);
    } else {
      const int64_t slot = th * p.s_max + c.split;
      p.part_o[slot * HD + d] = out;
      if (d == 0) p.part_ml[slot] = make_float2(m_run[r], l);
    }
  };
#pragma unroll
  for (int nt = 0; nt < HD / 32; ++nt) {
    if (g < nh) store(g, d0 + 8 * nt, o[nt][0]), store(g, d0 + 8 * nt + 1, o[nt][1]);
    if (g + 8 < nh) store(g + 8, d0 + 8 * nt, o[nt][2]), store(g + 8, d0 + 8 * nt + 1, o[nt][3]);
  }
#endif
}

template <int HD, int RM>
void Launch(const Params& p, unsigned grid, cudaStream_t stream, const CUtensorMap& km, const CUtensorMap& vm) {
  static std::atomic<uint64_t> raised{0};
  RaiseDynamicSmem(DecodeTmaKernel<HD, RM>, static_cast<int>(kSmemBytes<HD, RM>), raised);
  LaunchPdl(DecodeTmaKernel<HD, RM>, grid, kTmaThreads, kSmemBytes<HD, RM>, stream, p, km, vm);
}

template <int HD>
void LaunchRows(const Params& p, int rows, unsigned grid, cudaStream_t stream, const CUtensorMap& km,
                const CUtensorMap& vm) {
  if (rows == 4) return Launch<HD, 4>(p, grid, stream, km, vm);
  if (rows == 8) return Launch<HD, 8>(p, grid, stream, km, vm);
  Launch<HD, kItemRows>(p, grid, stream, km, vm);
}

std::atomic<bool>& TmaFlag() {
  static std::atomic<bool> on{[] {
    const char* e = std::getenv("HERD_CUDA_ATTN_TMA");
    return e == nullptr || std::strcmp(e, "0") != 0;
  }()};
  return on;
}

std::atomic<uint64_t>& LaunchCount() {
  static std::atomic<uint64_t> n{0};
  return n;
}

}  // namespace

bool LaunchDecodeTmaF16(const Params& p, int rows, unsigned grid, cudaStream_t stream) {
  if (!TmaFlag().load(std::memory_order_relaxed) || p.head_chunks != 1 || (p.head_dim != 64 && p.head_dim != 128) ||
      p.block_shift < 4 || !TensorMapsUsable()) {
    return false;
  }
  const uint64_t cols = static_cast<uint64_t>(p.n_kv_heads) * p.head_dim;
  const uint32_t box = static_cast<uint32_t>(p.block_size < kTile ? p.block_size : kTile);
  CUtensorMap km, vm;
  if (!EncodeTensorMap2d(&km, p.k, false, static_cast<uint64_t>(p.n_slots), cols, cols * 2, box).ok() ||
      !EncodeTensorMap2d(&vm, p.v, false, static_cast<uint64_t>(p.n_slots), cols, cols * 2, box).ok()) {
    return false;
  }
  if (p.head_dim == 128) {
    LaunchRows<128>(p, rows, grid, stream, km, vm);
  } else {
    LaunchRows<64>(p, rows, grid, stream, km, vm);
  }
  LaunchCount().fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace herd::cuda::attn

namespace herd::cuda {
void SetDecodeTma(bool on) { attn::TmaFlag().store(on); }
uint64_t DecodeTmaLaunches() { return attn::LaunchCount().load(std::memory_order_relaxed); }
}  // namespace herd::cuda
