// GemvAddNormKernel: the device side of GemvQuantAddNorm and GemvQuantRing (gemv_add_norm.cu
// has the design notes, the measurements and the launch). Internal; included by that file only.
#pragma once

#include <cstdint>

#include "kernels/cuda/gemv_add_norm_diag.cuh"
#include "kernels/cuda/gemv_quant_kernel.cuh"
#include "kernels/cuda/quant_act.cuh"
#include "kernels/cuda/tma.cuh"

namespace herd::cuda::internal::gemv {

constexpr int kMaxStages = 8;
constexpr int kLanePad = 33;  // kLane: floats per (row, step) item, one per lane + 1 pad
// kQuantIn launches take at most 17 warps (16 consumers), so they may use up to ~112 registers a
// thread: at the 64 that 1,024 threads allow, the Q6_K instances spilled ~150 bytes.
constexpr int kRingMaxThreads = 17 * 32;

struct AddNormArgs {
  QuantArgs q;      // the weights; q.x: the quantized input where kQuantIn (else unused: computed)
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
// for Q8_0 weights). kQuantIn (GemvQuantRing): no norm; the input is q.x, already quantized, each
// warp loading its step's share from global memory as GemvQuantKernel does (no activation row in
// shared memory, no x / y / counter; any consumer count that is a multiple of n_steps).
template <DType T0, DType T1, bool kLane, bool kQuantIn>
__global__ void __launch_bounds__(kQuantIn ? kRingMaxThreads : 1024)
    GemvAddNormKernel(const __grid_constant__ AddNormArgs na) {
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
  // The producer's chunk at row r: its rows (n), their row bytes (rb) and where they start.
  const auto chunk_src = [&](int r, int& n, int64_t& rb) {
    int seg;
    bool t1;
    chunk_at(r, seg, t1, n);
    rb = t1 ? a.row_bytes1 : a.row_bytes;
    return a.segs.w[seg] + static_cast<int64_t>(r - a.segs.row0[seg]) * rb;
  };

  if (warp == consumers && na.bulk) {  // the producer warp's lane 0, by the TMA unit
    if (lane != 0) return;
    int s = 0;
    uint32_t parity = 0;
    for (int r = r_begin, k = 0; r < r_end; ++k) {
      int n;
      int64_t rb;
      const uint8_t* src = chunk_src(r, n, rb);
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
      int n;
      int64_t rb;
      const uint8_t* src = chunk_src(r, n, rb);
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

  ActOut o{};  // the activation row in shared memory (not kQuantIn)
  if constexpr (kQuantIn) {
    PdlWait();  // q.x comes from the kernel before this one; the y buffers may still be read by it
    DIAG_MARK(1);
  } else {
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
    for (int off = 16; off > 0; off >>= 1) ss += __shfl_xor_sync(0xffffffffu, ss, off);
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
  }  // the norm

  // --- the GEMV: (row, step) items of each chunk, row-major, round-robin over the warps ---
  const int n_steps = a.n_steps;
  const int my_step = warp % n_steps, slot = warp / n_steps, per_step = consumers / n_steps;
  const int nb = min(B0::kStep, a.blocks_per_row - my_step * B0::kStep);
  const bool active = LaneActive<T0>(lane, nb);
  ActLane xs;
  if (active) {
    if constexpr (kQuantIn) {
      LoadAct<T0>(a.x, 0, my_step, lane, xs);
    } else {
      LoadActShared<T0>(o, my_step, lane, xs);
    }
  }
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

}  // namespace herd::cuda::internal::gemv
