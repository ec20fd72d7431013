// Shapes of real models (and small test shapes) for generating random-weight GGUF files,
// and the per-tensor quantization recipes of the usual file types (Q4_K_M, ...).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tensor/dtype.h"

namespace herd {

struct ModelShape {
  std::string name;        // "llama-3.2-1b"
  int32_t n_vocab = 0;     // 0: take the vocabulary's size
  int32_t n_ctx = 0;
  int32_t n_embd = 0;
  int32_t n_layer = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  int32_t n_ff = 0;
  float rope_base = 10000.f;
  float rms_eps = 1e-5f;
  bool tied_output = false;
  // llama3 RoPE frequency scaling (written as the rope_freqs tensor) when factor > 0.
  float rope_llama3_factor = 0;
  float rope_llama3_low = 1;
  float rope_llama3_high = 4;
  int32_t rope_llama3_orig_ctx = 8192;
};

std::optional<ModelShape> FindModelShape(const std::string& name);
std::vector<std::string> ModelShapeNames();

// llama3 frequency divisors for head_dim (n_rot) dims: [n_rot / 2].
std::vector<float> Llama3RopeFactors(const ModelShape& shape, int32_t n_rot);

// A file type: a name as users know it ("Q4_K_M") and the tensor types it uses.
struct FileType {
  std::string name;
  uint32_t gguf_file_type;  // general.file_type
  DType base;               // most matrices
  DType output;             // output.weight, or token_embd.weight when tied
  DType more_bits;          // attn_v / ffn_down in the layers that get more bits (== base if none)
};

std::optional<FileType> FindFileType(const std::string& name);  // case-insensitive
std::vector<std::string> FileTypeNames();

// The type of tensor `name` (e.g. "blk.3.ffn_down.weight") in a file of `ftype` with n_layer layers.
DType TensorTypeFor(const FileType& ftype, const std::string& name, int32_t n_layer, bool tied_output);

}  // namespace herd
