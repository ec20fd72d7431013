// GemmQuantTc (the warp-specialized fused kernel) and GemmHalfTc (F16 / BF16 weights, TMA +
// wgmma, Hopper only) are deterministic: repeated runs of the same product give bit-identical
// outputs, for shapes with a partial weight tile, a partial token tile, split-K and several
// weights in one launch. A race in the producer/consumer handoff of their shared-memory tiles
// would show up here as differing outputs (the values themselves are checked against the oracles
// in matmul_cuda_test.cc).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_arch.h"
#include "kernels/cuda/matmul_cuda.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/quants.h"
#include "tensor/quant_blocks.h"

namespace herd::cuda {
namespace {

TEST(GemmQuantTcTest, RepeatedRunsAreBitIdentical) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << why;
  struct Case {
    DType type;
    int64_t n_out, n_in, n_tok;
  };
  // 700 rows: a partial weight tile; 4096 / 256 = 16 supersteps split over CTAs; 100 and 130
  // tokens: partial token tiles.
  const Case cases[] = {{DType::kQ4_K, 700, 4096, 100},
                        {DType::kQ6_K, 300, 4096, 130},
                        {DType::kQ8_0, 4100, 2048, 64},
                        {DType::kQ2_K, 129, 1024, 17},
                        {DType::kQ5_0, 1000, 2048, 128},
                        // GemmHalfTc: K not a multiple of its 64-value stages, many stages per split.
                        {DType::kF16, 700, 4096, 100},
                        {DType::kBF16, 300, 4104, 130},
                        {DType::kF16, 4100, 2048, 64},
                        {DType::kF16, 129, 1000, 17},
                        {DType::kBF16, 1000, 14336, 8}};
  // HERD_CUDA_TEST_QUICK=1 (sanitizer runs): 3 runs.
  const int kRuns = std::getenv("HERD_CUDA_TEST_QUICK") != nullptr ? 3 : 25;
  std::mt19937 rng(99);
  std::normal_distribution<float> nd(0.f, 1.f);
  cudaStream_t stream;
  HERD_CUDA_CHECK(cudaStreamCreate(&stream));
  {
    MatMulRunner runner(stream);
    runner.set_path(MatMulPath::kTensorCoreFused);
    for (const Case& c : cases) {
      SCOPED_TRACE(std::string(DTypeName(c.type)) + " n_out=" + std::to_string(c.n_out));
      std::vector<float> wf(static_cast<size_t>(c.n_out * c.n_in)), x(static_cast<size_t>(c.n_tok * c.n_in));
      for (float& v : wf) v = 0.02f * nd(rng);
      for (float& v : x) v = nd(rng);
      const size_t row_bytes = RowBytes(c.type, c.n_in);
      std::vector<uint8_t> w(row_bytes * static_cast<size_t>(c.n_out));
      for (int64_t r = 0; r < c.n_out; ++r) ref::QuantizeRow(c.type, &wf[r * c.n_in], &w[r * row_bytes], c.n_in);
      void *dw, *dx, *dy;
      HERD_CUDA_CHECK(cudaMalloc(&dw, w.size()));
      HERD_CUDA_CHECK(cudaMalloc(&dx, x.size() * 4));
      HERD_CUDA_CHECK(cudaMalloc(&dy, static_cast<size_t>(c.n_tok * c.n_out) * 4));
      HERD_CUDA_CHECK(cudaMemcpy(dw, w.data(), w.size(), cudaMemcpyHostToDevice));
      HERD_CUDA_CHECK(cudaMemcpy(dx, x.data(), x.size() * 4, cudaMemcpyHostToDevice));
      const TensorView view = TensorView::Matrix(c.type, c.n_out, c.n_in, dw);
      std::vector<float> first, y(static_cast<size_t>(c.n_tok * c.n_out));
      int differing = 0;
      for (int run = 0; run < kRuns; ++run) {
        HERD_CUDA_CHECK(cudaMemsetAsync(dy, 0xFF, y.size() * 4, stream));
        runner.MatMul(view, static_cast<const float*>(dx), c.n_tok, static_cast<float*>(dy));
        HERD_CUDA_CHECK(cudaMemcpyAsync(y.data(), dy, y.size() * 4, cudaMemcpyDeviceToHost, stream));
        HERD_CUDA_CHECK(cudaStreamSynchronize(stream));
        if (run == 0) {
          first = y;
          int finite = 0;
          for (float v : y) finite += std::isfinite(v) ? 1 : 0;
          EXPECT_EQ(finite, static_cast<int>(y.size())) << "every output written and finite";
        } else if (std::memcmp(first.data(), y.data(), y.size() * 4) != 0) {
          ++differing;
        }
      }
      EXPECT_EQ(differing, 0) << "runs differing from the first of " << kRuns;
      cudaFree(dw);
      cudaFree(dx);
      cudaFree(dy);
    }
  }
  HERD_CUDA_CHECK(cudaStreamDestroy(stream));
}

// On a Hopper GPU (sm_90) the F16 / BF16 kernel must be available, so that the tests above and
// matmul_cuda_test.cc's tensor-core paths run it rather than cuBLAS.
TEST(GemmHalfTcTest, AvailableOnHopper) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << why;
  if (DeviceCc() != 90) GTEST_SKIP() << "not an sm_90 GPU";
  if (CodeCc() < 90) GTEST_SKIP() << "this build's sm_90 code is not loaded (compute_80 only)";
  EXPECT_TRUE(internal::GemmHalfTcAvailable());
  std::vector<uint16_t> w(64 * 8);
  const TensorView view = TensorView::Matrix(DType::kF16, 8, 64, w.data());
  EXPECT_TRUE(internal::GemmHalfTcSupports(view));
}

// GemmHalfTcGluWide (128 gate + 128 up rows a CTA) against GemmHalfTcGlu (64 + 64): the same
// products in the same order, so the same bits, float and half outputs, for F16 and BF16, partial
// weight and token tiles, K not a multiple of 64, several token tiles, llama-3.1-8b's shape; and
// against double sums (3e-4 of 1 + |y|: the tensor cores' float sums of 4096 products reach 1.1e-4).
TEST(GemmHalfTcTest, WideGluEqualsGlu) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << why;
  if (!internal::GemmHalfTcAvailable()) GTEST_SKIP() << "GemmHalfTc needs an sm_90 GPU";
  struct Case {
    bool bf16;
    int64_t n_ff, n_in, n_tok;
  };
  const Case cases[] = {{false, 1000, 4096, 128}, {true, 384, 1000, 100},  {false, 256, 2048, 65},
                        {false, 200, 512, 300},   {true, 1024, 4104, 129}, {false, 14336, 4096, 128}};
  std::mt19937 rng(11);
  std::normal_distribution<float> nd(0.f, 1.f);
  cudaStream_t stream;
  HERD_CUDA_CHECK(cudaStreamCreate(&stream));
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.bf16 ? "BF16 " : "F16 ") + std::to_string(c.n_ff) + "x" + std::to_string(c.n_in) +
                 " n_tok=" + std::to_string(c.n_tok));
    auto to16 = [&](float v) { return c.bf16 ? Fp32ToBf16(v) : Fp32ToFp16(v); };
    auto from16 = [&](uint16_t v) { return c.bf16 ? Bf16ToFp32(v) : Fp16ToFp32(v); };
    const size_t nw = static_cast<size_t>(c.n_ff * c.n_in), ny = static_cast<size_t>(c.n_tok * c.n_ff);
    std::vector<uint16_t> w(2 * nw), x(static_cast<size_t>(c.n_tok * c.n_in));
    for (uint16_t& v : w) v = to16(0.05f * nd(rng));
    for (uint16_t& v : x) v = to16(nd(rng));
    void *dw, *dx, *dy, *dh;
    HERD_CUDA_CHECK(cudaMalloc(&dw, w.size() * 2));
    HERD_CUDA_CHECK(cudaMalloc(&dx, x.size() * 2));
    HERD_CUDA_CHECK(cudaMalloc(&dy, ny * 4));
    HERD_CUDA_CHECK(cudaMalloc(&dh, ny * 2));
    HERD_CUDA_CHECK(cudaMemcpy(dw, w.data(), w.size() * 2, cudaMemcpyHostToDevice));
    HERD_CUDA_CHECK(cudaMemcpy(dx, x.data(), x.size() * 2, cudaMemcpyHostToDevice));
    const DType type = c.bf16 ? DType::kBF16 : DType::kF16;
    const TensorView gate = TensorView::Matrix(type, c.n_ff, c.n_in, dw);
    const TensorView up = TensorView::Matrix(type, c.n_ff, c.n_in, static_cast<uint16_t*>(dw) + nw);
    std::vector<float> y[2];
    std::vector<uint16_t> h[2];
    for (int wide : {0, 1}) {
      internal::SetGemmHalfTcGluWide(wide);
      HERD_CUDA_CHECK(cudaMemsetAsync(dy, 0xFF, ny * 4, stream));
      HERD_CUDA_CHECK(cudaMemsetAsync(dh, 0xFF, ny * 2, stream));
      internal::GemmHalfTcGlu(gate, up, dx, c.n_tok, static_cast<float*>(dy), dh, c.bf16, stream);
      y[wide].resize(ny);
      h[wide].resize(ny);
      HERD_CUDA_CHECK(cudaMemcpyAsync(y[wide].data(), dy, ny * 4, cudaMemcpyDeviceToHost, stream));
      HERD_CUDA_CHECK(cudaMemcpyAsync(h[wide].data(), dh, ny * 2, cudaMemcpyDeviceToHost, stream));
      HERD_CUDA_CHECK(cudaStreamSynchronize(stream));
    }
    internal::SetGemmHalfTcGluWide(1);
    EXPECT_EQ(std::memcmp(y[0].data(), y[1].data(), ny * 4), 0) << "float outputs differ";
    EXPECT_EQ(h[0], h[1]) << "half outputs differ";
    double worst = 0;
    for (int64_t t = 0; t < c.n_tok; t += 7) {
      for (int64_t r = 0; r < c.n_ff; r += 11) {
        double a = 0, b = 0;
        for (int64_t i = 0; i < c.n_in; ++i) {
          const double xv = from16(x[t * c.n_in + i]);
          a += from16(w[r * c.n_in + i]) * xv, b += from16(w[nw + r * c.n_in + i]) * xv;
        }
        const double want = a / (1 + std::exp(-a)) * b;
        worst = std::max(worst, std::fabs(y[1][t * c.n_ff + r] - want) / (1 + std::fabs(want)));
      }
    }
    EXPECT_LE(worst, 3e-4);
    cudaFree(dw);
    cudaFree(dx);
    cudaFree(dy);
    cudaFree(dh);
  }
  HERD_CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace herd::cuda
