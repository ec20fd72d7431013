// Element types of tensors. Numeric values are the GGUF/ggml type ids, so a DType read from a
// file is used directly. Quantized types store `block_size` elements in `type_size` bytes;
// their block layouts are in tensor/quant_blocks.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace herd {

enum class DType : uint32_t {
  kF32 = 0,
  kF16 = 1,
  kQ4_0 = 2,
  kQ4_1 = 3,
  kQ5_0 = 6,
  kQ5_1 = 7,
  kQ8_0 = 8,
  kQ8_1 = 9,  // activation format (not stored in model files by herd)
  kQ2_K = 10,
  kQ3_K = 11,
  kQ4_K = 12,
  kQ5_K = 13,
  kQ6_K = 14,
  kQ8_K = 15,  // activation format for the K-quants
  kBF16 = 30,
};

struct DTypeTraits {
  DType type;
  std::string_view name;  // "Q4_K", as in GGUF tools
  int64_t block_size;     // elements per block (1 for plain floats)
  size_t type_size;       // bytes per block
  bool quantized;
};

// nullopt for ids herd does not know (the GGUF reader turns that into an error).
std::optional<DType> DTypeFromId(uint32_t id);
std::optional<DType> DTypeFromName(std::string_view name);  // case-insensitive: "q4_k", "F16"
const DTypeTraits& Traits(DType type);
inline std::string_view DTypeName(DType type) { return Traits(type).name; }

// Bytes for a row of n elements; n must be a multiple of the block size.
inline size_t RowBytes(DType type, int64_t n) {
  const DTypeTraits& t = Traits(type);
  return static_cast<size_t>(n / t.block_size) * t.type_size;
}

// Every type a model file may use for weights (the list herd loads).
inline constexpr DType kWeightTypes[] = {DType::kF32,  DType::kF16,  DType::kBF16, DType::kQ4_0, DType::kQ4_1,
                                         DType::kQ5_0, DType::kQ5_1, DType::kQ8_0, DType::kQ2_K, DType::kQ3_K,
                                         DType::kQ4_K, DType::kQ5_K, DType::kQ6_K};

}  // namespace herd
