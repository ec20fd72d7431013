// Shared by the API routes: response ids, and wiring one engine request to one HTTP response.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "api/api_error.h"
#include "engine/engine.h"
#include "http/http_message.h"
#include "http/responder.h"

namespace herd::server {

// An error response: `body` in the API's shape with `status`; kinds that a client should retry
// (overloaded, unavailable) carry Retry-After.
HttpResponse ErrorResponse(int status, std::string body, api::ErrorKind kind);

// Errors the HTTP layer answers itself (unknown route 404, 405, 413, 408, malformed requests), in
// the shape of the API the path belongs to: /api/* Ollama, /v1/messages* Anthropic, else OpenAI.
// Install with Router::SetErrorFormatter.
HttpResponse TransportErrorInApiShape(int status, std::string_view message, const HttpRequest& request);

// "<prefix><48-bit time><16-bit counter>" in hex, unique within the process (chatcmpl-..., msg_...).
std::string NewResponseId(std::string_view prefix);

// Connects an exchange X (with `std::shared_ptr<RequestStream> events` and a thread-safe
// `void Drain()` that writes what the engine produced) to the engine and the client: a client
// disconnect cancels the request; each engine event batch runs Drain on the engine thread; the
// stream holds X until the request ends (Drain must then clear the notify callback).
template <class X>
void Connect(const std::shared_ptr<X>& x, Engine& engine, Responder& responder) {
  Engine* e = &engine;
  const RequestId id = x->events->id();
  responder.OnCancel([e, id] { e->Cancel(id); });
  x->events->SetNotify([x] { x->Drain(); });
  x->Drain();  // events pushed before the callback was set
}

}  // namespace herd::server
