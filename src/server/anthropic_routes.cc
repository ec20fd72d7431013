#include "server/anthropic_routes.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "protocols/anthropic/messages.h"
#include "server/exchange_util.h"
#include "server/replica_picker.h"

namespace herd::server {
namespace {

using nlohmann::json;

void RespondError(Responder& r, const api::ApiError& e) {
  r.Respond(ErrorResponse(anthropic::HttpStatus(e), anthropic::ErrorBody(e).dump(), e.kind));
}

using Prepared =
    std::function<void(ModelLease model, const api::ChatRequest& chat, const std::vector<int32_t>& prompt)>;

// Parses the body, acquires the model (loading it if needed) and renders the prompt, then calls
// `then` (possibly on the registry's loader thread); on failure answers with the error.
void Prepare(ModelRegistry& models, const HttpRequest& req, bool count_tokens,
             const std::shared_ptr<Responder>& responder, Prepared then) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return RespondError(*responder, api::InvalidRequest("the request body is not valid JSON"));
  api::ChatRequest chat;
  api::ApiError error;
  if (!anthropic::ParseMessagesRequest(body, count_tokens, &chat, &error)) return RespondError(*responder, error);
  const std::string name = chat.model;
  const uint64_t affinity = AffinityKey(chat);
  models.Acquire(
      name, std::nullopt,
      [chat = std::move(chat), responder, then = std::move(then)](ModelLease model, const api::ApiError& e) {
        if (!model) {
          return RespondError(*responder, e.kind == api::ErrorKind::kNotFound
                                              ? api::ApiError{e.kind, "model: " + chat.model, "model", ""}
                                              : e);
        }
        std::vector<int32_t> prompt;
        api::ApiError error;
        if (!model->ChatPrompt(chat, &prompt, &error)) return RespondError(*responder, error);
        then(std::move(model), chat, prompt);
      },
      affinity);
}

struct MessageExchange {
  std::mutex mu;
  std::shared_ptr<RequestStream> events;
  std::shared_ptr<Responder> responder;
  std::shared_ptr<ResponseStream> sse;
  ModelLease lease;  // keeps the model loaded until the response ends
  std::string id, model;
  bool stream = false, started = false, done = false;
  int32_t prompt_tokens = 0, pinned_tokens = 0;
  std::string text;

  anthropic::MessageUsage Usage(const EngineEvent& fin) const {
    anthropic::MessageUsage u;
    // Anthropic: the prompt = input_tokens + cache_creation_input_tokens + cache_read_input_tokens.
    u.cache_read_input_tokens = fin.usage.cached_tokens;
    u.cache_creation_input_tokens = std::max(0, pinned_tokens - fin.usage.cached_tokens);
    u.input_tokens = fin.usage.prompt_tokens - u.cache_read_input_tokens - u.cache_creation_input_tokens;
    u.output_tokens = fin.usage.completion_tokens;
    return u;
  }

  // message_start waits for the first engine event, which knows the prefix-cache hit, so its
  // usage splits the prompt as message_delta's does.
  void Start(const EngineEvent& first) {
    if (started || !stream) return;
    started = true;
    anthropic::MessageUsage u = Usage(first);
    u.output_tokens = 0;
    sse->Write(anthropic::SseEvent(anthropic::MessageStart(id, model, u)));
    sse->Write(anthropic::SseEvent(anthropic::ContentBlockStart(0)));
    sse->Write(anthropic::SseEvent(anthropic::Ping()));
  }

  void Drain() {
    std::lock_guard lock(mu);
    if (done) return;
    EngineEvent ev;
    while (events->TryNext(&ev)) {
      Start(ev);
      if (stream && !ev.text.empty()) sse->Write(anthropic::SseEvent(anthropic::TextDelta(0, ev.text)));
      if (!stream) text += ev.text;
      if (ev.kind != EngineEvent::Kind::kFinished) continue;
      const std::string reason =
          anthropic::StopReason(ev.finish == FinishReason::kLength ? "length" : "stop", ev.stop_string);
      const anthropic::MessageUsage u = Usage(ev);
      if (stream) {
        sse->Write(anthropic::SseEvent(anthropic::ContentBlockStop(0)));
        json delta = anthropic::MessageDelta(reason, ev.stop_string, u.output_tokens);
        delta["usage"]["input_tokens"] = u.input_tokens;
        delta["usage"]["cache_read_input_tokens"] = u.cache_read_input_tokens;
        delta["usage"]["cache_creation_input_tokens"] = u.cache_creation_input_tokens;
        sse->Write(anthropic::SseEvent(delta));
        sse->Write(anthropic::SseEvent(anthropic::MessageStop()));
        sse->Finish();
      } else {
        responder->Respond(
            HttpResponse::Json(200, anthropic::Message(id, model, text, reason, ev.stop_string, u).dump()));
      }
    }
    if (events->ended()) {
      done = true;
      events->SetNotify({});
    }
  }
};

void StartMessage(ModelLease model, const api::ChatRequest& chat, const std::vector<int32_t>& prompt,
                  const std::shared_ptr<Responder>& responder) {
  GenerationRequest gen = model->ToGenerationRequest(prompt, chat.options, 0);
  int32_t pinned = 0;
  for (const api::CacheBreakpoint& bp : chat.cache_breakpoints) {
    // The breakpoint's block ends content_bytes into its message (system blocks: message 0).
    const int32_t n_tokens = model->PrefixTokens(chat, bp.message_index, bp.content_bytes, prompt);
    if (n_tokens <= 0) continue;
    gen.pins.push_back({n_tokens, std::chrono::seconds(bp.ttl_seconds)});
    pinned = std::max(pinned, n_tokens);
  }
  auto submitted = model->engine().Submit(std::move(gen));
  if (!submitted.ok()) return RespondError(*responder, api::FromStatus(submitted.status()));
  auto x = std::make_shared<MessageExchange>();
  x->events = *submitted;
  x->responder = responder;
  x->id = NewResponseId("msg_");
  x->model = model->name();
  x->lease = model;
  x->stream = chat.stream;
  x->prompt_tokens = static_cast<int32_t>(prompt.size());
  x->pinned_tokens = pinned;
  if (x->stream) x->sse = responder->StartSse();
  Connect(x, model->engine(), *responder);
}

}  // namespace

void AddAnthropicRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys) {
  const auto reject = [](const api::ApiError& e) { return HttpResponse::Json(401, anthropic::ErrorBody(e).dump()); };
  router.Post("/v1/messages", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                Prepare(models, req, false, r,
                        [r](ModelLease model, const api::ChatRequest& chat, const std::vector<int32_t>& prompt) {
                          StartMessage(std::move(model), chat, prompt, r);
                        });
              }));
  router.Post(
      "/v1/messages/count_tokens", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
        Prepare(models, req, true, r, [r](ModelLease, const api::ChatRequest&, const std::vector<int32_t>& prompt) {
          r->Respond(HttpResponse::Json(200, json{{"input_tokens", prompt.size()}}.dump()));
        });
      }));
}

}  // namespace herd::server
