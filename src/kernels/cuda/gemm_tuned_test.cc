// TunedGemm (cuBLASLt with a per-shape algorithm choice) against cublasGemmEx on the same
// half / bfloat16 operands: equal to float rounding (another algorithm may sum in another
// order), the same bits on every later call of a shape, and not taken where it must not be
// (small weights, fewer than kMinTok or more than kMaxTok tokens, a token bucket first seen
// inside a graph capture).
#include "kernels/cuda/gemm_tuned.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_test_util.h"

namespace herd::cuda::internal {
namespace {

using testing::Dev;
using testing::Down;
using testing::RandomNormal;
using testing::RelError;

// n values ~N(0, scale) as half or bfloat16 on the device.
void UploadHalves(const Dev& b, size_t n, uint32_t seed, bool bf16, float scale) {
  const auto v = RandomNormal(n, seed, scale);
  std::vector<uint16_t> h(n);
  for (size_t i = 0; i < n; ++i) {
    if (bf16) {
      const __nv_bfloat16 x = __float2bfloat16(v[i]);
      std::memcpy(&h[i], &x, 2);
    } else {
      const __half x = __float2half(v[i]);
      std::memcpy(&h[i], &x, 2);
    }
  }
  HERD_CUDA_CHECK(cudaMemcpy(b.p, h.data(), n * 2, cudaMemcpyHostToDevice));
}

class TunedGemmTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!DeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
    HERD_CUDA_CHECK(cudaStreamCreate(&stream_));
    HERD_CUBLAS_CHECK(cublasCreate(&blas_));
    HERD_CUBLAS_CHECK(cublasSetStream(blas_, stream_));
    HERD_CUDA_CHECK(cudaMalloc(&workspace_, kWorkspace));
    HERD_CUBLAS_CHECK(cublasSetWorkspace(blas_, workspace_, kWorkspace));
  }
  void TearDown() override {
    if (blas_ != nullptr) cublasDestroy(blas_);
    if (workspace_ != nullptr) cudaFree(workspace_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  void Reference(const void* a, cudaDataType_t type, int64_t m, int64_t k, const void* x, int64_t n, float* y,
                 int64_t ldy) {
    const float one = 1.f, zero = 0.f;
    HERD_CUBLAS_CHECK(cublasGemmEx(blas_, CUBLAS_OP_T, CUBLAS_OP_N, static_cast<int>(m), static_cast<int>(n),
                                   static_cast<int>(k), &one, a, type, static_cast<int>(k), x, type,
                                   static_cast<int>(k), &zero, y, CUDA_R_32F, static_cast<int>(ldy), CUBLAS_COMPUTE_32F,
                                   CUBLAS_GEMM_DEFAULT));
  }

  static constexpr size_t kWorkspace = size_t{32} << 20;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t blas_ = nullptr;
  void* workspace_ = nullptr;
};

TEST_F(TunedGemmTest, MatchesCublasGemmEx) {
  TunedGemm tuned(stream_, workspace_, kWorkspace);
  struct Case {
    int64_t m, k, n, ldy;
    bool bf16;
  };
  for (const Case c :
       {Case{4096, 8192, 17, 4096, false}, Case{8192, 4096, 37, 8192, false}, Case{2048, 16384, 128, 2064, false},
        Case{8192, 4096, 100, 8192, true}, Case{4096, 8192, 128, 4096, true}}) {
    SCOPED_TRACE(std::to_string(c.m) + "x" + std::to_string(c.k) + " n=" + std::to_string(c.n) +
                 " ldy=" + std::to_string(c.ldy) + (c.bf16 ? " bf16" : " f16"));
    const cudaDataType_t type = c.bf16 ? CUDA_R_16BF : CUDA_R_16F;
    Dev a(static_cast<size_t>(c.m * c.k) * 2), x(static_cast<size_t>(c.n * c.k) * 2);
    UploadHalves(a, static_cast<size_t>(c.m * c.k), 1, c.bf16, 0.05f);
    UploadHalves(x, static_cast<size_t>(c.n * c.k), 2, c.bf16, 1.f);
    const size_t ny = static_cast<size_t>(c.n * c.ldy);
    Dev y1(ny * 4), y2(ny * 4), y3(ny * 4);
    HERD_CUDA_CHECK(cudaMemset(y1.p, 0, ny * 4));
    HERD_CUDA_CHECK(cudaMemset(y2.p, 0, ny * 4));
    HERD_CUDA_CHECK(cudaMemset(y3.p, 0, ny * 4));
    ASSERT_TRUE(tuned.Run(a.p, type, c.m, c.k, x.p, c.n, static_cast<float*>(y1.p), c.ldy));  // tunes
    ASSERT_TRUE(tuned.Run(a.p, type, c.m, c.k, x.p, c.n, static_cast<float*>(y2.p), c.ldy));  // the choice
    Reference(a.p, type, c.m, c.k, x.p, c.n, static_cast<float*>(y3.p), c.ldy);
    const auto got1 = Down<float>(y1.p, ny), got2 = Down<float>(y2.p, ny);
    const auto want = Down<float>(y3.p, ny);
    EXPECT_EQ(got1, got2);  // the tuning run leaves the chosen algorithm's bits
    EXPECT_LE(RelError(got2.data(), want.data(), ny), 1e-5);
    if (c.ldy > c.m) {  // columns past m untouched
      for (int64_t t = 0; t < c.n; ++t) EXPECT_EQ(got2[static_cast<size_t>(t * c.ldy + c.m)], 0.f);
    }
  }
}

TEST_F(TunedGemmTest, LeavesSmallShapesFewOrManyTokensAndCapturesToCublas) {
  TunedGemm tuned(stream_, workspace_, kWorkspace);
  Dev a(size_t{8192} * 4096 * 2), x(size_t{256} * 4096 * 2), y(size_t{256} * 8192 * 4);
  float* yf = static_cast<float*>(y.p);
  EXPECT_FALSE(tuned.Run(a.p, CUDA_R_16F, 4096, 4096, x.p, 64, yf, 4096));   // 16 Mi elements
  EXPECT_FALSE(tuned.Run(a.p, CUDA_R_16F, 8192, 4096, x.p, 129, yf, 8192));  // > kMaxTok tokens
  EXPECT_FALSE(tuned.Run(a.p, CUDA_R_16F, 8192, 4096, x.p, 16, yf, 8192));   // < kMinTok tokens
  cudaGraph_t graph = nullptr;
  HERD_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  const bool taken = tuned.Run(a.p, CUDA_R_16F, 8192, 4096, x.p, 64, yf, 8192);  // never seen: no timing
  HERD_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  if (graph != nullptr) cudaGraphDestroy(graph);
  EXPECT_FALSE(taken);
  // Its bucket tuned outside a capture first (at 60 tokens): a capture at 64 takes it.
  UploadHalves(a, size_t{8192} * 4096, 3, false, 0.05f);
  UploadHalves(x, size_t{64} * 4096, 4, false, 1.f);
  ASSERT_TRUE(tuned.Run(a.p, CUDA_R_16F, 8192, 4096, x.p, 60, yf, 8192));
  HERD_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  const bool captured = tuned.Run(a.p, CUDA_R_16F, 8192, 4096, x.p, 64, yf, 8192);
  HERD_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  EXPECT_TRUE(captured);
  if (graph != nullptr) cudaGraphDestroy(graph);
}

}  // namespace
}  // namespace herd::cuda::internal
