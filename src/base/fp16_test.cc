#include "base/fp16.h"

#include <gtest/gtest.h>
#include <immintrin.h>

#include <cmath>

namespace herd {
namespace {

// The hardware conversion (F16C, part of herd's x86-64-v3 baseline) is the oracle.
TEST(Fp16Test, MatchesF16CForAllHalfValuesAndManyFloats) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float hw = _cvtsh_ss(static_cast<uint16_t>(h));
    const float sw = Fp16ToFp32(static_cast<uint16_t>(h));
    if (std::isnan(hw)) {
      EXPECT_TRUE(std::isnan(sw));
    } else {
      EXPECT_EQ(FloatBits(hw), FloatBits(sw)) << h;
    }
  }
  uint32_t state = 12345;
  for (int i = 0; i < 2000000; ++i) {
    state = state * 1664525u + 1013904223u;
    const float f = BitsToFloat(state);
    if (std::isnan(f)) continue;
    const uint16_t hw = _cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT);
    EXPECT_EQ(hw, Fp32ToFp16(f)) << f;
  }
}

TEST(Fp16Test, Bf16RoundTrip) {
  EXPECT_EQ(Bf16ToFp32(Fp32ToBf16(1.0f)), 1.0f);
  EXPECT_EQ(Bf16ToFp32(Fp32ToBf16(-2.5f)), -2.5f);
  // 1 + 2^-8 is halfway between two bf16 values: rounds to even (1.0).
  EXPECT_EQ(Bf16ToFp32(Fp32ToBf16(1.0f + 1.0f / 256)), 1.0f);
  EXPECT_TRUE(std::isnan(Bf16ToFp32(Fp32ToBf16(NAN))));
}

}  // namespace
}  // namespace herd
