#include "tensor/dtype.h"

#include <array>
#include <cctype>

#include "base/check.h"
#include "tensor/quant_blocks.h"

namespace herd {
namespace {

constexpr std::array<DTypeTraits, 15> kTraits = {{
    {DType::kF32, "F32", 1, 4, false},
    {DType::kF16, "F16", 1, 2, false},
    {DType::kBF16, "BF16", 1, 2, false},
    {DType::kQ4_0, "Q4_0", kQK4_0, sizeof(BlockQ4_0), true},
    {DType::kQ4_1, "Q4_1", kQK4_1, sizeof(BlockQ4_1), true},
    {DType::kQ5_0, "Q5_0", kQK5_0, sizeof(BlockQ5_0), true},
    {DType::kQ5_1, "Q5_1", kQK5_1, sizeof(BlockQ5_1), true},
    {DType::kQ8_0, "Q8_0", kQK8_0, sizeof(BlockQ8_0), true},
    {DType::kQ8_1, "Q8_1", kQK8_1, sizeof(BlockQ8_1), true},
    {DType::kQ2_K, "Q2_K", kQK_K, sizeof(BlockQ2_K), true},
    {DType::kQ3_K, "Q3_K", kQK_K, sizeof(BlockQ3_K), true},
    {DType::kQ4_K, "Q4_K", kQK_K, sizeof(BlockQ4_K), true},
    {DType::kQ5_K, "Q5_K", kQK_K, sizeof(BlockQ5_K), true},
    {DType::kQ6_K, "Q6_K", kQK_K, sizeof(BlockQ6_K), true},
    {DType::kQ8_K, "Q8_K", kQK_K, sizeof(BlockQ8_K), true},
}};

}  // namespace

std::optional<DType> DTypeFromId(uint32_t id) {
  for (const auto& t : kTraits) {
    // Q8_1 and Q8_K are activation formats: a model file using them is rejected.
    if (static_cast<uint32_t>(t.type) == id && t.type != DType::kQ8_1 && t.type != DType::kQ8_K) return t.type;
  }
  return std::nullopt;
}

std::optional<DType> DTypeFromName(std::string_view name) {
  for (const auto& t : kTraits) {
    if (t.name.size() != name.size()) continue;
    bool eq = true;
    for (size_t i = 0; i < name.size(); ++i) {
      if (std::toupper(static_cast<unsigned char>(name[i])) != t.name[i]) eq = false;
    }
    if (eq) return t.type;
  }
  return std::nullopt;
}

const DTypeTraits& Traits(DType type) {
  for (const auto& t : kTraits) {
    if (t.type == type) return t;
  }
  HERD_CHECK_MSG(false, "unknown dtype %u", static_cast<unsigned>(type));
}

}  // namespace herd
