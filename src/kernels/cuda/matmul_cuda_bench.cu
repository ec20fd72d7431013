// MatMulRunner benchmark on llama-3.1-8b and llama-3.2-1b projection shapes.
//   herd_cuda_matmul_bench [--models 8b,1b] [--types F16,BF16,Q8_0,Q4_0,Q4_K,Q6_K]
//                          [--tok 1,2,4,8,16,64,512] [--reps 10] [--paths gemv,tc,tcf,cublas,stream]
//                          [--pdl 1] [--float-pdl-mb 64] [--groups -1] [--shape 4096:14336] [--split 2]
//                          [--float-vectors 0|2|4] [--float-split4 -1|0|64] [--direct -1|0|1]
//                          [--float-ring-mb 16]
// Shapes n_in:n_out, and n_in:n1+n2+n3 for weights sharing one launch (MatMulShared, as the
// model's Q/K/V and gate/up run), e.g. --shape 4096:4096+1024+1024.
// For each (shape, type, n_tok, path): random weights (generated on the GPU, finite scales),
// enough copies that the copies together exceed 2x L2 (so a call never finds its weights in
// L2), one CUDA graph of kCalls calls rotating over the copies (launch gaps as in graph-captured
// decode), timed by CUDA events over --reps replays; the median per call is printed with the
// weight bandwidth (weight bytes / time) and TFLOP/s (2 n_in n_out n_tok / time). Activation
// conversion kernels are part of each call. "auto" marks the path MatMulRunner picks by default.
// "stream": no matmul, a kernel that only reads the weight bytes (the read floor for that size).
// --pdl (0|1), --float-pdl-mb MB, --groups N, --split N, --float-vectors N, --float-split4 N,
// --direct N and --float-ring-mb MB set internal::GemvOptions (A/B of GEMV launch choices; 0 / -1:
// the device's choice; the HERD_CUDA_* variables of these options do not reach the bench, whose
// options replace them).
// Also prints the device-to-device copy bandwidth (bytes read + written) for reference.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cuda/bench_fill.cuh"
#include "kernels/cuda/bench_graph.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/launch_pdl.cuh"
#include "kernels/cuda/matmul_cuda.h"
#include "kernels/cuda/matmul_internal.h"
#include "tensor/dtype.h"

namespace herd::cuda {
namespace {

using bench::Fields;
using bench::FillFloatKernel;
using bench::FillKernel;

constexpr int kCalls = 20;

// The read floor of a weight ("stream" path): every 16-byte word of [p, p + n) loaded once
// (grid-stride, four loads in flight per thread), no math; the xor of the words is stored only
// when it equals an improbable value, so the loads cannot be dropped. PDL as the GEMVs.
__global__ void __launch_bounds__(256) StreamReadKernel(const uint4* p, size_t n, uint32_t* sink) {
  PdlTrigger();
  PdlWait();
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  uint32_t acc = 0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += 4 * stride) {
    uint4 v[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) v[k] = i + k * stride < n ? __ldcs(p + i + k * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
    for (int k = 0; k < 4; ++k) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
  }
  if (acc == 0x9E3779B9u) *sink = acc;
}

std::vector<std::string> Split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(item);
  return out;
}

// One launch: weights of n_outs[i] rows each sharing x of n_in values (several: MatMulShared, as
// the model's Q/K/V and gate/up; one: MatMul).
struct ShapeSpec {
  const char* model;
  int64_t n_in;
  std::vector<int64_t> n_outs;
  int64_t TotalOut() const {
    int64_t n = 0;
    for (int64_t o : n_outs) n += o;
    return n;
  }
  std::string OutLabel() const {  // "4096" or "4096+1024+1024"
    std::string l;
    for (int64_t o : n_outs) l += (l.empty() ? "" : "+") + std::to_string(o);
    return l;
  }
};

double CopyBandwidth(cudaStream_t stream) {
  const size_t bytes = size_t{1} << 30;
  void *a, *b;
  HERD_CUDA_CHECK(cudaMalloc(&a, bytes));
  HERD_CUDA_CHECK(cudaMalloc(&b, bytes));
  HERD_CUDA_CHECK(cudaMemsetAsync(a, 1, bytes, stream));
  cudaEvent_t e0, e1;
  HERD_CUDA_CHECK(cudaEventCreate(&e0));
  HERD_CUDA_CHECK(cudaEventCreate(&e1));
  std::vector<float> ms;
  for (int i = 0; i < 6; ++i) {
    HERD_CUDA_CHECK(cudaEventRecord(e0, stream));
    HERD_CUDA_CHECK(cudaMemcpyAsync(b, a, bytes, cudaMemcpyDeviceToDevice, stream));
    HERD_CUDA_CHECK(cudaEventRecord(e1, stream));
    HERD_CUDA_CHECK(cudaEventSynchronize(e1));
    float t;
    HERD_CUDA_CHECK(cudaEventElapsedTime(&t, e0, e1));
    if (i > 0) ms.push_back(t);
  }
  cudaEventDestroy(e0);
  cudaEventDestroy(e1);
  cudaFree(a);
  cudaFree(b);
  return 2.0 * bytes / (bench::Median(ms) * 1e-3) / 1e9;
}

int Main(int argc, char** argv) {
  std::string models = "8b,1b", types = "F16,BF16,Q8_0,Q4_0,Q4_K,Q6_K", toks = "1,2,4,8,16,64,512", paths = "gemv,tc";
  int reps = 10;
  internal::GemvOptions gemv;
  std::string shape_filter;  // "n_in:n_out", empty for all
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string k = argv[i], v = argv[i + 1];
    if (k == "--models")
      models = v;
    else if (k == "--types")
      types = v;
    else if (k == "--tok")
      toks = v;
    else if (k == "--paths")
      paths = v;
    else if (k == "--reps")
      reps = std::atoi(v.c_str());
    else if (k == "--pdl")
      gemv.pdl = v != "0";
    else if (k == "--float-pdl-mb")
      gemv.float_pdl_max_mb = std::atoll(v.c_str());
    else if (k == "--shape")
      shape_filter = v;
    else if (k == "--groups")
      gemv.groups_per_block = std::atoi(v.c_str());
    else if (k == "--split")
      gemv.split_stages = std::atoi(v.c_str());
    else if (k == "--float-vectors")
      gemv.float_vectors = std::atoi(v.c_str());
    else if (k == "--float-split4")
      gemv.float_split4_units = std::atoll(v.c_str());
    else if (k == "--direct")
      gemv.quant_direct = std::atoi(v.c_str());
    else if (k == "--float-ring-mb")
      gemv.float_ring_max_mb = std::atoll(v.c_str());
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  internal::SetGemvOptions(gemv);
  std::string why;
  if (!DeviceAvailable(&why)) {
    std::fprintf(stderr, "no GPU: %s\n", why.c_str());
    return 1;
  }
  cudaDeviceProp prop;
  HERD_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  cudaStream_t stream;
  HERD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::printf("device: %s, %d SMs, L2 %d MiB; copy bandwidth (read+write) %.0f GB/s\n", prop.name,
              prop.multiProcessorCount, prop.l2CacheSize >> 20, CopyBandwidth(stream));

  const std::vector<ShapeSpec> all_shapes = {
      {"8b", 4096, {4096}},           {"8b", 4096, {6144}},   {"8b", 4096, {4096, 1024, 1024}},
      {"8b", 4096, {1024}},           {"8b", 4096, {14336}},  {"8b", 4096, {14336, 14336}},
      {"8b", 14336, {4096}},          {"8b", 4096, {128256}}, {"1b", 2048, {2048}},
      {"1b", 2048, {2048, 512, 512}}, {"1b", 2048, {512}},    {"1b", 2048, {8192}},
      {"1b", 2048, {8192, 8192}},     {"1b", 8192, {2048}},   {"1b", 2048, {128256}}};
  const std::vector<std::string> model_list = Split(models), path_list = Split(paths);
  std::vector<int64_t> tok_list;
  for (const std::string& t : Split(toks)) tok_list.push_back(std::atoll(t.c_str()));
  const int64_t max_tok = *std::max_element(tok_list.begin(), tok_list.end());

  MatMulRunner runner(stream);
  std::printf("%-4s %6s %15s %-5s %4s %-5s %5s %10s %8s %8s\n", "model", "n_in", "n_out", "type", "tok", "path", "auto",
              "us", "GB/s", "TFLOP/s");
  for (const ShapeSpec& s : all_shapes) {
    if (std::find(model_list.begin(), model_list.end(), s.model) == model_list.end()) continue;
    if (!shape_filter.empty() && shape_filter != std::to_string(s.n_in) + ":" + s.OutLabel()) continue;
    const int64_t n_out = s.TotalOut();
    const size_t n_w = s.n_outs.size();
    float* x;
    float* y;
    HERD_CUDA_CHECK(cudaMalloc(&x, max_tok * s.n_in * 4));
    HERD_CUDA_CHECK(cudaMalloc(&y, max_tok * n_out * 4));
    std::vector<float*> ys(n_w);  // segment i's [max_tok, n_outs[i]] inside y
    for (size_t i = 0, off = 0; i < n_w; off += static_cast<size_t>(max_tok * s.n_outs[i]), ++i) ys[i] = y + off;
    FillFloatKernel<<<(max_tok * s.n_in + 255) / 256, 256, 0, stream>>>(x, max_tok * s.n_in, 17);
    HERD_CUDA_CHECK_LAUNCH();
    runner.Reserve(max_tok, s.n_in);
    for (const std::string& tname : Split(types)) {
      const auto type = DTypeFromName(tname);
      if (!type) {
        std::fprintf(stderr, "unknown type %s\n", tname.c_str());
        return 2;
      }
      const size_t bytes = RowBytes(*type, s.n_in) * n_out;
      const int copies = static_cast<int>(
          std::clamp<size_t>((2 * static_cast<size_t>(prop.l2CacheSize) + bytes - 1) / bytes + 1, 1, 16));
      std::vector<void*> ws(copies);
      std::vector<std::vector<TensorView>> views(copies);  // copy c's weights (segments of ws[c])
      int f0, f1;
      Fields(*type, &f0, &f1);
      for (int c = 0; c < copies; ++c) {
        HERD_CUDA_CHECK(cudaMalloc(&ws[c], bytes));
        FillKernel<<<static_cast<unsigned>((bytes + 255) / 256), 256, 0, stream>>>(
            static_cast<uint8_t*>(ws[c]), bytes, 100 + c, static_cast<int>(Traits(*type).type_size), f0, f1,
            *type == DType::kF16 || *type == DType::kBF16, *type == DType::kBF16);
        HERD_CUDA_CHECK_LAUNCH();
        size_t off = 0;
        for (int64_t rows : s.n_outs) {  // whole rows; n_outs are multiples of 512: aligned segments
          views[c].push_back(TensorView::Matrix(*type, rows, s.n_in, static_cast<uint8_t*>(ws[c]) + off));
          off += RowBytes(*type, s.n_in) * rows;
        }
      }
      static const int stream_blocks_per_sm = [] {
        const char* e = std::getenv("HERD_BENCH_STREAM_BLOCKS_PER_SM");  // default 8 (2,048 threads)
        return e != nullptr ? std::max(1, std::atoi(e)) : 8;
      }();
      static uint32_t* sink = nullptr;
      if (sink == nullptr) HERD_CUDA_CHECK(cudaMalloc(&sink, 4));
      bool stream_path = false;
      auto call = [&](int c, int64_t n_tok) {
        if (stream_path) {
          LaunchPdlIf(internal::GemvProgrammaticLaunch(), StreamReadKernel,
                      dim3(static_cast<unsigned>(prop.multiProcessorCount * stream_blocks_per_sm)), dim3(256), 0,
                      stream, static_cast<const uint4*>(ws[c]), bytes / 16, sink);
        } else if (n_w == 1) {
          runner.MatMul(views[c][0], x, n_tok, y);
        } else {
          runner.MatMulShared(views[c], x, n_tok, ys);
        }
      };
      for (int64_t n_tok : tok_list) {
        for (const std::string& pname : path_list) {
          const MatMulPath path = pname == "tc"       ? MatMulPath::kTensorCore
                                  : pname == "tcf"    ? MatMulPath::kTensorCoreFused
                                  : pname == "cublas" ? MatMulPath::kTensorCoreCublas
                                                      : MatMulPath::kGemv;
          stream_path = pname == "stream";
          if (stream_path && n_tok != tok_list[0]) continue;
          if (path == MatMulPath::kGemv && n_tok > 64) continue;
          if (path != MatMulPath::kGemv && n_tok == 1 && Traits(*type).quantized && !stream_path) continue;
          if (path != MatMulPath::kGemv && path != MatMulPath::kTensorCore && *type == DType::kF32) continue;
          runner.set_path(path);
          for (int c = 0; c < copies; ++c) call(c, n_tok);  // warm-up
          HERD_CUDA_CHECK(cudaStreamSynchronize(stream));
          cudaGraph_t graph;
          HERD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
          for (int i = 0; i < kCalls; ++i) call(i % copies, n_tok);
          HERD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
          cudaGraphExec_t exec;
          HERD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
          HERD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
          std::vector<float> ms = bench::GraphReplayMs(exec, stream, reps);
          for (float& t : ms) t /= kCalls;
          HERD_CUDA_CHECK(cudaGraphExecDestroy(exec));
          HERD_CUDA_CHECK(cudaGraphDestroy(graph));
          const double us = bench::Median(ms) * 1e3;
          std::printf("%-4s %6lld %15s %-5s %4lld %-5s %5s %10.1f %8.0f %8.1f\n", s.model,
                      static_cast<long long>(s.n_in), s.OutLabel().c_str(), tname.c_str(),
                      static_cast<long long>(n_tok), pname.c_str(),
                      !stream_path && MatMulRunner::AutoPath(*type, n_tok) == path ? "*" : "", us,
                      bytes / (us * 1e-6) / 1e9, 2.0 * s.n_in * n_out * n_tok / (us * 1e-6) / 1e12);
          std::fflush(stdout);
        }
      }
      for (void* p : ws) HERD_CUDA_CHECK(cudaFree(p));
    }
    HERD_CUDA_CHECK(cudaFree(x));
    HERD_CUDA_CHECK(cudaFree(y));
  }
  HERD_CUDA_CHECK(cudaStreamDestroy(stream));
  return 0;
}

}  // namespace
}  // namespace herd::cuda

int main(int argc, char** argv) { return herd::cuda::Main(argc, argv); }
