// Protocol-neutral embedding requests (OpenAI /v1/embeddings, Ollama /api/embed and
// /api/embeddings): what the parsers produce and the server turns into engine embedding requests.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "api/chat.h"

namespace herd::api {

struct EmbeddingRequest {
  std::string model;
  std::vector<PromptInput> inputs;    // one vector each, in order
  bool base64 = false;                // OpenAI encoding_format "base64": little-endian float32 bytes
  std::optional<int32_t> dimensions;  // must equal the model's embedding size when given
  bool normalize = true;              // L2 (Ollama's legacy /api/embeddings returns raw vectors)
  // Inputs longer than the context: cut to fit (Ollama's default) or an error (OpenAI's).
  bool truncate = false;
  std::optional<int32_t> num_ctx;  // Ollama options.num_ctx: truncation length (within the served context)
  std::optional<double> keep_alive_seconds;
  std::string user;
};

}  // namespace herd::api
