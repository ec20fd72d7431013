// OpenAI POST /v1/completions (legacy text completions): raw prompts (no chat template), one set
// of n choices per prompt, echo, legacy logprobs, streamed over SSE or whole. Registered by
// AddOpenAiRoutes.
#pragma once

#include "http/router.h"
#include "server/api_keys.h"
#include "server/model_registry.h"

namespace herd::server {

void AddCompletionRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys = nullptr);

}  // namespace herd::server
