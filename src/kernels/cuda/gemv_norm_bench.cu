// Residual add + RmsNorm feeding a one-token quantized GEMV: the norm kernel (RmsNormQuantize,
// add fused, int8 output) followed by GemvQuant, against GemvQuantAddNorm (the norm computed by
// every CTA of the GEMV, gemv_add_norm.cu). Per shape: the two paths' outputs compared once
// (y, and x + y), then one CUDA graph of 20 (norm, GEMV) pairs over rotating weight copies
// (cold in L2) per path, timed over --reps replays; the median per pair is printed. Timing
// data; the tests are in herd_cuda_fused_input_test. --hot 1: one weight copy, so the weights
// stay in L2 and each call's time is its latency and compute rather than the DRAM stream (the
// shapes up to 1B gate/up fit in the H100's and H200's 50 MB L2); --only NAME: that shape alone.
// --ring 1: GemvQuant (its routing to the ring off) against GemvQuantRing (the same kernel without
// the norm) on one quantized activation row, over the O, down and lm_head shapes instead.
//   herd_cuda_gemv_norm_bench [--reps 20] [--hot 0] [--only "1b gate/up"] [--ring 0]
// (an --only that names no shape is an error, listing the names)
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
#include "kernels/cuda/matmul_internal.h"
#include "kernels/quants.h"
#include "tensor/dtype.h"
#include "tensor/tensor.h"

namespace herd::cuda {
namespace {

constexpr int kCalls = 20;

struct Shape {
  const char* name;
  int64_t n_in;
  std::vector<std::pair<DType, int64_t>> outs;  // weights of one launch
};

int Run(int reps, bool hot, const std::string& only, bool ring) {
  const std::vector<Shape> norm_shapes = {
      {"8b qkv", 4096, {{DType::kQ4_K, 4096}, {DType::kQ4_K, 1024}, {DType::kQ6_K, 1024}}},
      {"8b gate/up", 4096, {{DType::kQ4_K, 14336}, {DType::kQ4_K, 14336}}},
      {"1b qkv", 2048, {{DType::kQ4_K, 2048}, {DType::kQ4_K, 512}, {DType::kQ6_K, 512}}},
      {"1b gate/up", 2048, {{DType::kQ4_K, 8192}, {DType::kQ4_K, 8192}}},
  };
  const std::vector<Shape> ring_shapes = {
      {"8b o", 4096, {{DType::kQ4_K, 4096}}},         {"8b down", 14336, {{DType::kQ4_K, 4096}}},
      {"8b down q6", 14336, {{DType::kQ6_K, 4096}}},  {"8b lm_head", 4096, {{DType::kQ6_K, 128256}}},
      {"1b o", 2048, {{DType::kQ4_K, 2048}}},         {"1b down", 8192, {{DType::kQ4_K, 2048}}},
      {"1b lm_head", 2048, {{DType::kQ6_K, 128256}}}, {"8b o q8", 4096, {{DType::kQ8_0, 4096}}},
      {"8b down q8", 14336, {{DType::kQ8_0, 4096}}},  {"1b o q8", 2048, {{DType::kQ8_0, 2048}}},
      {"1b down q8", 8192, {{DType::kQ8_0, 2048}}},
  };
  const std::vector<Shape>& shapes = ring ? ring_shapes : norm_shapes;
  if (!only.empty() && std::none_of(shapes.begin(), shapes.end(), [&](const Shape& s) { return only == s.name; })) {
    std::fprintf(stderr, "--only %s: no such shape; the shapes:", only.c_str());
    for (const Shape& s : shapes) std::fprintf(stderr, " \"%s\"", s.name);
    std::fprintf(stderr, "\n");
    return 2;
  }
  cudaStream_t stream;
  HERD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaDeviceProp prop{};
  HERD_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  if (ring) {
    // GemvQuant without its routing to the ring (GemvOptions' defaults otherwise).
    internal::GemvOptions no_ring;
    no_ring.quant_ring_mb = no_ring.quant_ring_narrow_mb = 0;
    internal::SetGemvOptions(no_ring);
    std::printf("%-11s %12s %12s %10s %10s\n", "shape", "gemv us", "ring us", "max|dy|", "-");
  } else {
    std::printf("%-11s %12s %12s %10s %10s\n", "shape", "norm+gemv us", "fused us", "max|dy|", "max|dx|");
  }
  for (const Shape& s : shapes) {
    if (!only.empty() && only != s.name) continue;
    size_t bytes = 0;
    int64_t n_out = 0;
    for (const auto& [t, rows] : s.outs) bytes += RowBytes(t, s.n_in) * rows, n_out += rows;
    const int copies = hot ? 1
                           : static_cast<int>(std::clamp<size_t>(
                                 (2 * static_cast<size_t>(prop.l2CacheSize) + bytes - 1) / bytes + 1, 1, 16));
    std::vector<void*> ws(copies);
    std::vector<std::vector<TensorView>> views(copies);
    for (int c = 0; c < copies; ++c) {
      HERD_CUDA_CHECK(cudaMalloc(&ws[c], bytes));
      size_t off = 0;
      for (const auto& [t, rows] : s.outs) {
        int f0, f1;
        bench::Fields(t, &f0, &f1);
        const size_t b = RowBytes(t, s.n_in) * rows;
        bench::FillKernel<<<static_cast<unsigned>((b + 255) / 256), 256, 0, stream>>>(
            static_cast<uint8_t*>(ws[c]) + off, b, 100 + c, static_cast<int>(Traits(t).type_size), f0, f1, 0, false);
        HERD_CUDA_CHECK_LAUNCH();
        views[c].push_back(TensorView::Matrix(t, rows, s.n_in, static_cast<uint8_t*>(ws[c]) + off));
        off += b;
      }
    }
    float *x, *x0, *dx, *w, *out, *xo, *ya, *yb;
    int* counter;
    HERD_CUDA_CHECK(cudaMalloc(&counter, 4));
    HERD_CUDA_CHECK(cudaMemset(counter, 0, 4));
    void* qbuf;
    const size_t fb = s.n_in * 4;
    for (float** p : {&x, &x0, &dx, &w, &out, &xo}) HERD_CUDA_CHECK(cudaMalloc(p, fb));
    HERD_CUDA_CHECK(cudaMalloc(&ya, n_out * 4));
    HERD_CUDA_CHECK(cudaMalloc(&yb, n_out * 4));
    HERD_CUDA_CHECK(cudaMalloc(&qbuf, internal::QuantizedActivationBytes(1, s.n_in)));
    bench::FillFloatKernel<<<(s.n_in + 255) / 256, 256, 0, stream>>>(x0, s.n_in, 17);
    bench::FillFloatKernel<<<(s.n_in + 255) / 256, 256, 0, stream>>>(dx, s.n_in, 18, 0.5f);
    bench::FillFloatKernel<<<(s.n_in + 255) / 256, 256, 0, stream>>>(w, s.n_in, 19, 2.f);
    HERD_CUDA_CHECK_LAUNCH();
    auto ys_of = [&](float* y) {
      std::vector<float*> ys;
      int64_t off = 0;
      for (const auto& o : s.outs) ys.push_back(y + off), off += o.second;
      return ys;
    };
    const std::vector<float*> ysa = ys_of(ya), ysb = ys_of(yb);
    const float eps = 1e-5f;
    // --ring: one activation row x0, quantized once in the weights' activation format.
    internal::QuantizedActivations q_ring;
    if (ring) q_ring = internal::QuantizeActivations(ref::VecDotType(s.outs[0].first), x0, 1, s.n_in, qbuf, stream);
    auto separate = [&](int c, float* y_out) {
      if (ring) {
        internal::GemvQuant(views[c], ys_of(y_out), q_ring, 1, stream);
        return;
      }
      internal::QuantizedActivations q;
      if (!internal::RmsNormQuantize(DType::kQ8_K, x, dx, w, eps, 1, s.n_in, out, qbuf, stream, &q)) std::abort();
      internal::GemvQuant(views[c], ys_of(y_out), q, 1, stream);
    };
    auto fused = [&](int c, float* y_out) {
      if (ring) {
        if (!internal::GemvQuantRing(views[c], ys_of(y_out), q_ring, stream)) {
          std::fprintf(stderr, "GemvQuantRing does not apply\n");
          std::exit(1);
        }
        return;
      }
      if (!internal::GemvQuantAddNorm(views[c], ys_of(y_out), xo, dx, w, eps, counter, stream)) {
        std::fprintf(stderr, "GemvQuantAddNorm does not apply\n");
        std::exit(1);
      }
    };
    // Check: both from x0.
    HERD_CUDA_CHECK(cudaMemcpyAsync(x, x0, fb, cudaMemcpyDeviceToDevice, stream));
    HERD_CUDA_CHECK(cudaMemcpyAsync(xo, x0, fb, cudaMemcpyDeviceToDevice, stream));
    fused(0, yb);
    separate(0, ya);  // x += dx afterwards
    std::vector<float> ha(n_out), hb(n_out), xa(s.n_in), xb(s.n_in);
    HERD_CUDA_CHECK(cudaMemcpyAsync(ha.data(), ya, n_out * 4, cudaMemcpyDeviceToHost, stream));
    HERD_CUDA_CHECK(cudaMemcpyAsync(hb.data(), yb, n_out * 4, cudaMemcpyDeviceToHost, stream));
    HERD_CUDA_CHECK(cudaMemcpyAsync(xa.data(), x, fb, cudaMemcpyDeviceToHost, stream));
    HERD_CUDA_CHECK(cudaMemcpyAsync(xb.data(), xo, fb, cudaMemcpyDeviceToHost, stream));
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream));
    float dy = 0, ymax = 0, dxm = 0;
    for (int64_t i = 0; i < n_out; ++i)
      dy = std::max(dy, std::fabs(ha[i] - hb[i])), ymax = std::max(ymax, std::fabs(ha[i]));
    for (int64_t i = 0; i < s.n_in; ++i) dxm = std::max(dxm, std::fabs(xa[i] - xb[i]));
    double med[2];
    for (int p = 0; p < 2; ++p) {
      cudaGraph_t graph;
      cudaGraphExec_t exec;
      HERD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
      for (int k = 0; k < kCalls; ++k) {
        if (p == 0)
          separate(k % copies, ya);
        else
          fused(k % copies, yb);
      }
      HERD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
      HERD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
      HERD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
      std::vector<float> ms = bench::GraphReplayMs(exec, stream, reps);
      std::sort(ms.begin(), ms.end());
      med[p] = 1000.0 * ms[ms.size() / 2] / kCalls;
      HERD_CUDA_CHECK(cudaGraphExecDestroy(exec));
      HERD_CUDA_CHECK(cudaGraphDestroy(graph));
    }
    std::printf("%-11s %12.2f %12.2f %10.2e %10.2e   (max|y| %.3g)\n", s.name, med[0], med[1], dy, dxm, ymax);
    for (void* p : ws) HERD_CUDA_CHECK(cudaFree(p));
    for (void* p : {static_cast<void*>(x), static_cast<void*>(x0), static_cast<void*>(dx), static_cast<void*>(w),
                    static_cast<void*>(out), static_cast<void*>(xo), static_cast<void*>(ya), static_cast<void*>(yb),
                    qbuf, static_cast<void*>(counter)})
      HERD_CUDA_CHECK(cudaFree(p));
  }
  HERD_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

}  // namespace
}  // namespace herd::cuda

int main(int argc, char** argv) {
  int reps = 20, hot = 0, ring = 0;
  const char* only = "";
  if (!herd::cuda::bench::ParseFlags(argc, argv,
                                     {{"--reps", &reps}, {"--hot", &hot}, {"--only", &only}, {"--ring", &ring}}))
    return 2;
  return herd::cuda::Run(std::max(1, reps), hot != 0, only, ring != 0);
}
