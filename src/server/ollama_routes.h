// Ollama routes: POST /api/chat and /api/generate (NDJSON streaming by default, or one object
// with "stream": false; Ollama's timing fields), GET /api/tags, GET /api/version, GET and HEAD /.
// Errors as {"error": "..."}.
#pragma once

#include "http/router.h"
#include "server/model_registry.h"

namespace herd::server {

void AddOllamaRoutes(Router& router, ModelRegistry& models);

}  // namespace herd::server
