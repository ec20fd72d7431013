// GemmHalfTc: y = x · Wᵀ for F16 / BF16 weights on Hopper's tensor cores, for decode batches
// of 2-64 tokens, 2-128 for weights sharing x (Q/K/V, gate/up), which run as one launch
// (MatMulRunner's default ranges; any n_tok works), where each call streams every weight byte
// once. Measured on H100 (bench/results/cuda-half-tc-2026-11-25.md): per weight on par with
// cuBLAS from 2 to 128 tokens (4096 x 4096: 16.3 vs 17.0 us at 2 tokens, 17.6 vs 17.7 at 128),
// slower at 64 (21.5 vs 16.4); the gain is in the grouped launches.
//
// A CTA computes a tile of kRows = 128 weight rows x kN tokens (32, 64 or 128: the fewest covering
// n_tok, at most 64 outside the GLU (TokenTile); more tokens take several token tiles) over a
// range of K, in stages of 64 values:
//   one producer thread issues, per stage, two TMA box copies (weights [128][64], x [kN][64], both
//   in wgmma's 128-byte swizzle, elements outside the tensors zero-filled) counted on the stage's
//   FULL mbarrier, kStages stages ahead;
//   two consumer warpgroups (8 warps) wait for FULL, issue 4 wgmma m64nNk16 each (warpgroup g:
//   weight rows 64 g..), keep one stage's group in flight and release the stage before it on its
//   EMPTY mbarrier (one arrival per warp), which the producer waits for before refilling it.
// No thread copies or converts tile data; x tiles come from L2 (every CTA reads the same x).
// Split-K over CTAs when there are too few weight tiles (gemm_split_k.h), summed in split order
// (deterministic): from 33 tokens on the splits of a tile are one thread-block cluster and add
// their sums through distributed shared memory (ClusterReduce; no launch of more clusters than
// fit at once), below that through partials in memory and SumSplits. SwiGLU mode
// (GemmHalfTcGlu): the tile's rows are 64 gate rows and the same 64 up rows, and the epilogue
// writes silu(gate) * up (and its half copy) instead.
//
// Shared memory: kStages x (16 KB weights + kN x 128 bytes x) <= 100 KB and a 1 KiB alignment pad:
// two CTAs (2 x 288 threads) per SM. Weights are read before PdlWait (no kernel writes them), x
// and y after it.
#include <cooperative_groups.h>
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemm_split_k.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/tma.cuh"
#include "kernels/cuda/wgmma.cuh"

namespace herd::cuda::internal {
namespace {

constexpr int kRows = 128;                    // weight rows per CTA tile
constexpr int kStageK = 64;                   // values per stage: one 128-byte swizzle row
constexpr int kThreads = 8 * 32 + 32;         // two consumer warpgroups + one producer warp
constexpr int kWBytes = kRows * kStageK * 2;  // 16 KB of weights per stage
constexpr int kMaxSplits = 8;                 // the largest portable cluster
constexpr int kMaxSegs = kMaxSplitSegs;
constexpr int kRedPitch = kRows + 4;  // floats per token row of a CTA's split-K sums

template <int kN>
constexpr int Stages() {
  return kN == 128 ? 3 : kN == 64 ? 4 : 5;  // <= 100 KB: two CTAs per SM
}
template <int kN>
constexpr int StageBytes() {
  return kWBytes + kN * kStageK * 2;
}
template <int kN>
constexpr size_t SmemBytes() {
  return 1024 + static_cast<size_t>(Stages<kN>()) * StageBytes<kN>();
}

struct HtcArgs {
  CUtensorMap w[kMaxSegs];  // [n_out[s]][n_in], boxes [128][64]
  CUtensorMap x;            // [n_tok][n_in], boxes [kN][64]
  SegmentLayout seg;        // outputs y [n_tok, n_out[s]] (used without splits), tiles, rows (partials' layout)
  int n_tok;
  int k_stages;    // ceil(n_in / 64)
  int splits;      // CTAs of one tile's K splits
  int per_split;   // stages per split
  int cluster;     // splits > 1: the splits are a cluster and add up through it (ClusterReduce)
  float* partial;  // splits > 1, no cluster: [splits][n_tok][total_rows], summed by SumSplits
  // SwiGLU mode (kGlu): w[0] gate, w[1] up (boxes [64][64]); y[0] [n_tok, n_out[0]] float and,
  // when set, glu_half [n_tok, n_out[0]] half (bfloat16 when glu_half_bf16) of silu(gate) * up.
  void* glu_half;
  int glu_half_bf16;
};

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
// The producer thread: stage i of this CTA's n (K range from stage st0) into ring slot i % kS,
// the weights of the first kS stages before PdlWait (no kernel writes them), x after it.
template <int kN, bool kGlu>
__device__ __forceinline__ void Produce(const HtcArgs& a, int seg, int row_in_seg, int st0, int n, uint32_t base,
                                        uint64_t* full, uint64_t* empty) {
  constexpr int kS = Stages<kN>();
  constexpr int kStage = StageBytes<kN>();
  const int tok0 = blockIdx.x * kN;
  const CUtensorMap* wmap = &a.w[seg];
  PrefetchTensorMap(wmap);
  PrefetchTensorMap(&a.x);
  // Stage i's weight tile: 128 rows of one map, or (kGlu) 64 gate rows then 64 up rows.
  auto load_w = [&](int i, int s) {
    TmaLoad2d(base + s * kStage, wmap, (st0 + i) * kStageK, row_in_seg, SmemAddr(&full[s]));
    if (kGlu) TmaLoad2d(base + s * kStage + kWBytes / 2, &a.w[1], (st0 + i) * kStageK, row_in_seg, SmemAddr(&full[s]));
  };
  const int pre = min(n, kS);
  for (int i = 0; i < pre; ++i) {  // weights: no kernel of the stream writes them
    MbarArriveExpectTx(SmemAddr(&full[i]), kStage);
    load_w(i, i);
  }
  PdlWait();  // x comes from the kernel before
  for (int i = 0; i < pre; ++i)
    TmaLoad2d(base + i * kStage + kWBytes, &a.x, (st0 + i) * kStageK, tok0, SmemAddr(&full[i]));
  for (int i = pre; i < n; ++i) {
    const int s = i % kS;
    MbarWait(SmemAddr(&empty[s]), ((i / kS) - 1) & 1);  // the consumers released use i - kS
    MbarArriveExpectTx(SmemAddr(&full[s]), kStage);
    load_w(i, s);
    TmaLoad2d(base + s * kStage + kWBytes, &a.x, (st0 + i) * kStageK, tok0, SmemAddr(&full[s]));
  }
}

// Split-K through the cluster (the CTAs of one tile's splits; cluster rank = split): each CTA
// has left its [kN tokens][kRedPitch] sums at byte `red_off` of its shared memory; after a
// cluster barrier CTA `split` adds slice `split` of the tile over all ranks in rank order
// (deterministic) and writes y, then waits at a second barrier so that no CTA leaves while
// others still read its shared memory. Every thread of every CTA of the cluster calls it.
template <int kN>
__device__ __forceinline__ void ClusterReduce(const HtcArgs& a, int seg, int row_in_seg, int tok0, uint32_t red_off,
                                              uint8_t* smem_unaligned) {
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  cluster.sync();  // release: every CTA's sums are in its shared memory
  float* red = reinterpret_cast<float*>(smem_unaligned + red_off);
  const int split = static_cast<int>(cluster.block_rank());
  constexpr int kElems = kN * kRows;
  const int per = (kElems + a.splits - 1) / a.splits;
  const int end = min(kElems, (split + 1) * per);
  const int valid_rows = min(kRows, a.seg.out.n_out[seg] - row_in_seg);
  float* y = a.seg.out.y[seg] + row_in_seg;
  // Every rank's value of an element is loaded before any is added (the loads of all splits in
  // flight at once, not one distributed-shared-memory round trip per split), then added in rank
  // order.
  const float* ranks[kMaxSplits];
#pragma unroll
  for (int s = 0; s < kMaxSplits; ++s) ranks[s] = s < a.splits ? cluster.map_shared_rank(red, s) : red;
  for (int i = split * per + static_cast<int>(threadIdx.x); i < end; i += kThreads) {
    const int t = i / kRows, r = i % kRows;  // consecutive threads: consecutive rows of one token
    if (tok0 + t >= a.n_tok || r >= valid_rows) continue;
    float part[kMaxSplits];
#pragma unroll
    for (int s = 0; s < kMaxSplits; ++s) part[s] = s < a.splits ? ranks[s][t * kRedPitch + r] : 0.f;
    float v = 0.f;
#pragma unroll
    for (int s = 0; s < kMaxSplits; ++s) {
      if (s < a.splits) v += part[s];
    }
    y[static_cast<int64_t>(tok0 + t) * a.seg.out.n_out[seg] + r] = v;
  }
  cluster.sync();  // the other CTAs are done reading this one's shared memory
}

#endif  // __CUDA_ARCH_FEAT_SM90_ALL

// kGlu: a tile is 64 gate rows (warpgroup 0) and the same 64 up rows (warpgroup 1); the epilogue
// writes silu(gate) * up (no split-K).
template <bool kBf16, int kN, bool kGlu>
__global__ void __launch_bounds__(kThreads, 2) GemmHalfTcKernel(const __grid_constant__ HtcArgs a) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kS = Stages<kN>();
  constexpr int kStage = StageBytes<kN>();
  extern __shared__ __align__(16) uint8_t smem_unaligned[];
  __shared__ __align__(8) uint64_t full[kS], empty[kS];
  // 1024-byte aligned base (the swizzle's repeat); stage s: weights at s * kStage, x after them.
  const uint32_t base = (SmemAddr(smem_unaligned) + 1023) & ~1023u;
  PdlTrigger();

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int tok0 = blockIdx.x * kN;
  const int tile = blockIdx.y / a.splits, split = blockIdx.y % a.splits;
  // (kGlu: one segment, the gate, of 64-row tiles.)
  const TilePos pos = LocateTile(a.seg, tile, kGlu ? kRows / 2 : kRows);
  const int seg = pos.seg, row_in_seg = pos.row_in_seg;
  const int st0 = split * a.per_split;
  const int n = min(a.k_stages, st0 + a.per_split) - st0;  // >= 1 (no empty split)

  if (tid == 0) {
    for (int s = 0; s < kS; ++s) {
      MbarInit(SmemAddr(&full[s]), 1);
      MbarInit(SmemAddr(&empty[s]), 8);  // one arrival per consumer warp
    }
    FenceMbarInit();
  }
  __syncthreads();

  if (warp == 8) {
    // ---- Producer: one thread issues the stage copies. ----
    if (lane == 0) Produce<kN, kGlu>(a, seg, row_in_seg, st0, n, base, full, empty);
    if (!a.cluster) return;
    __syncwarp();
    ClusterReduce<kN>(a, seg, row_in_seg, tok0, base - SmemAddr(smem_unaligned), smem_unaligned);
    return;
  }

  // ---- Consumers: warpgroup wg computes D[64 weight rows 64 wg.. x kN tokens]. ----
  PdlWait();  // y may be read by the kernel before
  const int wg = warp >> 2;
  float acc[kN / 2];
#pragma unroll
  for (int k = 0; k < kN / 2; ++k) acc[k] = 0.f;
  for (int i = 0; i < n; ++i) {
    const int s = i % kS;
    MbarWait(SmemAddr(&full[s]), (i / kS) & 1);
    const uint32_t w_s = base + s * kStage + 64 * wg * 128, x_s = base + s * kStage + kWBytes;
    WgmmaFence();
#pragma unroll
    for (int m = 0; m < kStageK / 16; ++m)
      WgmmaM64K16<kN, kBf16>(acc, WgmmaDesc(w_s + 32 * m), WgmmaDesc(x_s + 32 * m));
    WgmmaCommit();
    WgmmaWait<1>();  // stage i - 1's group is done (i's may still run): release its buffer
    if (i > 0 && lane == 0) MbarArrive(SmemAddr(&empty[(i - 1) % kS]));
  }
  WgmmaWait<0>();
  // acc[4 j + 2 half + e]: weight row 64 wg + 16 (warp % 4) + lane / 4 + 8 half, token 8 j + 2 (lane % 4) + e.
  const int r0 = 64 * wg + 16 * (warp & 3) + (lane >> 2), t0 = tok0 + 2 * (lane & 3);
  if constexpr (kGlu) {
    // Warpgroup 1 hands its up values to warpgroup 0 through the (consumed) stage buffers,
    // [value k][thread], after both warpgroups' wgmma are done reading them.
    float* up = reinterpret_cast<float*>(smem_unaligned + (base - SmemAddr(smem_unaligned)));
    const int ct = tid & 127;
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    if (wg == 1) {
#pragma unroll
      for (int k = 0; k < kN / 2; ++k) up[k * 128 + ct] = acc[k];
    }
    asm volatile("bar.sync 1, 256;\n" ::: "memory");
    if (wg == 1) return;
    const int valid = min(kRows / 2, a.seg.out.n_out[0] - row_in_seg);
    ForEachWgmmaAcc<kN>([&](int k, int dt, int dr) {
      const int tok = t0 + dt, r = r0 + dr;
      if (tok >= a.n_tok || r >= valid) return;
      const float v = Silu(acc[k]) * up[k * 128 + ct];  // as SwiGlu
      const int64_t o = static_cast<int64_t>(tok) * a.seg.out.n_out[0] + row_in_seg + r;
      a.seg.out.y[0][o] = v;
      if (a.glu_half != nullptr) {
        if (a.glu_half_bf16) {
          static_cast<__nv_bfloat16*>(a.glu_half)[o] = __float2bfloat16_rn(v);
        } else {
          static_cast<__half*>(a.glu_half)[o] = __float2half_rn(v);
        }
      }
    });
    return;
  }
  const int valid_rows = min(kRows, a.seg.out.n_out[seg] - row_in_seg);
  if (!a.cluster) {  // y, or this split's partial sums
    float* y = a.splits == 1 ? a.seg.out.y[seg] + row_in_seg
                             : a.partial + static_cast<int64_t>(split) * a.n_tok * a.seg.out.total_rows +
                                   a.seg.out.row0[seg] + row_in_seg;
    const int64_t pitch = a.splits == 1 ? a.seg.out.n_out[seg] : a.seg.out.total_rows;
    ForEachWgmmaAcc<kN>([&](int k, int dt, int dr) {
      if (t0 + dt < a.n_tok && r0 + dr < valid_rows) y[(t0 + dt) * pitch + r0 + dr] = acc[k];
    });
    return;
  }
  // Split-K: this CTA's sums to its shared memory as [token][kRedPitch] (conflict-free: the 4
  // token pairs of a quad land 8 banks apart), then the cluster adds them up.
  float* red = reinterpret_cast<float*>(smem_unaligned + (base - SmemAddr(smem_unaligned)));
  const int tl = 2 * (lane & 3);
  asm volatile("bar.sync 1, 256;\n" ::: "memory");  // both warpgroups are done reading the stages
  ForEachWgmmaAcc<kN>([&](int k, int dt, int dr) { red[(tl + dt) * kRedPitch + r0 + dr] = acc[k]; });
  ClusterReduce<kN>(a, seg, row_in_seg, tok0, base - SmemAddr(smem_unaligned), smem_unaligned);
#else
  __trap();  // the host launches this kernel only on sm_90 (GemmHalfTcAvailable)
#endif
}

// K splits at most: HERD_CUDA_HALF_TC_MAX_SPLITS (1..8, A/B runs), else kMaxSplits.
int MaxSplits() {
  static const int v = [] {
    const char* e = std::getenv("HERD_CUDA_HALF_TC_MAX_SPLITS");
    const int n = e == nullptr ? kMaxSplits : std::atoi(e);
    return n >= 1 && n <= kMaxSplits ? n : kMaxSplits;
  }();
  return v;
}

// Tokens per CTA tile: the fewest of 32, 64, 128 covering n_tok, except that GemmHalfTc (not the
// GLU) takes 65-128 tokens as 64-token tiles (HERD_CUDA_HALF_TC_MAX_N, default 64; 128 for A/B
// runs): on H100, llama-3.1-8b F16 Q/K/V at 128 tokens 30.9 us against 37.5 with one 128-token
// tile per weight tile (the two token tiles of a weight tile run side by side and read its
// weights from DRAM once), while the GLU keeps 128 (with 64: gate/up 97.4 vs 94.4 us and 128
// sequences -2.2%).
int TokenTile(int64_t n_tok, bool glu) {
  static const int cap = [] {
    const char* e = std::getenv("HERD_CUDA_HALF_TC_MAX_N");
    const int n = e == nullptr ? 64 : std::atoi(e);
    return n >= 128 ? 128 : n >= 64 ? 64 : 32;
  }();
  return std::min(n_tok <= 32 ? 32 : n_tok <= 64 ? 64 : 128, glu ? 128 : cap);
}

// HERD_CUDA_HALF_TC_CLUSTER=0: split-K sums through memory at every token count (A/B runs).
bool ClusterSplitK() {
  static const bool on = [] {
    const char* e = std::getenv("HERD_CUDA_HALF_TC_CLUSTER");
    return e == nullptr || std::strcmp(e, "0") != 0;
  }();
  return on;
}

// The kernel's dynamic shared-memory limit, raised on the current device.
template <bool kBf16, int kN, bool kGlu>
void Configure() {
  static std::atomic<uint64_t> raised{0};
  RaiseDynamicSmem(GemmHalfTcKernel<kBf16, kN, kGlu>, static_cast<int>(SmemBytes<kN>()), raised);
}

// Clusters of `size` CTAs (the K splits of one tile) the GPU runs at once: cluster CTAs must
// share a GPC, so this can be less than (2 CTAs x SMs) / size. Read once per size (all GPUs of
// a process are taken to be alike, as for the GEMV launch helpers).
template <bool kBf16, int kN>
int ClusterSlots(int size) {
  static std::atomic<int> slots[kMaxSplits + 1];
  int v = slots[size].load(std::memory_order_relaxed);
  if (v == 0) {
    Configure<kBf16, kN, false>();
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(1, static_cast<unsigned>(size), 1);
    cfg.blockDim = dim3(kThreads);
    cfg.dynamicSmemBytes = SmemBytes<kN>();
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = 1;
    attr.val.clusterDim.y = static_cast<unsigned>(size);
    attr.val.clusterDim.z = 1;
    cfg.attrs = &attr;
    cfg.numAttrs = 1;
    HERD_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&v, GemmHalfTcKernel<kBf16, kN, false>, &cfg));
    v = std::max(v, 1);
    slots[size].store(v, std::memory_order_relaxed);
  }
  return v;
}

// The most K splits for `ctas` tiles: MaxSplits(), lowered until all clusters fit one wave
// (a second wave of clusters would double the time the split was to cut).
template <bool kBf16, int kN>
int MaxClusterSplits(int64_t ctas) {
  int s = MaxSplits();
  while (s > 1 && ctas > ClusterSlots<kBf16, kN>(s)) --s;
  return s;
}

template <bool kBf16, int kN, bool kGlu>
void LaunchN(const HtcArgs& a, int tok_tiles, int tiles, cudaStream_t stream) {
  Configure<kBf16, kN, kGlu>();
  static_assert(kN * kRedPitch * 4 <= Stages<kN>() * StageBytes<kN>(), "split-K sums fit the stage buffers");
  LaunchPdlClustered(PdlEnabled(), dim3(1, static_cast<unsigned>(a.cluster ? a.splits : 1), 1),
                     GemmHalfTcKernel<kBf16, kN, kGlu>,
                     dim3(static_cast<unsigned>(tok_tiles), static_cast<unsigned>(tiles * a.splits)), dim3(kThreads),
                     SmemBytes<kN>(), stream, a);
}

template <bool kBf16, bool kGlu>
void Launch(const HtcArgs& a, int kn, int tok_tiles, int tiles, cudaStream_t stream) {
  if (kn == 32) {
    LaunchN<kBf16, 32, kGlu>(a, tok_tiles, tiles, stream);
  } else if (kn == 64) {
    LaunchN<kBf16, 64, kGlu>(a, tok_tiles, tiles, stream);
  } else {
    LaunchN<kBf16, 128, kGlu>(a, tok_tiles, tiles, stream);
  }
}

std::atomic<int>& EnabledFlag() {
  static std::atomic<int> on{[] {
    const char* e = std::getenv("HERD_CUDA_HALF_TC");
    return e == nullptr || std::strcmp(e, "0") != 0 ? 1 : 0;
  }()};
  return on;
}

}  // namespace

bool GemmHalfTcAvailable() { return TensorMapsUsable() && EnabledFlag().load(std::memory_order_relaxed) != 0; }

void SetGemmHalfTcEnabled(bool on) { EnabledFlag().store(on ? 1 : 0); }

bool GemmHalfTcSupports(const TensorView& w) {
  return (w.type == DType::kF16 || w.type == DType::kBF16) && w.cols() % 8 == 0 && w.rows() > 0 &&
         (reinterpret_cast<uintptr_t>(w.data) & 15) == 0 && w.cols() < INT_MAX / 2 && w.rows() < INT_MAX / 2;
}

void GemmHalfTc(std::span<const TensorView> ws, std::span<float* const> ys, const void* x_half, int64_t n_tok,
                void* scratch, size_t scratch_bytes, cudaStream_t stream) {
  HERD_CHECK(ws.size() == ys.size() && ws.size() <= static_cast<size_t>(kMaxSegs));
  if (ws.empty() || n_tok == 0) return;
  HERD_CHECK_MSG((reinterpret_cast<uintptr_t>(x_half) & 15) == 0, "GemmHalfTc: x must be 16-byte aligned");
  const DType type = ws[0].type;
  const bool bf16 = type == DType::kBF16;
  const int64_t n_in = ws[0].cols();
  const int kn = TokenTile(n_tok, /*glu=*/false);
  HtcArgs a{};
  for (size_t s = 0; s < ws.size(); ++s) {
    const TensorView& w = ws[s];
    HERD_CHECK_MSG(w.type == type && w.cols() == n_in && GemmHalfTcSupports(w),
                   "GemmHalfTc: weights must share a supported type and n_in");
    const Status st = EncodeTensorMap2d(&a.w[s], w.data, bf16, static_cast<uint64_t>(w.rows()),
                                        static_cast<uint64_t>(n_in), w.row_bytes(), kRows);
    HERD_CHECK_MSG(st.ok(), "GemmHalfTc: %s", st.ToString().c_str());
  }
  a.seg = LayoutSegments(ws, ys, kRows);
  const int tiles = a.seg.tiles;
  HERD_CHECK(n_tok < INT_MAX / 128);
  const Status st = EncodeTensorMap2d(&a.x, x_half, bf16, static_cast<uint64_t>(n_tok), static_cast<uint64_t>(n_in),
                                      static_cast<uint64_t>(n_in) * 2, static_cast<uint32_t>(kn));
  HERD_CHECK_MSG(st.ok(), "GemmHalfTc: %s", st.ToString().c_str());
  a.n_tok = static_cast<int>(n_tok);
  a.k_stages = static_cast<int>((n_in + kStageK - 1) / kStageK);
  const int tok_tiles = static_cast<int>((n_tok + kn - 1) / kn);
  const int64_t ctas = static_cast<int64_t>(tiles) * tok_tiles;
  // Split-K sums: through the cluster from 33 tokens on, through partials in memory below (on
  // H100, 8B F16 decode: clusters +3% at 64 sequences, -2.4% at 16; bench/results/
  // cuda-half-tc-2026-11-25.md).
  a.cluster = kn >= 64 && ClusterSplitK() ? 1 : 0;
  int max_splits = MaxSplits();
  if (a.cluster) {
    max_splits = bf16 ? (kn == 64 ? MaxClusterSplits<true, 64>(ctas) : MaxClusterSplits<true, 128>(ctas))
                      : (kn == 64 ? MaxClusterSplits<false, 64>(ctas) : MaxClusterSplits<false, 128>(ctas));
  }
  const SplitPlan plan =
      a.cluster ? PlanSplits(ctas, a.k_stages, max_splits)
                : PlanSplits(ctas, a.k_stages, max_splits, n_tok, a.seg.out.total_rows, scratch, scratch_bytes);
  a.splits = plan.splits;
  a.per_split = plan.per_split;
  a.partial = plan.partial;
  if (a.splits == 1) a.cluster = 0;
  HERD_CHECK(static_cast<int64_t>(tiles) * a.splits < (int64_t{1} << 16));
  if (bf16) {
    Launch<true, false>(a, kn, tok_tiles, tiles, stream);
  } else {
    Launch<false, false>(a, kn, tok_tiles, tiles, stream);
  }
  if (a.splits > 1 && !a.cluster) SumSplits(a.seg.out, a.partial, a.splits, n_tok, stream);
}

void GemmHalfTcGlu(const TensorView& gate, const TensorView& up, const void* x_half, int64_t n_tok, float* out,
                   void* half_out, bool half_out_bf16, cudaStream_t stream) {
  if (n_tok == 0) return;
  HERD_CHECK_MSG(gate.type == up.type && gate.rows() == up.rows() && gate.cols() == up.cols() &&
                     GemmHalfTcSupports(gate) && GemmHalfTcSupports(up),
                 "GemmHalfTcGlu: gate and up must share a supported type and shape");
  HERD_CHECK_MSG((reinterpret_cast<uintptr_t>(x_half) & 15) == 0, "GemmHalfTcGlu: x must be 16-byte aligned");
  if (GemmHalfTcGluWide(gate, up, x_half, n_tok, out, half_out, half_out_bf16, stream)) return;
  const bool bf16 = gate.type == DType::kBF16;
  const int64_t n_in = gate.cols();
  const int kn = TokenTile(n_tok, /*glu=*/true);
  HtcArgs a{};
  const TensorView* w[2] = {&gate, &up};
  for (int s = 0; s < 2; ++s) {
    const Status st = EncodeTensorMap2d(&a.w[s], w[s]->data, bf16, static_cast<uint64_t>(gate.rows()),
                                        static_cast<uint64_t>(n_in), gate.row_bytes(), kRows / 2);
    HERD_CHECK_MSG(st.ok(), "GemmHalfTcGlu: %s", st.ToString().c_str());
  }
  HERD_CHECK(n_tok < INT_MAX / 128 && gate.rows() < INT_MAX / 2);
  const Status st = EncodeTensorMap2d(&a.x, x_half, bf16, static_cast<uint64_t>(n_tok), static_cast<uint64_t>(n_in),
                                      static_cast<uint64_t>(n_in) * 2, static_cast<uint32_t>(kn));
  HERD_CHECK_MSG(st.ok(), "GemmHalfTcGlu: %s", st.ToString().c_str());
  const TensorView gw[1] = {gate};
  float* const gy[1] = {out};
  a.seg = LayoutSegments(gw, gy, kRows / 2);
  const int tiles = a.seg.tiles;
  a.n_tok = static_cast<int>(n_tok);
  a.k_stages = static_cast<int>((n_in + kStageK - 1) / kStageK);
  a.splits = 1;  // the SwiGLU needs whole sums
  a.per_split = a.k_stages;
  a.glu_half = half_out;
  a.glu_half_bf16 = half_out_bf16 ? 1 : 0;
  const int tok_tiles = static_cast<int>((n_tok + kn - 1) / kn);
  HERD_CHECK(tiles < (1 << 16));
  if (bf16) {
    Launch<true, true>(a, kn, tok_tiles, tiles, stream);
  } else {
    Launch<false, true>(a, kn, tok_tiles, tiles, stream);
  }
}

}  // namespace herd::cuda::internal
