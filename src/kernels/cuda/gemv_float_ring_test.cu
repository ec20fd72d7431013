// The one-token float GEMV through the shared-memory ring (gemv_float_ring.cu) against the
// register kernel (GemvFloatKernel) and a double-precision oracle: rows of one unit (<= 4 KB)
// give the register kernel's bits at one warp per row (also as the last token of 9, after a
// launch of 8); longer rows (several units, odd unit
// sizes, several weights in one launch, more rows than one CTA's sums hold) match the oracle to
// float rounding; GLU mode equals the plain launch + SwiGLU; the ring is asserted to take each of
// these shapes; what it does not take (rows over kMaxIn values, unaligned x) falls back.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/tma.cuh"

namespace herd::cuda::internal {
namespace {

using gemv::kMaxIn;
using gemv::LaunchFloatRing;
using gemv::MakeSegs;
using gemv::Segs;
using testing::Dev;
using testing::Down;
using testing::RandomNormal;
using testing::Up;

// A random [rows, n_in] weight of `type`: its device bytes and its values as the GPU reads them.
struct Weight {
  Dev dev;
  std::vector<float> values;
};
Weight MakeWeight(DType type, int64_t rows, int64_t n_in, uint32_t seed) {
  std::vector<float> v = RandomNormal(static_cast<size_t>(rows * n_in), seed, 0.05f);
  if (type == DType::kF32) return Weight{Up(v), v};
  std::vector<uint16_t> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) {
    h[i] = type == DType::kBF16 ? Fp32ToBf16(v[i]) : Fp32ToFp16(v[i]);
    v[i] = type == DType::kBF16 ? Bf16ToFp32(h[i]) : Fp16ToFp32(h[i]);
  }
  return Weight{Up(h), v};
}

class GemvFloatRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!DeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
    if (!DeviceIsSm90()) GTEST_SKIP() << "the ring kernel needs an sm_90 GPU";
    HERD_CUDA_CHECK(cudaStreamCreate(&stream_));
  }
  void TearDown() override {
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
    SetGemvOptions(GemvOptions{});
  }
  // GemvFloat of ws at n_tok tokens (launches of up to 8; the ring takes those of one token);
  // ring off: the register kernel at one warp per row (float_want_warps 1: no row split).
  std::vector<std::vector<float>> Run(const std::vector<TensorView>& ws, const Dev& x, bool ring, int64_t n_tok = 1) {
    GemvOptions o;
    o.float_ring_max_mb = ring ? int64_t{1} << 20 : 0;
    o.float_want_warps = 1;
    SetGemvOptions(o);
    std::vector<Dev> ys;
    std::vector<float*> yp;
    for (const TensorView& w : ws) {
      ys.emplace_back(static_cast<size_t>(n_tok * w.rows()) * 4);
      HERD_CUDA_CHECK(cudaMemset(ys.back().p, 0xFF, static_cast<size_t>(n_tok * w.rows()) * 4));  // NaN
      yp.push_back(ys.back().as<float>());
    }
    GemvFloat(ws, yp, x.as<float>(), n_tok, stream_);
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    std::vector<std::vector<float>> out;
    for (size_t i = 0; i < ws.size(); ++i)
      out.push_back(Down<float>(ys[i].p, static_cast<size_t>(n_tok * ws[i].rows())));
    return out;
  }
  // Whether LaunchFloatRing takes ws (GLU mode: ws = {gate, up}) at one token of x, into scratch
  // outputs: the comparisons above would pass unchanged if the ring declined and GemvFloat fell
  // back to the register kernel.
  bool RingTakes(const std::vector<TensorView>& ws, const float* x, bool glu = false) {
    std::vector<Dev> ys;
    std::vector<float*> yp;
    for (const TensorView& w : ws)
      ys.emplace_back(static_cast<size_t>(w.rows()) * 4), yp.push_back(ys.back().as<float>());
    Segs segs{};
    MakeSegs(ws, yp, 0, ws.size(), &segs);
    const bool took = LaunchFloatRing(ws[0].type, segs, ws[0].cols(), x, glu ? yp[0] : nullptr,
                                      glu ? static_cast<int>(ws[0].rows()) : 0, false, stream_);
    HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
    return took;
  }
  cudaStream_t stream_ = nullptr;
};

const DType kTypes[] = {DType::kF16, DType::kBF16, DType::kF32};

TEST_F(GemvFloatRingTest, OneUnitRowsEqualTheRegisterKernel) {
  for (DType type : kTypes) {
    const int64_t elem = type == DType::kF32 ? 4 : 2;
    for (int64_t n_in : {int64_t{8}, int64_t{40}, int64_t{1000}, 4096 / elem}) {
      for (int64_t rows : {int64_t{1}, int64_t{37}, int64_t{300}, int64_t{5000}}) {
        SCOPED_TRACE(std::string(DTypeName(type)) + " n_in=" + std::to_string(n_in) + " rows=" + std::to_string(rows));
        // Three weights in one launch, as Q/K/V.
        std::vector<Weight> w;
        std::vector<TensorView> views;
        for (int64_t r : {rows, int64_t{13}, int64_t{7}}) {
          w.push_back(MakeWeight(type, r, n_in, static_cast<uint32_t>(r + n_in)));
          views.push_back(TensorView::Matrix(type, r, n_in, w.back().dev.p));
        }
        // 9 tokens: a launch of 8, then one of the last token alone (the ring's).
        const Dev x = Up(RandomNormal(static_cast<size_t>(9 * n_in), 7));
        ASSERT_TRUE(RingTakes(views, x.as<float>()));
        const auto ring = Run(views, x, true, 9), regs = Run(views, x, false, 9);
        for (size_t i = 0; i < views.size(); ++i) {
          for (size_t r = 0; r < ring[i].size(); ++r) {
            ASSERT_EQ(FloatBits(ring[i][r]), FloatBits(regs[i][r])) << "weight " << i << " row " << r;
          }
        }
      }
    }
  }
}

TEST_F(GemvFloatRingTest, LongRowsMatchTheOracle) {
  for (DType type : kTypes) {
    // 3 units of 2,736 bytes (F16 4104), units of 4 KB, 12,000-byte rows, and 3,000 rows: more
    // than one CTA's sums hold at 4 units a row, so the launch takes more CTAs than SMs.
    for (int64_t n_in : {int64_t{4104}, int64_t{8192}, int64_t{6000}}) {
      for (int64_t rows : {int64_t{1}, int64_t{300}, int64_t{3000}}) {
        SCOPED_TRACE(std::string(DTypeName(type)) + " n_in=" + std::to_string(n_in) + " rows=" + std::to_string(rows));
        const Weight w = MakeWeight(type, rows, n_in, 11);
        const std::vector<float> xh = RandomNormal(static_cast<size_t>(n_in), 5);
        const Dev x = Up(xh);
        const std::vector<TensorView> views = {TensorView::Matrix(type, rows, n_in, w.dev.p)};
        ASSERT_TRUE(RingTakes(views, x.as<float>()));
        const auto y = Run(views, x, true)[0];
        for (int64_t r = 0; r < rows; ++r) {
          double want = 0, mag = 0;
          for (int64_t i = 0; i < n_in; ++i) {
            want += static_cast<double>(w.values[r * n_in + i]) * xh[i];
            mag += std::fabs(static_cast<double>(w.values[r * n_in + i]) * xh[i]);
          }
          ASSERT_NEAR(y[r], want, 1e-5 * mag + 1e-30) << "row " << r;
        }
      }
    }
  }
}

// GLU mode (gate and up rows j in one CTA, silu(gate) * up written): silu of the plain launch's
// sums, to float rounding of expf (the sums themselves are the same; their order does not
// depend on the CTA).
TEST_F(GemvFloatRingTest, GluEqualsThePlainLaunchThenSwiGlu) {
  for (DType type : kTypes) {
    for (int64_t n_in : {int64_t{2048}, int64_t{4104}}) {
      for (int64_t rows : {int64_t{37}, int64_t{1000}}) {
        SCOPED_TRACE(std::string(DTypeName(type)) + " n_in=" + std::to_string(n_in) + " rows=" + std::to_string(rows));
        const Weight g = MakeWeight(type, rows, n_in, 21), u = MakeWeight(type, rows, n_in, 22);
        const std::vector<TensorView> views = {TensorView::Matrix(type, rows, n_in, g.dev.p),
                                               TensorView::Matrix(type, rows, n_in, u.dev.p)};
        const Dev x = Up(RandomNormal(static_cast<size_t>(n_in), 23));
        ASSERT_TRUE(RingTakes(views, x.as<float>(), /*glu=*/true));
        const auto plain = Run(views, x, true);  // leaves the options with the ring on
        Dev out(static_cast<size_t>(rows) * 4);
        HERD_CUDA_CHECK(cudaMemset(out.p, 0xFF, static_cast<size_t>(rows) * 4));
        ASSERT_TRUE(GemvFloatGlu(views[0], views[1], x.as<float>(), 1, out.as<float>(), stream_));
        HERD_CUDA_CHECK(cudaStreamSynchronize(stream_));
        const auto glu = Down<float>(out.p, static_cast<size_t>(rows));
        for (int64_t j = 0; j < rows; ++j) {
          const float a = plain[0][j], b = plain[1][j];
          const float want = a / (1.0f + std::exp(-a)) * b;
          ASSERT_NEAR(glu[j], want, 1e-6f * std::fabs(want) + 1e-30f) << "row " << j;
        }
      }
    }
  }
}

TEST_F(GemvFloatRingTest, DeclinesWhatItDoesNotTake) {
  const Weight w = MakeWeight(DType::kF16, 4, kMaxIn + 8, 3);
  const Dev x((kMaxIn + 16) * 4);
  Segs segs{};
  const TensorView v = TensorView::Matrix(DType::kF16, 4, kMaxIn + 8, w.dev.p);
  float* y = x.as<float>();
  MakeSegs({&v, 1}, {&y, 1}, 0, 1, &segs);
  EXPECT_FALSE(LaunchFloatRing(DType::kF16, segs, kMaxIn + 8, x.as<float>(), nullptr, 0, false, stream_));
  EXPECT_FALSE(LaunchFloatRing(DType::kF16, segs, 64, x.as<float>() + 1, nullptr, 0, false, stream_));  // unaligned x
  EXPECT_FALSE(LaunchFloatRing(DType::kF16, segs, 60, x.as<float>(), nullptr, 0, false, stream_));      // 120-byte rows
  EXPECT_FALSE(LaunchFloatRing(DType::kQ8_0, segs, 64, x.as<float>(), nullptr, 0, false, stream_));
}

}  // namespace
}  // namespace herd::cuda::internal
