// Dispatch of QuantizeRow / DequantizeRow / VecDotType over every storage type, plus the plain
// float conversions (F32, F16, BF16).
#include "kernels/quants.h"

#include <cstring>

#include "base/check.h"
#include "base/fp16.h"
#include "kernels/reference/quants_internal.h"

namespace herd::ref {

using namespace internal;

void QuantizeRow(DType type, const float* src, void* dst, int64_t n) {
  HERD_CHECK_MSG(n % Traits(type).block_size == 0, "QuantizeRow %s: n=%lld not a multiple of %lld",
                 Traits(type).name.data(), static_cast<long long>(n), static_cast<long long>(Traits(type).block_size));
  switch (type) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::kF16: {
      auto* y = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) y[i] = Fp32ToFp16(src[i]);
      return;
    }
    case DType::kBF16: {
      auto* y = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) y[i] = Fp32ToBf16(src[i]);
      return;
    }
    case DType::kQ4_0: return QuantizeQ4_0(src, static_cast<BlockQ4_0*>(dst), n);
    case DType::kQ4_1: return QuantizeQ4_1(src, static_cast<BlockQ4_1*>(dst), n);
    case DType::kQ5_0: return QuantizeQ5_0(src, static_cast<BlockQ5_0*>(dst), n);
    case DType::kQ5_1: return QuantizeQ5_1(src, static_cast<BlockQ5_1*>(dst), n);
    case DType::kQ8_0: return QuantizeQ8_0(src, static_cast<BlockQ8_0*>(dst), n);
    case DType::kQ8_1: return QuantizeQ8_1(src, static_cast<BlockQ8_1*>(dst), n);
    case DType::kQ2_K: return QuantizeQ2_K(src, static_cast<BlockQ2_K*>(dst), n);
    case DType::kQ3_K: return QuantizeQ3_K(src, static_cast<BlockQ3_K*>(dst), n);
    case DType::kQ4_K: return QuantizeQ4_K(src, static_cast<BlockQ4_K*>(dst), n);
    case DType::kQ5_K: return QuantizeQ5_K(src, static_cast<BlockQ5_K*>(dst), n);
    case DType::kQ6_K: return QuantizeQ6_K(src, static_cast<BlockQ6_K*>(dst), n);
    case DType::kQ8_K: return QuantizeQ8_K(src, static_cast<BlockQ8_K*>(dst), n);
  }
  HERD_CHECK_MSG(false, "QuantizeRow: unsupported type %u", static_cast<unsigned>(type));
}

namespace {

template <typename Block, typename F>
void DequantLegacy(const void* src, float* y, int64_t n, F unpack) {
  const auto* x = static_cast<const Block*>(src);
  for (int64_t b = 0; b < n / 32; ++b, y += 32) {
    int8_t q[32];
    unpack(x[b], q);
    const float d = Fp16ToFp32(x[b].d);
    float m = 0;
    if constexpr (requires { x[b].m; }) m = Fp16ToFp32(x[b].m);  // Q4_1 / Q5_1
    for (int j = 0; j < 32; ++j) y[j] = d * q[j] + m;
  }
}

}  // namespace

void DequantizeRow(DType type, const void* src, float* dst, int64_t n) {
  HERD_CHECK(n % Traits(type).block_size == 0);
  switch (type) {
    case DType::kF32: std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float)); return;
    case DType::kF16: {
      const auto* x = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Fp16ToFp32(x[i]);
      return;
    }
    case DType::kBF16: {
      const auto* x = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = Bf16ToFp32(x[i]);
      return;
    }
    case DType::kQ4_0: return DequantLegacy<BlockQ4_0>(src, dst, n, UnpackQ4_0);
    case DType::kQ4_1: return DequantLegacy<BlockQ4_1>(src, dst, n, UnpackQ4_1);
    case DType::kQ5_0: return DequantLegacy<BlockQ5_0>(src, dst, n, UnpackQ5_0);
    case DType::kQ5_1: return DequantLegacy<BlockQ5_1>(src, dst, n, UnpackQ5_1);
    case DType::kQ8_0: {
      const auto* x = static_cast<const BlockQ8_0*>(src);
      for (int64_t b = 0; b < n / kQK8_0; ++b) {
        const float d = Fp16ToFp32(x[b].d);
        for (int j = 0; j < kQK8_0; ++j) dst[b * kQK8_0 + j] = d * x[b].qs[j];
      }
      return;
    }
    case DType::kQ8_1: {
      const auto* x = static_cast<const BlockQ8_1*>(src);
      for (int64_t b = 0; b < n / kQK8_1; ++b) {
        for (int j = 0; j < kQK8_1; ++j) dst[b * kQK8_1 + j] = x[b].d * x[b].qs[j];
      }
      return;
    }
    case DType::kQ2_K: return DequantizeQ2_K(static_cast<const BlockQ2_K*>(src), dst, n);
    case DType::kQ3_K: return DequantizeQ3_K(static_cast<const BlockQ3_K*>(src), dst, n);
    case DType::kQ4_K: return DequantizeQ4_K(static_cast<const BlockQ4_K*>(src), dst, n);
    case DType::kQ5_K: return DequantizeQ5_K(static_cast<const BlockQ5_K*>(src), dst, n);
    case DType::kQ6_K: return DequantizeQ6_K(static_cast<const BlockQ6_K*>(src), dst, n);
    case DType::kQ8_K: return DequantizeQ8_K(static_cast<const BlockQ8_K*>(src), dst, n);
  }
  HERD_CHECK_MSG(false, "DequantizeRow: unsupported type %u", static_cast<unsigned>(type));
}

DType VecDotType(DType weight_type) {
  switch (weight_type) {
    case DType::kF32:
    case DType::kF16:
    case DType::kBF16: return DType::kF32;
    case DType::kQ4_0:
    case DType::kQ5_0:
    case DType::kQ8_0: return DType::kQ8_0;
    case DType::kQ4_1:
    case DType::kQ5_1: return DType::kQ8_1;
    case DType::kQ2_K:
    case DType::kQ3_K:
    case DType::kQ4_K:
    case DType::kQ5_K:
    case DType::kQ6_K: return DType::kQ8_K;
    default: break;
  }
  HERD_CHECK_MSG(false, "VecDotType: %s is not a weight type", Traits(weight_type).name.data());
}

}  // namespace herd::ref
