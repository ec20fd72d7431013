// cpu::MatMul against ref::MatMul for every weight type, every kernel set this machine can run
// (forced explicitly, so an AVX-512 machine also tests the AVX2 set), odd shapes and pool sizes.
//
// Tolerance: |y - y_ref| <= 1e-4 * sum_i |w_i * x_i| (+1e-30). The CPU kernels quantize the
// activations to exactly the int8 values and scales of the reference activation blocks
// (kQ8B32H = Q8_0, kQ8B32F = Q8_1, kQ8B256 = Q8_K; float rows for F32/F16/BF16), so the only
// difference is float summation order and the algebraic split of offsets/mins into a
// separate correction term (sum_g c_g * s_g): a few hundred ulps of the magnitude at most.
// A wrong code, scale or offset for even one group moves y by ~1e-2..1 of that magnitude.
#include "kernels/cpu/matmul_cpu.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "kernels/cpu/act_quant.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/matmul.h"
#include "kernels/quants.h"

namespace herd {
namespace {

std::vector<cpu::Isa> AvailableIsas() {
  std::vector<cpu::Isa> out;
  for (cpu::Isa isa : {cpu::Isa::kGeneric, cpu::Isa::kAvx2, cpu::Isa::kAvx512, cpu::Isa::kNeon}) {
    if (cpu::IsaAvailable(isa)) out.push_back(isa);
  }
  return out;
}

struct Problem {
  DType type;
  int64_t n_out, n_in, n_tok;
  std::vector<uint8_t> w;
  std::vector<float> x, y_ref, mag;
  TensorView view() { return TensorView::Matrix(type, n_out, n_in, w.data()); }
};

Problem Make(DType type, int64_t n_out, int64_t n_in, int64_t n_tok, uint32_t seed) {
  Problem p{type, n_out, n_in, n_tok, {}, {}, {}, {}};
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.f, 1.f);
  std::uniform_real_distribution<float> ud(0.25f, 4.f);
  // x first: the same seed gives the same activations whatever the weight shape.
  p.x.resize(n_tok * n_in);
  for (int64_t t = 0; t < n_tok; ++t) {
    const float scale = ud(rng);
    for (int64_t i = 0; i < n_in; ++i) p.x[t * n_in + i] = scale * nd(rng);
    if (n_in > 5) p.x[t * n_in + 5] *= 20.f;  // an outlier channel, as real activations have
  }
  const size_t rb = RowBytes(type, n_in);
  p.w.resize(rb * n_out);
  std::vector<float> row(n_in), deq(n_in);
  std::vector<float> wdeq(n_out * n_in);
  for (int64_t r = 0; r < n_out; ++r) {
    const float scale = ud(rng);
    const float shift = (r % 3 == 0) ? 0.5f * nd(rng) : 0.f;  // rows with an offset exercise the mins
    for (auto& v : row) v = scale * nd(rng) + shift;
    ref::QuantizeRow(type, row.data(), p.w.data() + r * rb, n_in);
    ref::DequantizeRow(type, p.w.data() + r * rb, wdeq.data() + r * n_in, n_in);
  }
  p.y_ref.assign(n_tok * n_out, 0.f);
  ref::MatMul(p.view(), p.x.data(), n_tok, p.y_ref.data());
  p.mag.assign(n_tok * n_out, 0.f);
  for (int64_t t = 0; t < n_tok; ++t)
    for (int64_t r = 0; r < n_out; ++r) {
      double m = 0;
      for (int64_t i = 0; i < n_in; ++i) m += std::fabs(wdeq[r * n_in + i] * p.x[t * n_in + i]);
      p.mag[t * n_out + r] = static_cast<float>(m);
    }
  return p;
}

void ExpectClose(const Problem& p, const std::vector<float>& y, const std::string& what) {
  int bad = 0;
  for (int64_t t = 0; t < p.n_tok; ++t) {
    for (int64_t r = 0; r < p.n_out; ++r) {
      const size_t i = t * p.n_out + r;
      const float tol = 1e-4f * p.mag[i] + 1e-30f;
      if (!(std::fabs(y[i] - p.y_ref[i]) <= tol) && ++bad <= 3) {
        ADD_FAILURE() << what << " t=" << t << " r=" << r << " y=" << y[i] << " ref=" << p.y_ref[i] << " tol=" << tol;
      }
    }
  }
  EXPECT_EQ(bad, 0) << what;
}

class MatMulCpuTest : public ::testing::TestWithParam<DType> {};

TEST_P(MatMulCpuTest, MatchesReference) {
  const DType type = GetParam();
  const int64_t bs = Traits(type).block_size;
  const bool k_quant = bs == 256;
  std::vector<int64_t> n_ins;
  if (bs == 1) {
    n_ins = {1, 3, 29, 64, 100, 1500};  // 1500: a full widened slice (1024) + a partial one
  } else if (k_quant) {
    n_ins = {256, 768, 4352};  // 17 super-blocks: two column slices of the packed path
  } else {
    n_ins = {32, 96, 320, 4128};  // 10 blocks: a full span + a partial one; 129: two column slices
  }
  ThreadPool pool1(1), pool3(3);
  uint32_t seed = 1;
  for (int64_t n_out : {1, 3, 17, 67}) {
    for (int64_t n_in : n_ins) {
      for (int64_t n_tok : {1, 2, 3, 4, 5, 7, 8, 12, 16, 17}) {
        Problem p = Make(type, n_out, n_in, n_tok, seed++);
        for (cpu::Isa isa : AvailableIsas()) {
          for (ThreadPool* pool : {&pool1, &pool3}) {
            std::vector<float> y(n_tok * n_out, -1e30f);
            cpu::MatMulIsa(isa, p.view(), p.x.data(), n_tok, y.data(), *pool);
            ExpectClose(p, y,
                        std::string(DTypeName(type)) + " " + cpu::IsaName(isa) + " n_out=" + std::to_string(n_out) +
                            " n_in=" + std::to_string(n_in) + " n_tok=" + std::to_string(n_tok) +
                            " threads=" + std::to_string(pool->size()));
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllTypes, MatMulCpuTest, ::testing::ValuesIn(kWeightTypes),
                         [](const auto& info) { return std::string(DTypeName(info.param)); });

// Large enough that the pool splits rows and the L2 row blocking kicks in.
TEST(MatMulCpu, LargeShapesMatchReference) {
  ThreadPool pool(2);
  for (DType type : {DType::kQ4_K, DType::kQ6_K, DType::kQ4_0, DType::kQ8_0, DType::kF16, DType::kBF16})
    for (int64_t n_tok : {9, 20}) {  // decode-style and prompt-style paths
      Problem p = Make(type, 1030, 2048, n_tok, 77);
      for (cpu::Isa isa : AvailableIsas()) {
        std::vector<float> y(p.n_tok * p.n_out);
        cpu::MatMulIsa(isa, p.view(), p.x.data(), p.n_tok, y.data(), pool);
        ExpectClose(p, y, std::string(DTypeName(type)) + " large " + cpu::IsaName(isa));
      }
    }
}

TEST(MatMulCpu, QuantizedActivationsAreReusableAcrossCompatibleTypes) {
  ThreadPool pool(2);
  ASSERT_TRUE(cpu::ActivationsCompatible(DType::kQ4_K, DType::kQ6_K));
  ASSERT_TRUE(cpu::ActivationsCompatible(DType::kQ4_0, DType::kQ8_0));
  ASSERT_FALSE(cpu::ActivationsCompatible(DType::kQ4_K, DType::kQ4_0));
  ASSERT_FALSE(cpu::ActivationsCompatible(DType::kQ4_0, DType::kQ4_1));
  for (int64_t n_tok : {1, 4, 20}) {  // natural and (from pack_min_tok on) interleaved layouts
    for (auto [ta, tb] : {std::pair{DType::kQ4_K, DType::kQ6_K}, std::pair{DType::kQ4_0, DType::kQ8_0}}) {
      Problem a = Make(ta, 33, 512, n_tok, 5);
      Problem b = Make(tb, 20, 512, n_tok, 5);  // same seed: same x
      ASSERT_EQ(a.x, b.x);
      for (cpu::Isa isa : AvailableIsas()) {
        cpu::QuantizedActivations xq;
        cpu::QuantizeActivations(ta, a.x.data(), n_tok, 512, &xq, pool, isa);
        std::vector<float> ya(n_tok * 33), yb(n_tok * 20);
        cpu::MatMulQuantized(a.view(), xq, ya.data(), pool, isa);
        cpu::MatMulQuantized(b.view(), xq, yb.data(), pool, isa);
        const std::string what = std::string(cpu::IsaName(isa)) + " n_tok=" + std::to_string(n_tok) + " ";
        ExpectClose(a, ya, what + std::string(DTypeName(ta)));
        ExpectClose(b, yb, what + std::string(DTypeName(tb)));
      }
    }
  }
}

TEST(MatMulCpu, CpuFeaturesAreConsistent) {
  const cpu::CpuFeatures& f = cpu::GetCpuFeatures();
  EXPECT_TRUE(cpu::IsaAvailable(cpu::Isa::kGeneric));
#if defined(__x86_64__)
  // This binary is built for x86-64-v3: it would not have got here without AVX2/FMA/F16C.
  EXPECT_TRUE(f.HasX86V3()) << f.ToString();
  EXPECT_TRUE(cpu::IsaAvailable(cpu::Isa::kAvx2));
  EXPECT_EQ(cpu::IsaAvailable(cpu::Isa::kAvx512), f.HasAvx512Vnni());
  EXPECT_FALSE(cpu::IsaAvailable(cpu::Isa::kNeon));
  EXPECT_NE(f.ToString().find("avx2"), std::string::npos);
  // AVX-512 flags only with the OS-enabled ZMM state, and only as a coherent set on real CPUs.
  if (f.avx512vnni || f.avx512bf16) {
    EXPECT_TRUE(f.avx512f);
  }
#endif
  EXPECT_EQ(cpu::BestIsa() == cpu::Isa::kAvx512,
            cpu::IsaAvailable(cpu::Isa::kAvx512) && std::getenv("HERD_ISA") == nullptr);
}

TEST(MatMulCpu, ActivationQuantizationMatchesReferenceBlocks) {
  // The premise of the tight tolerance above: same int8 values and scales as the reference.
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> x(512);
  for (auto& v : x) v = nd(rng);
  using cpu::internal::ActFormat;
  using cpu::internal::ActLayout;
  for (DType w : {DType::kQ4_0, DType::kQ4_1, DType::kQ4_K}) {
    const DType vt = ref::VecDotType(w);
    std::vector<uint8_t> refq(RowBytes(vt, 512));
    ref::QuantizeRow(vt, x.data(), refq.data(), 512);
    std::vector<float> ref_deq(512), mine(512);
    ref::DequantizeRow(vt, refq.data(), ref_deq.data(), 512);
    const ActLayout l = ActLayout::Make(cpu::internal::ActFormatFor(w), 512);
    std::vector<uint8_t> buf(l.stride + 64);
    uint8_t* row = buf.data() + (64 - reinterpret_cast<uintptr_t>(buf.data()) % 64) % 64;
    cpu::internal::QuantizeActRows(l, x.data(), 0, 1, row);
    const auto* q = reinterpret_cast<const int8_t*>(row);
    const auto* d = reinterpret_cast<const float*>(row + l.d_off);
    for (int i = 0; i < 512; ++i) mine[i] = d[i / l.block] * q[i];
    EXPECT_EQ(mine, ref_deq) << DTypeName(w);
  }
}

TEST(MatMulCpu, ReportsIsa) {
  EXPECT_STRNE(cpu::MatMulIsaName(), "");
  std::printf("cpu features: %s; matmul kernels: %s\n", cpu::GetCpuFeatures().ToString().c_str(), cpu::MatMulIsaName());
}

}  // namespace
}  // namespace herd
