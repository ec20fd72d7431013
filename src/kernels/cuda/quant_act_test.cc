// QuantizeActivations (quant_act.cu), the GEMV's int8 activation format, against the reference
// quantizers (ref::QuantizeRow to Q8_0 / Q8_1 / Q8_K) byte for byte: values, scales, Q8_1 sums,
// group sums and the zero padding past n_in.
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/quants.h"
#include "tensor/quant_blocks.h"

namespace herd::cuda {
namespace {

using testing::Dev;
using testing::Down;

// Byte offset of value v in the GEMV's int8 activation row (matmul_internal.h: 2048-value
// spans; value u of a span at 16-byte vector 32 * ((u % 64) / 16) + u / 64).
int64_t ActPos(int64_t v) {
  const int64_t u = v % 2048;
  return v / 2048 * 2048 + (32 * ((u % 64) / 16) + u / 64) * 16 + u % 16;
}

// QuantizeActivations writes exactly the int8 values, scales, Q8_1 sums and group sums of
// ref::QuantizeRow, for rows whose blocks span many magnitudes (half-subnormal and overflowing
// Q8_0 scales included) and ties of x / d at k + 0.5.
TEST(QuantizeActivationsTest, BitIdenticalToReference) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << why;
  std::mt19937 rng(11);
  for (DType f : {DType::kQ8_0, DType::kQ8_1, DType::kQ8_K}) {
    const int64_t bs = Traits(f).block_size;
    for (int64_t n_in : {bs, int64_t{2048}, int64_t{2304}, int64_t{4352}}) {
      SCOPED_TRACE(std::string(DTypeName(f)) + " n_in=" + std::to_string(n_in));
      const int64_t n_tok = 3;
      std::vector<float> x(n_tok * n_in);
      std::normal_distribution<float> nd(0.f, 1.f);
      std::uniform_int_distribution<int> expo(-9, 7), kind(0, 3);
      for (int64_t b = 0; b < n_tok * n_in / bs; ++b) {
        float* p = x.data() + b * bs;
        if (kind(rng) == 0) {
          // amax = 127 (d = 1) and values k + 0.5: round-half-even decides every element.
          std::uniform_int_distribution<int> k(-127, 126);
          for (int64_t i = 0; i < bs; ++i) p[i] = static_cast<float>(k(rng)) + 0.5f;
          p[bs / 2] = 127.f;
        } else {
          const float m = std::pow(10.f, static_cast<float>(expo(rng)));
          for (int64_t i = 0; i < bs; ++i) p[i] = nd(rng) * m;
        }
      }
      Dev dx(x.size() * 4);
      const size_t bytes = internal::QuantizedActivationBytes(n_tok, n_in);
      Dev buf(bytes);
      HERD_CUDA_CHECK(cudaMemcpy(dx.p, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
      HERD_CUDA_CHECK(cudaMemset(buf.p, 0x5A, bytes));
      const internal::QuantizedActivations qa =
          internal::QuantizeActivations(f, dx.as<float>(), n_tok, n_in, buf.p, nullptr);
      HERD_CUDA_CHECK(cudaDeviceSynchronize());
      const std::vector<uint8_t> h = Down<uint8_t>(buf.p, bytes);
      auto at = [&](const void* dev) { return h.data() + (static_cast<const uint8_t*>(dev) - buf.as<uint8_t>()); };
      const auto* q = reinterpret_cast<const int8_t*>(at(qa.q));
      const auto* d = reinterpret_cast<const float*>(at(qa.d));
      const auto* s = reinterpret_cast<const float*>(at(qa.s));
      const auto* sums = reinterpret_cast<const int16_t*>(at(qa.sums));
      std::vector<uint8_t> want(RowBytes(f, n_in));
      int bad = 0;
      for (int64_t t = 0; t < n_tok; ++t) {
        ref::QuantizeRow(f, x.data() + t * n_in, want.data(), n_in);
        for (int64_t b = 0; b < n_in / bs; ++b) {
          const int8_t* wq;
          float wd, ws = 0;
          const int16_t* wsum = nullptr;
          if (f == DType::kQ8_0) {
            const auto& blk = reinterpret_cast<const BlockQ8_0*>(want.data())[b];
            wq = blk.qs, wd = Fp16ToFp32(blk.d);
          } else if (f == DType::kQ8_1) {
            const auto& blk = reinterpret_cast<const BlockQ8_1*>(want.data())[b];
            wq = blk.qs, wd = blk.d, ws = blk.s;
          } else {
            const auto& blk = reinterpret_cast<const BlockQ8_K*>(want.data())[b];
            wq = blk.qs, wd = blk.d, wsum = blk.bsums;
          }
          const float gd = d[t * qa.d_stride + b];
          if (std::memcmp(&gd, &wd, 4) != 0 && bad++ < 5)
            ADD_FAILURE() << "tok " << t << " block " << b << " d " << gd << " ref " << wd;
          if (f == DType::kQ8_1) {
            const float gs = s[t * qa.d_stride + b];
            if (std::memcmp(&gs, &ws, 4) != 0 && bad++ < 5)
              ADD_FAILURE() << "tok " << t << " block " << b << " s " << gs << " ref " << ws;
          }
          for (int64_t i = 0; i < bs; ++i) {
            const int64_t v = b * bs + i;
            const int g = q[t * qa.q_stride + ActPos(v)];
            if (g != wq[i] && bad++ < 5)
              ADD_FAILURE() << "tok " << t << " value " << v << ": " << g << " ref " << int{wq[i]};
          }
          for (int64_t g = 0; g < bs / 16; ++g) {
            int want_sum = 0;
            for (int i = 0; i < 16; ++i) want_sum += wq[16 * g + i];
            if (wsum != nullptr) {
              EXPECT_EQ(want_sum, wsum[g]);  // the reference's own bsums
            }
            const int got = sums[t * qa.g_stride + b * bs / 16 + g];
            if (got != want_sum && bad++ < 5)
              ADD_FAILURE() << "tok " << t << " group " << b * bs / 16 + g << ": " << got << " want " << want_sum;
          }
        }
        for (int64_t v = n_in; v < qa.q_stride; ++v) {
          if (q[t * qa.q_stride + ActPos(v)] != 0 && bad++ < 5) ADD_FAILURE() << "padding value " << v << " not zero";
        }
      }
    }
  }
}

}  // namespace
}  // namespace herd::cuda
