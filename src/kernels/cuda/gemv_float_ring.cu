// The one-token float GEMV (F32/F16/BF16 weights, float32 x) with its weights streamed into a
// shared-memory ring by bulk copies (cp.async.bulk, sm_90), for launches of rows of at most
// kMaxIn values. Where GemvFloatKernel (matmul_gemv_float.cu) holds a lane's loads in
// registers (2 x 16 bytes in flight per lane on H200), a CTA here keeps kStages x 16 KB in flight
// with no register cost and fills the ring before its dependency wait, while the kernel before
// still runs.
//
// Taken for launches of <= 16 MiB by default (GemvOptions::float_ring_max_mb;
// HERD_CUDA_FLOAT_RING_MB, 0: never). Measured on an H200, tg128
// (bench/results/cuda-session26-2026-11-28.md, cuda-session27-2026-11-28.md):
//  - launches of <= 16 MiB through it (llama-3.2-1b Q/K/V 12.6 MB and O 8.4 MB): 1B F16
//    1,165 -> 1,189 tok/s (3 rounds each), 1B BF16 1,168 -> 1,190 (2 rounds); in the timeline
//    Q/K/V 6.4 -> 4.8 us and O 3.7 -> 2.8 us;
//  - larger launches lose: every one-token launch through it 1B F16 943, 8B F16 189 against
//    1,165 / 235 (the gate/up GEMV 19-22 -> 25 us; under ncu 39% of DRAM bandwidth, its
//    consumer warps waiting for the ring); <= 40 MiB (1B's down projection too) 1,070-1,078;
//  - one run at <= 40 MiB stopped making progress (a 300 s timeout, call 7), which 11 later
//    runs (6 at 40, 5 at 16 MiB) did not repeat. Session 27 soaked it (bench/cuda/soak.sh, 5 x
//    tg128 a process: 40 processes at 16 MiB, 25 at 40, then 60 with 16 as the default, 1B F16
//    and BF16), none stalled, and compute-sanitizer synccheck and memcheck found 0 errors on
//    GemvFloatRingTest, so 16 MiB became the default. The stall's cause is still unknown.
//    (H100: not measured.)
//  - alone (herd_cuda_matmul_bench --float-ring-mb) it is slower than GemvFloatKernel at every
//    size (O 2048 -> 2048: 5.1 against 3.7 us); its gain in the model comes from the rows it
//    copies before the dependency wait, while the kernel before still runs.
//
// Work split (persistent, one CTA per SM): CTA c owns rows [c * rows_per_cta, ...) of the
// launch's concatenated weights (GLU mode: gate rows j and up rows j of its range of j); a row
// is `parts` units of unit_bytes (<= 4 KB, 16-byte multiples), units in row order; a stage holds
// units_per_stage consecutive units. The producer warp's lane 0 copies the stages in order
// (one bulk copy per unit, completing on the stage's full barrier) and reuses a stage once its
// units are consumed (empty barrier). Consumer warp w takes units w, w + kConsumers, ...; lane L
// loads the unit's 16-byte vectors L, L + 32, ... (up to 8) at once and multiplies them with x
// (staged in shared memory after the wait) in float32, in GemvFloatKernel's order; the warp's
// shuffle tree gives the unit's sum. A row's sum is its units' sums added in order, so a row's
// result does not depend on which CTA takes it: GLU mode equals the plain launch + SwiGlu
// exactly, and for rows of one unit (<= 4 KB) it equals GemvFloatKernel at one warp per row bit
// for bit. Ring depth: 10 stages (HERD_CUDA_FLOAT_RING_STAGES=4 for 4: 1B F16 1,172 at <= 16 MiB).

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>

#include "kernels/cuda/block_reduce.cuh"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/float_unpack.cuh"
#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/tma.cuh"

namespace herd::cuda::internal::gemv {
namespace {

// Consumer warps (one producer warp besides): 8 with one vector loaded at a time ran the 1B
// gate/up at 29 us against 25 with 16 and the loads batched.
constexpr int kConsumers = 16;
constexpr int kThreads = (kConsumers + 1) * 32;
constexpr int kStageBytes = 16 << 10;   // per stage
constexpr int kMaxUnitBytes = 4 << 10;  // <= kStageBytes / 4: a stage feeds >= 4 warps
constexpr int kMaxPartSums = 2048;      // unit sums a CTA keeps (8 KB)
constexpr int kBarBytes = 256;          // full and empty barriers of up to 16 stages

struct RingArgs {
  Segs segs;
  const float* x;  // [n_in]
  int n_in;
  int row_bytes, unit_bytes, parts, units_per_stage;
  int rows;          // of the launch (GLU: gate rows)
  int rows_per_cta;  // of `rows`
  float* glu_out;    // GLU mode: out[j] = silu(gate_j) * up_j; segs = {gate, up}
};

__host__ __device__ constexpr int XBytes(int n_in) { return (n_in * 4 + 127) / 128 * 128; }
template <int kStages>
__host__ __device__ constexpr int SmemBytes(int n_in) {
  return kBarBytes + XBytes(n_in) + kStages * kStageBytes + kMaxPartSums * 4;  // barriers, x, ring, sums
}

// dot(16 bytes of weights, the x values they multiply), as GemvFloatKernel accumulates it.
template <DType T>
__device__ __forceinline__ float Dot16(const uint4& w, const float* xs, float acc) {
  float f[8];
  constexpr int kE = T == DType::kF32 ? 4 : 8;
  Unpack16<T>(w, f);
  const float4* xp = reinterpret_cast<const float4*>(xs);
#pragma unroll
  for (int k = 0; k < kE / 4; ++k) {
    const float4 xv = xp[k];
    acc += f[4 * k] * xv.x + f[4 * k + 1] * xv.y + f[4 * k + 2] * xv.z + f[4 * k + 3] * xv.w;
  }
  return acc;
}

template <DType T, int kStages>
__global__ void __launch_bounds__(kThreads, 1) GemvFloatRingKernel(const __grid_constant__ RingArgs a) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int kE = T == DType::kF32 ? 4 : 8;  // elements per 16-byte vector
  PdlTrigger();
  extern __shared__ __align__(128) uint8_t smem[];
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem);  // full[kStages], empty[kStages]
  float* xs = reinterpret_cast<float*>(smem + kBarBytes);
  uint8_t* ring = smem + kBarBytes + XBytes(a.n_in);
  float* sums = reinterpret_cast<float*>(ring + kStages * kStageBytes);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const bool glu = a.glu_out != nullptr;
  const int j0 = blockIdx.x * a.rows_per_cta;
  const int n_rows = min(a.rows_per_cta, a.rows - j0) * (glu ? 2 : 1);  // this CTA's rows
  const int n_units = max(n_rows, 0) * a.parts;
  const int n_stages = (n_units + a.units_per_stage - 1) / a.units_per_stage;
  auto full = [&](int s) { return SmemAddr(&bars[s]); };
  auto empty = [&](int s) { return SmemAddr(&bars[kStages + s]); };
  if (threadIdx.x == 0) {
    for (int s = 0; s < kStages; ++s) MbarInit(full(s), 1), MbarInit(empty(s), a.units_per_stage);
    FenceMbarInit();
  }
  __syncthreads();
  // Launch row (index into segs' concatenation) of this CTA's row i.
  auto launch_row = [&](int i) { return glu ? (i & 1) * a.rows + j0 + (i >> 1) : j0 + i; };

  if (warp == kConsumers) {  // producer; weights never change, so no dependency wait
    if (lane == 0) {
      for (int s = 0; s < n_stages; ++s) {
        const int slot = s % kStages;
        if (s >= kStages) MbarWait(empty(slot), ((s / kStages) - 1) & 1);
        const int u0 = s * a.units_per_stage, u1 = min(u0 + a.units_per_stage, n_units);
        MbarArriveExpectTx(full(slot), static_cast<uint32_t>((u1 - u0) * a.unit_bytes));
        for (int u = u0; u < u1; ++u) {
          const int gr = launch_row(u / a.parts);
          const int seg = FindSeg(a.segs, gr);
          const uint8_t* src = a.segs.w[seg] + static_cast<int64_t>(gr - a.segs.row0[seg]) * a.row_bytes +
                               static_cast<int64_t>(u % a.parts) * a.unit_bytes;
          BulkLoad(SmemAddr(ring + slot * kStageBytes + (u - u0) * a.unit_bytes), src,
                   static_cast<uint32_t>(a.unit_bytes), full(slot));
        }
      }
    }
    __syncwarp();
    PdlWait();  // before the rows' sums are written below
  } else {
    PdlWait();  // x may come from the kernel before this one
    const float4* xg = reinterpret_cast<const float4*>(a.x);
    for (int i = threadIdx.x; i < a.n_in / 4; i += kConsumers * 32) reinterpret_cast<float4*>(xs)[i] = xg[i];
    asm volatile("bar.sync 1, %0;\n" ::"n"(kConsumers * 32) : "memory");  // consumers only
    const int unit_vectors = a.unit_bytes / 16;
    const int unit_values = unit_vectors * kE;
    for (int u = warp; u < n_units; u += kConsumers) {
      const int s = u / a.units_per_stage, slot = s % kStages;
      MbarWait(full(slot), (s / kStages) & 1);
      const uint4* wv =
          reinterpret_cast<const uint4*>(ring + slot * kStageBytes + (u - s * a.units_per_stage) * a.unit_bytes);
      const float* xu = xs + (u % a.parts) * unit_values;
      // A lane's (up to kMaxUnitBytes / 512 = 8) vectors loaded at once, then summed in order.
      constexpr int kPerLane = kMaxUnitBytes / 512;
      uint4 w[kPerLane];
#pragma unroll
      for (int k = 0; k < kPerLane; ++k)
        if (lane + 32 * k < unit_vectors) w[k] = wv[lane + 32 * k];
      float acc = 0.f;
#pragma unroll
      for (int k = 0; k < kPerLane; ++k)
        if (lane + 32 * k < unit_vectors) acc = Dot16<T>(w[k], xu + (lane + 32 * k) * kE, acc);
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
      __syncwarp();
      if (lane == 0) {
        sums[u] = acc;
        MbarArrive(empty(slot));
      }
    }
  }
  __syncthreads();
  // Rows: their units' sums in order.
  auto row_sum = [&](int i) {
    float r = 0.f;
    for (int p = 0; p < a.parts; ++p) r += sums[i * a.parts + p];
    return r;
  };
  if (glu) {
    for (int i = threadIdx.x; 2 * i < n_rows; i += kThreads) {
      const float g = row_sum(2 * i), up = row_sum(2 * i + 1);
      a.glu_out[j0 + i] = Silu(g) * up;  // as SwiGlu
    }
  } else {
    for (int i = threadIdx.x; i < n_rows; i += kThreads) {
      const int gr = j0 + i;
      const int seg = FindSeg(a.segs, gr);
      a.segs.y[seg][gr - a.segs.row0[seg]] = row_sum(i);
    }
  }
#endif
}

std::atomic<uint64_t> g_raised[3][2];  // RaiseDynamicSmem's record per instance

int StagesChoice() {
  static const int stages = [] {
    const char* e = std::getenv("HERD_CUDA_FLOAT_RING_STAGES");
    return e != nullptr && std::atoi(e) == 4 ? 4 : 10;
  }();
  return stages;
}

template <DType T, int kStages>
void LaunchStages(const RingArgs& a, int grid, bool pdl, cudaStream_t stream, std::atomic<uint64_t>& raised) {
  RaiseDynamicSmem(GemvFloatRingKernel<T, kStages>, SmemBytes<kStages>(kMaxIn), raised);
  LaunchPdlIf(pdl, GemvFloatRingKernel<T, kStages>, dim3(static_cast<unsigned>(grid)), dim3(kThreads),
              SmemBytes<kStages>(a.n_in), stream, a);
}
template <DType T>
void Launch(const RingArgs& a, int grid, bool pdl, cudaStream_t stream, std::atomic<uint64_t> (&raised)[2]) {
  if (StagesChoice() == 10) {
    LaunchStages<T, 10>(a, grid, pdl, stream, raised[1]);
  } else {
    LaunchStages<T, 4>(a, grid, pdl, stream, raised[0]);
  }
}

}  // namespace

bool LaunchFloatRing(DType type, const Segs& segs, int64_t n_in, const float* x, float* glu_out, int n_glu, bool pdl,
                     cudaStream_t stream) {
  const int elem = type == DType::kF32 ? 4 : 2;
  if (n_in > kMaxIn || n_in % (16 / elem) != 0 || !Aligned16(x) || !DeviceIsSm90()) return false;
  for (int k = 0; k < kMaxSegs; ++k)
    if (segs.w[k] != nullptr && !Aligned16(segs.w[k])) return false;
  RingArgs a{};
  a.segs = segs;
  a.x = x;
  a.n_in = static_cast<int>(n_in);
  a.row_bytes = static_cast<int>(n_in * elem);
  a.parts = (a.row_bytes + kMaxUnitBytes - 1) / kMaxUnitBytes;
  while (a.row_bytes % (a.parts * 16) != 0) ++a.parts;  // ends at row_bytes / 16 at the latest
  a.unit_bytes = a.row_bytes / a.parts;
  a.units_per_stage = kStageBytes / a.unit_bytes;
  a.glu_out = glu_out;
  a.rows = glu_out != nullptr ? n_glu : segs.total_rows;
  const int per_row = a.parts * (glu_out != nullptr ? 2 : 1);
  static const int sms = [] {
    int dev = 0, n = 0;
    HERD_CUDA_CHECK(cudaGetDevice(&dev));
    HERD_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  a.rows_per_cta = std::max(1, std::min((a.rows + sms - 1) / sms, kMaxPartSums / per_row));
  const int grid = (a.rows + a.rows_per_cta - 1) / a.rows_per_cta;
  if (grid == 0) return true;
  switch (type) {
    case DType::kF32: Launch<DType::kF32>(a, grid, pdl, stream, g_raised[0]); break;
    case DType::kF16: Launch<DType::kF16>(a, grid, pdl, stream, g_raised[1]); break;
    case DType::kBF16: Launch<DType::kBF16>(a, grid, pdl, stream, g_raised[2]); break;
    default: return false;
  }
  return true;
}

}  // namespace herd::cuda::internal::gemv
