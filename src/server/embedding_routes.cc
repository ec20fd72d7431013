#include "server/embedding_routes.h"

#include <chrono>
#include <functional>
#include <mutex>
#include <optional>

#include "protocols/ollama/embed.h"
#include "protocols/ollama/ollama_api.h"
#include "protocols/openai/chat_request.h"
#include "protocols/openai/embeddings.h"
#include "server/exchange_util.h"
#include "server/multi_request.h"

namespace herd::server {

Pooling PoolingFromMetadata(const GgufFile& file, const std::string& arch) {
  const std::string key = arch + ".pooling_type";
  if (!file.Has(key)) return Pooling::kMean;
  auto type = file.GetU32(key);
  if (!type.ok()) {
    auto i = file.GetI64(key);
    if (!i.ok()) return Pooling::kMean;
    type = static_cast<uint32_t>(*i);
  }
  switch (*type) {
    case 2: return Pooling::kCls;
    case 3: return Pooling::kLast;
    default: return Pooling::kMean;
  }
}

namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

int64_t Nanos(Clock::duration d) { return std::chrono::duration_cast<std::chrono::nanoseconds>(d).count(); }

struct Embedded {
  std::vector<std::vector<float>> vectors;  // [input]
  int32_t prompt_tokens = 0;                // summed over the inputs (after truncation)
};

// Formats the success response, or an error in the API's shape.
using Respond = std::function<HttpResponse(const Embedded&)>;
using Fail = std::function<void(Responder&, const api::ApiError&)>;

// One embedding request in flight: one engine request per input.
struct EmbeddingExchange {
  std::mutex mu;
  std::vector<std::shared_ptr<RequestStream>> events;  // [input]
  std::shared_ptr<Responder> responder;
  ModelLease model;  // keeps the model loaded until the response ends
  Respond respond;
  Fail fail;
  Embedded result;
  Status error;
  bool done = false;

  void Drain() {
    std::lock_guard lock(mu);
    if (done) return;
    bool ended = true;
    for (size_t i = 0; i < events.size(); ++i) {
      EngineEvent ev;
      while (events[i]->TryNext(&ev)) {
        if (ev.kind != EngineEvent::Kind::kFinished) continue;
        if (ev.finish == FinishReason::kStop) {
          result.vectors[i] = std::move(ev.embedding);
          result.prompt_tokens += ev.usage.prompt_tokens;
        } else if (error.ok()) {
          error = ev.finish == FinishReason::kError ? ev.error : Internal("the request was cancelled");
        }
      }
      ended = ended && events[i]->ended();
    }
    if (!ended) return;
    done = true;
    for (const auto& s : events) s->SetNotify({});  // breaks the stream -> callback -> exchange cycles
    if (!error.ok()) return fail(*responder, api::FromStatus(error));
    responder->Respond(respond(result));
  }
};

// Tokenizes, checks and submits every input; answers at once when there is none.
void Start(ModelLease model, const api::EmbeddingRequest& req, const std::shared_ptr<Responder>& responder,
           Respond respond, Fail fail) {
  const ModelConfig& c = model->config();
  if (req.dimensions && *req.dimensions != c.n_embd) {
    return fail(*responder, api::InvalidRequest("dimensions must equal this model's embedding size (" +
                                                    std::to_string(c.n_embd) + "); herd does not shorten vectors",
                                                "dimensions"));
  }
  const Tokenizer& tok = model->tokenizer();
  const Pooling pooling = PoolingFromMetadata(model->file(), c.arch);
  const int32_t limit = std::min(req.num_ctx.value_or(model->n_ctx()), model->n_ctx());
  std::vector<EmbeddingRequest> requests;
  for (size_t i = 0; i < req.inputs.size(); ++i) {
    const api::PromptInput& in = req.inputs[i];
    EmbeddingRequest e;
    e.prompt = in.is_tokens ? in.tokens : tok.Encode(in.text, /*add_special=*/true, /*parse_special=*/true);
    e.pooling = pooling;
    e.normalize = req.normalize;
    e.truncate = req.truncate;
    if (static_cast<int32_t>(e.prompt.size()) > limit) {
      if (!req.truncate) {
        api::ApiError err =
            api::FromStatus(OutOfRange("input " + std::to_string(i) + " has " + std::to_string(e.prompt.size()) +
                                       " tokens, more than the context length (" + std::to_string(limit) + ")"));
        err.param = "input";
        return fail(*responder, err);
      }
      e.prompt.resize(static_cast<size_t>(limit));
    }
    requests.push_back(std::move(e));
  }
  auto x = std::make_shared<EmbeddingExchange>();
  x->result.vectors.resize(requests.size());
  x->responder = responder;
  x->model = model;
  x->respond = std::move(respond);
  x->fail = std::move(fail);
  if (requests.empty()) return responder->Respond(x->respond(x->result));
  Engine& engine = model->engine();
  auto submitted =
      SubmitAll(engine, std::move(requests), [&](EmbeddingRequest e) { return engine.SubmitEmbedding(std::move(e)); });
  if (!submitted.ok()) return x->fail(*responder, api::FromStatus(submitted.status()));
  x->events = *std::move(submitted);
  ConnectAll(x, engine, *responder);
}

// ---- OpenAI ----

void OpenAiFail(Responder& r, const api::ApiError& e) {
  r.Respond(ErrorResponse(api::HttpStatusFor(e.kind), openai::ErrorBody(e).dump(), e.kind));
}

void OpenAiEmbeddings(ModelRegistry& models, HttpRequest& req, std::shared_ptr<Responder> responder) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return OpenAiFail(*responder, api::InvalidRequest("the request body is not valid JSON"));
  api::EmbeddingRequest er;
  api::ApiError error;
  if (!openai::ParseEmbeddingRequest(body, &er, &error)) return OpenAiFail(*responder, error);
  const std::string name = er.model;
  models.Acquire(name, std::nullopt, [er = std::move(er), responder](ModelLease model, const api::ApiError& e) {
    if (!model) {
      return OpenAiFail(*responder, e.kind == api::ErrorKind::kNotFound
                                        ? api::ApiError{e.kind, "The model '" + er.model + "' does not exist", "model",
                                                        "model_not_found"}
                                        : e);
    }
    const std::string served = model->name();
    const bool base64 = er.base64;
    Start(
        std::move(model), er, responder,
        [served, base64](const Embedded& r) {
          return HttpResponse::Json(200, openai::EmbeddingList(served, r.vectors, base64, r.prompt_tokens).dump());
        },
        OpenAiFail);
  });
}

// ---- Ollama ----

void OllamaFail(Responder& r, const api::ApiError& e) {
  r.Respond(ErrorResponse(api::HttpStatusFor(e.kind), ollama::ErrorBody(e).dump(), e.kind));
}

// /api/embed (legacy = false) and /api/embeddings (legacy = true).
void OllamaEmbed(ModelRegistry& models, HttpRequest& req, std::shared_ptr<Responder> responder, bool legacy) {
  const auto started = Clock::now();
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return OllamaFail(*responder, api::InvalidRequest("invalid JSON in the request body"));
  api::EmbeddingRequest er;
  api::ApiError error;
  const bool ok =
      legacy ? ollama::ParseEmbeddingsRequest(body, &er, &error) : ollama::ParseEmbedRequest(body, &er, &error);
  if (!ok) return OllamaFail(*responder, error);
  const std::string name = er.model;
  const std::optional<double> keep_alive = er.keep_alive_seconds;  // before `er` moves into the callback
  models.Acquire(
      name, keep_alive, [er = std::move(er), responder, started, legacy](ModelLease model, const api::ApiError& e) {
        if (!model) {
          return OllamaFail(*responder, e.kind == api::ErrorKind::kNotFound
                                            ? api::ApiError{e.kind, "model '" + er.model + "' not found", "model", ""}
                                            : e);
        }
        const int64_t load_ns = Nanos(Clock::now() - started);
        const std::string name = er.model;
        Start(
            std::move(model), er, responder,
            [name, started, load_ns, legacy](const Embedded& r) {
              if (legacy) {
                return HttpResponse::Json(
                    200, ollama::EmbeddingsResponse(r.vectors.empty() ? std::vector<float>{} : r.vectors[0]).dump());
              }
              return HttpResponse::Json(
                  200, ollama::EmbedResponse(name, r.vectors, Nanos(Clock::now() - started), load_ns, r.prompt_tokens)
                           .dump());
            },
            OllamaFail);
      });
}

}  // namespace

void AddOpenAiEmbeddingRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys) {
  const auto reject = [](const api::ApiError& e) { return HttpResponse::Json(401, openai::ErrorBody(e).dump()); };
  router.Post("/v1/embeddings", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                OpenAiEmbeddings(models, req, std::move(r));
              }));
}

void AddOllamaEmbeddingRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys) {
  const auto reject = [](const api::ApiError& e) { return HttpResponse::Json(401, ollama::ErrorBody(e).dump()); };
  router.Post("/api/embed", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                OllamaEmbed(models, req, std::move(r), false);
              }));
  router.Post("/api/embeddings", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                OllamaEmbed(models, req, std::move(r), true);
              }));
}

}  // namespace herd::server
