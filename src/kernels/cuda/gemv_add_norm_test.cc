// GemvQuantAddNorm (gemv_add_norm.cu) and the backend paths to it (a one-row AddRmsNorm announced
// for a K-quant MatMulSwiGlu or Q/K/V MatMulShared; Q8_0 weights at the kernel level, and through
// the backend with HERD_CUDA_NORM_IN_GEMV_Q8_0=1, all row lengths): against the norm kernel + GemvQuant (2e-3:
// the same int8 row up to a rounding flip from the other order of the sum of squares, other float
// sums), against the reference (2e-2, int8 activations), x += y exact, the counter left at zero;
// one-type and mixed launches, rows of one step, several steps and a partial step; where it does
// not apply, false. GemvQuantRing (the same kernel without its norm) against GemvQuant on the same
// activations (1e-5: the same integer block sums, float sums in another order), also on the long
// and many-row launches the backend routes to it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/matmul_internal.h"
#include "kernels/cuda/tma.cuh"
#include "kernels/quants.h"

namespace herd::cuda {
namespace {

using testing::CudaBackendTest;
using testing::Dev;
using testing::Down;
using testing::QuantizedWeight;
using testing::RandomNormal;
using testing::RelError;

class GemvAddNormBackendTest : public CudaBackendTest {
 protected:
  // The attention norm of the next layer inside the Q/K/V GEMV (MatMulShared of three weights of
  // `types`): q, k, v against the reference, x holds x + y, and the norm's output buffer (here its
  // input y) is not written (on sm_90, where the kernel runs).
  void CheckNormInsideQkv(const DType (&types)[3]);
};

// With HERD_CUDA_NORM_IN_GEMV_Q8_0=1 while the backend is made (by default only rows of 4096 or
// more values take it; the test's are shorter).
class GemvAddNormQ8BackendTest : public GemvAddNormBackendTest {
 protected:
  void SetUp() override {
    const char* old = std::getenv("HERD_CUDA_NORM_IN_GEMV_Q8_0");
    const std::string saved = old == nullptr ? "" : old;
    setenv("HERD_CUDA_NORM_IN_GEMV_Q8_0", "1", 1);
    GemvAddNormBackendTest::SetUp();
    if (old == nullptr) {
      unsetenv("HERD_CUDA_NORM_IN_GEMV_Q8_0");
    } else {
      setenv("HERD_CUDA_NORM_IN_GEMV_Q8_0", saved.c_str(), 1);
    }
  }
};

// Host reference of RmsNorm(x + y) * w (double sums): the normalized row.
std::vector<float> HostAddNorm(const std::vector<float>& x, const std::vector<float>& y, const std::vector<float>& w,
                               float eps, std::vector<float>* sum) {
  const size_t n = x.size();
  sum->resize(n);
  double ss = 0;
  for (size_t i = 0; i < n; ++i) (*sum)[i] = x[i] + y[i], ss += double{(*sum)[i]} * (*sum)[i];
  const double scale = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<float>((*sum)[i] * scale * w[i]);
  return out;
}

// The GEMV kernel with the norm inside, on one-type and mixed launches of several weights
// (gate/up-like and Q/K/V-like), n_in of one step, several steps and a partial last step.
TEST(GemvAddNormKernelTest, MatchesNormKernelThenGemv) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  if (!DeviceIsSm90()) GTEST_SKIP() << "GemvQuantAddNorm and GemvQuantRing run on sm_90 code only";
  struct Case {
    std::vector<DType> types;
    std::vector<int64_t> rows;
    int64_t n_in;
  };
  // Rows of >= 4096 values (HERD_CUDA_NORM_GEMV_BULK) take the bulk-copy producer, narrower rows
  // the producer warp's cp.async: both are covered.
  const Case cases[] = {
      {{DType::kQ4_K, DType::kQ4_K}, {2560, 2560}, 2048},
      {{DType::kQ5_K, DType::kQ5_K}, {900, 900}, 5120},  // bulk, 2.5 steps
      {{DType::kQ4_K, DType::kQ4_K, DType::kQ6_K}, {1024, 256, 256}, 4096},
      {{DType::kQ4_K, DType::kQ4_K}, {1000, 1000}, 3328},  // 1.625 steps
      {{DType::kQ6_K, DType::kQ6_K}, {700, 700}, 2048},
      {{DType::kQ5_K}, {333}, 768},
      {{DType::kQ3_K, DType::kQ4_K}, {700, 500}, 2048},
      {{DType::kQ2_K, DType::kQ2_K}, {129, 129}, 1024},    // rows of 16-byte multiples only
      {{DType::kQ8_0, DType::kQ8_0}, {1100, 1100}, 4096},  // Q8_0 activations (32-value scales)
      {{DType::kQ8_0, DType::kQ8_0, DType::kQ8_0}, {512, 128, 128}, 2048},
      {{DType::kQ8_0}, {300}, 3328},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(DTypeName(c.types[0])) + " n_in=" + std::to_string(c.n_in) +
                 " weights=" + std::to_string(c.types.size()));
    std::vector<std::vector<uint8_t>> hosts;
    std::vector<Dev> wdev;
    std::vector<TensorView> ws;
    int64_t n_out = 0;
    for (size_t k = 0; k < c.types.size(); ++k) {
      hosts.push_back(QuantizedWeight(c.types[k], c.rows[k], c.n_in, 40 + static_cast<uint32_t>(k)));
      wdev.emplace_back(hosts.back().size());
      HERD_CUDA_CHECK(cudaMemcpy(wdev.back().p, hosts.back().data(), hosts.back().size(), cudaMemcpyHostToDevice));
      ws.push_back(TensorView::Matrix(c.types[k], c.rows[k], c.n_in, wdev.back().p));
      n_out += c.rows[k];
    }
    const auto hx = RandomNormal(static_cast<size_t>(c.n_in), 50), hy = RandomNormal(static_cast<size_t>(c.n_in), 51);
    const auto hw = RandomNormal(static_cast<size_t>(c.n_in), 52);
    Dev x1(4 * c.n_in), x2(4 * c.n_in), y(4 * c.n_in), w(4 * c.n_in), out(4 * c.n_in), y1(4 * n_out), y2(4 * n_out);
    Dev counter(4), q(internal::QuantizedActivationBytes(1, c.n_in));
    for (Dev* d : {&x1, &x2}) HERD_CUDA_CHECK(cudaMemcpy(d->p, hx.data(), 4 * c.n_in, cudaMemcpyHostToDevice));
    HERD_CUDA_CHECK(cudaMemcpy(y.p, hy.data(), 4 * c.n_in, cudaMemcpyHostToDevice));
    HERD_CUDA_CHECK(cudaMemcpy(w.p, hw.data(), 4 * c.n_in, cudaMemcpyHostToDevice));
    HERD_CUDA_CHECK(cudaMemset(counter.p, 0, 4));
    auto outs = [&](const Dev& base) {
      std::vector<float*> v;
      int64_t off = 0;
      for (int64_t r : c.rows) v.push_back(static_cast<float*>(base.p) + off), off += r;
      return v;
    };
    const std::vector<float*> ys1 = outs(y1), ys2 = outs(y2);
    internal::QuantizedActivations qa;
    const DType act = c.types[0] == DType::kQ8_0 ? DType::kQ8_0 : DType::kQ8_K;  // the GEMV's activation format
    ASSERT_TRUE(internal::RmsNormQuantize(act, static_cast<float*>(x1.p), static_cast<float*>(y.p),
                                          static_cast<float*>(w.p), 1e-5f, 1, c.n_in, static_cast<float*>(out.p), q.p,
                                          nullptr, &qa));
    internal::GemvQuant(ws, ys1, qa, 1, nullptr);
    // GemvQuantRing (the kernel without its norm) on the same activations: GemvQuant's integer
    // block sums, the float sums in another order.
    Dev y3(4 * n_out);
    const std::vector<float*> ys3 = outs(y3);
    ASSERT_TRUE(internal::GemvQuantRing(ws, ys3, qa, nullptr));
    for (int rep = 0; rep < 2; ++rep) {  // the second call finds the counter back at zero
      HERD_CUDA_CHECK(cudaMemcpy(x2.p, hx.data(), 4 * c.n_in, cudaMemcpyHostToDevice));
      ASSERT_TRUE(internal::GemvQuantAddNorm(ws, ys2, static_cast<float*>(x2.p), static_cast<float*>(y.p),
                                             static_cast<float*>(w.p), 1e-5f, static_cast<int*>(counter.p), nullptr));
    }
    HERD_CUDA_CHECK(cudaDeviceSynchronize());
    const auto a = Down<float>(y1.p, n_out), b = Down<float>(y2.p, n_out);
    EXPECT_LE(RelError(b.data(), a.data(), a.size()), 2e-3);
    EXPECT_LE(RelError(Down<float>(y3.p, n_out).data(), a.data(), a.size()), 1e-5);
    EXPECT_EQ(Down<float>(x2.p, c.n_in), Down<float>(x1.p, c.n_in));  // x += y
    EXPECT_EQ(Down<int>(counter.p, 1)[0], 0);
    // Against the reference: dequantized weights, double dot products of the host norm.
    std::vector<float> sum;
    const std::vector<float> xn = HostAddNorm(hx, hy, hw, 1e-5f, &sum);
    std::vector<float> want(static_cast<size_t>(n_out)), row(static_cast<size_t>(c.n_in));
    int64_t o = 0;
    for (size_t k = 0; k < c.types.size(); ++k) {
      for (int64_t j = 0; j < c.rows[k]; ++j, ++o) {
        ref::DequantizeRow(c.types[k], hosts[k].data() + j * RowBytes(c.types[k], c.n_in), row.data(), c.n_in);
        double acc = 0;
        for (int64_t i = 0; i < c.n_in; ++i) acc += double{row[i]} * xn[i];
        want[o] = static_cast<float>(acc);
      }
    }
    EXPECT_LE(RelError(b.data(), want.data(), want.size()), 2e-2);
  }
  // Not taken: 32-value blocks other than Q8_0, misaligned x.
  Dev xa(4 * 2048 + 16), ya(4 * 2048), wa(4 * 2048), yo(4 * 64), cnt(4);
  const auto w8 = QuantizedWeight(DType::kQ4_0, 64, 2048, 60);
  Dev w8d(w8.size());
  const TensorView w8v = TensorView::Matrix(DType::kQ4_0, 64, 2048, w8d.p);
  float* const y8[] = {static_cast<float*>(yo.p)};
  EXPECT_FALSE(internal::GemvQuantAddNorm({&w8v, 1}, y8, static_cast<float*>(xa.p), static_cast<float*>(ya.p),
                                          static_cast<float*>(wa.p), 1e-5f, static_cast<int*>(cnt.p), nullptr));
  const auto w4 = QuantizedWeight(DType::kQ4_K, 64, 2048, 61);
  Dev w4d(w4.size());
  const TensorView w4v = TensorView::Matrix(DType::kQ4_K, 64, 2048, w4d.p);
  EXPECT_FALSE(internal::GemvQuantAddNorm({&w4v, 1}, y8, static_cast<float*>(xa.p) + 1, static_cast<float*>(ya.p),
                                          static_cast<float*>(wa.p), 1e-5f, static_cast<int*>(cnt.p), nullptr));
  // GemvQuantRing: not for Q4_0, nor for activations of the wrong format.
  internal::QuantizedActivations q8_0;  // format Q8_0
  EXPECT_FALSE(internal::GemvQuantRing({&w8v, 1}, y8, q8_0, nullptr));
  EXPECT_FALSE(internal::GemvQuantRing({&w4v, 1}, y8, q8_0, nullptr));  // Q4_K wants Q8_K
}

// GemvQuantRing on launches the backend routes to it (RingFor in matmul_gemv.cu): rows of 8192
// and more values (down-like, partial last step) and many rows per CTA (lm_head-like: the lane
// partials give way to shuffles), against GemvQuant with the ring routing off (1e-5).
TEST(GemvQuantRingTest, MatchesGemvQuantOnLongRowsAndManyRows) {
  std::string why;
  if (!DeviceAvailable(&why)) GTEST_SKIP() << "no GPU: " << why;
  if (!DeviceIsSm90()) GTEST_SKIP() << "GemvQuantRing runs on sm_90 only";
  internal::GemvOptions no_ring;
  no_ring.quant_ring_mb = no_ring.quant_ring_narrow_mb = 0;
  struct Case {
    DType type;
    int64_t rows, n_in;
  };
  const Case cases[] = {
      {DType::kQ4_K, 512, 14336},  {DType::kQ4_K, 300, 8448},   // 8448: a partial last step
      {DType::kQ6_K, 400, 10240},  {DType::kQ8_0, 2048, 8192},  // (Q6_K rows: 16-byte multiples)
      {DType::kQ6_K, 20000, 2048}, {DType::kQ5_K, 7000, 4096},  // 20000: 152 rows a CTA on 132 SMs
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(DTypeName(c.type)) + " " + std::to_string(c.rows) + "x" + std::to_string(c.n_in));
    const auto host = QuantizedWeight(c.type, c.rows, c.n_in, 90);
    Dev wd(host.size()), x(4 * c.n_in), q(internal::QuantizedActivationBytes(1, c.n_in)), y1(4 * c.rows),
        y2(4 * c.rows);
    HERD_CUDA_CHECK(cudaMemcpy(wd.p, host.data(), host.size(), cudaMemcpyHostToDevice));
    const auto hx = RandomNormal(static_cast<size_t>(c.n_in), 91);
    HERD_CUDA_CHECK(cudaMemcpy(x.p, hx.data(), 4 * c.n_in, cudaMemcpyHostToDevice));
    const TensorView w = TensorView::Matrix(c.type, c.rows, c.n_in, wd.p);
    const internal::QuantizedActivations qa =
        internal::QuantizeActivations(ref::VecDotType(c.type), static_cast<float*>(x.p), 1, c.n_in, q.p, nullptr);
    float* const ys1[] = {static_cast<float*>(y1.p)};
    float* const ys2[] = {static_cast<float*>(y2.p)};
    internal::SetGemvOptions(no_ring);
    internal::GemvQuant({&w, 1}, ys1, qa, 1, nullptr);
    internal::SetGemvOptions({});
    ASSERT_TRUE(internal::GemvQuantRing({&w, 1}, ys2, qa, nullptr));
    HERD_CUDA_CHECK(cudaDeviceSynchronize());
    const auto a = Down<float>(y1.p, c.rows), b = Down<float>(y2.p, c.rows);
    EXPECT_LE(RelError(b.data(), a.data(), a.size()), 1e-5);
  }
}

// Through the backend: a one-row AddRmsNorm announced for the gate of a K-quant MatMulSwiGlu
// runs inside its GEMV; the SwiGLU output matches the reference and x holds x + y. The same
// announcement followed by another op launches the norm (its output written) first.
TEST_F(GemvAddNormBackendTest, OneRowNormRunsInsideTheGateUpGemv) {
  for (DType type : {DType::kQ4_K, DType::kQ6_K}) {
    SCOPED_TRACE(DTypeName(type));
    const int64_t n_embd = 2048, n_ff = 1536;  // rows of up to 2048 values take the fused path
    const TensorView g = Weight(type, n_ff, n_embd, 70), u = Weight(type, n_ff, n_embd, 71);
    const size_t gu_host = hosts_.size() - 2;
    const auto hx = RandomNormal(static_cast<size_t>(n_embd), 72), hh = RandomNormal(static_cast<size_t>(n_embd), 73);
    const auto hw = RandomNormal(static_cast<size_t>(n_embd), 74);
    float* x = Upload(hx);
    float* h = Upload(hh);
    float* norm_w = Upload(hw);
    float* out = Poisoned<float>(static_cast<size_t>(n_ff));
    float* scratch = Poisoned<float>(static_cast<size_t>(n_ff));
    backend_->PrepareMatMulInput(g);
    backend_->AddRmsNorm(x, h, norm_w, 1e-5f, 1, n_embd, h);
    backend_->MatMulSwiGlu(g, u, h, 1, out, scratch);
    std::vector<float> sum;
    const std::vector<float> xn = HostAddNorm(hx, hh, hw, 1e-5f, &sum);
    EXPECT_EQ(Download(x, n_embd), sum);
    std::vector<float> want(static_cast<size_t>(n_ff)), gw(static_cast<size_t>(n_embd)),
        uw(static_cast<size_t>(n_embd));
    for (int64_t j = 0; j < n_ff; ++j) {
      ref::DequantizeRow(type, hosts_[gu_host].data() + j * RowBytes(type, n_embd), gw.data(), n_embd);
      ref::DequantizeRow(type, hosts_[gu_host + 1].data() + j * RowBytes(type, n_embd), uw.data(), n_embd);
      double a = 0, b = 0;
      for (int64_t i = 0; i < n_embd; ++i) a += double{gw[i]} * xn[i], b += double{uw[i]} * xn[i];
      want[j] = static_cast<float>(a / (1 + std::exp(-a)) * b);
    }
    EXPECT_LE(RelError(Download(out, n_ff).data(), want.data(), want.size()), 2e-2);

    // Announced, then another op: the norm runs as its own kernel and writes its output.
    float* x2 = Upload(hx);
    float* h2 = Upload(hh);
    float* one = Upload(std::vector<float>(static_cast<size_t>(n_embd), 0.f));
    backend_->PrepareMatMulInput(g);
    backend_->AddRmsNorm(x2, h2, norm_w, 1e-5f, 1, n_embd, h2);
    backend_->Add(one, one, n_embd);
    EXPECT_EQ(Download(x2, n_embd), sum);
    EXPECT_LE(RelError(Download(h2, n_embd).data(), xn.data(), xn.size()), 1e-6);
  }
}

void GemvAddNormBackendTest::CheckNormInsideQkv(const DType (&types)[3]) {
  const int64_t n_embd = 4096, rows[3] = {512, 128, 128};  // rows of at least 4096 values take the path
  std::vector<TensorView> ws;
  for (int i = 0; i < 3; ++i) ws.push_back(Weight(types[i], rows[i], n_embd, 90 + i));
  const size_t first_host = hosts_.size() - 3;
  const auto hx = RandomNormal(static_cast<size_t>(n_embd), 93), hh = RandomNormal(static_cast<size_t>(n_embd), 94);
  const auto hw = RandomNormal(static_cast<size_t>(n_embd), 95);
  float* x = Upload(hx);
  float* h = Upload(hh);
  float* norm_w = Upload(hw);
  float* const ys[3] = {Poisoned<float>(512), Poisoned<float>(128), Poisoned<float>(128)};
  backend_->PrepareMatMulInput(ws[0]);
  backend_->AddRmsNorm(x, h, norm_w, 1e-5f, 1, n_embd, h);
  backend_->MatMulShared(ws, h, 1, ys);
  std::vector<float> sum;
  const std::vector<float> xn = HostAddNorm(hx, hh, hw, 1e-5f, &sum);
  EXPECT_EQ(Download(x, n_embd), sum);
  if (DeviceIsSm90()) {
    EXPECT_EQ(Download(h, n_embd), hh);  // the norm ran inside the GEMV
  }
  std::vector<float> wr(static_cast<size_t>(n_embd));
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    std::vector<float> want(static_cast<size_t>(rows[i]));
    for (int64_t j = 0; j < rows[i]; ++j) {
      ref::DequantizeRow(types[i], hosts_[first_host + i].data() + j * RowBytes(types[i], n_embd), wr.data(), n_embd);
      double a = 0;
      for (int64_t k = 0; k < n_embd; ++k) a += double{wr[static_cast<size_t>(k)]} * xn[static_cast<size_t>(k)];
      want[static_cast<size_t>(j)] = static_cast<float>(a);
    }
    EXPECT_LE(RelError(Download(ys[i], rows[i]).data(), want.data(), want.size()), 2e-2);
  }
}

// The V weight of another type, as in Q4_K_M.
TEST_F(GemvAddNormBackendTest, OneRowNormRunsInsideTheQkvGemv) {
  CheckNormInsideQkv({DType::kQ4_K, DType::kQ4_K, DType::kQ6_K});
}

// Q8_0 weights with the switch on: Q8_0 activations quantized inside the GEMV.
TEST_F(GemvAddNormQ8BackendTest, OneRowNormRunsInsideTheQ8_0QkvGemv) {
  CheckNormInsideQkv({DType::kQ8_0, DType::kQ8_0, DType::kQ8_0});
}

}  // namespace
}  // namespace herd::cuda
