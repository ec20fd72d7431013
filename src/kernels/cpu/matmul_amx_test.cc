// cpu::MatMulAmx (AMX-BF16, F16/BF16 weights) against ref::MatMul, forced on (skipped where the
// CPU, the OS or the VM does not grant AMX). Tolerance as matmul_cpu_test.cc: |y - y_ref| <=
// 1e-4 * sum_i |w_i * x_i|. The hi/lo bf16 split leaves out W_lo·X_lo and rounds X_lo to bf16:
// <= 2^-16 (1.5e-5) of that sum; a wrong tile, pair order or padding moves y by ~1e-2..1 of it.
#include "kernels/cpu/matmul_amx.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul_cpu.h"
#include "kernels/matmul.h"
#include "kernels/quants.h"

namespace herd {
namespace {

struct Case {
  std::vector<uint8_t> w;
  std::vector<float> x, y_ref, mag;
};

// x has a padded row stride ldx >= n_in (the driver passes activation rows of a 64-byte stride).
Case Make(DType type, int64_t n_out, int64_t n_in, int64_t n_tok, int64_t ldx, uint32_t seed) {
  Case c;
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_real_distribution<float> ud(0.25f, 4.f);
  c.x.assign(n_tok * ldx, 1e30f);  // garbage in the padding must not be read
  std::vector<float> xd(n_tok * n_in);
  for (int64_t t = 0; t < n_tok; ++t) {
    const float scale = ud(rng);
    for (int64_t i = 0; i < n_in; ++i) xd[t * n_in + i] = c.x[t * ldx + i] = scale * nd(rng);
  }
  const size_t rb = RowBytes(type, n_in);
  c.w.resize(rb * n_out);
  std::vector<float> row(n_in), wd(n_out * n_in);
  for (int64_t r = 0; r < n_out; ++r) {
    const float scale = ud(rng);
    for (auto& v : row) v = scale * nd(rng);
    ref::QuantizeRow(type, row.data(), c.w.data() + r * rb, n_in);
    ref::DequantizeRow(type, c.w.data() + r * rb, wd.data() + r * n_in, n_in);
  }
  c.y_ref.assign(n_tok * n_out, 0.f);
  ref::MatMul(TensorView::Matrix(type, n_out, n_in, c.w.data()), xd.data(), n_tok, c.y_ref.data());
  c.mag.assign(n_tok * n_out, 0.f);
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t r = 0; r < n_out; ++r) {
      double m = 0;
      for (int64_t i = 0; i < n_in; ++i) m += std::fabs(wd[r * n_in + i] * xd[t * n_in + i]);
      c.mag[t * n_out + r] = static_cast<float>(m);
    }
  return c;
}

int CountBad(const Case& c, const std::vector<float>& y, const std::string& what) {
  int bad = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    const float tol = 1e-4f * c.mag[i] + 1e-30f;
    if (!(std::fabs(y[i] - c.y_ref[i]) <= tol) && ++bad <= 3) {
      ADD_FAILURE() << what << " i=" << i << " y=" << y[i] << " ref=" << c.y_ref[i] << " tol=" << tol;
    }
  }
  return bad;
}

class MatMulAmxTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatMulAmxTest, MatchesReference) {
  if (!cpu::AmxEnabled()) {
    GTEST_SKIP() << "AMX-BF16 not usable here (cpu features: " << cpu::GetCpuFeatures().ToString()
                 << "; or arch_prctl refused, or HERD_AMX=0)";
  }
  const DType type = GetParam();
  ThreadPool pool1(1), pool3(3);
  uint32_t seed = 7;
  for (int64_t n_out : {1, 17, 67}) {
    for (int64_t n_in : {32, 96, 100, 300, 2048}) {
      // 4096 tokens: accumulators for one row block of 32 per group, so 67 rows take three
      // groups, and n_in 300 runs as a K chunk of 256 plus a partial one.
      for (int64_t n_tok : {1, 16, 17, 33, 256, 4096}) {
        if (n_in == 2048 && n_tok == 256 && n_out == 67) continue;  // reference cost; 17 rows cover it
        if (n_tok == 4096 && n_in != 300) continue;
        const int64_t ldx = n_in + (n_in % 2 == 0 ? 16 : 0);
        Case c = Make(type, n_out, n_in, n_tok, ldx, seed++);
        for (ThreadPool* pool : {&pool1, &pool3}) {
          std::vector<float> y(n_tok * n_out, -1e30f);
          cpu::MatMulAmx(TensorView::Matrix(type, n_out, n_in, c.w.data()), c.x.data(), ldx, n_tok, y.data(), *pool);
          const std::string what = std::string(DTypeName(type)) + " n_out=" + std::to_string(n_out) +
                                   " n_in=" + std::to_string(n_in) + " n_tok=" + std::to_string(n_tok) +
                                   " threads=" + std::to_string(pool->size());
          EXPECT_EQ(CountBad(c, y, what), 0) << what;
        }
      }
    }
  }
}

// The driver's kAuto path (cpu::MatMul) hands many-token F16 matmuls to AMX; same tolerance.
TEST_P(MatMulAmxTest, DriverUsesAmxWithinTolerance) {
  const DType type = GetParam();
  const int64_t n_out = 45, n_in = 320, n_tok = cpu::kAmxMinTok + 3;
  Case c = Make(type, n_out, n_in, n_tok, n_in, 99);
  ThreadPool pool(2);
  std::vector<float> y(n_tok * n_out, -1e30f);
  cpu::MatMul(TensorView::Matrix(type, n_out, n_in, c.w.data()), c.x.data(), n_tok, y.data(), pool);
  EXPECT_EQ(CountBad(c, y, "driver"), 0);
}

INSTANTIATE_TEST_SUITE_P(F16AndBF16, MatMulAmxTest, ::testing::Values(DType::kF16, DType::kBF16),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace herd
