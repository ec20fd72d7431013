// Matmul micro-benchmark (median time per call): GB/s of weights streamed and GOPS (2 * n_out * n_in * n_tok / s)
// of cpu::MatMul for decode shapes (n_tok = 1) and prompt shapes (n_tok = 256) of a
// llama-3.2-1b-sized model, per weight type and thread count; plus the machine's streaming
// read bandwidth (the decode ceiling).
//
// Decode runs rotate over copies of the weight matrix totalling >= 1 GiB so every call
// streams from DRAM as in a real forward pass (the L3 would otherwise hold a 9 MB matrix).
// Weight values: a few rows quantized by the reference quantizer, replicated (speed does not
// depend on values; real-valued data avoids denormal/NaN effects for the float types).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_pool.h"
#include "bench_args.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/matmul.h"
#include "kernels/quants.h"

namespace herd {
namespace {

struct Buffer {
  uint8_t* p = nullptr;
  size_t n = 0;
  explicit Buffer(size_t bytes) : n(bytes) {
    p = static_cast<uint8_t*>(std::aligned_alloc(64, (bytes + 63) & ~size_t{63}));
  }
  ~Buffer() { std::free(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
};

// Streaming read bandwidth: each thread sums its slice of a 1 GiB buffer (vector loads).
double ReadBandwidth(int threads) {
  const size_t bytes = size_t{1} << 30;
  Buffer buf(bytes);
  ThreadPool pool(threads);
  pool.ParallelFor(static_cast<int64_t>(bytes), 4096, [&](int64_t b, int64_t e) {
    std::memset(buf.p + b, 1, static_cast<size_t>(e - b));  // first touch by the reading thread
  });
  std::vector<uint64_t> sink(threads * 8);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    const double t0 = bench::Now();
    pool.Run([&](int ith, int nth) {
      const size_t per = bytes / nth;
      const auto* p = reinterpret_cast<const uint64_t*>(buf.p + per * ith);
      uint64_t acc = 0;  // vectorized by the compiler (-O3)
      for (size_t i = 0; i < per / 8; ++i) acc += p[i];
      sink[ith * 8] = acc;
    });
    best = std::max(best, static_cast<double>(bytes) / (bench::Now() - t0) / 1e9);
  }
  return best;
}

struct Shape {
  int64_t n_in, n_out, n_tok;
};

void Bench(DType type, const Shape& s, int threads, cpu::Isa isa, bool in_cache) {
  const size_t row = RowBytes(type, s.n_in);
  const size_t mat = row * static_cast<size_t>(s.n_out);
  const int copies =
      s.n_tok == 1 && !in_cache ? static_cast<int>(std::max<size_t>(1, ((size_t{1} << 30) + mat - 1) / mat)) : 1;
  // Distinct rows, replicated.
  const int distinct = 16;
  std::vector<uint8_t> rows(row * distinct);
  std::vector<float> src(s.n_in);
  std::mt19937 rng(1);
  std::normal_distribution<float> nd(0.f, 1.f);
  for (int r = 0; r < distinct; ++r) {
    for (auto& v : src) v = nd(rng);
    ref::QuantizeRow(type, src.data(), rows.data() + row * r, s.n_in);
  }
  Buffer w(mat * copies);
  ThreadPool pool(threads);
  pool.ParallelFor(s.n_out * copies, 64, [&](int64_t b, int64_t e) {
    for (int64_t r = b; r < e; ++r) std::memcpy(w.p + row * r, rows.data() + row * (r % distinct), row);
  });
  std::vector<float> x(s.n_in * s.n_tok), y(s.n_out * s.n_tok);
  for (auto& v : x) v = nd(rng);
  auto run = [&](int c) {
    TensorView v = TensorView::Matrix(type, s.n_out, s.n_in, w.p + mat * c);
    cpu::MatMulIsa(isa, v, x.data(), s.n_tok, y.data(), pool);
  };
  run(0);  // warm up (scratch buffers, page faults of y)
  // Median of the per-call times over >= 1 s (the machine may be shared: the median ignores
  // calls slowed by other processes).
  std::vector<double> times;
  const double t0 = bench::Now();
  double t = t0;
  while (t - t0 < 1.0 || times.size() < 5) {
    const double c0 = bench::Now();
    run(static_cast<int>(times.size() % copies));
    t = bench::Now();
    times.push_back(t - c0);
  }
  std::sort(times.begin(), times.end());
  const double per = times[times.size() / 2];
  const double gbs = static_cast<double>(mat) / per / 1e9;
  const double gops = 2.0 * s.n_in * s.n_out * s.n_tok / per / 1e9;
  std::printf("| %-5s | %6lld | %6lld | %4lld | %d | %9.3f | %7.2f | %7.1f |\n", std::string(DTypeName(type)).c_str(),
              (long long)s.n_in, (long long)s.n_out, (long long)s.n_tok, threads, per * 1e3, gbs, gops);
  std::fflush(stdout);
}

}  // namespace
}  // namespace herd

int main(int argc, char** argv) {
  using namespace herd;
  std::vector<int> threads = {1, 2};
  std::vector<DType> types(std::begin(kWeightTypes), std::end(kWeightTypes));
  std::vector<std::string> only;  // "decode" / "prompt"
  cpu::Isa isa = cpu::Isa::kAuto;
  bool bandwidth = false;
  bool in_cache = false;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--threads") {
      threads.clear();
      for (auto& t : bench::SplitCommas(v)) threads.push_back(std::atoi(t.c_str()));
      ++i;
    } else if (a == "--types") {
      types.clear();
      for (auto& t : bench::SplitCommas(v)) {
        auto d = DTypeFromName(t);
        if (!d) {
          std::fprintf(stderr, "unknown type %s\n", t.c_str());
          return 2;
        }
        types.push_back(*d);
      }
      ++i;
    } else if (a == "--only") {
      only = bench::SplitCommas(v);
      ++i;
    } else if (a == "--isa") {
      for (cpu::Isa c : {cpu::Isa::kGeneric, cpu::Isa::kAvx2, cpu::Isa::kAvx512, cpu::Isa::kNeon})
        if (v == cpu::IsaName(c)) isa = c;
      ++i;
    } else if (a == "--shape") {  // n_in,n_out,n_tok (repeatable); the weights are not rotated
      const auto f = bench::SplitCommas(v);
      if (f.size() != 3) return 2;
      shapes.push_back({std::atoll(f[0].c_str()), std::atoll(f[1].c_str()), std::atoll(f[2].c_str())});
      in_cache = true;
      ++i;
    } else if (a == "--bandwidth") {
      bandwidth = true;
    } else {
      std::fprintf(
          stderr,
          "usage: %s [--threads 1,2] [--types Q4_K,F16] [--only decode|prompt] [--isa avx2] [--bandwidth]\n"
          "       [--shape n_in,n_out,n_tok ...]  (custom shapes; weights not rotated, so they may sit in cache)\n",
          argv[0]);
      return 2;
    }
  }
  std::printf("cpu: %s; kernels: %s\n", cpu::GetCpuFeatures().ToString().c_str(), cpu::IsaName(isa));
  for (int t : threads) std::printf("streaming read bandwidth, %d thread(s): %.1f GB/s\n", t, ReadBandwidth(t));
  if (bandwidth) return 0;
  const bool decode = only.empty() || std::find(only.begin(), only.end(), "decode") != only.end();
  const bool prompt = only.empty() || std::find(only.begin(), only.end(), "prompt") != only.end();
  std::printf("\n| type | n_in | n_out | n_tok | thr | ms/call | GB/s | GOPS |\n|---|---|---|---|---|---|---|---|\n");
  for (DType type : types) {
    for (int t : threads) {
      if (!shapes.empty()) {
        for (const Shape& s : shapes) Bench(type, s, t, isa, in_cache);
        continue;
      }
      if (decode)
        for (Shape s : {Shape{2048, 8192, 1}, Shape{8192, 2048, 1}, Shape{2048, 128256, 1}})
          Bench(type, s, t, isa, false);
      if (prompt)
        for (Shape s : {Shape{2048, 2048, 256}, Shape{2048, 8192, 256}, Shape{8192, 2048, 256}})
          Bench(type, s, t, isa, false);
    }
  }
  return 0;
}
