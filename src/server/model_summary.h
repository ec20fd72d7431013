// What /api/show, /api/ps and /api/tags say about a model, read from its GGUF header alone (a
// mapping and a header parse: no weights touched, nothing loaded into the engine).
//
// Cost: GgufFile::Open parses all metadata, including the vocabulary arrays (tens of ms for a
// 128k-token vocabulary). SummaryCache keeps the non-verbose summary per file (path, size,
// mtime), so listings pay it once per file.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <tuple>
#include <vector>

#include "base/status.h"

namespace herd::server {

struct ModelSummary {
  std::string architecture;             // general.architecture
  uint64_t parameter_count = 0;         // sum of the tensors' element counts
  std::string quantization;             // general.file_type as Ollama names it ("Q4_K_M"); "" if absent
  int64_t context_length = 0;           // <arch>.context_length; 0 if absent
  std::string chat_template;            // tokenizer.chat_template; "" if absent
  std::vector<std::string> stop_texts;  // texts of the EOS / EOT tokens generation stops at
  bool has_pooling = false;             // <arch>.pooling_type present: a model made for embeddings
  // Every metadata key as a flat JSON object, plus general.parameter_count (computed when the
  // file lacks it). Arrays are JSON arrays when verbose, else null (Ollama's non-verbose show).
  nlohmann::json model_info = nlohmann::json::object();
};

// Reads `path`'s header. Errors: the file cannot be opened or is not valid GGUF.
Result<ModelSummary> SummarizeModel(const std::string& path, bool verbose);

// llama.cpp's general.file_type numbering, with Ollama's names ("F16", "Q4_K_M", "IQ2_XS");
// "" for unknown values.
std::string FileTypeName(uint32_t file_type);

// Thread-safe cache of non-verbose summaries keyed by (path, size, mtime).
class SummaryCache {
 public:
  Result<std::shared_ptr<const ModelSummary>> Get(const std::string& path);

 private:
  std::mutex mu_;
  std::map<std::string, std::tuple<uint64_t, int64_t, std::shared_ptr<const ModelSummary>>> cache_;
};

}  // namespace herd::server
