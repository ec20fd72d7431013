// Plain-main matmul check (no GoogleTest, so it cross-builds without a target gtest):
// cpu::MatMul with every kernel set this CPU can run, against ref::MatMul, for every weight
// type and odd shapes. Same tolerance and reasoning as src/kernels/cpu/matmul_cpu_test.cc.
// Exit status 0 when everything matches, 1 otherwise.
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "base/thread_pool.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/matmul.h"
#include "kernels/quants.h"

using namespace herd;

int main() {
  std::printf("features: %s; best kernel set: %s\n", cpu::GetCpuFeatures().ToString().c_str(), cpu::MatMulIsaName());
  std::vector<cpu::Isa> isas;
  for (cpu::Isa isa : {cpu::Isa::kGeneric, cpu::Isa::kAvx2, cpu::Isa::kAvx512, cpu::Isa::kNeon})
    if (cpu::IsaAvailable(isa)) isas.push_back(isa);
  ThreadPool pool1(1), pool3(3);
  std::mt19937 rng(42);
  std::normal_distribution<float> nd(0.f, 1.f);
  int failures = 0, checks = 0;
  for (DType type : kWeightTypes) {
    const int64_t bs = Traits(type).block_size;
    std::vector<int64_t> n_ins = bs == 1 ? std::vector<int64_t>{3, 67} : std::vector<int64_t>{bs, 3 * bs, 10 * bs};
    n_ins.push_back(bs == 32 ? 129 * bs : 17 * bs);  // two column slices of the packed path
    for (int64_t n_out : {1, 3, 17}) {
      for (int64_t n_in : n_ins) {
        for (int64_t n_tok : {1, 2, 5, 9, 16}) {
          const size_t rb = RowBytes(type, n_in);
          std::vector<uint8_t> w(rb * n_out);
          std::vector<float> row(n_in), wd(n_out * n_in), x(n_tok * n_in);
          for (int64_t r = 0; r < n_out; ++r) {
            const float shift = r % 2 ? 0.3f : 0.f;
            for (auto& v : row) v = nd(rng) + shift;
            ref::QuantizeRow(type, row.data(), w.data() + r * rb, n_in);
            ref::DequantizeRow(type, w.data() + r * rb, wd.data() + r * n_in, n_in);
          }
          for (auto& v : x) v = nd(rng);
          const TensorView wv = TensorView::Matrix(type, n_out, n_in, w.data());
          std::vector<float> y_ref(n_tok * n_out), y(n_tok * n_out);
          ref::MatMul(wv, x.data(), n_tok, y_ref.data());
          for (cpu::Isa isa : isas) {
            for (ThreadPool* pool : {&pool1, &pool3}) {
              std::fill(y.begin(), y.end(), -1e30f);
              cpu::MatMulIsa(isa, wv, x.data(), n_tok, y.data(), *pool);
              for (int64_t t = 0; t < n_tok; ++t) {
                for (int64_t r = 0; r < n_out; ++r) {
                  double mag = 0;
                  for (int64_t i = 0; i < n_in; ++i) mag += std::fabs(wd[r * n_in + i] * x[t * n_in + i]);
                  const double err = std::fabs(y[t * n_out + r] - y_ref[t * n_out + r]);
                  ++checks;
                  if (!(err <= 1e-4 * mag + 1e-30)) {
                    if (++failures <= 20)
                      std::printf("MISMATCH %s %s n_out=%lld n_in=%lld n_tok=%lld threads=%d t=%lld r=%lld: %g vs %g\n",
                                  std::string(DTypeName(type)).c_str(), cpu::IsaName(isa), (long long)n_out,
                                  (long long)n_in, (long long)n_tok, pool->size(), (long long)t, (long long)r,
                                  y[t * n_out + r], y_ref[t * n_out + r]);
                  }
                }
              }
            }
          }
        }
      }
    }
  }
  std::printf("%d of %d outputs mismatched\n", failures, checks);
  return failures == 0 ? 0 : 1;
}
