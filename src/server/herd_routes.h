// herd's own endpoints, beside the OpenAI / Anthropic / Ollama APIs:
//
//   GET  /health          200 {"status":"ok"}; 503 {"status":"loading"} while a preloaded model
//                         is still loading. Open (no API key), as orchestrators probe it.
//   GET  /metrics         Prometheus text (metrics.h). Open.
//   GET  /v1/status       JSON: server (version, uptime, open connections), memory (budget,
//                         reserved, available), every model with its state, source, size,
//                         memory, keep-alive expiry, active requests and, when loaded, engine
//                         state (sequences, KV blocks, prefix-cache hit rate, tokens).
//   POST /tokenize        {"model","content" (or "prompt"),"add_special":false,"parse_special":true,
//                         "with_pieces":false} -> {"tokens":[ids]} or {"tokens":[{"id","piece"}]}
//                         (a piece that is not valid UTF-8 is an array of its bytes)
//   POST /detokenize      {"model","tokens":[ids]} -> {"content":"..."}
//   POST /apply-template  a chat completion body ({"model","messages",...}) -> {"prompt":"..."}:
//                         exactly the text the chat routes tokenize for that conversation
// The last three are llama.cpp server's shapes; they take the API key like the other API
// routes, load the model on demand, and may leave out "model" when one model is registered.
// Errors: {"error":{"code":<status>,"message":"...","type":"invalid_request_error" | ...}} with
// 400 (bad input), 401, 404 (unknown model), 500, 503.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "http/router.h"
#include "server/api_keys.h"
#include "server/http_metrics.h"
#include "server/model_registry.h"

namespace herd::server {

struct HerdRoutesOptions {
  const ApiKeys* keys = nullptr;  // for the token routes and /v1/status
  // Counts every request the router dispatches (attached by AddHerdRoutes); null: none counted.
  std::shared_ptr<HttpMetrics> http_metrics;
  std::function<int()> open_connections;  // null: not reported
  size_t memory_budget_bytes = 0;         // the registry's (0: no limit), for /v1/status
  std::string version = "0.1.0";
};

// Adds /health, /metrics, /v1/status and the token routes. `models` must outlive the router.
void AddHerdRoutes(Router& router, ModelRegistry& models, HerdRoutesOptions options = {});

// The token routes alone (herd_token_routes.cc).
void AddTokenRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys);

// {"error":{"code":status,"message":...,"type":...}} for herd's routes (llama.cpp's shape).
HttpResponse HerdError(const api::ApiError& error);

}  // namespace herd::server
