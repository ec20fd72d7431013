// Protocol-neutral chat and completion requests: what the OpenAI, Anthropic and Ollama parsers
// produce and the server turns into engine requests (tokenized with the model's chat template).
// Plain data; the engine never sees these and protocols never see engine types.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace herd::api {

struct ChatMessage {
  std::string role;     // system | developer | user | assistant | tool
  std::string content;  // text (text parts concatenated)
  std::string name;
  std::string tool_call_id;
};

// Sampling and stopping, with "absent" kept distinct from any value so each protocol's defaults
// apply in the server, not here.
struct GenerationOptions {
  std::optional<int32_t> max_tokens;
  std::optional<float> temperature, top_p, min_p, typical_p;
  std::optional<int32_t> top_k;
  std::optional<float> repeat_penalty, presence_penalty, frequency_penalty;
  std::optional<int32_t> repeat_last_n;
  std::optional<uint64_t> seed;
  std::vector<std::string> stop;
  std::vector<std::pair<int32_t, float>> logit_bias;
  bool logprobs = false;
  int32_t top_logprobs = 0;
  int32_t n = 1;
  bool json_object = false;        // response_format json_object / format "json"
  std::optional<int32_t> num_ctx;  // Ollama options.num_ctx (a request never forces a reload)
  // herd extension on the OpenAI routes (as vLLM and llama.cpp accept it): keep generating past
  // end-of-generation tokens, so a request runs to max_tokens (fixed-length benchmarks).
  bool ignore_eos = false;
};

// Anthropic cache_control: keep the prompt prefix that ends after messages[message_index]'s
// first `content_bytes` bytes cached for `ttl_seconds`.
struct CacheBreakpoint {
  int32_t message_index = 0;
  size_t content_bytes = 0;
  int32_t ttl_seconds = 300;
};

struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;  // a system prompt, if any, is messages[0] with role "system"
  std::vector<CacheBreakpoint> cache_breakpoints;
  GenerationOptions options;
  bool stream = false;
  bool include_usage = false;                // OpenAI stream_options.include_usage
  std::string user;                          // OpenAI user / Anthropic metadata.user_id
  std::optional<double> keep_alive_seconds;  // Ollama keep_alive (< 0: keep loaded; 0: unload after)
};

// A prompt or input given as text or as token ids (OpenAI completions and embeddings accept both).
struct PromptInput {
  std::string text;
  std::vector<int32_t> tokens;
  bool is_tokens = false;
};

// A raw-prompt completion (OpenAI /v1/completions, Ollama /api/generate).
struct CompletionRequest {
  std::string model;
  std::string prompt;             // Ollama's one prompt
  std::string system;             // Ollama system override
  std::string template_override;  // Ollama template override (Go template syntax: not supported yet)
  bool raw = false;               // Ollama raw: no template applied
  GenerationOptions options;      // OpenAI logprobs N: options.logprobs with top_logprobs = N
  bool stream = false;
  std::optional<double> keep_alive_seconds;
  // OpenAI: one or more prompts, each completed options.n times (choice index = prompt * n + i).
  std::vector<PromptInput> prompts;
  bool echo = false;           // the prompt's text (and tokens, with logprobs) precede each choice's
  bool include_usage = false;  // stream_options.include_usage
  std::string user;
};

}  // namespace herd::api
