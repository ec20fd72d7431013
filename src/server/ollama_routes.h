// Ollama routes: POST /api/chat and /api/generate (NDJSON streaming by default, or one object
// with "stream": false; Ollama's timing fields), GET /api/tags, GET /api/version, GET and HEAD /,
// and the model-management routes of ollama_admin_routes.h (show, ps, copy, delete, pull).
// Errors as {"error": "..."}.
#pragma once

#include "http/router.h"
#include "server/api_keys.h"
#include "server/model_registry.h"

namespace herd::server {

// With `keys` enabled, the API routes answer 401 without a valid key.
void AddOllamaRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys = nullptr);

}  // namespace herd::server
