// What a persistent kernel could save at one token: the GEMV chain of a stack of F16 decoder
// layers (Q/K/V -> O -> gate/up -> down, each GEMV's input the output before it) run
//   launches:   as the backend runs it, one internal::GemvFloat launch per projection (the ring
//               kernel for launches of <= 16 MiB, the register kernel for the others; PDL), the
//               4 x layers launches captured in one CUDA graph and replayed;
//   persistent: as one cooperative kernel (one CTA of 16 warps per SM), warps taking rows
//               round-robin, the phases separated by a grid barrier (an arrival counter and a
//               generation word); each CTA stages the phase's input vector in shared memory;
//               Each warp keeps its next batch of 8 x 16 bytes a lane in flight while it uses one
//               (the rest of the row, else its next row of the phase);
//   persistent+prefetch: the same, the last batch of a phase also loading the warp's first batch
//               of the next phase, before the barrier (the weights do not depend on it).
// Only the GEMVs: no norms, attention, SwiGLU or residual adds in either form (the down GEMV
// reads the gate output), so the difference is the launches' ramp, tail and dependency waits
// against the barriers. Weights: random F16 in +-[2^-4, 2) (bench_fill.cuh), distinct per layer
// (121.5 MB a layer at the 1B shape, far over L2). Check: one layer from the same input in both
// forms, the worst difference relative to the output's largest value (summation orders differ).
//   herd_cuda_layer_chain_bench [--layers 16] [--embd 2048] [--qkv 3072] [--ff 8192] [--reps 20]
//                               [--sync-only 1] (the persistent form without rows: its grid barriers
//                               and input staging alone)
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cuda/bench_fill.cuh"
#include "kernels/cuda/bench_flags.h"
#include "kernels/cuda/bench_graph.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/float_unpack.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/quant_stage.cuh"
#include "tensor/dtype.h"

namespace herd::cuda {
namespace {

constexpr int kWarps = 16;       // per CTA, one CTA per SM
constexpr int kBatch = 8;        // 16-byte vectors a lane loads at once
constexpr int kMaxIn = 8192;     // values of a phase's input (static shared memory: 32 KB)
constexpr int kMaxPhases = 120;  // 4 per layer (parameters under 4 KB)

struct Phase {
  const uint4* w;  // [rows, n_in] F16, 16-byte vectors
  int rows, n_in;
  const float* x;  // [n_in]
  float* y;        // [rows]
};
struct ChainArgs {
  Phase ph[kMaxPhases];
  int n_phases;
  unsigned* count;  // barrier arrivals (zero between barriers)
  unsigned* gen;    // barrier generation
  bool prefetch;
};

// All CTAs of the (co-resident) grid: the last to arrive resets the count and bumps the
// generation the others spin on.
__device__ void GridBarrier(unsigned* count, unsigned* gen) {
  __syncthreads();
  if (threadIdx.x == 0) {
    const unsigned g = *reinterpret_cast<volatile unsigned*>(gen);
    __threadfence();
    if (atomicAdd(count, 1u) == gridDim.x - 1) {
      *count = 0;
      __threadfence();
      atomicAdd(gen, 1u);
    } else {
      while (*reinterpret_cast<volatile unsigned*>(gen) == g) {
      }
    }
    __threadfence();
  }
  __syncthreads();
}

// Lane's first batch of row r of phase p (vectors lane, lane + 32, ...).
__device__ __forceinline__ void LoadBatch(const Phase& p, int r, int v0, int lane, uint4 (&buf)[kBatch]) {
  const int n_vec = p.n_in / 8;
  const uint4* wr = p.w + static_cast<int64_t>(r) * n_vec;
#pragma unroll
  for (int b = 0; b < kBatch; ++b)
    if (v0 + 32 * b + lane < n_vec) buf[b] = LoadStreaming(wr + v0 + 32 * b + lane);
}

__global__ void __launch_bounds__(kWarps * 32, 1) ChainKernel(const __grid_constant__ ChainArgs a) {
  __shared__ __align__(16) float xs[kMaxIn];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int gw = blockIdx.x * kWarps + warp, n_warps = gridDim.x * kWarps;
  uint4 pre[kBatch];
  bool have_pre = false;
  for (int p = 0; p < a.n_phases; ++p) {
    const Phase ph = a.ph[p];
    if (p > 0) GridBarrier(a.count, a.gen);
    // The input, written by other CTAs before the barrier: read through L2 (not L1).
    for (int i = threadIdx.x; i < ph.n_in / 4; i += blockDim.x)
      reinterpret_cast<float4*>(xs)[i] = __ldcg(reinterpret_cast<const float4*>(ph.x) + i);
    __syncthreads();
    const int n_vec = ph.n_in / 8;
    for (int r = gw; r < ph.rows; r += n_warps) {
      float acc = 0.f;
      for (int v0 = 0; v0 < n_vec; v0 += 32 * kBatch) {
        uint4 buf[kBatch];
        if (have_pre) {
#pragma unroll
          for (int b = 0; b < kBatch; ++b) buf[b] = pre[b];
        } else {
          LoadBatch(ph, r, v0, lane, buf);
        }
        // The warp's next batch in flight while this one is used: the rest of this row, the next
        // row of the phase, or (prefetch) the first row of the next phase, before the barrier.
        have_pre = true;
        if (v0 + 32 * kBatch < n_vec) {
          LoadBatch(ph, r, v0 + 32 * kBatch, lane, pre);
        } else if (r + n_warps < ph.rows) {
          LoadBatch(ph, r + n_warps, 0, lane, pre);
        } else if (a.prefetch && p + 1 < a.n_phases && gw < a.ph[p + 1].rows) {
          LoadBatch(a.ph[p + 1], gw, 0, lane, pre);
        } else {
          have_pre = false;
        }
#pragma unroll
        for (int b = 0; b < kBatch; ++b) {
          const int v = v0 + 32 * b + lane;
          if (v < n_vec) {
            float f[8];
            internal::gemv::Unpack16<DType::kF16>(buf[b], f);
            const float4 x0 = reinterpret_cast<const float4*>(xs)[2 * v];
            const float4 x1 = reinterpret_cast<const float4*>(xs)[2 * v + 1];
            acc += f[0] * x0.x + f[1] * x0.y + f[2] * x0.z + f[3] * x0.w + f[4] * x1.x + f[5] * x1.y + f[6] * x1.z +
                   f[7] * x1.w;
          }
        }
      }
#pragma unroll
      for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
      if (lane == 0) ph.y[r] = acc;
    }
    __syncthreads();  // xs is rewritten after the barrier
  }
}

struct Layer {
  std::vector<TensorView> qkv, o, gu, down;  // the launches form's weights
  void *qkv_all, *gu_all;  // the persistent form's (the same shapes, contiguous; layer 0's copied from qkv / gu)
  const void *o_w, *down_w;
};

void* Alloc(size_t bytes, std::vector<void*>* owned) {
  void* p;
  HERD_CUDA_CHECK(cudaMalloc(&p, bytes));
  owned->push_back(p);
  return p;
}
void* RandomF16(int64_t rows, int64_t cols, uint32_t seed, std::vector<void*>* owned) {
  const size_t bytes = static_cast<size_t>(rows * cols) * 2;
  void* p = Alloc(bytes, owned);
  bench::FillKernel<<<static_cast<unsigned>((bytes + 255) / 256), 256>>>(static_cast<uint8_t*>(p), bytes, seed, 2, -1,
                                                                         -1, 1, false);
  HERD_CUDA_CHECK_LAUNCH();
  return p;
}

int Main(int argc, char** argv) {
  int layers = 16, reps = 20, sync_only = 0;
  int64_t embd = 2048, qkv = 3072, ff = 8192;
  if (!bench::ParseFlags(argc, argv,
                         {{"--layers", &layers},
                          {"--embd", &embd},
                          {"--qkv", &qkv},
                          {"--ff", &ff},
                          {"--reps", &reps},
                          {"--sync-only", &sync_only}})) {
    return 2;
  }
  if (layers < 1 || 4 * layers > kMaxPhases || embd % 8 != 0 || ff % 8 != 0 || qkv < embd + 2 || ff > kMaxIn ||
      embd > kMaxIn) {
    std::fprintf(stderr, "shapes out of range (layers <= %d, embd and ff multiples of 8 up to %d, qkv > embd + 1)\n",
                 kMaxPhases / 4, kMaxIn);
    return 2;
  }
  std::string why;
  if (!DeviceAvailable(&why)) {
    std::fprintf(stderr, "no GPU: %s\n", why.c_str());
    return 1;
  }
  std::vector<void*> owned;
  uint32_t seed = 1;
  const int64_t kv = (qkv - embd) / 2;
  std::vector<Layer> ls(layers);
  for (Layer& l : ls) {
    for (int64_t rows : {embd, kv, qkv - embd - kv})
      l.qkv.push_back(TensorView::Matrix(DType::kF16, rows, embd, RandomF16(rows, embd, seed++, &owned)));
    l.o.push_back(TensorView::Matrix(DType::kF16, embd, embd, RandomF16(embd, embd, seed++, &owned)));
    for (int k = 0; k < 2; ++k)
      l.gu.push_back(TensorView::Matrix(DType::kF16, ff, embd, RandomF16(ff, embd, seed++, &owned)));
    l.down.push_back(TensorView::Matrix(DType::kF16, embd, ff, RandomF16(embd, ff, seed++, &owned)));
    l.qkv_all = RandomF16(qkv, embd, seed++, &owned);
    l.gu_all = RandomF16(2 * ff, embd, seed++, &owned);
    l.o_w = l.o[0].data;
    l.down_w = l.down[0].data;
  }
  const double layer_bytes = 2.0 * (qkv * embd + embd * embd + 2 * ff * embd + embd * ff);
  auto* x = static_cast<float*>(Alloc(embd * 4, &owned));
  auto* x0 = static_cast<float*>(Alloc(embd * 4, &owned));  // the check's input
  auto* q = static_cast<float*>(Alloc(qkv * 4, &owned));
  auto* o = static_cast<float*>(Alloc(embd * 4, &owned));
  auto* g = static_cast<float*>(Alloc(2 * ff * 4, &owned));  // gate then up
  auto* counters = static_cast<unsigned*>(Alloc(2 * sizeof(unsigned), &owned));
  HERD_CUDA_CHECK(cudaMemset(counters, 0, 2 * sizeof(unsigned)));
  bench::FillFloatKernel<<<static_cast<unsigned>((embd + 255) / 256), 256>>>(x0, embd, 7, 0.01f);
  HERD_CUDA_CHECK_LAUNCH();
  HERD_CUDA_CHECK(cudaDeviceSynchronize());
  cudaStream_t s;
  HERD_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));

  // The launches form: layers [0, n) from x.
  auto launches = [&](int n) {
    for (int i = 0; i < n; ++i) {
      const Layer& l = ls[i];
      float* const qs[] = {q, q + embd, q + embd + kv};
      internal::GemvFloat(l.qkv, qs, x, 1, s);
      float* const os[] = {o};
      internal::GemvFloat(l.o, os, q, 1, s);
      float* const gs[] = {g, g + ff};
      internal::GemvFloat(l.gu, gs, o, 1, s);
      float* const ds[] = {x};
      internal::GemvFloat(l.down, ds, g, 1, s);
    }
  };
  // The persistent form's phases of layers [0, n).
  auto phases = [&](int n, bool prefetch) {
    ChainArgs a{};
    a.count = counters, a.gen = counters + 1, a.prefetch = prefetch;
    for (int i = 0; i < n; ++i) {
      const Layer& l = ls[i];
      a.ph[a.n_phases++] =
          Phase{static_cast<const uint4*>(l.qkv_all), static_cast<int>(qkv), static_cast<int>(embd), x, q};
      a.ph[a.n_phases++] =
          Phase{static_cast<const uint4*>(l.o_w), static_cast<int>(embd), static_cast<int>(embd), q, o};
      a.ph[a.n_phases++] =
          Phase{static_cast<const uint4*>(l.gu_all), static_cast<int>(2 * ff), static_cast<int>(embd), o, g};
      a.ph[a.n_phases++] =
          Phase{static_cast<const uint4*>(l.down_w), static_cast<int>(embd), static_cast<int>(ff), g, x};
    }
    return a;
  };
  int dev = 0, sms = 0, per_sm = 0;
  HERD_CUDA_CHECK(cudaGetDevice(&dev));
  HERD_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  HERD_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, ChainKernel, kWarps * 32, 0));
  if (per_sm < 1) {
    std::fprintf(stderr, "ChainKernel does not fit an SM\n");
    return 1;
  }
  auto persistent = [&](const ChainArgs& a) {
    void* args[] = {const_cast<ChainArgs*>(&a)};
    HERD_CUDA_CHECK(cudaLaunchCooperativeKernel(reinterpret_cast<const void*>(ChainKernel), dim3(sms),
                                                dim3(kWarps * 32), args, 0, s));
  };

  // Check: one layer from x0 in both forms. The persistent form's Q/K/V and gate/up weights are
  // its own contiguous copies of the launches form's three and two weights.
  {
    const Layer& l = ls[0];
    size_t off = 0;
    for (const TensorView& w : l.qkv) {
      HERD_CUDA_CHECK(cudaMemcpy(static_cast<uint8_t*>(l.qkv_all) + off, w.data, w.bytes(), cudaMemcpyDeviceToDevice));
      off += w.bytes();
    }
    off = 0;
    for (const TensorView& w : l.gu) {
      HERD_CUDA_CHECK(cudaMemcpy(static_cast<uint8_t*>(l.gu_all) + off, w.data, w.bytes(), cudaMemcpyDeviceToDevice));
      off += w.bytes();
    }
    std::vector<float> out[2];
    for (int form = 0; form < 2; ++form) {
      HERD_CUDA_CHECK(cudaMemcpy(x, x0, embd * 4, cudaMemcpyDeviceToDevice));
      if (form == 0) {
        launches(1);
      } else {
        persistent(phases(1, true));
      }
      HERD_CUDA_CHECK(cudaStreamSynchronize(s));
      out[form].resize(embd);
      HERD_CUDA_CHECK(cudaMemcpy(out[form].data(), x, embd * 4, cudaMemcpyDeviceToHost));
    }
    double worst = 0, top = 0;
    for (int64_t i = 0; i < embd; ++i) {
      top = std::max(top, std::fabs(static_cast<double>(out[0][i])));
      worst = std::max(worst, std::fabs(static_cast<double>(out[0][i]) - out[1][i]));
    }
    const double rel = worst / std::max(top, 1e-30);
    std::printf("check (one layer, both forms): worst difference / largest output = %.2e %s\n", rel,
                rel < 1e-4 && std::isfinite(rel) ? "ok" : "MISMATCH");
    if (!(rel < 1e-4)) return 1;
  }

  cudaDeviceProp prop;
  HERD_CUDA_CHECK(cudaGetDeviceProperties(&prop, dev));
  std::printf("device: %s, %d SMs; %d layers, embd %lld, qkv %lld, ff %lld; %.1f MB of weights a layer\n", prop.name,
              sms, layers, static_cast<long long>(embd), static_cast<long long>(qkv), static_cast<long long>(ff),
              layer_bytes / 1e6);
  auto report = [&](const char* name, float ms) {
    const double us = ms * 1e3 / layers;
    std::printf("%-22s %8.2f us a layer  %6.0f GB/s\n", name, us, layer_bytes / (us * 1e-6) / 1e9);
    std::fflush(stdout);
  };
  {
    cudaGraph_t graph;
    HERD_CUDA_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    launches(layers);
    HERD_CUDA_CHECK(cudaStreamEndCapture(s, &graph));
    cudaGraphExec_t exec;
    HERD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    HERD_CUDA_CHECK(cudaGraphLaunch(exec, s));
    HERD_CUDA_CHECK(cudaStreamSynchronize(s));
    report("launches", bench::Median(bench::GraphReplayMs(exec, s, reps)));
    HERD_CUDA_CHECK(cudaGraphExecDestroy(exec));
    HERD_CUDA_CHECK(cudaGraphDestroy(graph));
  }
  cudaEvent_t e0, e1;
  HERD_CUDA_CHECK(cudaEventCreate(&e0));
  HERD_CUDA_CHECK(cudaEventCreate(&e1));
  for (const bool prefetch : {false, true}) {
    if (sync_only != 0 && prefetch) break;  // without rows there is nothing to prefetch
    ChainArgs a = phases(layers, prefetch);
    if (sync_only != 0)
      for (int i = 0; i < a.n_phases; ++i) a.ph[i].rows = 0;  // barriers and input staging only
    persistent(a);                                            // warm-up
    std::vector<float> ms;
    for (int r = 0; r < reps; ++r) {
      HERD_CUDA_CHECK(cudaEventRecord(e0, s));
      persistent(a);
      HERD_CUDA_CHECK(cudaEventRecord(e1, s));
      HERD_CUDA_CHECK(cudaEventSynchronize(e1));
      float t = 0.f;
      HERD_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
      ms.push_back(t);
    }
    report(sync_only != 0 ? "barriers+staging" : prefetch ? "persistent+prefetch" : "persistent", bench::Median(ms));
  }
  HERD_CUDA_CHECK(cudaEventDestroy(e0));
  HERD_CUDA_CHECK(cudaEventDestroy(e1));
  HERD_CUDA_CHECK(cudaStreamDestroy(s));
  for (void* p : owned) HERD_CUDA_CHECK(cudaFree(p));
  return 0;
}

}  // namespace
}  // namespace herd::cuda

int main(int argc, char** argv) { return herd::cuda::Main(argc, argv); }
