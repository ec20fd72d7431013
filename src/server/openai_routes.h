// OpenAI routes: POST /v1/chat/completions (streamed over SSE or whole), GET /v1/models and
// GET /v1/models/{id}, with errors in OpenAI's shape. Handlers never block an I/O thread: the
// engine's stream notify callback drains events and writes them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "http/router.h"
#include "server/api_keys.h"
#include "server/model_registry.h"

namespace herd::server {

// With `keys` enabled, the API routes answer 401 without a valid key.
void AddOpenAiRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys = nullptr);

}  // namespace herd::server
