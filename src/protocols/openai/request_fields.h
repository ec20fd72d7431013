// Field parsers shared by the OpenAI request parsers (chat, completions, embeddings): each checks one
// field's type and range and reports the first error through api::Validator, naming the field.
// Absent and null fields leave the output unchanged.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/api_error.h"
#include "api/chat.h"

namespace herd::openai {

struct FieldParser : api::Validator {
  bool Number(const nlohmann::json& j, const char* name, double lo, double hi, std::optional<float>* out) const;
  bool Integer(const nlohmann::json& j, const char* name, int64_t lo, int64_t hi, std::optional<int32_t>* out) const;
  bool Bool(const nlohmann::json& j, const char* name, bool* out) const;
  bool String(const nlohmann::json& j, const char* name, std::string* out) const;
  // seed: any integer (as uint64).
  bool Seed(const nlohmann::json& j, std::optional<uint64_t>* out) const;
  // stop: a string or an array of at most 4 strings.
  bool Stop(const nlohmann::json& j, std::vector<std::string>* out) const;
  // logit_bias: {"token id": bias in [-100, 100]}.
  bool LogitBias(const nlohmann::json& j, std::vector<std::pair<int32_t, float>>* out) const;
  // stream_options (only with stream true): include_usage.
  bool StreamOptions(const nlohmann::json& j, bool stream, bool* include_usage) const;
  // The sampling fields both generation endpoints share: max_tokens (>= min_max_tokens),
  // temperature, top_p, presence/frequency_penalty, herd's min_p, typical_p, repeat_penalty,
  // top_k, repeat_last_n, n (1-128), seed, stop, logit_bias, ignore_eos.
  bool SamplingOptions(const nlohmann::json& j, int64_t min_max_tokens, api::GenerationOptions* o) const;
  // A string, an array of strings, an array of token ids or an array of token-id arrays
  // (OpenAI's prompt / input). Arrays must not be empty; at most `max_items` entries.
  bool Prompts(const nlohmann::json& j, const char* name, size_t max_items, std::vector<api::PromptInput>* out) const;
};

}  // namespace herd::openai
