// Ollama's embedding endpoints: POST /api/embed (input: a string or an array of strings;
// truncate, default true; normalized vectors) and the older POST /api/embeddings (prompt: one
// string; the raw, un-normalized vector, as Ollama returns it). Requests -> api::EmbeddingRequest.
//
// options: num_ctx is the truncation length (within the served context); the sampling and
// hardware options Ollama accepts do not apply to embeddings and are ignored; unknown options
// are a 400. `dimensions` is accepted only when it equals the model's embedding size (the
// server checks). An empty input (or prompt) only loads the model: the response holds no vector.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/embedding.h"

namespace herd::ollama {

bool ParseEmbedRequest(const nlohmann::json& body, api::EmbeddingRequest* out, api::ApiError* error);
bool ParseEmbeddingsRequest(const nlohmann::json& body, api::EmbeddingRequest* out, api::ApiError* error);

// /api/embed: {"model", "embeddings": [[...]], "total_duration", "load_duration",
// "prompt_eval_count"} (durations in nanoseconds).
nlohmann::json EmbedResponse(const std::string& model, const std::vector<std::vector<float>>& vectors, int64_t total_ns,
                             int64_t load_ns, int32_t prompt_eval_count);
// /api/embeddings: {"embedding": [...]} (empty when no prompt was given).
nlohmann::json EmbeddingsResponse(const std::vector<float>& vector);

}  // namespace herd::ollama
