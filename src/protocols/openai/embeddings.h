// OpenAI POST /v1/embeddings: request JSON -> api::EmbeddingRequest, and the response
// {"object": "list", "data": [{"object": "embedding", "index", "embedding"}], "model", "usage"}
// (components.schemas CreateEmbeddingResponse).
//
// `input`: a string, an array of strings, an array of token ids or an array of token-id arrays
// (at most 2048 inputs; no empty string). `encoding_format`: "float" (default) or "base64" — the
// vector's little-endian float32 bytes, base64-encoded (what the official SDKs ask for by
// default and decode). `dimensions` is accepted only when it equals the model's embedding size
// (the server checks; herd does not shorten vectors). Inputs longer than the context are an
// error (context_length_exceeded), as OpenAI's.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/api_error.h"
#include "api/embedding.h"

namespace herd::openai {

bool ParseEmbeddingRequest(const nlohmann::json& body, api::EmbeddingRequest* out, api::ApiError* error);

// The vector as base64 of its little-endian float32 bytes.
std::string EmbeddingBase64(const std::vector<float>& v);

// vectors[i] is input i's; prompt_tokens: the inputs' tokens summed.
nlohmann::json EmbeddingList(const std::string& model, const std::vector<std::vector<float>>& vectors, bool base64,
                             int32_t prompt_tokens);

}  // namespace herd::openai
