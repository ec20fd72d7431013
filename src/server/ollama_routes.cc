#include "server/ollama_routes.h"

#include <chrono>
#include <mutex>
#include <optional>

#include "protocols/ollama/ollama_api.h"
#include "server/embedding_routes.h"
#include "server/exchange_util.h"
#include "server/ollama_admin_routes.h"
#include "server/replica_picker.h"

namespace herd::server {
namespace {

using nlohmann::json;

constexpr const char* kVersion = "0.1.0";

void RespondError(Responder& r, const api::ApiError& e) {
  r.Respond(ErrorResponse(api::HttpStatusFor(e.kind), ollama::ErrorBody(e).dump(), e.kind));
}

std::string Now() {
  return ollama::CreatedAt(
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
          .count());
}

int64_t Nanos(EngineClock::time_point a, EngineClock::time_point b) {
  if (a == EngineClock::time_point{} || b == EngineClock::time_point{} || b < a) return 0;
  return std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count();
}

struct OllamaExchange {
  std::mutex mu;
  std::shared_ptr<RequestStream> events;
  std::shared_ptr<Responder> responder;
  std::shared_ptr<ResponseStream> ndjson;
  ModelLease lease;  // keeps the model loaded until the response ends
  std::string model;
  int64_t load_ns = 0;  // time this request waited for the model to load
  bool chat = true, stream = true, done = false;
  std::string text;

  json Chunk(const std::string& content) const {
    return chat ? ollama::ChatChunk(model, Now(), content) : ollama::GenerateChunk(model, Now(), content);
  }

  void Drain() {
    std::lock_guard lock(mu);
    if (done) return;
    EngineEvent ev;
    while (events->TryNext(&ev)) {
      if (ev.kind == EngineEvent::Kind::kToken) {
        if (stream && !ev.text.empty()) ndjson->WriteNdjson(Chunk(ev.text).dump());
        if (!stream) text += ev.text;
        continue;
      }
      if (!stream) text += ev.text;
      const std::string last = stream ? ev.text : text;
      ollama::Timings t;
      const RequestTimings& rt = ev.timings;
      t.load = load_ns;
      t.total = load_ns + Nanos(rt.submitted, rt.finished);
      t.prompt_eval = Nanos(rt.first_scheduled, rt.first_token);
      t.eval = Nanos(rt.first_token, rt.finished);
      t.prompt_eval_count = ev.usage.prompt_tokens - ev.usage.cached_tokens;
      t.eval_count = ev.usage.completion_tokens;
      const std::string reason = ev.finish == FinishReason::kLength ? "length" : "stop";
      const json fin =
          chat ? ollama::ChatDone(model, Now(), last, reason, t) : ollama::GenerateDone(model, Now(), last, reason, t);
      if (stream) {
        ndjson->WriteNdjson(fin.dump());
        ndjson->Finish();
      } else {
        responder->Respond(HttpResponse::Json(200, fin.dump()));
      }
    }
    if (events->ended()) {
      done = true;
      events->SetNotify({});
    }
  }
};

void Run(ModelLease model, int64_t load_ns, std::vector<int32_t> prompt, const api::GenerationOptions& options,
         bool chat, bool stream, const std::shared_ptr<Responder>& responder) {
  auto submitted = model->engine().Submit(model->ToGenerationRequest(std::move(prompt), options, -1));
  if (!submitted.ok()) return RespondError(*responder, api::FromStatus(submitted.status()));
  auto x = std::make_shared<OllamaExchange>();
  x->events = *submitted;
  x->responder = responder;
  x->model = model->name();
  x->lease = model;
  x->load_ns = load_ns;
  x->chat = chat;
  x->stream = stream;
  if (stream) x->ndjson = responder->StartNdjson();
  Connect(x, model->engine(), *responder);
}

using Acquired = std::function<void(ModelLease model, int64_t load_ns)>;

// Acquires `name` (loading it if needed) and calls `then` with the lease and the nanoseconds the
// request waited for it; answers 404 (Ollama's wording) or the registry's error otherwise. An
// empty request with keep_alive 0 (Ollama's unload request) unloads instead of loading.
void WithModel(ModelRegistry& models, const std::string& name, std::optional<double> keep_alive, bool empty,
               uint64_t affinity, const std::shared_ptr<Responder>& responder, Acquired then) {
  if (empty && keep_alive && *keep_alive == 0 && models.Find(name)) {
    models.UnloadWhenIdle(name);
    return then(nullptr, 0);
  }
  const auto started = std::chrono::steady_clock::now();
  models.Acquire(
      name, keep_alive,
      [name, responder, started, then = std::move(then)](ModelLease model, const api::ApiError& e) {
        if (!model) {
          return RespondError(*responder, e.kind == api::ErrorKind::kNotFound
                                              ? api::ApiError{e.kind, "model '" + name + "' not found", "model", ""}
                                              : e);
        }
        const auto waited = std::chrono::steady_clock::now() - started;
        then(std::move(model), std::chrono::duration_cast<std::chrono::nanoseconds>(waited).count());
      },
      affinity);
}

void Chat(ModelRegistry& models, HttpRequest& req, std::shared_ptr<Responder> responder) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return RespondError(*responder, api::InvalidRequest("invalid JSON in the request body"));
  api::ChatRequest chat;
  api::ApiError error;
  if (!ollama::ParseChatRequest(body, &chat, &error)) return RespondError(*responder, error);
  const std::string name = chat.model;
  const bool empty = chat.messages.empty();
  const uint64_t affinity = AffinityKey(chat);  // these before `chat` moves into the callback
  const std::optional<double> keep_alive = chat.keep_alive_seconds;
  WithModel(models, name, keep_alive, empty, affinity, responder,
            [chat = std::move(chat), responder](ModelLease model, int64_t load_ns) {
              if (chat.messages.empty()) {  // a load (or unload) request
                json j = ollama::ChatDone(chat.model, Now(), "", model ? "load" : "unload", {});
                return responder->Respond(HttpResponse::Json(200, j.dump()));
              }
              std::vector<int32_t> prompt;
              api::ApiError error;
              if (!model->ChatPrompt(chat, &prompt, &error)) return RespondError(*responder, error);
              Run(std::move(model), load_ns, std::move(prompt), chat.options, true, chat.stream, responder);
            });
}

void Generate(ModelRegistry& models, HttpRequest& req, std::shared_ptr<Responder> responder) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return RespondError(*responder, api::InvalidRequest("invalid JSON in the request body"));
  api::CompletionRequest gen;
  api::ApiError error;
  if (!ollama::ParseGenerateRequest(body, &gen, &error)) return RespondError(*responder, error);
  if (!gen.template_override.empty()) {
    return RespondError(*responder, api::InvalidRequest("template overrides (Go templates) are not supported yet; "
                                                        "use raw with a rendered prompt",
                                                        "template"));
  }
  const std::string name = gen.model;
  const bool empty = gen.prompt.empty();
  const uint64_t affinity = AffinityKey(gen);  // these before `gen` moves into the callback
  const std::optional<double> keep_alive = gen.keep_alive_seconds;
  WithModel(models, name, keep_alive, empty, affinity, responder,
            [gen = std::move(gen), responder](ModelLease model, int64_t load_ns) {
              if (gen.prompt.empty()) {  // a load (or unload) request
                json j = ollama::GenerateDone(gen.model, Now(), "", model ? "load" : "unload", {});
                return responder->Respond(HttpResponse::Json(200, j.dump()));
              }
              std::vector<int32_t> prompt;
              if (gen.raw) {
                prompt = model->tokenizer().Encode(gen.prompt, /*add_special=*/true, /*parse_special=*/true);
              } else {
                api::ChatRequest chat;
                if (!gen.system.empty()) chat.messages.push_back({"system", gen.system, "", ""});
                chat.messages.push_back({"user", gen.prompt, "", ""});
                api::ApiError error;
                if (!model->ChatPrompt(chat, &prompt, &error)) return RespondError(*responder, error);
              }
              Run(std::move(model), load_ns, std::move(prompt), gen.options, false, gen.stream, responder);
            });
}

}  // namespace

void AddOllamaRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys) {
  const auto reject = [](const api::ApiError& e) { return HttpResponse::Json(401, ollama::ErrorBody(e).dump()); };
  router.Post("/api/chat", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                Chat(models, req, r);
              }));
  router.Post("/api/generate", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                Generate(models, req, r);
              }));
  AddOllamaEmbeddingRoutes(router, models, keys);  // /api/embed, /api/embeddings
  AddOllamaAdminRoutes(router, models, keys);      // show, ps, copy, delete, pull
  router.Get("/api/version", [](HttpRequest&, std::shared_ptr<Responder> r) {
    r->Respond(HttpResponse::Json(200, json{{"version", kVersion}}.dump()));
  });
  router.Get("/", [](HttpRequest&, std::shared_ptr<Responder> r) {
    r->Respond(HttpResponse::Text(200, "herd is running (Ollama-compatible API)"));
  });
}

}  // namespace herd::server
