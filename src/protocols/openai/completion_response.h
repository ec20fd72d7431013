// OpenAI completion responses (/v1/completions): the `text_completion` object, whole or as SSE
// chunks of the same shape (components.schemas CreateCompletionResponse), with the legacy
// logprobs object {tokens, token_logprobs, top_logprobs, text_offset}.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocols/openai/chat_response.h"

namespace herd::openai {

// Parallel arrays, one entry per token. A null token_logprob / top_logprobs entry means unknown
// (OpenAI gives null for the first prompt token; herd for every echoed prompt token, since the
// engine computes logits only for positions it samples from). text_offset: Unicode code points
// from the start of the prompt (echoed or not), as OpenAI's.
struct LegacyLogprobs {
  std::vector<std::string> tokens;
  std::vector<std::optional<float>> token_logprobs;
  std::vector<std::optional<std::vector<std::pair<std::string, float>>>> top_logprobs;
  std::vector<int32_t> text_offset;

  void Append(const LegacyLogprobs& more);
};

struct CompletionChoiceOut {
  int32_t index = 0;
  std::string text;
  std::string finish_reason;  // "stop" | "length"; empty while streaming (null)
  std::optional<LegacyLogprobs> logprobs;
};

// The whole response (object "text_completion").
nlohmann::json Completion(const ResponseHeader& h, const std::vector<CompletionChoiceOut>& choices,
                          const UsageOut& usage);
// One streamed chunk with one choice; `include_usage_null` adds "usage": null (stream_options
// include_usage), the usage itself then comes in CompletionUsageChunk with empty choices.
nlohmann::json CompletionChunk(const ResponseHeader& h, const CompletionChoiceOut& choice, bool include_usage_null);
nlohmann::json CompletionUsageChunk(const ResponseHeader& h, const UsageOut& usage);

// Length of `text` in Unicode code points (bytes that do not continue a UTF-8 sequence).
int32_t CodePoints(const std::string& text);

}  // namespace herd::openai
