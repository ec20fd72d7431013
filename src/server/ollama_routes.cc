#include "server/ollama_routes.h"

#include <chrono>
#include <mutex>

#include "protocols/ollama/ollama_api.h"
#include "server/exchange_util.h"

namespace herd::server {
namespace {

using nlohmann::json;

constexpr const char* kVersion = "0.1.0";

void RespondError(Responder& r, const api::ApiError& e) {
  r.Respond(HttpResponse::Json(api::HttpStatusFor(e.kind), ollama::ErrorBody(e).dump()));
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
  std::string model;
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
      t.total = Nanos(rt.submitted, rt.finished);
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

void Run(ModelInstance* model, std::vector<int32_t> prompt, const api::GenerationOptions& options, bool chat,
         bool stream, const std::shared_ptr<Responder>& responder) {
  auto submitted = model->engine().Submit(model->ToGenerationRequest(std::move(prompt), options, -1));
  if (!submitted.ok()) return RespondError(*responder, api::FromStatus(submitted.status()));
  auto x = std::make_shared<OllamaExchange>();
  x->events = *submitted;
  x->responder = responder;
  x->model = model->name();
  x->chat = chat;
  x->stream = stream;
  if (stream) x->ndjson = responder->StartNdjson();
  Connect(x, model->engine(), *responder);
}

ModelInstance* FindOr404(ModelRegistry& models, const std::string& name, Responder& r) {
  ModelInstance* m = models.Find(name);
  if (m == nullptr) RespondError(r, {api::ErrorKind::kNotFound, "model '" + name + "' not found", "model", ""});
  return m;
}

void Chat(ModelRegistry& models, HttpRequest& req, std::shared_ptr<Responder> responder) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return RespondError(*responder, api::InvalidRequest("invalid JSON in the request body"));
  api::ChatRequest chat;
  api::ApiError error;
  if (!ollama::ParseChatRequest(body, &chat, &error)) return RespondError(*responder, error);
  ModelInstance* model = FindOr404(models, chat.model, *responder);
  if (model == nullptr) return;
  if (chat.options.json_object) {
    return RespondError(*responder, api::InvalidRequest("format \"json\" needs constrained decoding, which herd "
                                                        "does not have yet",
                                                        "format"));
  }
  if (chat.messages.empty()) {  // a load request: the model is loaded
    json j = ollama::ChatDone(model->name(), Now(), "", "load", {});
    return responder->Respond(HttpResponse::Json(200, j.dump()));
  }
  std::vector<int32_t> prompt;
  if (!model->ChatPrompt(chat, &prompt, &error)) return RespondError(*responder, error);
  Run(model, std::move(prompt), chat.options, true, chat.stream, responder);
}

void Generate(ModelRegistry& models, HttpRequest& req, std::shared_ptr<Responder> responder) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return RespondError(*responder, api::InvalidRequest("invalid JSON in the request body"));
  api::CompletionRequest gen;
  api::ApiError error;
  if (!ollama::ParseGenerateRequest(body, &gen, &error)) return RespondError(*responder, error);
  ModelInstance* model = FindOr404(models, gen.model, *responder);
  if (model == nullptr) return;
  if (!gen.template_override.empty()) {
    return RespondError(*responder, api::InvalidRequest("template overrides (Go templates) are not supported yet; "
                                                        "use raw with a rendered prompt",
                                                        "template"));
  }
  if (gen.options.json_object) {
    return RespondError(*responder, api::InvalidRequest("format \"json\" needs constrained decoding, which herd "
                                                        "does not have yet",
                                                        "format"));
  }
  if (gen.prompt.empty()) {  // a load request
    json j = ollama::GenerateDone(model->name(), Now(), "", "load", {});
    return responder->Respond(HttpResponse::Json(200, j.dump()));
  }
  std::vector<int32_t> prompt;
  if (gen.raw) {
    prompt = model->tokenizer().Encode(gen.prompt, /*add_special=*/true, /*parse_special=*/true);
  } else {
    api::ChatRequest chat;
    if (!gen.system.empty()) chat.messages.push_back({"system", gen.system, "", ""});
    chat.messages.push_back({"user", gen.prompt, "", ""});
    if (!model->ChatPrompt(chat, &prompt, &error)) return RespondError(*responder, error);
  }
  Run(model, std::move(prompt), gen.options, false, gen.stream, responder);
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
  router.Get("/api/version", [](HttpRequest&, std::shared_ptr<Responder> r) {
    r->Respond(HttpResponse::Json(200, json{{"version", kVersion}}.dump()));
  });
  router.Get("/api/tags", RequireKey(keys, reject, [&models](HttpRequest&, std::shared_ptr<Responder> r) {
               json list = json::array();
               for (const auto& m : models.all()) {
                 list.push_back({{"name", m->name()},
                                 {"model", m->name()},
                                 {"modified_at", ollama::CreatedAt(m->created() * 1000000000LL)},
                                 {"size", m->file_size()},
                                 {"digest", ""},
                                 {"details", {{"format", "gguf"}, {"family", "llama"}}}});
               }
               r->Respond(HttpResponse::Json(200, json{{"models", list}}.dump()));
             }));
  router.Get("/", [](HttpRequest&, std::shared_ptr<Responder> r) {
    r->Respond(HttpResponse::Text(200, "herd is running (Ollama-compatible API)"));
  });
}

}  // namespace herd::server
