// Ollama's native API: POST /api/chat and /api/generate request parsing (options, format,
// keep_alive), NDJSON response objects with Ollama's timing fields, and the error shape
// {"error": "..."}. Streaming is on unless "stream": false.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "api/api_error.h"
#include "api/chat.h"

namespace herd::ollama {

bool ParseChatRequest(const nlohmann::json& body, api::ChatRequest* out, api::ApiError* error);
bool ParseGenerateRequest(const nlohmann::json& body, api::CompletionRequest* out, api::ApiError* error);

// "5m", "1h30m", "10s", "-1", 300 (seconds), "0" -> seconds; negative = forever. False if malformed.
bool ParseDuration(const nlohmann::json& value, double* seconds);

nlohmann::json ErrorBody(const api::ApiError& error);

struct Timings {  // nanoseconds, as Ollama reports them
  int64_t total = 0, load = 0, prompt_eval = 0, eval = 0;
  int32_t prompt_eval_count = 0, eval_count = 0;
};

// created_at: RFC 3339 UTC with nanoseconds, e.g. "2026-11-22T07:00:00.123456789Z".
std::string CreatedAt(int64_t unix_nanos);

nlohmann::json ChatChunk(const std::string& model, const std::string& created_at, const std::string& content);
nlohmann::json ChatDone(const std::string& model, const std::string& created_at, const std::string& content,
                        const std::string& done_reason, const Timings& t);
nlohmann::json GenerateChunk(const std::string& model, const std::string& created_at, const std::string& response);
nlohmann::json GenerateDone(const std::string& model, const std::string& created_at, const std::string& response,
                            const std::string& done_reason, const Timings& t);

}  // namespace herd::ollama
