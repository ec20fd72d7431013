// Anthropic POST /v1/messages (and /v1/messages/count_tokens): request JSON -> api::ChatRequest,
// responses, stream events and the Anthropic error shape.
//
// Stream event order (one text block): message_start, content_block_start, ping,
// content_block_delta (text_delta)*, content_block_stop, message_delta (stop_reason, usage),
// message_stop; each as SSE "event: <type>\ndata: <json>\n\n".
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "api/api_error.h"
#include "api/chat.h"

namespace herd::anthropic {

// Parses `body` into *out (system prompt -> messages[0] with role "system"; content blocks
// concatenated; cache_control -> out->cache_breakpoints). `count_tokens`: the count_tokens
// endpoint's body (max_tokens not required). False + *error on failure.
bool ParseMessagesRequest(const nlohmann::json& body, bool count_tokens, api::ChatRequest* out, api::ApiError* error);

// {"type": "error", "error": {"type": "invalid_request_error", "message": ...}}
nlohmann::json ErrorBody(const api::ApiError& error);
// HTTP status for an error kind: as api::HttpStatusFor, except overloaded = 529.
int HttpStatus(const api::ApiError& error);

struct MessageUsage {
  int32_t input_tokens = 0;  // prompt tokens not read from the cache
  int32_t output_tokens = 0;
  int32_t cache_creation_input_tokens = 0;
  int32_t cache_read_input_tokens = 0;
};

// finish reason "stop" with a stop string -> "stop_sequence", "stop" -> "end_turn", "length" ->
// "max_tokens".
std::string StopReason(const std::string& finish_reason, const std::string& stop_sequence);

nlohmann::json Message(const std::string& id, const std::string& model, const std::string& text,
                       const std::string& stop_reason, const std::string& stop_sequence, const MessageUsage& usage);

std::string SseEvent(const nlohmann::json& event);  // uses event["type"] as the SSE event name
nlohmann::json MessageStart(const std::string& id, const std::string& model, const MessageUsage& usage);
nlohmann::json ContentBlockStart(int32_t index);
nlohmann::json Ping();
nlohmann::json TextDelta(int32_t index, const std::string& text);
nlohmann::json ContentBlockStop(int32_t index);
nlohmann::json MessageDelta(const std::string& stop_reason, const std::string& stop_sequence, int32_t output_tokens);
nlohmann::json MessageStop();

}  // namespace herd::anthropic
