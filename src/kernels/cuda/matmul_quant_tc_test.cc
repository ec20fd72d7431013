// GemmQuantTc (the warp-specialized fused kernel) and GemmHalfTc (F16 / BF16 weights, TMA +
// wgmma, Hopper only) are deterministic: repeated runs of the same product give bit-identical
// outputs, for shapes with a partial weight tile, a partial token tile, split-K and several
// weights in one launch. A race in the producer/consumer handoff of their shared-memory tiles
// would show up here as differing outputs (the values themselves are checked against the oracles
// in matmul_cuda_test.cc).
#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
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
  int dev = 0, major = 0, minor = 0;
  HERD_CUDA_CHECK(cudaGetDevice(&dev));
  HERD_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  HERD_CUDA_CHECK(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev));
  if (major != 9 || minor != 0) GTEST_SKIP() << "not an sm_90 GPU";
  EXPECT_TRUE(internal::GemmHalfTcAvailable());
  std::vector<uint16_t> w(64 * 8);
  const TensorView view = TensorView::Matrix(DType::kF16, 8, 64, w.data());
  EXPECT_TRUE(internal::GemmHalfTcSupports(view));
}

}  // namespace
}  // namespace herd::cuda
