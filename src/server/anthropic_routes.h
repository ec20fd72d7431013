// Anthropic routes: POST /v1/messages (whole or streamed with Anthropic's event sequence) and
// POST /v1/messages/count_tokens, errors in Anthropic's shape (overloaded: 529). cache_control
// breakpoints pin the prompt prefix that ends with the marked message (5m / 1h) in the prefix
// cache; usage reports cache_read_input_tokens (prompt tokens served from cache) and
// cache_creation_input_tokens (tokens a breakpoint asked to cache that were not cached yet).
#pragma once

#include "http/router.h"
#include "server/api_keys.h"
#include "server/model_registry.h"

namespace herd::server {

// With `keys` enabled, the API routes answer 401 without a valid key.
void AddAnthropicRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys = nullptr);

}  // namespace herd::server
