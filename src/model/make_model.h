// Generates GGUF files with seeded random weights in the exact shape of real models, quantized
// by herd's own quantizers. Tests and benchmarks use these (no real weights exist here).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace herd {

class GgufWriter;

struct MakeModelOptions {
  std::string shape = "tiny";     // see ModelShapeNames()
  std::string file_type = "Q8_0"; // see FileTypeNames()
  std::string vocab_path;         // GGUF with tokenizer.* keys; empty: herd's built-in demo vocabulary
  std::string output_path;
  uint64_t seed = 42;
  int threads = 0;                // 0: all cores
};

// Same options and seed give a byte-identical file. Cost: dominated by quantization
// (about a minute per billion weights per core for K-quants).
Status MakeRandomModel(const MakeModelOptions& options);

// Writes herd's small built-in SentencePiece-style vocabulary (byte fallback tokens plus
// common English pieces) into `writer` as tokenizer.* keys. Returns the vocabulary size.
int32_t WriteBuiltinVocab(GgufWriter& writer);

}  // namespace herd
