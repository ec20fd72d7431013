// OpenAI chat completion responses: the non-streamed `chat.completion` object and the streamed
// `chat.completion.chunk` events (SSE `data: {...}` lines, ended by `data: [DONE]`), in the
// shapes of the API reference (components.schemas CreateChatCompletionResponse and
// CreateChatCompletionStreamResponse; the tests validate against the published OpenAPI file).
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace herd::openai {

struct TokenLogprobOut {
  std::string token;  // the token's text (may be a partial UTF-8 character: bytes are given too)
  float logprob = 0;
  std::vector<uint8_t> bytes;
  std::vector<TokenLogprobOut> top;  // alternatives (empty for the alternatives themselves)
};

struct ChoiceOut {
  int32_t index = 0;
  std::string text;
  std::string finish_reason;  // "stop" | "length"; empty while streaming
  std::optional<std::vector<TokenLogprobOut>> logprobs;
};

struct UsageOut {
  int32_t prompt_tokens = 0, completion_tokens = 0, cached_tokens = 0;
};

struct ResponseHeader {
  std::string id;  // "chatcmpl-..."
  int64_t created = 0;
  std::string model;
  std::string system_fingerprint;  // empty: omitted
};

nlohmann::json ChatCompletion(const ResponseHeader& h, const std::vector<ChoiceOut>& choices, const UsageOut& usage);

// One streamed chunk for one choice. The first chunk of a choice carries role "assistant";
// `finish_reason` non-empty ends the choice. `usage` (stream_options.include_usage) goes in a
// final chunk with empty choices: UsageChunk.
nlohmann::json ChatChunk(const ResponseHeader& h, int32_t index, bool first, const std::string& content,
                         const std::string& finish_reason, const std::optional<std::vector<TokenLogprobOut>>& logprobs,
                         bool include_usage_null);
nlohmann::json UsageChunk(const ResponseHeader& h, const UsageOut& usage);

nlohmann::json UsageJson(const UsageOut& usage);

// "data: <json>\n\n" and the terminator "data: [DONE]\n\n".
std::string SseData(const nlohmann::json& j);
inline constexpr const char* kSseDone = "data: [DONE]\n\n";

}  // namespace herd::openai
