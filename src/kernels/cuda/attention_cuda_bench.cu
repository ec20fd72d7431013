// Paged attention on the GPU: decode batches (one query token per sequence, every sequence at
// the same context length) and single-sequence prefill chunks, llama-3.1-8B attention shape by
// default (32 query heads, 8 kv heads, head_dim 128), block size 16, random non-contiguous
// block tables. Reports the median time of herd::cuda::PagedAttention (attention + split merge):
// "graph": 20 calls captured in a CUDA graph, median of 15 replays / 20 (GPU time); "stream": one
// call at a time, median of 100 after 20 warm-ups (includes the host's launch gaps, which
// dominate the short calls). Bandwidth and TFLOP/s are from the graph time: the K/V bytes that
// must be read (context × kv heads × vector bytes × 2) and the causal QK and PV products. Caches smaller than 512 MiB
// are replicated and the runs rotate over the copies so that L2 (50 MB) holds none of them.
//   herd_cuda_attention_bench [--kv f16,q8_0,f32] [--quick] [--shape 8b|1b]
//                             [--cases SEQS:CTX:NEW,...] [--policy CTAS_PER_SM:MIN_TILES[:MAX_SPLITS]]
// --shape 1b: llama-3.2-1B attention (32 query heads, 8 kv heads, head_dim 64). --policy sets
// AttentionSplitPolicy (attention_cuda.h) for A/B runs of the split choice.
#include <cuda_fp16.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "kernels/attention.h"
#include "kernels/cuda/attention_cuda.h"
#include "kernels/cuda/bench_graph.h"
#include "kernels/cuda/cuda_check.h"

namespace herd::cuda {
namespace {

struct Case {
  int n_seqs;
  int ctx;    // positions per sequence after this step (decode: position ctx - 1 is the query)
  int n_new;  // query tokens per sequence (1: decode; > 1: a prefill chunk ending at ctx)
};

struct Shape {
  int n_heads = 32, n_kv = 8, head_dim = 128, block_size = 16;
};

std::vector<uint8_t> RandomBytes(size_t n, DType type, std::mt19937& rng) {
  std::vector<uint8_t> b(n);
  std::normal_distribution<float> d(0.f, 1.f);
  if (type == DType::kF16) {
    for (size_t i = 0; i + 2 <= n; i += 2) {
      const __half h = __float2half(d(rng));
      std::memcpy(&b[i], &h, 2);
    }
  } else if (type == DType::kF32) {
    for (size_t i = 0; i + 4 <= n; i += 4) {
      const float f = d(rng);
      std::memcpy(&b[i], &f, 4);
    }
  } else {
    for (auto& x : b) x = static_cast<uint8_t>(rng() & 0x7f);
    for (size_t i = 0; i + 34 <= n; i += 34) {
      const __half h = __float2half(0.01f);
      std::memcpy(&b[i], &h, 2);
    }
  }
  return b;
}

void Run(const Shape& s, DType type, const Case& c, int num_sms) {
  const int blocks_per_seq = (c.ctx + s.block_size - 1) / s.block_size;
  const size_t vec = KvVectorBytes(type, s.head_dim);
  const size_t block_bytes = static_cast<size_t>(s.block_size) * s.n_kv * vec;
  const size_t run_bytes = static_cast<size_t>(c.n_seqs) * blocks_per_seq * block_bytes;
  const int copies = static_cast<int>(std::max<size_t>(1, ((size_t{512} << 20) + run_bytes - 1) / run_bytes));
  const int n_blocks = copies * c.n_seqs * blocks_per_seq;
  std::mt19937 rng(42);

  KvLayerView kv;
  kv.type = type;
  kv.n_blocks = n_blocks;
  kv.block_size = s.block_size;
  kv.n_kv_heads = s.n_kv;
  kv.head_dim = s.head_dim;
  const size_t cache_bytes = static_cast<size_t>(n_blocks) * block_bytes;
  HERD_CUDA_CHECK(cudaMalloc(&kv.k, cache_bytes));
  HERD_CUDA_CHECK(cudaMalloc(&kv.v, cache_bytes));
  HERD_CUDA_CHECK(cudaMemset(kv.k, 0, cache_bytes));  // the few tail bytes the pattern leaves out
  HERD_CUDA_CHECK(cudaMemset(kv.v, 0, cache_bytes));
  {
    const auto pattern = RandomBytes(size_t{64} << 20, type, rng);  // tiled over the cache
    for (size_t off = 0; off < cache_bytes; off += pattern.size()) {
      const size_t n = std::min(pattern.size(), cache_bytes - off) / 34 / 4 * 34 * 4;  // whole Q8 blocks / floats
      if (n == 0) break;
      HERD_CUDA_CHECK(cudaMemcpy(static_cast<uint8_t*>(kv.k) + off, pattern.data(), n, cudaMemcpyHostToDevice));
      HERD_CUDA_CHECK(cudaMemcpy(static_cast<uint8_t*>(kv.v) + off, pattern.data(), n, cudaMemcpyHostToDevice));
    }
  }
  // Per copy: tables (a shuffled slice of the blocks), positions, sequence ids.
  std::vector<int32_t> perm(n_blocks);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), rng);
  const int n_tok = c.n_seqs * c.n_new;
  std::vector<int32_t> pos, seq;
  for (int i = 0; i < c.n_seqs; ++i) {
    for (int j = 0; j < c.n_new; ++j) {
      pos.push_back(c.ctx - c.n_new + j);
      seq.push_back(i);
    }
  }
  int32_t *d_pos, *d_seq, *d_tables, *d_lens;
  HERD_CUDA_CHECK(cudaMalloc(&d_pos, sizeof(int32_t) * n_tok));
  HERD_CUDA_CHECK(cudaMalloc(&d_seq, sizeof(int32_t) * n_tok));
  HERD_CUDA_CHECK(cudaMalloc(&d_tables, sizeof(int32_t) * n_blocks));
  HERD_CUDA_CHECK(cudaMalloc(&d_lens, sizeof(int32_t) * c.n_seqs));
  HERD_CUDA_CHECK(cudaMemcpy(d_pos, pos.data(), sizeof(int32_t) * n_tok, cudaMemcpyHostToDevice));
  HERD_CUDA_CHECK(cudaMemcpy(d_seq, seq.data(), sizeof(int32_t) * n_tok, cudaMemcpyHostToDevice));
  HERD_CUDA_CHECK(cudaMemcpy(d_tables, perm.data(), sizeof(int32_t) * n_blocks, cudaMemcpyHostToDevice));
  std::vector<int32_t> lens(c.n_seqs, blocks_per_seq);
  HERD_CUDA_CHECK(cudaMemcpy(d_lens, lens.data(), sizeof(int32_t) * c.n_seqs, cudaMemcpyHostToDevice));
  std::vector<const int32_t**> ptr_sets(copies);
  for (int cp = 0; cp < copies; ++cp) {
    std::vector<const int32_t*> ptrs;
    for (int i = 0; i < c.n_seqs; ++i) ptrs.push_back(d_tables + (cp * c.n_seqs + i) * blocks_per_seq);
    HERD_CUDA_CHECK(cudaMalloc(&ptr_sets[cp], sizeof(int32_t*) * c.n_seqs));
    HERD_CUDA_CHECK(cudaMemcpy(ptr_sets[cp], ptrs.data(), sizeof(int32_t*) * c.n_seqs, cudaMemcpyHostToDevice));
  }
  const size_t q_n = static_cast<size_t>(n_tok) * s.n_heads * s.head_dim;
  float *q, *out;
  HERD_CUDA_CHECK(cudaMalloc(&q, sizeof(float) * q_n));
  HERD_CUDA_CHECK(cudaMalloc(&out, sizeof(float) * q_n));
  {
    std::vector<float> hq(q_n);
    std::normal_distribution<float> d(0.f, 1.f);
    for (auto& x : hq) x = d(rng);
    HERD_CUDA_CHECK(cudaMemcpy(q, hq.data(), sizeof(float) * q_n, cudaMemcpyHostToDevice));
  }

  cudaStream_t stream;
  HERD_CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  AttentionScratch scratch;
  const float scale = 1.f / std::sqrt(static_cast<float>(s.head_dim));
  auto launch = [&](int rep) {
    AttentionBatch b{n_tok, d_pos, d_seq, ptr_sets[rep % copies], d_lens, /*may_have_runs=*/c.n_new > 1};
    b.max_context = c.ctx;  // the host's hint, as the model gives it
    PagedAttention(kv, b, q, s.n_heads, scale, out, num_sms, &scratch, stream);
  };
  for (int i = 0; i < 20; ++i) launch(i);
  constexpr int kReps = 100;
  std::vector<cudaEvent_t> ev(kReps + 1);
  for (auto& e : ev) HERD_CUDA_CHECK(cudaEventCreate(&e));
  std::vector<float> ms(kReps);
  for (int i = 0; i < kReps; ++i) {
    HERD_CUDA_CHECK(cudaEventRecord(ev[i], stream));
    launch(i);
    HERD_CUDA_CHECK(cudaEventRecord(ev[i + 1], stream));
  }
  HERD_CUDA_CHECK(cudaStreamSynchronize(stream));
  for (int i = 0; i < kReps; ++i) HERD_CUDA_CHECK(cudaEventElapsedTime(&ms[i], ev[i], ev[i + 1]));
  std::sort(ms.begin(), ms.end());
  const double us_stream = ms[kReps / 2] * 1e3;
  // The same launches captured in a CUDA graph (kGraphReps per replay): the GPU time without the
  // host's launch gaps, which dominate short calls when launched one by one.
  constexpr int kGraphReps = 20, kReplays = 15;
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  HERD_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  for (int i = 0; i < kGraphReps; ++i) launch(i);
  HERD_CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  HERD_CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) HERD_CUDA_CHECK(cudaGraphLaunch(exec, stream));
  std::vector<float> gms = bench::GraphReplayMs(exec, stream, kReplays);
  std::sort(gms.begin(), gms.end());
  const double us = gms[kReplays / 2] * 1e3 / kGraphReps;
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  // Positions attended: decode ctx per sequence; prefill sum over the chunk's tokens.
  double attended = 0;
  for (int j = 0; j < c.n_new; ++j) attended += c.ctx - c.n_new + j + 1;
  attended *= c.n_seqs;
  const double kv_bytes = static_cast<double>(c.n_seqs) * c.ctx * s.n_kv * vec * 2;
  const double flops = attended * s.n_heads * s.head_dim * 4;
  std::printf(
      "%-5s %4d seqs x %5d ctx x %3d new | graph %8.1f us | stream %8.1f us | KV %7.1f MB %5.0f GB/s | %6.2f TFLOP/s\n",
      std::string(DTypeName(type)).c_str(), c.n_seqs, c.ctx, c.n_new, us, us_stream, kv_bytes / 1e6,
      kv_bytes / us / 1e3, flops / us / 1e6);
  for (auto& e : ev) cudaEventDestroy(e);
  for (auto* p : ptr_sets) cudaFree(p);
  cudaFree(q);
  cudaFree(out);
  cudaFree(d_pos);
  cudaFree(d_seq);
  cudaFree(d_tables);
  cudaFree(d_lens);
  cudaFree(kv.k);
  cudaFree(kv.v);
  cudaStreamDestroy(stream);
}

}  // namespace
}  // namespace herd::cuda

int main(int argc, char** argv) {
  using namespace herd;
  std::vector<DType> types = {DType::kF16, DType::kQ8_0};
  bool quick = false;
  cuda::Shape shape;
  std::vector<cuda::Case> custom;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") {
      quick = true;
    } else if (a == "--shape" && i + 1 < argc) {
      const std::string v = argv[++i];
      if (v == "1b") shape.head_dim = 64;
    } else if (a == "--policy" && i + 1 < argc) {
      cuda::AttentionSplitPolicy p;
      if (std::sscanf(argv[++i], "%d:%d:%d", &p.ctas_per_sm, &p.min_tiles, &p.max_splits) < 2) return 2;
      cuda::SetAttentionSplitPolicy(p);
    } else if (a == "--cases" && i + 1 < argc) {
      std::string list = argv[++i];
      for (size_t pos = 0; pos < list.size();) {
        size_t end = list.find(',', pos);
        if (end == std::string::npos) end = list.size();
        cuda::Case c{};
        if (std::sscanf(list.substr(pos, end - pos).c_str(), "%d:%d:%d", &c.n_seqs, &c.ctx, &c.n_new) != 3) return 2;
        custom.push_back(c);
        pos = end + 1;
      }
    } else if (a == "--kv" && i + 1 < argc) {
      types.clear();
      const std::string list = argv[++i];
      if (list.find("f16") != std::string::npos) types.push_back(DType::kF16);
      if (list.find("q8_0") != std::string::npos) types.push_back(DType::kQ8_0);
      if (list.find("f32") != std::string::npos) types.push_back(DType::kF32);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--kv f16,q8_0,f32] [--quick] [--shape 8b|1b] [--cases SEQS:CTX:NEW,...] "
                   "[--policy CTAS_PER_SM:MIN_TILES[:MAX_SPLITS]]\n",
                   argv[0]);
      return 2;
    }
  }
  std::string why;
  if (!cuda::DeviceAvailable(&why)) {
    std::fprintf(stderr, "no GPU: %s\n", why.c_str());
    return 1;
  }
  cudaDeviceProp prop{};
  HERD_CUDA_CHECK(cudaGetDeviceProperties(&prop, 0));
  std::printf("%s, %d SMs; shape %d q heads / %d kv heads / head_dim %d, block %d\n", prop.name,
              prop.multiProcessorCount, shape.n_heads, shape.n_kv, shape.head_dim, shape.block_size);
  std::vector<cuda::Case> cases = {{128, 512, 1}, {128, 2048, 1}, {1, 512, 1},   {1, 2048, 1},
                                   {1, 8192, 1},  {32, 4096, 1},  {1, 512, 512}, {1, 2048, 512}};
  if (quick) cases = {{128, 512, 1}, {128, 2048, 1}};
  if (!custom.empty()) cases = custom;
  for (DType t : types) {
    for (const auto& c : cases) cuda::Run(shape, t, c, prop.multiProcessorCount);
  }
  return 0;
}
