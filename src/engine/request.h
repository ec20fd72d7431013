// What callers of the Engine submit and what they get back. Protocol-neutral: the server maps
// OpenAI / Anthropic / Ollama requests onto GenerationRequest and events back onto its wire
// format; the engine never sees JSON.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "sampling/sampler.h"
#include "sampling/sampling_params.h"

namespace herd {

using RequestId = int64_t;
using EngineClock = std::chrono::steady_clock;

// Keep the KV of prompt[0, n_tokens) cached for `ttl` after the prompt is computed (Anthropic
// cache_control breakpoints). Only whole KV blocks are pinned.
struct PrefixPin {
  int32_t n_tokens = 0;
  std::chrono::seconds ttl{300};
};

struct GenerationRequest {
  std::vector<int32_t> prompt;    // token ids; must not be empty
  SamplingParams sampling;        // the engine adds the vocabulary's end-of-generation tokens to stop_tokens
  int32_t max_tokens = 128;       // generated tokens per choice; -1: until the context is full
  std::vector<std::string> stop;  // stop strings, matched on the generated text across tokens
  bool ignore_eos = false;        // keep generating past end-of-generation tokens
  int32_t n = 1;                  // completions of the same prompt (share the prompt's KV blocks)
  int32_t priority = 0;           // higher runs first; equal priorities are first come, first served
  // Drop the oldest prompt tokens (keeping the first `keep` ones) when prompt + max_tokens
  // exceed the context, instead of failing.
  bool truncate = false;
  int32_t truncate_keep = 0;
  std::vector<PrefixPin> pins;
  // JSON object mode (sampling/json_constraint.h): every choice's text is a prefix of one JSON
  // object; the choice ends (kStop) as soon as the object is complete, or at max_tokens (kLength,
  // truncated JSON). Needs a tokenizer. Logprobs then describe the constrained distribution.
  bool json_mode = false;
};

enum class FinishReason { kStop, kLength, kCancelled, kError };
const char* FinishReasonName(FinishReason reason);

struct Usage {
  int32_t prompt_tokens = 0;      // after truncation
  int32_t cached_tokens = 0;      // prompt tokens whose KV came from the prefix cache
  int32_t completion_tokens = 0;  // this choice's generated tokens (end-of-generation token included)
};

struct RequestTimings {
  EngineClock::time_point submitted, first_scheduled, first_token, finished;
};

struct EngineEvent {
  enum class Kind { kToken, kFinished };
  Kind kind = Kind::kToken;
  int32_t index = 0;  // choice, [0, n)
  EngineClock::time_point time;

  // kToken: one sampled token and the text that became final with it (UTF-8 safe; text that
  // could still start a stop string is held back and may arrive with a later token).
  int32_t token = -1;
  std::string text;
  float logprob = 0.0f;           // when sampling.logprobs
  std::vector<TokenLogprob> top;  // when sampling.n_probs > 0

  // kFinished: the choice's end. `text` carries held-back text released at the end.
  FinishReason finish = FinishReason::kStop;
  std::string stop_string;  // the stop string that ended it, if any
  Status error;             // kError only
  Usage usage;              // kFinished: the choice's totals; kToken: so far (prompt and cached final)
  RequestTimings timings;
  std::vector<float> embedding;  // kFinished of an embedding request (kStop): the pooled vector [n_embd]
};

}  // namespace herd
