#include "server/openai_routes.h"

#include <chrono>
#include <map>
#include <mutex>

#include "protocols/openai/chat_request.h"
#include "protocols/openai/chat_response.h"
#include "server/completion_routes.h"
#include "server/embedding_routes.h"
#include "server/exchange_util.h"
#include "server/replica_picker.h"
#include "tokenizer/detokenizer.h"

namespace herd::server {
namespace {

using nlohmann::json;

void RespondError(Responder& r, const api::ApiError& e) {
  r.Respond(ErrorResponse(api::HttpStatusFor(e.kind), openai::ErrorBody(e).dump(), e.kind));
}

api::ApiError ModelNotFound(const std::string& model) {
  return {api::ErrorKind::kNotFound, "The model '" + model + "' does not exist", "model", "model_not_found"};
}

// Registry errors in OpenAI's words.
api::ApiError AcquireError(const api::ApiError& e, const std::string& model) {
  return e.kind == api::ErrorKind::kNotFound ? ModelNotFound(model) : e;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string FinishName(FinishReason r) { return r == FinishReason::kLength ? "length" : "stop"; }

// One chat completion in flight: drains engine events (on the engine thread via notify, or
// once on the handler's thread) and writes them out.
struct ChatExchange {
  std::mutex mu;
  std::shared_ptr<RequestStream> events;
  std::shared_ptr<Responder> responder;
  std::shared_ptr<ResponseStream> sse;  // streaming only
  ModelLease model;
  openai::ResponseHeader header;
  bool stream = false, include_usage = false, logprobs = false, done = false;
  std::map<int32_t, openai::ChoiceOut> choices;
  std::map<int32_t, bool> started;
  openai::UsageOut usage;

  openai::TokenLogprobOut Logprob(int32_t id, float lp, const std::vector<TokenLogprob>& top) const {
    openai::TokenLogprobOut t;
    // A byte-level token may be part of a character: `token` must be valid UTF-8 (JSON), so
    // malformed bytes become U+FFFD there; `bytes` carries the exact bytes, as OpenAI does.
    const std::string piece = model->tokenizer().TokenToPiece(id);
    t.token = SanitizeUtf8(piece);
    t.logprob = lp;
    t.bytes.assign(piece.begin(), piece.end());
    for (const auto& alt : top) {
      openai::TokenLogprobOut a;
      const std::string alt_piece = model->tokenizer().TokenToPiece(alt.id);
      a.token = SanitizeUtf8(alt_piece);
      a.logprob = alt.logprob;
      a.bytes.assign(alt_piece.begin(), alt_piece.end());
      t.top.push_back(std::move(a));
    }
    return t;
  }

  void Drain() {
    std::lock_guard lock(mu);
    if (done) return;
    EngineEvent ev;
    while (events->TryNext(&ev)) {
      openai::ChoiceOut& c = choices[ev.index];
      c.index = ev.index;
      std::optional<std::vector<openai::TokenLogprobOut>> lp;
      if (ev.kind == EngineEvent::Kind::kToken && logprobs) lp = std::vector{Logprob(ev.token, ev.logprob, ev.top)};
      if (ev.kind == EngineEvent::Kind::kFinished) {
        c.finish_reason = FinishName(ev.finish);
        usage.prompt_tokens = ev.usage.prompt_tokens;
        usage.cached_tokens = ev.usage.cached_tokens;
        usage.completion_tokens += ev.usage.completion_tokens;
      }
      if (!stream) {
        c.text += ev.text;
        if (lp) {
          if (!c.logprobs) c.logprobs.emplace();
          c.logprobs->push_back((*lp)[0]);
        } else if (logprobs && !c.logprobs) {
          c.logprobs.emplace();
        }
        continue;
      }
      const bool first = !started[ev.index];
      started[ev.index] = true;
      if (first)
        sse->WriteSseData(openai::ChatChunk(header, ev.index, true, "", "", std::nullopt, include_usage).dump());
      if (!ev.text.empty() || lp) {
        sse->WriteSseData(openai::ChatChunk(header, ev.index, false, ev.text, "", lp, include_usage).dump());
      }
      if (ev.kind == EngineEvent::Kind::kFinished) {
        sse->WriteSseData(
            openai::ChatChunk(header, ev.index, false, "", c.finish_reason, std::nullopt, include_usage).dump());
      }
    }
    if (!events->ended()) return;
    done = true;
    events->SetNotify({});  // breaks the stream -> callback -> exchange cycle
    if (stream) {
      if (include_usage) sse->WriteSseData(openai::UsageChunk(header, usage).dump());
      sse->Write(openai::kSseDone);
      sse->Finish();
      return;
    }
    std::vector<openai::ChoiceOut> out;
    for (auto& [i, c] : choices) out.push_back(c);
    responder->Respond(HttpResponse::Json(200, openai::ChatCompletion(header, out, usage).dump()));
  }
};

void StartChat(ModelLease model, const api::ChatRequest& chat, const std::shared_ptr<Responder>& responder);

void ChatCompletions(ModelRegistry& models, HttpRequest& req, std::shared_ptr<Responder> responder) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return RespondError(*responder, api::InvalidRequest("the request body is not valid JSON"));
  api::ChatRequest chat;
  api::ApiError error;
  if (!openai::ParseChatRequest(body, &chat, &error)) return RespondError(*responder, error);
  const std::string name = chat.model;
  const uint64_t affinity = AffinityKey(chat);
  models.Acquire(
      name, std::nullopt,
      [chat = std::move(chat), responder](ModelLease model, const api::ApiError& e) mutable {
        if (!model) return RespondError(*responder, AcquireError(e, chat.model));
        StartChat(std::move(model), chat, responder);
      },
      affinity);
}

void StartChat(ModelLease model, const api::ChatRequest& chat, const std::shared_ptr<Responder>& responder) {
  api::ApiError error;
  std::vector<int32_t> prompt;
  if (!model->ChatPrompt(chat, &prompt, &error)) return RespondError(*responder, error);
  auto submitted = model->engine().Submit(model->ToGenerationRequest(std::move(prompt), chat.options, -1));
  if (!submitted.ok()) return RespondError(*responder, api::FromStatus(submitted.status()));
  auto x = std::make_shared<ChatExchange>();
  x->events = *submitted;
  x->responder = responder;
  x->model = model;
  x->header = {NewResponseId("chatcmpl-"), UnixNow(), model->name(), ""};
  x->stream = chat.stream;
  x->include_usage = chat.include_usage;
  x->logprobs = chat.options.logprobs;
  if (x->stream) x->sse = responder->StartSse();
  Connect(x, model->engine(), *responder);
}

json ModelJson(const ModelEntry& m) {
  return json{{"id", m.name}, {"object", "model"}, {"created", m.modified}, {"owned_by", "herd"}};
}

}  // namespace

void AddOpenAiRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys) {
  const auto reject = [](const api::ApiError& e) { return HttpResponse::Json(401, openai::ErrorBody(e).dump()); };
  router.Post("/v1/chat/completions",
              RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                ChatCompletions(models, req, std::move(r));
              }));
  AddCompletionRoutes(router, models, keys);       // /v1/completions
  AddOpenAiEmbeddingRoutes(router, models, keys);  // /v1/embeddings
  router.Get("/v1/models", RequireKey(keys, reject, [&models](HttpRequest&, std::shared_ptr<Responder> r) {
               json data = json::array();
               for (const auto& m : models.Entries()) data.push_back(ModelJson(m));
               r->Respond(HttpResponse::Json(200, json{{"object", "list"}, {"data", data}}.dump()));
             }));
  router.Get("/v1/models/{id}", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
               const std::string id = req.PathParam("id");
               const auto m = models.Find(id);
               if (!m) return RespondError(*r, ModelNotFound(id));
               r->Respond(HttpResponse::Json(200, ModelJson(*m).dump()));
             }));
}

}  // namespace herd::server
