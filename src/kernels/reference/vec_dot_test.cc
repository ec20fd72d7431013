// VecDot and ref::MatMul against double-precision dots of the dequantized operands: the
// integer-per-block arithmetic must be the same math as dequantize-then-multiply.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/matmul.h"
#include "kernels/quants.h"
#include "kernels/reference/quants_test_util.h"
#include "tensor/tensor.h"

namespace herd::ref {
namespace {

using testing::Gaussian;

struct Quantized {
  std::vector<uint8_t> bytes;
  std::vector<float> deq;
};

Quantized Quantize(DType t, const float* x, int64_t n) {
  Quantized q;
  q.bytes.resize(RowBytes(t, n));
  QuantizeRow(t, x, q.bytes.data(), n);
  q.deq.resize(n);
  DequantizeRow(t, q.bytes.data(), q.deq.data(), n);
  return q;
}

// Exact-ish dot and the magnitude sum used to scale the tolerance.
void DoubleDot(const float* a, const float* b, int64_t n, double* dot, double* mag) {
  *dot = 0;
  *mag = 0;
  for (int64_t i = 0; i < n; ++i) {
    *dot += static_cast<double>(a[i]) * b[i];
    *mag += std::fabs(static_cast<double>(a[i]) * b[i]);
  }
}

class VecDotTest : public ::testing::TestWithParam<DType> {};

TEST_P(VecDotTest, EqualsDotOfDequantized) {
  const DType wt = GetParam();
  const DType xt = VecDotType(wt);
  const int64_t bs = Traits(wt).block_size == 1 ? 32 : Traits(wt).block_size;
  // 1 block, 3 blocks, 7 super-blocks (odd counts catch off-by-one block walks).
  for (const int64_t n : {bs, 3 * bs, int64_t{7} * 256}) {
    for (uint32_t seed = 1; seed <= 4; ++seed) {
      const auto w = Gaussian(n, seed * 31, 0.05f, seed == 4 ? 0.02f : 0.f);
      const auto x = Gaussian(n, seed * 57, 2.f, seed == 3 ? 1.f : 0.f);
      const Quantized qw = Quantize(wt, w.data(), n);
      const Quantized qx = Quantize(xt, x.data(), n);
      double dot, mag;
      DoubleDot(qw.deq.data(), qx.deq.data(), n, &dot, &mag);
      const float got = VecDot(wt, n, qw.bytes.data(), qx.bytes.data());
      EXPECT_NEAR(got, dot, 2e-6 * mag + 1e-7) << DTypeName(wt) << " n=" << n << " seed=" << seed;

      // Sanity against the unquantized dot: quantization error stays small relative to mag.
      double exact, exact_mag;
      DoubleDot(w.data(), x.data(), n, &exact, &exact_mag);
      EXPECT_NEAR(got, exact, 0.5 * exact_mag) << DTypeName(wt) << " n=" << n;
    }
  }
}

TEST_P(VecDotTest, MatMulMatchesDequantizedDots) {
  const DType wt = GetParam();
  const DType xt = VecDotType(wt);
  const int64_t n_in = 512, n_out = 5, n_tok = 3;
  const auto wf = Gaussian(n_out * n_in, 11, 0.05f);
  const auto xf = Gaussian(n_tok * n_in, 12, 1.f);
  std::vector<uint8_t> wq(RowBytes(wt, n_in) * n_out);
  for (int64_t o = 0; o < n_out; ++o) QuantizeRow(wt, wf.data() + o * n_in, wq.data() + o * RowBytes(wt, n_in), n_in);
  const TensorView w = TensorView::Matrix(wt, n_out, n_in, wq.data());
  std::vector<float> y(n_tok * n_out, -1.f);
  MatMul(w, xf.data(), n_tok, y.data());

  std::vector<float> wrow(n_in);
  for (int64_t t = 0; t < n_tok; ++t) {
    const Quantized qx = Quantize(xt, xf.data() + t * n_in, n_in);
    for (int64_t o = 0; o < n_out; ++o) {
      DequantizeRow(wt, w.row(o), wrow.data(), n_in);
      double dot, mag;
      DoubleDot(wrow.data(), qx.deq.data(), n_in, &dot, &mag);
      EXPECT_NEAR(y[t * n_out + o], dot, 2e-6 * mag + 1e-7) << DTypeName(wt) << " t=" << t << " o=" << o;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(WeightTypes, VecDotTest, ::testing::ValuesIn(kWeightTypes),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

}  // namespace
}  // namespace herd::ref
