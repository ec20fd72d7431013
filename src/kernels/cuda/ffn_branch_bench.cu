// The decode feed-forward of a stack of layers at one token (the b=1 hot loop's largest part),
// run as CUDA graphs in three forms, to measure what kernel boundaries cost and whether two
// concurrent graph branches hide them:
//   serial:  per layer add + RmsNorm (+ int8 of x) -> gate/up GEMV -> SwiGLU (+ int8 of h)
//            -> down GEMV (the model's current sequence);
//   halves:  the same with the intermediate dimension cut in two halves run one after the other
//            on one stream (two sets of launches: what the extra launches cost);
//   branch:  the two halves on two streams forked after the norm and joined before the next
//            layer's norm (a graph with two concurrent branches per layer).
// Timing only: the halves' partial down outputs are not summed (the next norm adds one of them),
// and weights are random bytes with finite scales.
//   herd_cuda_ffn_branch_bench [--layers 32] [--embd 4096] [--ff 14336] [--reps 10]
//                              [--down-q6 1] (down Q6_K on the layers llama.cpp's Q4_K_M gives 6 bits)
//                              [--frac 0.5] (share of the intermediate dimension in branch A)
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cuda/bench_fill.cuh"
#include "kernels/cuda/bench_flags.h"
#include "kernels/cuda/bench_graph.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/matmul_internal.h"
#include "tensor/dtype.h"

namespace herd::cuda {
namespace {

TensorView RandomMatrix(DType t, int64_t rows, int64_t cols, uint32_t seed, std::vector<void*>* owned) {
  const size_t bytes = RowBytes(t, cols) * rows;
  void* p;
  HERD_CUDA_CHECK(cudaMalloc(&p, bytes));
  owned->push_back(p);
  int f0, f1;
  bench::Fields(t, &f0, &f1);
  bench::FillKernel<<<static_cast<unsigned>((bytes + 255) / 256), 256>>>(
      static_cast<uint8_t*>(p), bytes, seed, static_cast<int>(Traits(t).type_size), f0, f1, 0, false);
  HERD_CUDA_CHECK_LAUNCH();
  return TensorView::Matrix(t, rows, cols, p);
}

float* FloatBuffer(size_t n, uint32_t seed, std::vector<void*>* owned) {
  float* p;
  HERD_CUDA_CHECK(cudaMalloc(&p, n * sizeof(float)));
  owned->push_back(p);
  bench::FillFloatKernel<<<static_cast<unsigned>((n + 255) / 256), 256>>>(p, n, seed, 0.01f);
  HERD_CUDA_CHECK_LAUNCH();
  return p;
}

void* Scratch(size_t bytes, std::vector<void*>* owned) {
  void* p;
  HERD_CUDA_CHECK(cudaMalloc(&p, bytes));
  owned->push_back(p);
  return p;
}

// One branch's share of a layer: gate/up rows [lo, lo + n) and the down columns of those rows
// (stored as its own [n_embd, n] matrix: the same bytes streamed as a column slice).
struct Part {
  TensorView gate, up, down;
  float *g, *u;  // [n] outputs
  float* y;      // [n_embd] partial down output
  void* h_buf;   // int8 of h
};

struct Layer {
  const float* norm;
  Part part[2];
};

int Main(int argc, char** argv) {
  int layers = 32, reps = 10, down_q6 = 1;
  int64_t embd = 4096, ff = 14336;
  double frac = 0.5;
  if (!bench::ParseFlags(argc, argv,
                         {{"--layers", &layers},
                          {"--embd", &embd},
                          {"--ff", &ff},
                          {"--reps", &reps},
                          {"--down-q6", &down_q6},
                          {"--frac", &frac}})) {
    return 2;
  }
  std::string why;
  if (!DeviceAvailable(&why)) {
    std::fprintf(stderr, "no GPU: %s\n", why.c_str());
    return 1;
  }
  // Branch A's share, a whole number of 256-value blocks (each part has its own int8 h).
  const int64_t n_a = std::clamp<int64_t>(static_cast<int64_t>(ff * frac / 256 + 0.5) * 256, 256, ff - 256);
  const int64_t n_b = ff - n_a;
  std::vector<void*> owned;
  const size_t act_bytes = internal::QuantizedActivationBytes(1, std::max(embd, ff));
  std::vector<Layer> ls(layers);
  uint32_t seed = 1;
  size_t weight_bytes = 0;
  for (int l = 0; l < layers; ++l) {
    // llama.cpp's Q4_K_M: 6-bit down on the first and last eighth and every third layer between.
    const bool q6 = down_q6 && (l < layers / 8 || l >= 7 * layers / 8 || (l - layers / 8) % 3 == 2);
    const DType dt = q6 ? DType::kQ6_K : DType::kQ4_K;
    ls[l].norm = FloatBuffer(embd, seed++, &owned);
    for (int p = 0; p < 2; ++p) {
      const int64_t n = p == 0 ? n_a : n_b;
      Part& part = ls[l].part[p];
      part.gate = RandomMatrix(DType::kQ4_K, n, embd, seed++, &owned);
      part.up = RandomMatrix(DType::kQ4_K, n, embd, seed++, &owned);
      part.down = RandomMatrix(dt, embd, n, seed++, &owned);
      weight_bytes += part.gate.bytes() + part.up.bytes() + part.down.bytes();
      part.g = FloatBuffer(ff, seed++, &owned);
      part.u = FloatBuffer(ff, seed++, &owned);
      part.y = FloatBuffer(embd, seed++, &owned);
      part.h_buf = Scratch(act_bytes, &owned);
    }
  }
  // Whole-width weights for the serial form (the same bytes as the two parts together).
  std::vector<Part> whole(layers);
  for (int l = 0; l < layers; ++l) {
    const DType dt = ls[l].part[0].down.type;
    whole[l].gate = RandomMatrix(DType::kQ4_K, ff, embd, seed++, &owned);
    whole[l].up = RandomMatrix(DType::kQ4_K, ff, embd, seed++, &owned);
    whole[l].down = RandomMatrix(dt, embd, ff, seed++, &owned);
    whole[l].g = FloatBuffer(ff, seed++, &owned);
    whole[l].u = FloatBuffer(ff, seed++, &owned);
    whole[l].y = FloatBuffer(embd, seed++, &owned);
    whole[l].h_buf = Scratch(act_bytes, &owned);
  }
  float* x = FloatBuffer(embd, seed++, &owned);
  float* hn = FloatBuffer(embd, seed++, &owned);
  void* x_buf = Scratch(act_bytes, &owned);
  HERD_CUDA_CHECK(cudaDeviceSynchronize());

  int lo_prio = 0, hi_prio = 0;
  HERD_CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&lo_prio, &hi_prio));
  cudaStream_t s0, s1, s1_hi, s1_lo;
  HERD_CUDA_CHECK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  HERD_CUDA_CHECK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  HERD_CUDA_CHECK(cudaStreamCreateWithPriority(&s1_hi, cudaStreamNonBlocking, hi_prio));
  HERD_CUDA_CHECK(cudaStreamCreateWithPriority(&s1_lo, cudaStreamNonBlocking, lo_prio));
  std::vector<cudaEvent_t> fork(layers), join(layers);
  for (int l = 0; l < layers; ++l) {
    HERD_CUDA_CHECK(cudaEventCreateWithFlags(&fork[l], cudaEventDisableTiming));
    HERD_CUDA_CHECK(cudaEventCreateWithFlags(&join[l], cudaEventDisableTiming));
  }
  const DType fmt = DType::kQ8_K;

  // gate/up -> SwiGLU (+ int8) -> down for one part, on `s`.
  auto run_part = [&](const Part& p, const internal::QuantizedActivations& xa, cudaStream_t s) {
    const TensorView gu[] = {p.gate, p.up};
    float* const gu_out[] = {p.g, p.u};
    internal::GemvQuant(gu, gu_out, xa, 1, s);
    internal::QuantizedActivations ha;
    HERD_CHECK(internal::SwiGluQuantize(fmt, p.g, p.u, p.g, 1, p.gate.rows(), p.h_buf, s, &ha));
    const TensorView dn[] = {p.down};
    float* const dn_out[] = {p.y};
    internal::GemvQuant(dn, dn_out, ha, 1, s);
  };
  auto norm = [&](const float* y, cudaStream_t s) {
    internal::QuantizedActivations xa;
    HERD_CHECK(internal::RmsNormQuantize(fmt, x, y, ls[0].norm, 1e-5f, 1, embd, hn, x_buf, s, &xa));
    return xa;
  };
  // mode 0 serial, 1 halves on one stream, 2 branches, 3 branches (B high priority), 4 (B low).
  auto capture = [&](int mode) {
    cudaStream_t sb = mode == 3 ? s1_hi : mode == 4 ? s1_lo : s1;
    const float* prev = whole[layers - 1].y;
    for (int l = 0; l < layers; ++l) {
      const internal::QuantizedActivations xa = norm(mode == 0 ? prev : ls[(l + layers - 1) % layers].part[0].y, s0);
      if (mode == 0) {
        run_part(whole[l], xa, s0);
        prev = whole[l].y;
      } else if (mode == 1) {
        run_part(ls[l].part[0], xa, s0);
        run_part(ls[l].part[1], xa, s0);
      } else {
        HERD_CUDA_CHECK(cudaEventRecord(fork[l], s0));
        HERD_CUDA_CHECK(cudaStreamWaitEvent(sb, fork[l], 0));
        run_part(ls[l].part[0], xa, s0);
        run_part(ls[l].part[1], xa, sb);
        HERD_CUDA_CHECK(cudaEventRecord(join[l], sb));
        HERD_CUDA_CHECK(cudaStreamWaitEvent(s0, join[l], 0));
      }
    }
  };

  cudaDeviceProp prop;
  HERD_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf(
      "device: %s; %d layers, embd %lld, ff %lld (A %lld + B %lld), down Q6_K pattern %d; %.1f MB of "
      "weights per layer\n",
      prop.name, layers, static_cast<long long>(embd), static_cast<long long>(ff), static_cast<long long>(n_a),
      static_cast<long long>(n_b), down_q6, weight_bytes / 1e6 / layers);
  const char* names[] = {"serial", "halves", "branch", "branch-hi", "branch-lo"};
  for (int mode = 0; mode < 5; ++mode) {
    cudaGraph_t graph;
    HERD_CUDA_CHECK(cudaStreamBeginCapture(s0, cudaStreamCaptureModeThreadLocal));
    capture(mode);
    HERD_CUDA_CHECK(cudaStreamEndCapture(s0, &graph));
    cudaGraphExec_t exec;
    HERD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
    size_t n_nodes = 0;
    HERD_CUDA_CHECK(cudaGraphGetNodes(graph, nullptr, &n_nodes));
    HERD_CUDA_CHECK(cudaGraphLaunch(exec, s0));
    HERD_CUDA_CHECK(cudaStreamSynchronize(s0));
    const std::vector<float> ms = bench::GraphReplayMs(exec, s0, reps);
    const double us = bench::Median(ms) * 1e3 / layers;
    std::printf("%-10s nodes %4zu  %7.2f us per layer  %6.0f GB/s\n", names[mode], n_nodes, us,
                weight_bytes / layers / (us * 1e-6) / 1e9);
    std::fflush(stdout);
    HERD_CUDA_CHECK(cudaGraphExecDestroy(exec));
    HERD_CUDA_CHECK(cudaGraphDestroy(graph));
  }
  for (void* p : owned) HERD_CUDA_CHECK(cudaFree(p));
  return 0;
}

}  // namespace
}  // namespace herd::cuda

int main(int argc, char** argv) { return herd::cuda::Main(argc, argv); }
