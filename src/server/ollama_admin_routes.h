// Ollama's model-management routes: POST /api/show, GET /api/ps, POST /api/copy,
// DELETE /api/delete, POST /api/pull. Registered by AddOllamaRoutes; they work on the
// registry's entries and on its Ollama store (ModelRegistry::SetOllamaStore).
#pragma once

#include "http/router.h"
#include "server/api_keys.h"
#include "server/model_registry.h"

namespace herd::server {

// With `keys` enabled, every route answers 401 without a valid key.
void AddOllamaAdminRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys = nullptr);

}  // namespace herd::server
