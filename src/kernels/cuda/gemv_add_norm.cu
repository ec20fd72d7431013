// GemvQuantAddNorm (matmul_internal.h): the one-token quantized GEMV whose input is
// RmsNorm(x + y) * norm_w, with the residual add, the norm and the Q8_K quantization done by
// every CTA of the GEMV itself instead of a norm kernel before it (at one token that kernel is
// ~2.5 us of dependent-launch latency on H100; computing it redundantly costs each CTA two
// 16 KB reads from L2). Q8_0 weights take Q8_0 activations instead (the backend takes that path
// for rows of at least HERD_CUDA_NORM_IN_GEMV_Q8_0 = 4096 values: +1.0% tg128 on H200 at 8B).
//
// Structure (warp-specialized, one CTA per SM): the CTA owns a contiguous range of the launch's
// rows; its last warp (the producer) streams them into a ring of shared-memory stages with
// 16-byte cp.async (or, for wide rows, one cp.async.bulk per stage: below), a chunk of whole rows
// per stage, each stage completing on an mbarrier; the producer starts before the kernel waits for its predecessor
// (weights never change), so the ring fills while the consumers compute the norm. The consumer
// warps take (row, step) items of each chunk round-robin; their count is a multiple of the
// steps per row, so warp w always takes step w % n_steps and holds that step's activations in
// registers (quant_dot.cuh's lane layout, loaded from the Q8_K row the CTA quantized into shared
// memory). Per-item dot products are GemvQuantKernel's; partial sums go to shared memory and are
// summed per row in step order at the end. x += y is stored by the CTA that reads x last (a
// device counter), so no CTA reads a half-updated x.
//
// Measured (H100, herd_cuda_gemv_norm_bench, us per norm + GEMV pair, an earlier ring shape): 8B
// gate/up 4096 -> 2 x 14336 Q4_K 27.1 (norm kernel + GemvQuant) -> 24.2; 1B 2048 -> 2 x 8192
// 11.1 -> 9.1; the Q/K/V launches (4096 -> 6144 Q4_K + Q6_K) 10.5 -> 10.8 alone, yet in the model
// 8B Q4_K_M decodes 449.8 -> 473.9 tok/s with them (likely: their weights stream while the down
// GEMV before them drains; bench/results/cuda-session17-2026-11-28.md); 1B (2048-value rows)
// loses 2.6%, so the backend takes Q/K/V rows of at least 4096 values (HERD_CUDA_NORM_IN_QKV).
// Where a 1B gate/up launch's time goes (H200, phase marks of gemv_add_norm_diag.cuh, session
// 29): ~0.8 us from entry to the dependency release, ~2.3 us of norm, then ~1 us per chunk of
// dot products even where the whole share of rows was in the ring before the release: the
// consumer loop is issue-bound (~105 SASS instructions an item, 16 warps). Dropping the loop's
// integer divisions (stage, parity and first item kept incrementally): tg128 1B Q4_K_M 2,135 ->
// 2,200 tok/s, 8B Q4_K_M 497 -> 525; 1B Q6_K 1,768 -> 1,743 (its instance spills more).
// The producer (session 30, H200): 16-byte cp.async by its 32 lanes, or one cp.async.bulk per
// chunk by the TMA unit. Bulk streams faster (1B: the CTA's share landed 2.6 us after the release
// instead of 5.4) but its burst of shared-memory writes slows the consumers' norm (quantize
// phase 1.3 -> 2.1 us), which at 1B is the launch's critical path. tg128: 8B Q4_K_M 528.6 ->
// 555.7 with bulk, 558.3 when only the first chunk is issued before the dependency wait (8B
// Q8_0 390.1 -> 414.0, 8B Q6_K 381.8 -> 413.4); 1B Q4_K_M 2,185 -> 2,110, Q5_K_M 2,013 ->
// 1,990, Q6_K 1,778 -> 1,773.
// So rows of >= 4096 values take bulk, narrower rows the lanes' cp.async.
// Rows of one step (<= 2048 values) keep every lane's partial sum of an item in shared memory and
// sum them per row at the end (kLane), instead of a 5-shuffle reduction per item: tg128 on H200
// (session 30) 1B Q4_K_M 2,181 -> 2,201, Q6_K 1,776 -> 1,791, Q5_K_M 2,013 -> 2,023. Wider rows
// keep the shuffles: the partials' shared memory would cost 8B a ring stage (-1.2% measured).
// Switches (read once): HERD_CUDA_NORM_GEMV_WARPS (consumer warps), _ITEMS (items per warp in a
// chunk), _STAGES (ring depth), each also per launch width (TuningFor). They are wishes:
// PlanAddNormRing (gemv_add_norm_plan.h) drops stages, then items, where 200 KB do not hold them.
#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <string>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/gemv_add_norm_diag.cuh"
#include "kernels/cuda/gemv_add_norm_plan.h"
#include "kernels/cuda/gemv_quant_kernel.cuh"
#include "kernels/cuda/quant_act.cuh"
#include "kernels/cuda/tma.cuh"

namespace herd::cuda::internal::gemv {
namespace {

constexpr int kMaxStages = 8;
static_assert(kAddNormStepValues == kStepValues, "PlanAddNormRing sizes the activation row with it");
constexpr int kMaxSmem = 200 * 1024;
constexpr int kLanePad = 33;  // kLane: floats per (row, step) item, one per lane + 1 pad

int EnvInt(const char* name, int fallback) {
  const char* e = std::getenv(name);
  return e == nullptr ? fallback : std::atoi(e);
}
// The ring's shape for a launch of n weights (2: gate/up, 3: Q/K/V): consumer warps, stages,
// (row, step) items per warp in a chunk. HERD_CUDA_NORM_GEMV_{WARPS,STAGES,ITEMS} set all; the
// same name with the suffix _N sets the launches of N weights. Defaults: 16 warps; Q/K/V 3 stages
// and 1 item (H100, bench/results/cuda-session17-*: 8B Q4_K_M 463 -> 472 tok/s against 4 x 2);
// gate/up 3 stages and 3 items (H200, session 30: tg128 1B Q4_K_M 2,163 -> 2,193, 8B Q4_K_M
// 528.8 -> 535.3 against 4 x 2); a single weight 4 stages and 2 items.
struct Tuning {
  int warps, stages, items;
};
Tuning TuningFor(size_t n_weights) {
  static const auto table = [] {
    std::array<Tuning, kMaxSegs + 1> t{};
    for (size_t n = 0; n < t.size(); ++n) {
      const auto get = [n](const std::string& name, int fallback) {
        return EnvInt((name + "_" + std::to_string(n)).c_str(), EnvInt(name.c_str(), fallback));
      };
      t[n].warps = std::clamp(get("HERD_CUDA_NORM_GEMV_WARPS", 16), 1, 31);
      t[n].stages = std::clamp(get("HERD_CUDA_NORM_GEMV_STAGES", n == 2 || n == 3 ? 3 : 4), 2, kMaxStages);
      t[n].items = std::clamp(get("HERD_CUDA_NORM_GEMV_ITEMS", n == 3 ? 1 : n == 2 ? 3 : 2), 1, 64);
    }
    return t;
  }();
  return table[std::min(n_weights, table.size() - 1)];
}

struct AddNormArgs {
  QuantArgs q;      // the weights (q.x unused: the input is computed)
  int rows;         // rows per chunk (fewer where a weight, a type or the CTA's range ends)
  int stage_bytes;  // one ring stage (a multiple of 128, with kSmemPad bytes of slack)
  int stages;
  int bulk;           // the producer fills stages with one cp.async.bulk per chunk (else 16-byte cp.async)
  int bulk_early;     // bulk: chunks issued before the dependency wait (the rest after it)
  int partial_bytes;  // shared memory of the partial sums (the Q8_K row follows them)
  float* x;           // [n_in], += y by the CTA that reads it last
  const float* y;     // [n_in]
  const float* w;     // [n_in] the norm's weight
  float eps;
  int* counter;   // zero before the launch; zero again after it
  int diag_slot;  // HERD_DIAG_ADDNORM_PHASES builds: this launch's slot (gemv_add_norm_diag.cuh)
};

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// Arrives on `bar` once every cp.async this thread issued before has completed (the arrival is
// not counted in advance: the barrier's count includes it).
__device__ __forceinline__ void CpAsyncArriveNoInc(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
// Barrier 1 over the consumer warps only (the producer does not take part).
__device__ __forceinline__ void ConsumerSync(int threads) {
  asm volatile("bar.sync 1, %0;\n" ::"r"(threads) : "memory");
}
#endif

// The activation format of weights of type T: Q8_K for K-quants, Q8_0 for Q8_0 weights.
template <DType T>
constexpr DType ActFormat() {
  return T == DType::kQ8_0 ? DType::kQ8_0 : DType::kQ8_K;
}

// LoadAct (gemv_quant_kernel.cuh) from the activation row in shared memory (ActFormat<T>()).
template <DType T>
__device__ __forceinline__ void LoadActShared(const ActOut& x, int step, int lane, ActLane& a) {
  const uint4* q = reinterpret_cast<const uint4*>(x.q + static_cast<int64_t>(step) * kStepValues);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint4 v = q[32 * i + lane];
    a.q[4 * i] = v.x, a.q[4 * i + 1] = v.y, a.q[4 * i + 2] = v.z, a.q[4 * i + 3] = v.w;
  }
  a.m0 = 0.f, a.m1 = 0.f;
  if constexpr (ActFormat<T>() == DType::kQ8_0) {  // a scale per 32 values, no sums
    const float2 dd = reinterpret_cast<const float2*>(x.d + step * (kStepValues / 32))[lane];
    a.d0 = dd.x, a.d1 = dd.y;
    a.s[0] = a.s[1] = a.s[2] = a.s[3] = 0;
  } else {
    const uint2 sv = reinterpret_cast<const uint2*>(x.sums + step * (kStepValues / 16))[lane];
    a.s[0] = static_cast<int16_t>(sv.x & 0xFFFFu), a.s[1] = static_cast<int>(sv.x) >> 16;
    a.s[2] = static_cast<int16_t>(sv.y & 0xFFFFu), a.s[3] = static_cast<int>(sv.y) >> 16;
    a.d0 = x.d[step * (kStepValues / 256) + (lane >> 2)];
    a.d1 = 0.f;
  }
}

// Rows from q.t1_row0 on are of type T1 (T1 == T0: one type). blockDim.x = 32 x (consumer warps
// + 1), the consumers a multiple of n_steps and at least n_in / 512 warps (two octets a thread).
// Dynamic shared memory: stages x stage_bytes, the partial sums, the activation row (Q8_K; Q8_0
// for Q8_0 weights).
template <DType T0, DType T1, bool kLane>
__global__ void __launch_bounds__(1024) GemvAddNormKernel(const __grid_constant__ AddNormArgs na) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert((QBlock<T0>::kValues == 256 && QBlock<T1>::kValues == 256) || (T0 == DType::kQ8_0 && T1 == T0),
                "Q8_K activations for K-quants, Q8_0 activations for Q8_0 alone");
  using B0 = QBlock<T0>;
  extern __shared__ __align__(128) uint8_t ring[];
  __shared__ __align__(8) uint64_t full[kMaxStages], empty[kMaxStages];
  __shared__ float red[32];
  __shared__ int last;  // this CTA read x last
  PdlTrigger();
  DIAG_MARK(0);
  const QuantArgs& a = na.q;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, tid = threadIdx.x;
  const int consumers = static_cast<int>(blockDim.x / 32) - 1, nthr = 32 * consumers;
  const int n_stages = na.stages;
  if (tid == 0) {
    for (int s = 0; s < n_stages; ++s) {
      MbarInit(SmemAddr(&full[s]), na.bulk ? 1u : 32u);  // the producer's lane 0, or its 32 lanes
      MbarInit(SmemAddr(&empty[s]), static_cast<uint32_t>(consumers));
    }
    FenceMbarInit();
  }
  __syncthreads();
  const int total = a.segs.total_rows;
  const int r_begin = static_cast<int>(static_cast<int64_t>(blockIdx.x) * total / gridDim.x);
  const int r_end = static_cast<int>(static_cast<int64_t>(blockIdx.x + 1) * total / gridDim.x);
  // The chunk starting at row r: its weight, type and row count (whole rows of one weight and
  // one type, inside this CTA's range). Producer and consumers walk the same sequence.
  auto chunk_at = [&](int r, int& seg, bool& t1, int& n) {
    seg = FindSeg(a.segs, r);
    t1 = T0 != T1 && r >= a.t1_row0;
    int bound = r_end;
    if (seg + 1 < kMaxSegs) bound = min(bound, a.segs.row0[seg + 1]);
    if (T0 != T1 && !t1) bound = min(bound, a.t1_row0);
    n = min(na.rows, bound - r);
  };

  if (warp == consumers && na.bulk) {  // the producer warp's lane 0, by the TMA unit
    if (lane != 0) return;
    int s = 0;
    uint32_t parity = 0;
    for (int r = r_begin, k = 0; r < r_end; ++k) {
      int seg, n;
      bool t1;
      chunk_at(r, seg, t1, n);
      const int64_t rb = t1 ? a.row_bytes1 : a.row_bytes;
      const uint8_t* src = a.segs.w[seg] + static_cast<int64_t>(r - a.segs.row0[seg]) * rb;
      if (k == na.bulk_early) PdlWait();
      if (k >= n_stages) MbarWait(SmemAddr(&empty[s]), parity ^ 1u);
      const uint32_t bytes = static_cast<uint32_t>(n * rb);  // rows are 16-byte multiples (checked on the host)
      MbarArriveExpectTx(SmemAddr(&full[s]), bytes);
      BulkLoad(SmemAddr(ring + s * na.stage_bytes), src, bytes, SmemAddr(&full[s]));
      if (++s == n_stages) s = 0, parity ^= 1u;
      r += n;
    }
#ifdef HERD_DIAG_ADDNORM_PHASES
    const int last_s = s == 0 ? n_stages - 1 : s - 1;
    MbarWait(SmemAddr(&full[last_s]), s == 0 ? parity ^ 1u : parity);  // the last chunk landed
    DIAG_MARK_BY(8, 32u * consumers);
#endif
    return;
  }
  if (warp == consumers) {  // the producer warp
    for (int r = r_begin, k = 0; r < r_end; ++k) {
      int seg, n;
      bool t1;
      chunk_at(r, seg, t1, n);
      const int64_t rb = t1 ? a.row_bytes1 : a.row_bytes;
      const uint8_t* src = a.segs.w[seg] + static_cast<int64_t>(r - a.segs.row0[seg]) * rb;
      const int s = k % n_stages;
      if (k >= n_stages) MbarWait(SmemAddr(&empty[s]), static_cast<uint32_t>(k / n_stages - 1) & 1u);
      uint8_t* dst = ring + s * na.stage_bytes;
      const uint32_t bytes = static_cast<uint32_t>(n * rb);
      for (uint32_t off = 16 * lane; off < bytes; off += 32 * 16) CpAsync16(dst + off, src + off);
      CpAsyncArriveNoInc(SmemAddr(&full[s]));
      r += n;
    }
    CpAsyncWait<0>();
    DIAG_MARK_BY(8, 32u * consumers);
    return;
  }

  // --- the norm: thread j holds octets [8j, 8j + 8) and [8(j + nthr), ...) (zeros past n_in) ---
  const int n_in = a.blocks_per_row * B0::kValues, q_stride = a.n_steps * kStepValues;
  float h[2][8], g[2][8];
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int v0 = 8 * (tid + k * nthr);
#pragma unroll
    for (int i = 0; i < 8; ++i) g[k][i] = 0.f, h[k][i] = 0.f;
    if (v0 < n_in) {  // the norm weight is constant: read before the wait
      const float4 g0 = __ldg(reinterpret_cast<const float4*>(na.w + v0));
      const float4 g1 = __ldg(reinterpret_cast<const float4*>(na.w + v0 + 4));
      g[k][0] = g0.x, g[k][1] = g0.y, g[k][2] = g0.z, g[k][3] = g0.w;
      g[k][4] = g1.x, g[k][5] = g1.y, g[k][6] = g1.z, g[k][7] = g1.w;
    }
  }
  PdlWait();  // x, y come from the kernels before this one; y's buffers may still be read by them
  DIAG_MARK(1);
  float ss = 0.f;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const int v0 = 8 * (tid + k * nthr);
    if (v0 < n_in) {
      const float4 p0 = *reinterpret_cast<const float4*>(na.x + v0);
      const float4 p1 = *reinterpret_cast<const float4*>(na.x + v0 + 4);
      const float4 q0 = *reinterpret_cast<const float4*>(na.y + v0);
      const float4 q1 = *reinterpret_cast<const float4*>(na.y + v0 + 4);
      h[k][0] = p0.x + q0.x, h[k][1] = p0.y + q0.y, h[k][2] = p0.z + q0.z, h[k][3] = p0.w + q0.w;
      h[k][4] = p1.x + q1.x, h[k][5] = p1.y + q1.y, h[k][6] = p1.z + q1.z, h[k][7] = p1.w + q1.w;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i) ss += h[k][i] * h[k][i];
  }
  DIAG_MARK(2);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, o);
  if (lane == 0) red[warp] = ss;
  ConsumerSync(nthr);  // every read of x in this CTA is done
  DIAG_MARK(3);
  if (tid == 0) last = atomicAdd(na.counter, 1) == static_cast<int>(gridDim.x) - 1;
  float sum_sq = 0.f;
  for (int w = 0; w < consumers; ++w) sum_sq += red[w];
  const float scale = rsqrtf(sum_sq / static_cast<float>(n_in) + na.eps);
  // The activation row in shared memory: each warp quantizes whole blocks (256 values for Q8_K,
  // 32 for Q8_0; QuantizeOctet, as the norm kernel does, padding to q_stride included).
  uint8_t* fmt = ring + n_stages * na.stage_bytes + na.partial_bytes;
  ActOut o;
  o.q = reinterpret_cast<int8_t*>(fmt);
  o.d = reinterpret_cast<float*>(fmt + q_stride);
  o.s = o.d;  // Q8_1 only
  o.sums = reinterpret_cast<int16_t*>(fmt + q_stride + q_stride / 8);
  o.q_stride = q_stride, o.d_stride = q_stride / 32, o.g_stride = q_stride / 16;
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    if (8 * (tid - lane + k * nthr) < q_stride) {  // warp-uniform
      float v[8];
#pragma unroll
      for (int i = 0; i < 8; ++i) v[i] = h[k][i] * scale * g[k][i];
      QuantizeOctet<ActFormat<T0>()>(v, 0, 8 * (tid + k * nthr), o);
    }
  }
  DIAG_MARK(4);
  ConsumerSync(nthr);
  if (last) {  // every CTA has read x: store x + y, and leave the counter at zero
#pragma unroll
    for (int k = 0; k < 2; ++k) {
      const int v0 = 8 * (tid + k * nthr);
      if (v0 < n_in) {
        *reinterpret_cast<float4*>(na.x + v0) = make_float4(h[k][0], h[k][1], h[k][2], h[k][3]);
        *reinterpret_cast<float4*>(na.x + v0 + 4) = make_float4(h[k][4], h[k][5], h[k][6], h[k][7]);
      }
    }
    if (tid == 0) *na.counter = 0;  // the next launch uses it only after this grid completed
  }
  DIAG_MARK(5);

  // --- the GEMV: (row, step) items of each chunk, row-major, round-robin over the warps ---
  const int n_steps = a.n_steps;
  const int my_step = warp % n_steps, slot = warp / n_steps, per_step = consumers / n_steps;
  const int nb = min(B0::kStep, a.blocks_per_row - my_step * B0::kStep);
  const bool active = LaneActive<T0>(lane, nb);
  ActLane xs;
  if (active) LoadActShared<T0>(o, my_step, lane, xs);
  // Partial sums: [rows of the CTA][n_steps], each item's sum reduced over the warp by shuffles;
  // kLane: [rows of the CTA][n_steps][kLanePad], every lane's own partial (no per-item shuffles;
  // summed per row at the end; 33 floats so neither a warp's stores nor the row reads hit one
  // bank twice).
  constexpr int kPad = kLane ? kLanePad : 1;
  float* partial = reinterpret_cast<float*>(ring + n_stages * na.stage_bytes);
  // Per chunk: the ring stage and its phase parity, and this warp's first item, all kept
  // incrementally (no integer division in the loop: at 1B a chunk is two items a warp, and the
  // divisions were a third of the loop's instructions).
  int s = 0, rem = 0;  // rem: rows of the chunks before this one, mod per_step
  uint32_t parity = 0;
  float* pw = partial + my_step * kPad + (kLane ? lane : 0);  // the chunk's row 0, this warp's step
  for (int r = r_begin, k = 0; r < r_end; ++k) {
    int seg, n;
    bool t1;
    chunk_at(r, seg, t1, n);
    int i = slot - rem;
    if (i < 0) i += per_step;
    MbarWait(SmemAddr(&full[s]), parity);
    if (k < 4) DIAG_MARK(9 + 2 * k);
    const bool in_t1 = T0 != T1 && t1;
    const int rb = static_cast<int>(in_t1 ? a.row_bytes1 : a.row_bytes);  // a stage is < 200 KB
    const uint8_t* buf = ring + s * na.stage_bytes + my_step * (in_t1 ? QBlock<T1>::kStepBytes : B0::kStepBytes);
    for (; i < n; i += per_step) {
      float acc = 0.f;
      if (active) {
        if (in_t1) {
          Lane<T1> w;
          LaneLoad<T1>(w, buf + i * rb, lane, nb);
          acc = w.Dot(xs);
        } else {
          Lane<T0> w;
          LaneLoad<T0>(w, buf + i * rb, lane, nb);
          acc = w.Dot(xs);
        }
      }
      if constexpr (kLane) {
        pw[i * n_steps * kPad] = acc;
      } else {
#pragma unroll
        for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
        if (lane == 0) pw[i * n_steps] = acc;
      }
    }
    if (k < 4) DIAG_MARK(10 + 2 * k);
    __syncwarp();
    if (lane == 0) MbarArrive(SmemAddr(&empty[s]));
    pw += n * n_steps * kPad;
    rem += n;
    while (rem >= per_step) rem -= per_step;
    if (++s == n_stages) s = 0, parity ^= 1u;
    r += n;
  }
  ConsumerSync(nthr);
  DIAG_MARK(6);
  for (int rr = tid; rr < r_end - r_begin; rr += nthr) {
    float sum = 0.f;
    const float* p = partial + rr * n_steps * kPad;
    for (int st = 0; st < n_steps; ++st, p += kPad) {
      if constexpr (kLane) {
#pragma unroll 8
        for (int l = 0; l < 32; ++l) sum += p[l];
      } else {
        sum += p[0];
      }
    }
    const int gr = r_begin + rr;
    const int seg = FindSeg(a.segs, gr);
    a.segs.y[seg][gr - a.segs.row0[seg]] = sum;
  }
  DIAG_MARK(7);
#endif
}

// Launches the kernel with the ring PlanAddNormRing chooses; false where none fits.
template <DType T0, DType T1>
bool Launch(const QuantArgs& a, AddNormArgs na, const Tuning& tune, cudaStream_t stream) {
  static const int sms = [] {
    int dev = 0, n = 0;
    HERD_CUDA_CHECK(cudaGetDevice(&dev));
    HERD_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    return n;
  }();
  AddNormShape shape;
  shape.n_steps = a.n_steps;
  shape.row_bytes = T0 != T1 ? std::max(a.row_bytes, a.row_bytes1) : a.row_bytes;
  shape.total_rows = a.segs.total_rows;
  shape.sms = sms;
  shape.warps = tune.warps, shape.stages = tune.stages, shape.items = tune.items;
  shape.max_smem = kMaxSmem, shape.smem_pad = kSmemPad;
  // Lane partials for rows of one step (HERD_CUDA_NORM_GEMV_LANE=0: never): see the file comment.
  static const bool lane_ok = EnvInt("HERD_CUDA_NORM_GEMV_LANE", 1) != 0;
  const bool lane = lane_ok && a.n_steps == 1;
  shape.partial_floats = lane ? kLanePad : 1;
  AddNormPlan plan;
  if (!PlanAddNormRing(shape, &plan)) return false;
  na.q = a;
  na.rows = plan.rows;
  na.stage_bytes = plan.stage_bytes;
  na.stages = plan.stages;
  // The bulk producer for rows of at least HERD_CUDA_NORM_GEMV_BULK values (0: never), issuing
  // HERD_CUDA_NORM_GEMV_BULK_EARLY chunks before the dependency wait (see the file comment).
  static const int bulk_min = EnvInt("HERD_CUDA_NORM_GEMV_BULK", 4096);
  static const int bulk_early = std::max(0, EnvInt("HERD_CUDA_NORM_GEMV_BULK_EARLY", 1));
  na.bulk = bulk_min > 0 && int64_t{a.blocks_per_row} * QBlock<T0>::kValues >= bulk_min ? 1 : 0;
  na.bulk_early = bulk_early;
  na.partial_bytes = plan.partial_bytes;
  const int grid = plan.grid, consumers = plan.consumers;
  const int64_t smem = plan.smem;
  na.diag_slot = DiagSlot();
  const auto run = [&](auto kernel, std::atomic<uint64_t>& raised) {
    RaiseDynamicSmem(kernel, kMaxSmem, raised);
    LaunchPdlIf(GemvProgrammaticLaunch(), kernel, dim3(static_cast<unsigned>(grid)),
                dim3(static_cast<unsigned>(32 * (consumers + 1))), static_cast<size_t>(smem), stream, na);
  };
  static std::atomic<uint64_t> raised_lane{0}, raised_shuffle{0};
  if (lane) {
    run(GemvAddNormKernel<T0, T1, true>, raised_lane);
  } else {
    run(GemvAddNormKernel<T0, T1, false>, raised_shuffle);
  }
  return true;
}

}  // namespace
}  // namespace herd::cuda::internal::gemv

namespace herd::cuda::internal {

bool GemvQuantAddNorm(std::span<const TensorView> ws, std::span<float* const> ys, float* x, const float* y,
                      const float* norm_w, float eps, int* counter, cudaStream_t stream) {
  using namespace gemv;  // NOLINT(google-build-using-namespace)
  if (ws.empty() || ws.size() > static_cast<size_t>(kMaxSegs) || ws.size() != ys.size() || !DeviceIsSm90())
    return false;
  const DType t0 = ws[0].type;
  const int64_t n_in = ws[0].cols();
  const int64_t block = Traits(t0).block_size;
  if ((block != 256 && t0 != DType::kQ8_0) || n_in % 256 != 0) return false;
  DType t1 = t0;
  QuantArgs a{};
  MakeSegs(ws, ys, 0, ws.size(), &a.segs);
  a.t1_row0 = INT_MAX;
  for (size_t k = 0; k < ws.size(); ++k) {
    if (ws[k].cols() != n_in) return false;
    if (ws[k].type != t0) {
      if (MixPartner(t0) != ws[k].type) return false;
      t1 = ws[k].type;
      if (a.t1_row0 == INT_MAX) a.t1_row0 = a.segs.row0[k];
    } else if (a.t1_row0 != INT_MAX) {
      return false;  // rows of t0 after rows of t1
    }
    if (!Aligned16(ws[k].data) || ws[k].row_bytes() % 16 != 0) return false;
  }
  if (!Aligned16(x) || !Aligned16(y) || !Aligned16(norm_w)) return false;
  a.aligned = true;
  a.row_bytes = static_cast<int64_t>(Traits(t0).type_size) * (n_in / block);
  a.row_bytes1 = static_cast<int64_t>(Traits(t1).type_size) * (n_in / block);  // partners: 256-value blocks too
  a.blocks_per_row = static_cast<int>(n_in / block);
  a.n_steps = static_cast<int>((n_in + kStepValues - 1) / kStepValues);
  a.n_tok = 1;
  const Tuning tune = TuningFor(ws.size());
  AddNormArgs na{};
  na.x = x, na.y = y, na.w = norm_w, na.eps = eps, na.counter = counter;
  if (t1 == t0) {
    bool launched = false;
    DispatchQuant(t0, [&]<DType T>() {
      if constexpr (QBlock<T>::kValues == 256 || T == DType::kQ8_0) launched = Launch<T, T>(a, na, tune, stream);
    });
    return launched;
  }
  switch (t0) {
    case DType::kQ4_K: return Launch<DType::kQ4_K, MixPartner(DType::kQ4_K)>(a, na, tune, stream);
    case DType::kQ5_K: return Launch<DType::kQ5_K, MixPartner(DType::kQ5_K)>(a, na, tune, stream);
    case DType::kQ3_K: return Launch<DType::kQ3_K, MixPartner(DType::kQ3_K)>(a, na, tune, stream);
    case DType::kQ2_K: return Launch<DType::kQ2_K, MixPartner(DType::kQ2_K)>(a, na, tune, stream);
    default: return false;
  }
}

}  // namespace herd::cuda::internal
