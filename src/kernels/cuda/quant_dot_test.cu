// The GEMV's per-lane dot products (quant_dot.cuh) on the host, against ref::VecDot: for every
// quantized weight type, random rows of whole and partial 2048-value steps are cut into lanes
// exactly as the GPU kernel cuts them, each lane gets its activations from the reference's own
// quantized row (ref::QuantizeRow(VecDotType)), and the sum of the lanes' results must equal
// ref::VecDot up to float rounding (1e-5 of sum |w_i x_i|; one wrong code, scale, offset or
// sum moves it by far more). Needs no GPU: it runs the same source on the CPU.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "base/fp16.h"
#include "kernels/cuda/cuda_test_util.h"
#include "kernels/cuda/gemv_common.cuh"
#include "kernels/cuda/quant_decode.cuh"
#include "kernels/cuda/quant_dot.cuh"
#include "kernels/quants.h"
#include "tensor/quant_blocks.h"

namespace herd::cuda {
namespace {

using testing::HalfFields;

// Random block bytes (every code and scale pattern) with random finite half scales of either sign.
std::vector<uint8_t> RandomRow(DType type, int64_t n, std::mt19937& rng) {
  std::vector<uint8_t> w(RowBytes(type, n));
  std::uniform_int_distribution<int> byte(0, 255);
  for (uint8_t& b : w) b = static_cast<uint8_t>(byte(rng));
  std::uniform_real_distribution<float> mag(0.002f, 0.02f);
  const size_t bb = Traits(type).type_size;
  for (size_t blk = 0; blk < w.size() / bb; ++blk) {
    for (int f : HalfFields(type)) {
      const uint16_t h = Fp32ToFp16(mag(rng) * (byte(rng) & 1 ? 1.f : -1.f));
      std::memcpy(w.data() + blk * bb + f, &h, 2);
    }
  }
  return w;
}

// Lane `lane`'s activations of step `step` from the reference's quantized row xq.
ActLane LaneFromRef(DType format, const std::vector<uint8_t>& xq, int step, int lane) {
  ActLane a{};
  if (format == DType::kQ8_K) {
    const auto* b = reinterpret_cast<const BlockQ8_K*>(xq.data()) + step * 8 + lane / 4;
    const int k = lane % 4;
    std::memcpy(a.q, b->qs + 64 * k, 64);
    for (int g = 0; g < 4; ++g) a.s[g] = b->bsums[4 * k + g];
    a.d0 = b->d;
    return a;
  }
  for (int e = 0; e < 2; ++e) {
    const int blk = step * 64 + 2 * lane + e;
    const int8_t* qs;
    float d, s = 0.f;
    if (format == DType::kQ8_0) {
      const auto* b = reinterpret_cast<const BlockQ8_0*>(xq.data()) + blk;
      if (static_cast<size_t>(blk + 1) * sizeof(BlockQ8_0) > xq.size()) break;
      qs = b->qs;
      d = Fp16ToFp32(b->d);
    } else {
      const auto* b = reinterpret_cast<const BlockQ8_1*>(xq.data()) + blk;
      if (static_cast<size_t>(blk + 1) * sizeof(BlockQ8_1) > xq.size()) break;
      qs = b->qs;
      d = b->d;
      s = b->s;
    }
    std::memcpy(a.q + 8 * e, qs, 32);
    for (int g = 0; g < 2; ++g) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += qs[16 * g + i];
      a.s[2 * e + g] = sum;
    }
    (e == 0 ? a.d0 : a.d1) = d;
    (e == 0 ? a.m0 : a.m1) = s;
  }
  return a;
}

// sum over the row's steps and lanes of Lane<T>::Dot, staging each step as the kernel does.
template <DType T>
double LaneSum(const std::vector<uint8_t>& w, int64_t n, DType format, const std::vector<uint8_t>& xq) {
  using B = QBlock<T>;
  const int blocks = static_cast<int>(n / B::kValues);
  double sum = 0;
  for (int step = 0; step * B::kStep < blocks; ++step) {
    const int nb = std::min(B::kStep, blocks - step * B::kStep);
    alignas(16) uint8_t stage[B::kStepBytes + 16];
    std::memset(stage, 0xA5, sizeof(stage));  // stale bytes past the step's blocks
    std::memcpy(stage, w.data() + static_cast<size_t>(step) * B::kStepBytes, static_cast<size_t>(nb) * B::kBytes);
    for (int lane = 0; lane < 32; ++lane) {
      if (!LaneActive<T>(lane, nb)) continue;
      Lane<T> l;
      LaneLoad<T>(l, stage, lane, nb);
      sum += l.Dot(LaneFromRef(format, xq, step, lane));
    }
  }
  return sum;
}

template <typename F>
void Dispatch(DType t, F&& f) {
  switch (t) {
    case DType::kQ4_0: return f.template operator()<DType::kQ4_0>();
    case DType::kQ4_1: return f.template operator()<DType::kQ4_1>();
    case DType::kQ5_0: return f.template operator()<DType::kQ5_0>();
    case DType::kQ5_1: return f.template operator()<DType::kQ5_1>();
    case DType::kQ8_0: return f.template operator()<DType::kQ8_0>();
    case DType::kQ2_K: return f.template operator()<DType::kQ2_K>();
    case DType::kQ3_K: return f.template operator()<DType::kQ3_K>();
    case DType::kQ4_K: return f.template operator()<DType::kQ4_K>();
    case DType::kQ5_K: return f.template operator()<DType::kQ5_K>();
    case DType::kQ6_K: return f.template operator()<DType::kQ6_K>();
    default: FAIL() << "not a quantized type";
  }
}

class QuantDotTest : public ::testing::TestWithParam<DType> {};

TEST_P(QuantDotTest, LanesSumToReferenceVecDot) {
  const DType type = GetParam();
  const DType format = ref::VecDotType(type);
  std::mt19937 rng(5 + static_cast<int>(type));
  const int64_t bs = Traits(type).block_size;
  // One block, a partial step (odd block count for 32-value blocks), whole steps plus a tail.
  const std::vector<int64_t> lengths =
      bs == 256 ? std::vector<int64_t>{256, 768, 2048, 4352} : std::vector<int64_t>{32, 1056, 2048, 4160};
  for (int64_t n : lengths) {
    for (int rep = 0; rep < 20; ++rep) {
      SCOPED_TRACE(std::string(DTypeName(type)) + " n=" + std::to_string(n) + " rep=" + std::to_string(rep));
      const std::vector<uint8_t> w = RandomRow(type, n, rng);
      std::normal_distribution<float> nd(0.f, rep % 3 == 0 ? 1e-3f : rep % 3 == 1 ? 1.f : 300.f);
      std::vector<float> x(n);
      for (float& v : x) v = nd(rng);
      std::vector<uint8_t> xq(RowBytes(format, n));
      ref::QuantizeRow(format, x.data(), xq.data(), n);
      const double want = ref::VecDot(type, n, w.data(), xq.data());
      // Magnitude: sum |w_i x_i| over the dequantized operands.
      std::vector<float> wf(n), xf(n);
      ref::DequantizeRow(type, w.data(), wf.data(), n);
      ref::DequantizeRow(format, xq.data(), xf.data(), n);
      double mag = 0;
      for (int64_t i = 0; i < n; ++i) mag += std::fabs(static_cast<double>(wf[i]) * xf[i]);
      double got = 0;
      Dispatch(type, [&]<DType T>() { got = LaneSum<T>(w, n, format, xq); });
      EXPECT_NEAR(got, want, 1e-5 * mag + 1e-30) << "magnitude " << mag;
    }
  }
}

TEST(QuantDotLayoutTest, LaneVectorsAreContiguousPerLoad) {
  std::vector<int> seen(2 * kStepValues, 0);
  for (int64_t v = 0; v < 2 * kStepValues; ++v) {
    const int64_t p = ActBytePos(v);
    ASSERT_GE(p, 0);
    ASSERT_LT(p, 2 * kStepValues);
    ++seen[p];
    const int u = static_cast<int>(v % kStepValues), lane = u / 64, i = (u % 64) / 16;
    EXPECT_EQ(p, (v / kStepValues) * kStepValues + (32 * i + lane) * 16 + u % 16);
  }
  for (int c : seen) EXPECT_EQ(c, 1);
}

std::string TypeName(const ::testing::TestParamInfo<DType>& info) { return std::string(DTypeName(info.param)); }

INSTANTIATE_TEST_SUITE_P(QuantizedTypes, QuantDotTest,
                         ::testing::Values(DType::kQ4_0, DType::kQ4_1, DType::kQ5_0, DType::kQ5_1, DType::kQ8_0,
                                           DType::kQ2_K, DType::kQ3_K, DType::kQ4_K, DType::kQ5_K, DType::kQ6_K),
                         TypeName);

// CodeAt (the dequantizing kernels' int8 code -> float without a conversion instruction) gives
// every code exactly, in every byte position, whatever the other bytes hold.
TEST(QuantDecodeTest, CodeAtIsExactForEveryCode) {
  int wrong = 0;
  for (int c = -128; c <= 127; ++c) {
    for (int i = 0; i < 4; ++i) {
      for (uint32_t other : {0x00000000u, 0xFFFFFFFFu, 0x80808080u, 0x12345678u}) {
        uint32_t w = other & ~(0xFFu << (8 * i));
        w |= static_cast<uint32_t>(static_cast<uint8_t>(static_cast<int8_t>(c))) << (8 * i);
        if (CodeAt(w ^ 0x80808080u, i) != static_cast<float>(c)) ++wrong;
      }
    }
  }
  EXPECT_EQ(wrong, 0);
}

// The GEMV's step-index division (gemv_common.cuh): exact over its whole stated range for the
// divisors a launch can have (steps per warp part, 1..64), exhaustively.
TEST(GemvSmallDivTest, EqualsIntegerDivisionOverItsRange) {
  for (int d = 1; d <= 64; ++d) {
    const float r = 1.f / static_cast<float>(d);
    int bad = 0, first_bad = -1;
    for (int j = 0; j <= internal::gemv::kSmallDivMax; ++j) {
      if (internal::gemv::SmallDiv(j, r) != j / d && bad++ == 0) first_bad = j;
    }
    EXPECT_EQ(bad, 0) << "divisor " << d << ", first wrong at j = " << first_bad;
  }
}

}  // namespace
}  // namespace herd::cuda
