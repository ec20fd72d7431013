// CPU paged attention micro-benchmark: one decode token (one sequence) at a given context length,
// cpu::PagedAttention, median time per call and GB/s of the K/V bytes it must read
// (context x kv heads x vector bytes x 2). Shapes: llama-3.2-1b (32 heads, 8 kv heads,
// head_dim 64) or llama-3.1-8b (32 / 8 / 128), block size 16, F16 or Q8_0 cache.
//
// As in a forward pass, where each layer's K/V is its own memory, the calls rotate over copies
// of the cache totalling >= 256 MiB, so the K/V bytes come from DRAM and not from L3.
//   build/bin/herd_attention_cpu_bench [--shape 1b|8b] [--ctx 1024,4096] [--threads 1,2] [--kv f16,q8_0]
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "bench_args.h"
#include "kernels/attention.h"
#include "kernels/cpu/ops_cpu.h"

namespace herd {
namespace {

struct Shape {
  int32_t n_heads, n_kv, head_dim;
};

// Median seconds per decode call at context `ctx` (the token at position ctx - 1).
double TimeDecode(const Shape& sh, DType type, int32_t ctx, ThreadPool& pool) {
  constexpr int32_t kBlock = 16;
  const int32_t n_blocks = (ctx + kBlock - 1) / kBlock;
  const size_t vec = KvVectorBytes(type, sh.head_dim);
  const size_t bytes = static_cast<size_t>(n_blocks) * kBlock * sh.n_kv * vec;
  const size_t copies = std::max<size_t>(2, (size_t{256} << 20) / (2 * bytes) + 1);
  // Random but finite values: f16 halves of small magnitude, or Q8_0 blocks with a small scale.
  std::vector<uint8_t> k(bytes * copies), v(bytes * copies);
  std::mt19937 rng(7);
  for (size_t i = 0; i < k.size(); i += 2) {
    const uint16_t h = static_cast<uint16_t>(0x2000 + rng() % 0x1000 + ((rng() & 1) << 15));  // |x| ~ 2^-7 .. 2^-5
    std::memcpy(&k[i], &h, 2);
    std::memcpy(&v[i], &h, 2);
  }
  std::vector<int32_t> table(static_cast<size_t>(n_blocks));
  for (int32_t b = 0; b < n_blocks; ++b) table[static_cast<size_t>(b)] = b;
  const int32_t* tables[] = {table.data()};
  const int32_t lens[] = {n_blocks};
  const int32_t pos[] = {ctx - 1}, seq[] = {0};
  AttentionBatch batch{1, pos, seq, tables, lens};
  batch.may_have_runs = false;
  std::vector<float> q(static_cast<size_t>(sh.n_heads) * sh.head_dim), out(q.size());
  std::normal_distribution<float> nd(0.f, 1.f);
  for (float& x : q) x = nd(rng);
  const float scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
  auto call = [&](size_t copy) {
    const KvLayerView c{k.data() + copy * bytes, v.data() + copy * bytes, type, n_blocks, kBlock, sh.n_kv, sh.head_dim};
    cpu::PagedAttention(c, batch, q.data(), sh.n_heads, scale, out.data(), pool);
  };
  for (size_t i = 0; i < copies; ++i) call(i);  // fault every page in
  std::vector<double> t;
  const int reps = static_cast<int>(std::max<size_t>(20, 3 * copies));
  for (int r = 0; r < reps; ++r) {
    const double t0 = bench::Now();
    call(static_cast<size_t>(r) % copies);
    t.push_back(bench::Now() - t0);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

int Main(int argc, char** argv) {
  std::string shape = "1b", ctxs = "1024,4096,16384", threads = "1,2", kvs = "f16,q8_0";
  for (int i = 1; i < argc; i += 2) {
    const std::string a = argv[i];
    if (i + 1 == argc) {
      std::fprintf(stderr, "%s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--shape") {
      shape = argv[i + 1];
    } else if (a == "--ctx") {
      ctxs = argv[i + 1];
    } else if (a == "--threads") {
      threads = argv[i + 1];
    } else if (a == "--kv") {
      kvs = argv[i + 1];
    } else {
      std::fprintf(stderr, "unknown option %s\n", a.c_str());
      return 2;
    }
  }
  if (shape != "1b" && shape != "8b") {
    std::fprintf(stderr, "--shape: 1b or 8b, got %s\n", shape.c_str());
    return 2;
  }
  const Shape sh = shape == "1b" ? Shape{32, 8, 64} : Shape{32, 8, 128};
  std::printf("| shape | kv | threads | context | us / call | K/V GB/s |\n|---|---|---|---|---|---|\n");
  for (const std::string& kv : bench::SplitCommas(kvs)) {
    if (kv != "f16" && kv != "q8_0") {
      std::fprintf(stderr, "--kv: f16 or q8_0, got %s\n", kv.c_str());
      return 2;
    }
    const DType type = kv == "f16" ? DType::kF16 : DType::kQ8_0;
    for (const std::string& th : bench::SplitCommas(threads)) {
      ThreadPool pool(std::atoi(th.c_str()));
      for (const std::string& cs : bench::SplitCommas(ctxs)) {
        const int32_t ctx = std::atoi(cs.c_str());
        if (ctx < 1) {
          std::fprintf(stderr, "--ctx: positive lengths, got %s\n", cs.c_str());
          return 2;
        }
        const double s = TimeDecode(sh, type, ctx, pool);
        const double kv_bytes = 2.0 * ctx * sh.n_kv * static_cast<double>(KvVectorBytes(type, sh.head_dim));
        std::printf("| %s | %s | %d | %d | %.1f | %.1f |\n", shape.c_str(), kv.c_str(), pool.size(), ctx, s * 1e6,
                    kv_bytes / s / 1e9);
      }
    }
  }
  return 0;
}

}  // namespace
}  // namespace herd

int main(int argc, char** argv) { return herd::Main(argc, argv); }
