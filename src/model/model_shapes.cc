#include "model/model_shapes.h"

#include <cctype>
#include <cmath>

namespace herd {
namespace {

std::vector<ModelShape> Shapes() {
  std::vector<ModelShape> s;
  // Test shapes: every dimension a multiple of 256 so all quant types apply.
  s.push_back({"tiny", 0, 2048, 256, 2, 4, 2, 512, 10000.f, 1e-5f, true});
  ModelShape small{"small", 0, 4096, 512, 4, 8, 2, 1536, 500000.f, 1e-5f, false};
  small.rope_llama3_factor = 8;  // exercises the rope_freqs path in tests
  s.push_back(small);
  ModelShape l1{"llama-3.2-1b", 128256, 131072, 2048, 16, 32, 8, 8192, 500000.f, 1e-5f, true};
  l1.rope_llama3_factor = 32;
  s.push_back(l1);
  ModelShape l3{"llama-3.2-3b", 128256, 131072, 3072, 28, 24, 8, 8192, 500000.f, 1e-5f, true};
  l3.rope_llama3_factor = 32;
  s.push_back(l3);
  ModelShape l8{"llama-3.1-8b", 128256, 131072, 4096, 32, 32, 8, 14336, 500000.f, 1e-5f, false};
  l8.rope_llama3_factor = 8;
  s.push_back(l8);
  s.push_back({"llama-2-7b", 32000, 4096, 4096, 32, 32, 32, 11008, 10000.f, 1e-5f, false});
  s.push_back({"mistral-7b", 32000, 32768, 4096, 32, 32, 8, 14336, 1000000.f, 1e-5f, false});
  s.push_back({"tinyllama-1.1b", 32000, 2048, 2048, 22, 32, 4, 5632, 10000.f, 1e-5f, false});
  return s;
}

std::string Upper(std::string s) {
  for (char& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

// llama.cpp's general.file_type numbering (what tools display as the file type).
std::vector<FileType> FileTypes() {
  return {
      {"F32", 0, DType::kF32, DType::kF32, DType::kF32},
      {"F16", 1, DType::kF16, DType::kF16, DType::kF16},
      {"BF16", 32, DType::kBF16, DType::kBF16, DType::kBF16},
      {"Q4_0", 2, DType::kQ4_0, DType::kQ6_K, DType::kQ4_0},
      {"Q4_1", 3, DType::kQ4_1, DType::kQ6_K, DType::kQ4_1},
      {"Q8_0", 7, DType::kQ8_0, DType::kQ8_0, DType::kQ8_0},
      {"Q5_0", 8, DType::kQ5_0, DType::kQ6_K, DType::kQ5_0},
      {"Q5_1", 9, DType::kQ5_1, DType::kQ6_K, DType::kQ5_1},
      {"Q2_K", 10, DType::kQ2_K, DType::kQ6_K, DType::kQ3_K},
      {"Q3_K_M", 12, DType::kQ3_K, DType::kQ6_K, DType::kQ4_K},
      {"Q4_K_S", 14, DType::kQ4_K, DType::kQ6_K, DType::kQ4_K},
      {"Q4_K_M", 15, DType::kQ4_K, DType::kQ6_K, DType::kQ6_K},
      {"Q5_K_S", 16, DType::kQ5_K, DType::kQ6_K, DType::kQ5_K},
      {"Q5_K_M", 17, DType::kQ5_K, DType::kQ6_K, DType::kQ6_K},
      {"Q6_K", 18, DType::kQ6_K, DType::kQ6_K, DType::kQ6_K},
  };
}

// The layers that get more bits in the _M mixes: the first and last eighth, and every third
// layer in between.
bool UseMoreBits(int32_t i, int32_t n) { return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2; }

}  // namespace

std::optional<ModelShape> FindModelShape(const std::string& name) {
  for (const auto& s : Shapes()) {
    if (s.name == name) return s;
  }
  return std::nullopt;
}

std::vector<std::string> ModelShapeNames() {
  std::vector<std::string> out;
  for (const auto& s : Shapes()) out.push_back(s.name);
  return out;
}

std::vector<float> Llama3RopeFactors(const ModelShape& shape, int32_t n_rot) {
  std::vector<float> factors(static_cast<size_t>(n_rot / 2), 1.0f);
  const double low_wavelen = shape.rope_llama3_orig_ctx / shape.rope_llama3_low;
  const double high_wavelen = shape.rope_llama3_orig_ctx / shape.rope_llama3_high;
  for (int32_t i = 0; i < n_rot / 2; ++i) {
    const double freq = std::pow(static_cast<double>(shape.rope_base), -2.0 * i / n_rot);
    const double wavelen = 2 * M_PI / freq;
    if (wavelen < high_wavelen) {
      factors[i] = 1.0f;
    } else if (wavelen > low_wavelen) {
      factors[i] = shape.rope_llama3_factor;
    } else {
      const double smooth = (shape.rope_llama3_orig_ctx / wavelen - shape.rope_llama3_low) /
                            (shape.rope_llama3_high - shape.rope_llama3_low);
      const double scaled = (1 - smooth) * freq / shape.rope_llama3_factor + smooth * freq;
      factors[i] = static_cast<float>(freq / scaled);
    }
  }
  return factors;
}

std::optional<FileType> FindFileType(const std::string& name) {
  for (const auto& t : FileTypes()) {
    if (t.name == Upper(name)) return t;
  }
  return std::nullopt;
}

std::vector<std::string> FileTypeNames() {
  std::vector<std::string> out;
  for (const auto& t : FileTypes()) out.push_back(t.name);
  return out;
}

DType TensorTypeFor(const FileType& ft, const std::string& name, int32_t n_layer, bool tied_output) {
  if (name == "output.weight") return ft.output;
  if (name == "token_embd.weight") return tied_output ? ft.output : ft.base;
  if (name.rfind("blk.", 0) == 0 &&
      (name.find(".attn_v.weight") != std::string::npos || name.find(".ffn_down.weight") != std::string::npos)) {
    const int32_t layer = std::atoi(name.c_str() + 4);
    return UseMoreBits(layer, n_layer) ? ft.more_bits : ft.base;
  }
  return ft.base;
}

}  // namespace herd
