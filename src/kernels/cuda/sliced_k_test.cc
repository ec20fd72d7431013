// A float weight of 8192+ inputs at 65-128 tokens runs as K bands whose partial sums the next
// AddRmsNorm adds as it reads them (MatMulRunner::MatMulSlicedK, the backend's pending slices):
//  - kernel: the norm over y given as slices equals SumSplits of the slices, then the norm, bit
//    for bit (x updated, float output, and the half / int8 input it writes for the next matmul);
//  - backend: down projection -> hinted AddRmsNorm -> next matmul gives the same bits as when
//    another op reads the down output first (which sums the slices into it), and that sum matches
//    the unsliced GEMM (cuBLAS through a MatMulRunner) to float rounding.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/gemm_split_k.h"
#include "kernels/cuda/matmul_cuda.h"
#include "kernels/cuda/matmul_internal.h"
#include "tensor/tensor.h"

namespace herd::cuda {
namespace {

using testing::CudaBackendTest;
using testing::Dev;
using testing::Down;
using testing::RandomNormal;
using testing::RelError;
using testing::Up;

TEST(SlicedKNormTest, AddsTheSlicesAsSumSplitsThenTheNorm) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  for (int slices : {2, 4}) {
    for (int64_t n_in : {int64_t{4096}, int64_t{2056}}) {
      for (int64_t n_tok : {int64_t{3}, int64_t{70}}) {
        SCOPED_TRACE("slices=" + std::to_string(slices) + " n_in=" + std::to_string(n_in) +
                     " n_tok=" + std::to_string(n_tok));
        const size_t n = static_cast<size_t>(n_tok * n_in);
        const auto x = RandomNormal(n, 31, 2.f), parts = RandomNormal(n * slices, 32),
                   w = RandomNormal(static_cast<size_t>(n_in), 33);
        Dev dp = Up(parts), dw = Up(w);
        // Summed first, then the norm (half output).
        Dev x1 = Up(x), y1(n * 4), out1(n * 4), h1(n * 2);
        internal::SumSplitsInto(y1.as<float>(), n_in, dp.as<float>(), slices, n_tok, nullptr);
        ASSERT_TRUE(internal::RmsNormToHalf(false, x1.as<float>(), y1.as<float>(), dw.as<float>(), 1e-5f, n_tok, n_in,
                                            out1.as<float>(), h1.p, nullptr));
        // The slices added by the norm.
        Dev x2 = Up(x), out2(n * 4), h2(n * 2);
        ASSERT_TRUE(internal::RmsNormToHalf(false, x2.as<float>(), dp.as<float>(), dw.as<float>(), 1e-5f, n_tok, n_in,
                                            out2.as<float>(), h2.p, nullptr, true, {slices, static_cast<int64_t>(n)}));
        EXPECT_EQ(Down<float>(x1.p, n), Down<float>(x2.p, n));
        EXPECT_EQ(Down<float>(out1.p, n), Down<float>(out2.p, n));
        EXPECT_EQ(Down<uint16_t>(h1.p, n), Down<uint16_t>(h2.p, n));
        // The int8 form, for the GEMV path.
        if (n_in % 256 == 0) {
          const size_t qb = internal::QuantizedActivationBytes(n_tok, n_in);
          Dev x3 = Up(x), out3(n * 4), q3(qb), x4 = Up(x), out4(n * 4), q4(qb);
          HERD_CUDA_CHECK(cudaMemset(q3.p, 0x5A, qb));
          HERD_CUDA_CHECK(cudaMemset(q4.p, 0x5A, qb));
          internal::QuantizedActivations qa, qc;
          ASSERT_TRUE(internal::RmsNormQuantize(DType::kQ8_K, x3.as<float>(), y1.as<float>(), dw.as<float>(), 1e-5f,
                                                n_tok, n_in, out3.as<float>(), q3.p, nullptr, &qa));
          ASSERT_TRUE(internal::RmsNormQuantize(DType::kQ8_K, x4.as<float>(), dp.as<float>(), dw.as<float>(), 1e-5f,
                                                n_tok, n_in, out4.as<float>(), q4.p, nullptr, &qc, true,
                                                {slices, static_cast<int64_t>(n)}));
          EXPECT_EQ(Down<float>(out3.p, n), Down<float>(out4.p, n));
          EXPECT_EQ(Down<uint8_t>(q3.p, qb), Down<uint8_t>(q4.p, qb));
        }
      }
    }
  }
}

TEST(SlicedKNormTest, DeclinesWhatItDoesNotTake) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  const int64_t n_tok = 2, n = 8192;
  Dev a(4 * n_tok * n * 4), h(n_tok * n * 2);
  float* p = a.as<float>();
  const int64_t stride = n_tok * n;
  // Three slices; rows over 4096 values; slices overlapping; a misaligned slice stride.
  EXPECT_FALSE(internal::RmsNormToHalf(false, p, p, p, 1e-5f, n_tok, 4096, p, h.p, nullptr, true, {3, stride}));
  EXPECT_FALSE(internal::RmsNormToHalf(false, p, p, p, 1e-5f, n_tok, n, p, h.p, nullptr, true, {2, stride}));
  EXPECT_FALSE(internal::RmsNormToHalf(false, p, p, p, 1e-5f, n_tok, 4096, p, h.p, nullptr, true, {2, 4096}));
  EXPECT_FALSE(internal::RmsNormToHalf(false, p, p, p, 1e-5f, n_tok, 4096, p, h.p, nullptr, true, {2, stride + 2}));
  EXPECT_TRUE(internal::RmsNormToHalf(false, p, p + 2 * stride, p, 1e-5f, n_tok, 4096, p + stride, h.p, nullptr, true,
                                      {2, stride}));
  HERD_CUDA_CHECK(cudaDeviceSynchronize());
}

class SlicedKBackendTest : public CudaBackendTest {};

TEST_F(SlicedKBackendTest, DownProjectionSlicesFeedTheNorm) {
  for (DType type : {DType::kF16, DType::kBF16}) {
    for (int64_t rows : {int64_t{1024}, int64_t{4096}}) {  // 4096 x 8192: cuBLASLt's tuned path
      const int64_t n_tok = 80, k = 8192, n_q = 256;
      SCOPED_TRACE(std::string(DTypeName(type)) + " rows=" + std::to_string(rows));
      const size_t n_out = static_cast<size_t>(n_tok * rows);
      const TensorView wd = Weight(type, rows, k, 41), wq = Weight(type, n_q, rows, 42);
      const float* gate = Upload(RandomNormal(static_cast<size_t>(n_tok * k), 43));
      const auto x0 = RandomNormal(n_out, 44, 2.f);
      const float* norm_w = Upload(RandomNormal(static_cast<size_t>(rows), 45));
      // As the model runs it: the norm takes the slices.
      float* x1 = Upload(x0);
      float* h1 = Poisoned<float>(n_out);
      float* q1 = Poisoned<float>(static_cast<size_t>(n_tok * n_q));
      backend_->MatMul(wd, gate, n_tok, h1);
      backend_->PrepareMatMulInput(wq);
      backend_->AddRmsNorm(x1, h1, norm_w, 1e-5f, n_tok, rows, h1);
      backend_->MatMul(wq, h1, n_tok, q1);
      // Another op reads the down output first: the slices are summed into it.
      float* x2 = Upload(x0);
      float* h2 = Poisoned<float>(n_out);
      float* q2 = Poisoned<float>(static_cast<size_t>(n_tok * n_q));
      float* sum = Upload(std::vector<float>(n_out, 0.f));
      backend_->MatMul(wd, gate, n_tok, h2);
      backend_->Add(sum, h2, static_cast<int64_t>(n_out));
      backend_->PrepareMatMulInput(wq);
      backend_->AddRmsNorm(x2, h2, norm_w, 1e-5f, n_tok, rows, h2);
      backend_->MatMul(wq, h2, n_tok, q2);
      EXPECT_EQ(Download(x1, n_out), Download(x2, n_out));
      EXPECT_EQ(Download(h1, n_out), Download(h2, n_out));
      EXPECT_EQ(Download(q1, static_cast<size_t>(n_tok * n_q)), Download(q2, static_cast<size_t>(n_tok * n_q)));
      // The summed slices against the whole GEMM.
      float* whole = Poisoned<float>(n_out);
      backend_->Synchronize();
      MatMulRunner runner(nullptr);
      runner.MatMul(wd, gate, n_tok, whole);
      HERD_CUDA_CHECK(cudaDeviceSynchronize());
      const auto got = Download(sum, n_out), want = Download(whole, n_out);
      EXPECT_LE(RelError(got.data(), want.data(), n_out), 1e-5);
    }
  }
}

}  // namespace
}  // namespace herd::cuda
