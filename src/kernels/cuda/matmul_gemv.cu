// GEMV-style matmul kernels for small n_tok (decode): each weight row is read from device memory
// once per group of up to 8 tokens and reused for all of them.
//
// Work split: a thread block of kWarps warps covers kWarps / wpr output rows; the `wpr` warps of
// one row (1, 2 or 4, chosen per call so that no warp has more than split_stages stages and
// the grid has enough warps) take interleaved parts of the row and add their sums through
// shared memory. Up to kMaxSegs weights sharing x (Q/K/V, gate/up) run as one launch over their
// concatenated rows. The quantized kernel's blocks may also loop over several row groups
// (GemvOptions::groups_per_block; 0 = persistent, one wave), prefetching the next row while
// computing one. Measured on H100 (bench/results/cuda-matmul-2026-11-22.md): one group per
// block is best except for many rows of a single step (n_in <= 2048, >= 8192 rows: two).
//
// Quantized weights: a row is cut into steps of 2048 values (whole blocks); each warp streams
// the steps of its part of the row through a ring of kStages shared-memory buffers (cp.async,
// 16-byte); in a step, lane L decodes its 64 weight codes (quant_dot.cuh: a quarter of a
// K-quant block or two 32-value blocks) once and multiplies them by dp4a with the int8
// activations of every token row (the reference's activation format, quant_act.cu), scaling
// the integer block sums exactly as ref::VecDot does.
// Float weights: 16-byte streaming loads (kU per lane in flight), float32 FMAs.
//
// Ordering (programmatic dependent launch, PDL): the activation quantization kernel and the
// quantized GEMV are launched with programmatic stream serialization, so each may start while
// the kernel before it still runs; each waits (griddepcontrol.wait) before reading or writing
// anything that kernel or earlier ones touch (the GEMV issues only its weight copies first).
// All three kernels let their successor start early (griddepcontrol.launch_dependents at
// entry): a kernel launched after them with programmatic stream serialization must itself
// griddepcontrol.wait before touching y. Kernels launched normally are unaffected. The float
// GEMV loads its first weight vectors before its wait and is launched with PDL when its weights
// are small (GemvOptions::float_pdl_max_mb; on H100 PDL helped llama-3.2-1b F16 decode by 6% and
// cost llama-3.1-8b F16 3%, bench/results/cuda-models-2026-11-22.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_decode.cuh"
#include "kernels/cuda/quant_dot.cuh"
#include "kernels/cuda/quant_stage.cuh"
#include "kernels/quants.h"

namespace herd::cuda::internal {
namespace {

constexpr int kWarps = 4;         // warps per thread block
constexpr int kStages = 3;        // shared-memory ring depth per warp
constexpr int kMaxTok = 8;        // tokens per launch
constexpr int kMaxSegs = 4;       // weights per launch
constexpr int kWantWarps = 4096;  // split rows over more warps while the grid has fewer
// Float GEMV: split a row only while each part keeps at least this many 512-byte units (the
// float grid target is GemvOptions::float_want_warps). On H100 decode with float_want_warps
// 16384 instead of 4096, llama-3.1-8b F16 gained 0.7-1.2% (its 4096-6144-row matrices split 4
// ways) and llama-3.2-1b F16 lost 2-3% (its down projection split 4 ways): default kept at 4096
// (bench/results/cuda-models-2026-11-22.md).
constexpr int64_t kFloatMinUnits = 4;

// The weights of one launch: rows [row0[s], row0[s+1]) of the concatenation are rows of seg s.
struct Segs {
  const uint8_t* w[kMaxSegs];
  float* y[kMaxSegs];
  int n_out[kMaxSegs];
  int row0[kMaxSegs];  // INT_MAX for unused entries
  int total_rows;
};

__device__ __forceinline__ int FindSeg(const Segs& s, int gr) {
  int k = 0;
#pragma unroll
  for (int i = 1; i < kMaxSegs; ++i) k += gr >= s.row0[i];
  return k;
}

__device__ __forceinline__ void GridDependencyWait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void TriggerDependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}

// Sums acc over the warp, then over the wpr warps of a row (shared memory), and writes y.
// With wpr > 1 every warp of the block must call it the same number of times (barriers).
template <int NT>
__device__ __forceinline__ void ReduceAndStore(float (&acc)[NT], int wpr, bool valid, float* y, int n_out, int row,
                                               int n_tok) {
  __shared__ float partial[kWarps][NT];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
  for (int t = 0; t < NT; ++t) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc[t] += __shfl_xor_sync(0xffffffffu, acc[t], o);
  }
  if (wpr > 1) {
    if (lane == 0) {
#pragma unroll
      for (int t = 0; t < NT; ++t) partial[warp][t] = acc[t];
    }
    __syncthreads();
    if (warp % wpr == 0) {
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        for (int p = 1; p < wpr; ++p) acc[t] += partial[warp + p][t];
      }
    }
    __syncthreads();  // partial is free for the next row
    if (warp % wpr != 0) return;
  }
  if (valid && lane == 0) {
#pragma unroll
    for (int t = 0; t < NT; ++t)
      if (t < n_tok) y[t * static_cast<int64_t>(n_out) + row] = acc[t];
  }
}

struct QuantArgs {
  Segs segs;
  int64_t row_bytes;
  int blocks_per_row;
  int n_steps;   // 2048-value steps per row (the last may be partial)
  int wpr;       // warps per row
  bool aligned;  // rows start 16-byte aligned: cp.async path
  QuantizedActivations x;
  int n_tok;  // <= NT
};

// Lane `lane`'s activations of token row t for step `step` (quant_dot.cuh, matmul_internal.h).
template <DType T>
__device__ __forceinline__ void LoadAct(const QuantizedActivations& x, int t, int step, int lane, ActLane& a) {
  const uint4* q = reinterpret_cast<const uint4*>(x.q + t * x.q_stride + static_cast<int64_t>(step) * kStepValues);
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint4 v = __ldg(q + 32 * i + lane);
    a.q[4 * i] = v.x, a.q[4 * i + 1] = v.y, a.q[4 * i + 2] = v.z, a.q[4 * i + 3] = v.w;
  }
  constexpr bool kSums = T != DType::kQ8_0 && T != DType::kQ4_1 && T != DType::kQ5_1;
  if constexpr (kSums) {
    const uint2 sv = __ldg(reinterpret_cast<const uint2*>(x.sums + t * x.g_stride + step * (kStepValues / 16)) + lane);
    a.s[0] = static_cast<int16_t>(sv.x & 0xFFFFu), a.s[1] = static_cast<int>(sv.x) >> 16;
    a.s[2] = static_cast<int16_t>(sv.y & 0xFFFFu), a.s[3] = static_cast<int>(sv.y) >> 16;
  } else {
    a.s[0] = a.s[1] = a.s[2] = a.s[3] = 0;
  }
  const float* d = x.d + t * x.d_stride;
  if constexpr (QBlock<T>::kValues == 256) {
    a.d0 = __ldg(d + step * (kStepValues / 256) + (lane >> 2));
    a.d1 = 0.f;
  } else {
    const float2 dd = __ldg(reinterpret_cast<const float2*>(d + step * (kStepValues / 32)) + lane);
    a.d0 = dd.x, a.d1 = dd.y;
  }
  if constexpr (T == DType::kQ4_1 || T == DType::kQ5_1) {
    const float2 ss = __ldg(reinterpret_cast<const float2*>(x.s + t * x.d_stride + step * (kStepValues / 32)) + lane);
    a.m0 = ss.x, a.m1 = ss.y;
  } else {
    a.m0 = a.m1 = 0.f;
  }
}

// Persistent over rows: block b takes row groups b, b + gridDim.x, ... (kWarps / wpr rows per
// group); the wpr warps of a row take its steps interleaved, each streaming its steps through
// its own ring of kStages shared-memory buffers, so the copies of the next steps (of this row
// or the next) are in flight while one is computed. Per step each lane decodes its 64 weight
// codes once and multiplies them with every token row (quant_dot.cuh).
template <DType T, int NT>
__global__ void __launch_bounds__(kWarps * 32) GemvQuantKernel(const __grid_constant__ QuantArgs a) {
  using B = QBlock<T>;
  constexpr int kBuf = B::kStepBytes + kSmemPad;
  __shared__ __align__(16) uint8_t smem[kWarps][kStages][kBuf];
  TriggerDependents();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int wpr = a.wpr, rpb = kWarps / wpr;
  const int part = warp % wpr;
  const int total = a.segs.total_rows;
  const int row_stride = gridDim.x * rpb;
  const int first_row = blockIdx.x * rpb + warp / wpr;
  const int r0 = blockIdx.x * rpb;
  const int groups = r0 < total ? (total - r0 + row_stride - 1) / row_stride : 0;  // block-uniform
  const int sp = (a.n_steps + wpr - 1) / wpr;  // steps per part (the last part may have fewer)
  const int len = groups * sp;

  // Blocks of step `step` (0 when the row or the step does not exist).
  auto step_blocks = [&](int gr, int step) {
    return gr < total && step < a.n_steps ? min(B::kStep, a.blocks_per_row - step * B::kStep) : 0;
  };
  auto issue = [&](int j) {
    if (j < len) {
      const int k = j / sp;
      const int gr = first_row + k * row_stride;
      const int step = part + (j - k * sp) * wpr;
      const int nb = step_blocks(gr, step);
      if (nb > 0) {
        const int seg = FindSeg(a.segs, gr);
        const int64_t row = gr - a.segs.row0[seg];
        StageCopy(smem[warp][j % kStages],
                  a.segs.w[seg] + row * a.row_bytes + static_cast<int64_t>(step) * B::kStepBytes, nb * B::kBytes,
                  a.aligned, lane, 32);
      }
    }
    CpAsyncCommit();
  };
#pragma unroll
  for (int j = 0; j < kStages - 1; ++j) issue(j);
  GridDependencyWait();  // x comes from the kernel before this one

  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.f;
  for (int j = 0; j < len; ++j) {
    issue(j + kStages - 1);
    CpAsyncWait<kStages - 1>();
    __syncwarp();
    const int k = j / sp, s = j - k * sp;
    const int gr = first_row + k * row_stride;
    const int step = part + s * wpr;
    const int nb = step_blocks(gr, step);
    if (nb > 0 && LaneActive<T>(lane, nb)) {
      Lane<T> w;
      LaneLoad<T>(w, smem[warp][j % kStages], lane, nb);
#pragma unroll
      for (int t = 0; t < NT; ++t) {
        if (t < a.n_tok) {
          ActLane x;
          LoadAct<T>(a.x, t, step, lane, x);
          acc[t] += w.Dot(x);
        }
      }
    }
    __syncwarp();  // every lane is done with this buffer before it is refilled
    if (s == sp - 1) {
      const bool valid = gr < total;
      const int seg = FindSeg(a.segs, valid ? gr : 0);
      ReduceAndStore<NT>(acc, wpr, valid, a.segs.y[seg], a.segs.n_out[seg], gr - a.segs.row0[seg], a.n_tok);
#pragma unroll
      for (int t = 0; t < NT; ++t) acc[t] = 0.f;
    }
  }
  CpAsyncWait<0>();
}

template <DType T>
__device__ __forceinline__ float ToFloat(uint32_t bits16) {
  if constexpr (T == DType::kBF16) return __uint_as_float(bits16 << 16);
  return __half2float(__ushort_as_half(static_cast<unsigned short>(bits16)));
}

// Eight (F16/BF16) or four (F32) weights of one 16-byte vector as floats.
template <DType T>
__device__ __forceinline__ void Unpack16(const uint4& v, float* f) {
  if constexpr (T == DType::kF32) {
    f[0] = __uint_as_float(v.x), f[1] = __uint_as_float(v.y), f[2] = __uint_as_float(v.z), f[3] = __uint_as_float(v.w);
  } else {
    const uint32_t u[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      f[2 * k] = ToFloat<T>(u[k] & 0xFFFFu);
      f[2 * k + 1] = ToFloat<T>(u[k] >> 16);
    }
  }
}

template <DType T>
__device__ __forceinline__ float LoadScalar(const uint8_t* w, int64_t i) {
  if constexpr (T == DType::kF32) return reinterpret_cast<const float*>(w)[i];
  return ToFloat<T>(reinterpret_cast<const uint16_t*>(w)[i]);
}

struct FloatArgs {
  Segs segs;
  int64_t n_in;
  const float* x;
  int n_tok;
  int wpr;
  int elem_bytes;  // of the weights (2 or 4)
  bool vec;        // rows and x 16-byte aligned: vector path
  // GLU mode (GemvFloatGlu): segs = {gate, up} of n_glu rows each; a block's first rpb / 2 row
  // slots are gate rows, the others the same up rows, and glu_out[t, j] = silu(gate) * up.
  float* glu_out;
  int n_glu;
};

// Lane `lane` of part `part` takes 16-byte vectors part * 32 + lane + k * 32 * wpr of its row,
// kU at a time; the next kU are loaded while one batch is multiplied, and the first batch is
// loaded before griddepcontrol.wait (weights are never written by kernels), so the DRAM latency
// of the first loads overlaps the previous kernel's tail when launched with PDL.
template <DType T, int NT>
__global__ void __launch_bounds__(kWarps * 32) GemvFloatKernel(const __grid_constant__ FloatArgs a) {
  constexpr int kE = T == DType::kF32 ? 4 : 8;  // elements per 16-byte vector
  constexpr int kU = 4;                         // vectors per lane in flight
  TriggerDependents();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int rpb = kWarps / a.wpr, slot = warp / a.wpr, half = rpb / 2;
  const int glu_row = blockIdx.x * half + (slot < half ? slot : slot - half);  // GLU mode: row of gate/up
  const int gr = a.glu_out == nullptr ? blockIdx.x * rpb + slot
                 : glu_row < a.n_glu  ? glu_row + (slot < half ? 0 : a.n_glu)
                                      : a.segs.total_rows;  // past the end: no row
  const int part = warp % a.wpr;
  const bool valid = gr < a.segs.total_rows;
  const int seg = FindSeg(a.segs, valid ? gr : 0);
  const int row = gr - a.segs.row0[seg];
  const int64_t n_in = a.n_in;
  const uint8_t* wrow = a.segs.w[seg] + row * n_in * (T == DType::kF32 ? 4 : 2);
  const uint4* wv = reinterpret_cast<const uint4*>(wrow);
  const int64_t nv = n_in / kE;
  const int stride = 32 * a.wpr;
  uint4 next[kU];
  auto load = [&](int64_t v0) {
#pragma unroll
    for (int u = 0; u < kU; ++u)
      if (v0 + stride * u < nv) next[u] = LoadStreaming(wv + v0 + stride * u);
  };
  const int64_t first = part * 32 + lane;
  if (valid && a.vec) load(first);
  GridDependencyWait();  // x may come from the kernel before this one
  float acc[NT];
#pragma unroll
  for (int t = 0; t < NT; ++t) acc[t] = 0.f;
  if (valid && a.vec) {
    for (int64_t v0 = first; v0 < nv; v0 += stride * kU) {
      uint4 raw[kU];
#pragma unroll
      for (int u = 0; u < kU; ++u) raw[u] = next[u];
      if (v0 + stride * kU < nv) load(v0 + stride * kU);
#pragma unroll
      for (int u = 0; u < kU; ++u) {
        const int64_t v = v0 + stride * u;
        if (v < nv) {
          float f[kE];
          Unpack16<T>(raw[u], f);
#pragma unroll
          for (int t = 0; t < NT; ++t) {
            if (t < a.n_tok) {
              const float4* xp = reinterpret_cast<const float4*>(a.x + t * n_in + v * kE);
#pragma unroll
              for (int k = 0; k < kE / 4; ++k) {
                const float4 xv = __ldg(xp + k);
                acc[t] += f[4 * k] * xv.x + f[4 * k + 1] * xv.y + f[4 * k + 2] * xv.z + f[4 * k + 3] * xv.w;
              }
            }
          }
        }
      }
    }
  } else if (valid) {
    for (int64_t i = part * 32 + lane; i < n_in; i += 32 * a.wpr) {
      const float f = LoadScalar<T>(wrow, i);
#pragma unroll
      for (int t = 0; t < NT; ++t)
        if (t < a.n_tok) acc[t] += f * a.x[t * n_in + i];
    }
  }
  if (a.glu_out == nullptr) {
    ReduceAndStore<NT>(acc, a.wpr, valid, a.segs.y[seg], a.segs.n_out[seg], row, a.n_tok);
    return;
  }
  __shared__ float rows[kWarps * NT];  // [t][slot]
  ReduceAndStore<NT>(acc, a.wpr, valid, rows, kWarps, slot, a.n_tok);
  __syncthreads();
  if (slot < half && warp % a.wpr == 0 && lane < a.n_tok && glu_row < a.n_glu) {
    const float g = rows[lane * kWarps + slot], u = rows[lane * kWarps + slot + half];
    a.glu_out[static_cast<int64_t>(lane) * a.n_glu + glu_row] = g / (1.0f + expf(-g)) * u;  // as SwiGlu
  }
}

// HERD_CUDA_FLOAT_PDL_MB: GemvOptions::float_pdl_max_mb's initial value.
int64_t FloatPdlMbFromEnvironment() {
  const char* e = std::getenv("HERD_CUDA_FLOAT_PDL_MB");
  return e == nullptr ? GemvOptions{}.float_pdl_max_mb : std::atoll(e);
}

std::atomic<bool> g_pdl{true};
std::atomic<int> g_groups_per_block{-1};
std::atomic<int64_t> g_float_pdl_max_mb{FloatPdlMbFromEnvironment()};
// HERD_CUDA_FLOAT_WANT_WARPS / HERD_CUDA_FLOAT_PER_PART: the initial values of
// GemvOptions::float_want_warps / float_per_part.
int64_t EnvOr(const char* name, int64_t fallback) {
  const char* e = std::getenv(name);
  return e == nullptr ? fallback : std::atoll(e);
}
std::atomic<int64_t> g_float_want_warps{EnvOr("HERD_CUDA_FLOAT_WANT_WARPS", GemvOptions{}.float_want_warps)};
std::atomic<int64_t> g_float_per_part{EnvOr("HERD_CUDA_FLOAT_PER_PART", GemvOptions{}.float_per_part)};
std::atomic<int> g_split_stages{kStages - 1};

// Resident blocks of `kernel` on the whole device (SMs x occupancy). The caller caches it per
// kernel (the first device it runs on decides; all GPUs of one process are taken to be alike).
template <typename Args>
int ResidentBlocks(void (*kernel)(Args)) {
  int dev = 0, sms = 0, per_sm = 0;
  HERD_CUDA_CHECK(cudaGetDevice(&dev));
  HERD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  HERD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, kWarps * 32, 0));
  return std::max(1, sms * per_sm);
}

// Launch with programmatic stream serialization (the kernel may start before the previous one
// in the stream ends; it waits with griddepcontrol.wait before reading that kernel's output).
template <typename Args>
void LaunchPdl(void (*kernel)(Args), const Args& args, int blocks, cudaStream_t stream) {
  bool pdl = g_pdl.load(std::memory_order_relaxed);
  if constexpr (std::is_same_v<Args, FloatArgs>) {  // weight bytes of the launch against the limit
    const int64_t bytes = static_cast<int64_t>(args.segs.total_rows) * args.n_in * args.elem_bytes;
    pdl = bytes <= (g_float_pdl_max_mb.load(std::memory_order_relaxed) << 20);
  }
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = dim3(static_cast<unsigned>(blocks));
  cfg.blockDim = dim3(kWarps * 32);
  cfg.stream = stream;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  HERD_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, args));
}

template <DType T, int NT>
struct QuantKernel {
  static constexpr auto kFn = GemvQuantKernel<T, NT>;
};
template <DType T, int NT>
struct FloatKernel {
  static constexpr auto kFn = GemvFloatKernel<T, NT>;
};

// Launches kernel K<T, NT> over `groups` row groups, `per_block` of them per thread block (0:
// persistent, at most one wave of blocks, each taking an equal number of row groups).
template <template <DType, int> class K, DType T, int NT, typename Args>
void LaunchGrid(const Args& a, int groups, int per_block, cudaStream_t stream) {
  if (per_block == 0) {
    static const int resident = ResidentBlocks(K<T, NT>::kFn);
    per_block = (groups + resident - 1) / resident;
  }
  LaunchPdl(K<T, NT>::kFn, a, (groups + per_block - 1) / per_block, stream);
}

// The kernel instance for n tokens (1..8): 1, 2, 4 or 8 accumulators.
template <template <DType, int> class K, DType T, typename Args>
void LaunchByTok(const Args& a, int blocks, int per_block, cudaStream_t stream) {
  if (a.n_tok <= 1) {
    LaunchGrid<K, T, 1>(a, blocks, per_block, stream);
  } else if (a.n_tok <= 2) {
    LaunchGrid<K, T, 2>(a, blocks, per_block, stream);
  } else if (a.n_tok <= 4) {
    LaunchGrid<K, T, 4>(a, blocks, per_block, stream);
  } else {
    LaunchGrid<K, T, 8>(a, blocks, per_block, stream);
  }
}

bool Aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

// Warps per row: split rows (up to 4 ways, at most one part per unit of work) while a part has
// more than `per_part` units or the grid has fewer than `want` warps.
// min_units: a split must leave each part at least that many units.
int WarpsPerRow(int64_t rows, int64_t units, int64_t per_part, int64_t want = kWantWarps, int64_t min_units = 1) {
  int wpr = 1;
  while (wpr < kWarps && (min_units > 1 ? units >= 2 * wpr * min_units : wpr < units) &&
         ((units + wpr - 1) / wpr > per_part || rows * wpr < want)) {
    wpr *= 2;
  }
  return wpr;
}

// Fills segs from ws[first, first+n) and ys; returns the total row count.
void MakeSegs(std::span<const TensorView> ws, std::span<float* const> ys, size_t first, size_t n, Segs* s) {
  int rows = 0;
  for (int k = 0; k < kMaxSegs; ++k) {
    if (static_cast<size_t>(k) < n) {
      const TensorView& w = ws[first + k];
      HERD_CHECK(w.rows() < INT_MAX - rows);
      s->w[k] = static_cast<const uint8_t*>(w.data);
      s->y[k] = ys[first + k];
      s->n_out[k] = static_cast<int>(w.rows());
      s->row0[k] = rows;
      rows += static_cast<int>(w.rows());
    } else {
      s->w[k] = nullptr;
      s->y[k] = nullptr;
      s->n_out[k] = 0;
      s->row0[k] = INT_MAX;
    }
  }
  s->total_rows = rows;
}

}  // namespace

bool GemvProgrammaticLaunch() { return g_pdl.load(std::memory_order_relaxed); }

void SetGemvOptions(const GemvOptions& o) {
  g_pdl.store(o.pdl);
  g_float_pdl_max_mb.store(o.float_pdl_max_mb);
  g_float_want_warps.store(o.float_want_warps);
  g_float_per_part.store(o.float_per_part);
  g_groups_per_block.store(o.groups_per_block);
  g_split_stages.store(o.split_stages);
}

void GemvQuant(std::span<const TensorView> ws, std::span<float* const> ys, const QuantizedActivations& x, int64_t n_tok,
               cudaStream_t stream) {
  if (ws.empty() || n_tok == 0) return;
  const DType type = ws[0].type;
  const int64_t n_in = ws[0].cols();
  HERD_CHECK_MSG(x.format == ref::VecDotType(type), "GemvQuant: %s weights need %s activations, got %s",
                 DTypeName(type).data(), DTypeName(ref::VecDotType(type)).data(), DTypeName(x.format).data());
  const bool ok = DispatchQuant(type, [&]<DType T>() {
    using B = QBlock<T>;
    HERD_CHECK(n_in % B::kValues == 0);
    for (size_t first = 0; first < ws.size(); first += kMaxSegs) {
      const size_t n = std::min<size_t>(kMaxSegs, ws.size() - first);
      QuantArgs a{};
      MakeSegs(ws, ys, first, n, &a.segs);
      if (a.segs.total_rows == 0) continue;
      a.row_bytes = static_cast<int64_t>(ws[first].row_bytes());
      a.blocks_per_row = static_cast<int>(n_in / B::kValues);
      a.n_steps = static_cast<int>((n_in + kStepValues - 1) / kStepValues);
      a.aligned = a.row_bytes % 16 == 0;
      for (size_t k = first; k < first + n; ++k) {
        HERD_CHECK(ws[k].type == type && ws[k].cols() == n_in);
        a.aligned = a.aligned && Aligned16(ws[k].data);
      }
      a.wpr = WarpsPerRow(a.segs.total_rows, a.n_steps, g_split_stages.load(std::memory_order_relaxed));
      const int rows_per_block = kWarps / a.wpr;
      const int blocks = (a.segs.total_rows + rows_per_block - 1) / rows_per_block;
      int groups_per_block = g_groups_per_block.load(std::memory_order_relaxed);
      if (groups_per_block < 0) groups_per_block = a.n_steps == 1 && a.segs.total_rows >= 8192 ? 2 : 1;
      for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
        QuantArgs at = a;
        at.n_tok = static_cast<int>(std::min<int64_t>(kMaxTok, n_tok - t0));
        at.x = x;
        at.x.q += t0 * x.q_stride;
        at.x.d += t0 * x.d_stride;
        at.x.s += t0 * x.d_stride;
        at.x.sums += t0 * x.g_stride;
        for (int k = 0; k < kMaxSegs; ++k)
          if (at.segs.y[k] != nullptr) at.segs.y[k] += t0 * at.segs.n_out[k];
        LaunchByTok<QuantKernel, T>(at, blocks, groups_per_block, stream);
      }
    }
  });
  HERD_CHECK_MSG(ok, "GemvQuant: %s is not a quantized weight type", DTypeName(type).data());
}

bool GemvFloatGlu(const TensorView& gate, const TensorView& up, const float* x, int64_t n_tok, float* out,
                  cudaStream_t stream) {
  HERD_CHECK(gate.type == up.type && gate.rows() == up.rows() && gate.cols() == up.cols());
  HERD_CHECK(gate.rows() < INT_MAX / 2);
  const DType type = gate.type;
  const int64_t n_in = gate.cols();
  const int e = type == DType::kF32 ? 4 : 8;
  const TensorView ws[2] = {gate, up};
  float* const ys[2] = {out, out};  // unused in GLU mode
  FloatArgs a{};
  MakeSegs(ws, ys, 0, 2, &a.segs);
  a.n_in = n_in;
  a.elem_bytes = type == DType::kF32 ? 4 : 2;
  a.vec = n_in % e == 0 && Aligned16(x) && Aligned16(gate.data) && Aligned16(up.data);
  // GemvFloat's split of the same rows; a block must hold a gate row and its up row (wpr <= 2).
  a.wpr = WarpsPerRow(a.segs.total_rows, (n_in / e + 31) / 32, g_float_per_part.load(), g_float_want_warps.load(),
                      kFloatMinUnits);
  if (a.wpr > 2) return false;
  if (n_tok == 0 || gate.rows() == 0) return true;
  a.n_glu = static_cast<int>(gate.rows());
  const int half = kWarps / a.wpr / 2;
  const int blocks = (a.n_glu + half - 1) / half;
  for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
    FloatArgs at = a;
    at.n_tok = static_cast<int>(std::min<int64_t>(kMaxTok, n_tok - t0));
    at.x = x + t0 * n_in;
    at.glu_out = out + t0 * gate.rows();
    switch (type) {
      case DType::kF32: LaunchByTok<FloatKernel, DType::kF32>(at, blocks, 1, stream); break;
      case DType::kF16: LaunchByTok<FloatKernel, DType::kF16>(at, blocks, 1, stream); break;
      case DType::kBF16: LaunchByTok<FloatKernel, DType::kBF16>(at, blocks, 1, stream); break;
      default: HERD_CHECK_MSG(false, "GemvFloatGlu: %s is not a float type", DTypeName(type).data());
    }
  }
  return true;
}

void GemvFloat(std::span<const TensorView> ws, std::span<float* const> ys, const float* x, int64_t n_tok,
               cudaStream_t stream) {
  if (ws.empty() || n_tok == 0) return;
  const DType type = ws[0].type;
  const int64_t n_in = ws[0].cols();
  const int e = type == DType::kF32 ? 4 : 8;
  for (size_t first = 0; first < ws.size(); first += kMaxSegs) {
    const size_t n = std::min<size_t>(kMaxSegs, ws.size() - first);
    FloatArgs a{};
    MakeSegs(ws, ys, first, n, &a.segs);
    if (a.segs.total_rows == 0) continue;
    a.n_in = n_in;
    a.elem_bytes = type == DType::kF32 ? 4 : 2;
    a.vec = n_in % e == 0 && Aligned16(x);
    for (size_t k = first; k < first + n; ++k) {
      HERD_CHECK(ws[k].type == type && ws[k].cols() == n_in);
      a.vec = a.vec && Aligned16(ws[k].data);
    }
    // Split rows (4 vectors per lane in flight) only while the grid has few warps.
    a.wpr = WarpsPerRow(a.segs.total_rows, (n_in / e + 31) / 32, g_float_per_part.load(), g_float_want_warps.load(),
                        kFloatMinUnits);
    const int rows_per_block = kWarps / a.wpr;
    const int blocks = (a.segs.total_rows + rows_per_block - 1) / rows_per_block;
    for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
      FloatArgs at = a;
      at.n_tok = static_cast<int>(std::min<int64_t>(kMaxTok, n_tok - t0));
      at.x = x + t0 * n_in;
      for (int k = 0; k < kMaxSegs; ++k)
        if (at.segs.y[k] != nullptr) at.segs.y[k] += t0 * at.segs.n_out[k];
      switch (type) {
        case DType::kF32: LaunchByTok<FloatKernel, DType::kF32>(at, blocks, 1, stream); break;
        case DType::kF16: LaunchByTok<FloatKernel, DType::kF16>(at, blocks, 1, stream); break;
        case DType::kBF16: LaunchByTok<FloatKernel, DType::kBF16>(at, blocks, 1, stream); break;
        default: HERD_CHECK_MSG(false, "GemvFloat: %s is not a float type", DTypeName(type).data());
      }
    }
  }
}

}  // namespace herd::cuda::internal
