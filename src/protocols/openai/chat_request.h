// OpenAI POST /v1/chat/completions: request JSON -> api::ChatRequest, and the OpenAI error shape.
//
// Validation follows the API reference: every field's type and range is checked and an error
// names the field (`param`). Fields herd does not implement yet (tools, tool_choice, functions,
// audio, json_schema response formats, ...) and unrecognized fields are a 400 naming the field,
// never silently ignored. Accepted extensions (as llama.cpp and vLLM accept them): top_k, min_p,
// typical_p, repeat_penalty, repeat_last_n, ignore_eos (keep generating past end-of-generation
// tokens up to max_tokens: the knob of fixed-length benchmarks).
#pragma once

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/chat.h"

namespace herd::openai {

// Parses `body` into *out. On failure returns false and fills *error (kind, message, param).
bool ParseChatRequest(const nlohmann::json& body, api::ChatRequest* out, api::ApiError* error);

// {"error": {"message": ..., "type": ..., "param": ... | null, "code": ... | null}}
nlohmann::json ErrorBody(const api::ApiError& error);

}  // namespace herd::openai
