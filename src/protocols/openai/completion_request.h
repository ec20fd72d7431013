// OpenAI POST /v1/completions (the legacy text completions): request JSON -> api::CompletionRequest.
//
// `prompt` is a string, an array of strings, an array of token ids or an array of token-id
// arrays (each prompt gets n choices); max_tokens defaults to 16 in the server, as OpenAI's.
// `logprobs` is an integer 0-5 (the number of alternatives per token). Not supported (a 400
// naming the field): `suffix` (insertion), `best_of` other than 1 or n (herd returns every
// candidate it computes, so best_of == n is the same request). Extensions accepted as for chat:
// top_k, min_p, typical_p, repeat_penalty, repeat_last_n, ignore_eos. Unknown fields are a 400.
#pragma once

#include <nlohmann/json.hpp>

#include "api/api_error.h"
#include "api/chat.h"

namespace herd::openai {

bool ParseCompletionRequest(const nlohmann::json& body, api::CompletionRequest* out, api::ApiError* error);

}  // namespace herd::openai
