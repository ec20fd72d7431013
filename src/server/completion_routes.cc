#include "server/completion_routes.h"

#include <chrono>
#include <map>
#include <mutex>

#include "protocols/openai/chat_request.h"
#include "protocols/openai/completion_request.h"
#include "protocols/openai/completion_response.h"
#include "server/exchange_util.h"
#include "server/multi_request.h"
#include "server/replica_picker.h"

namespace herd::server {
namespace {

using nlohmann::json;

// Token strings may be partial UTF-8 characters: replaced (U+FFFD), never an exception.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

void RespondError(Responder& r, const api::ApiError& e) {
  r.Respond(ErrorResponse(api::HttpStatusFor(e.kind), openai::ErrorBody(e).dump(), e.kind));
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// One prompt as the engine runs it and as echo shows it.
struct PromptIn {
  std::vector<int32_t> tokens;
  std::string text;
};

struct ChoiceState {
  openai::CompletionChoiceOut out;  // the whole response's choice (accumulated)
  int32_t offset = 0;               // text_offset of the next generated token
  bool started = false;
};

// One /v1/completions request in flight: one engine request per prompt, drained (on the engine
// thread via notify, or once on the handler's thread) into SSE chunks or one response.
struct CompletionExchange {
  std::mutex mu;
  std::vector<std::shared_ptr<RequestStream>> events;  // [prompt]
  std::vector<PromptIn> prompts;
  std::shared_ptr<Responder> responder;
  std::shared_ptr<ResponseStream> sse;  // streaming only
  ModelLease model;                     // keeps the model loaded until the response ends
  openai::ResponseHeader header;
  int32_t n = 1;
  bool stream = false, include_usage = false, echo = false, logprobs = false, done = false;
  std::map<int32_t, ChoiceState> choices;  // by choice index (prompt * n + i)
  std::vector<openai::UsageOut> prompt_usage;
  int32_t completion_tokens = 0;
  Status error;

  void Write(const openai::CompletionChoiceOut& c) {
    sse->WriteSseData(Dump(openai::CompletionChunk(header, c, include_usage)));
  }

  // The echoed prompt's tokens: their logprobs are unknown (null) — the engine computes logits
  // only at positions it samples from.
  openai::LegacyLogprobs PromptLogprobs(const PromptIn& p) const {
    openai::LegacyLogprobs lp;
    int32_t offset = 0;
    for (int32_t id : p.tokens) {
      const std::string piece = model->tokenizer().TokenToPiece(id);
      lp.tokens.push_back(piece);
      lp.token_logprobs.push_back(std::nullopt);
      lp.top_logprobs.push_back(std::nullopt);
      lp.text_offset.push_back(offset);
      offset += openai::CodePoints(piece);
    }
    return lp;
  }

  ChoiceState& Choice(int32_t prompt, int32_t index) {
    ChoiceState& c = choices[prompt * n + index];
    if (c.started) return c;
    c.started = true;
    c.out.index = prompt * n + index;
    const PromptIn& p = prompts[static_cast<size_t>(prompt)];
    c.offset = openai::CodePoints(p.text);  // offsets count from the prompt's start, echoed or not
    openai::CompletionChoiceOut first{c.out.index, echo ? p.text : "", "", std::nullopt};
    if (logprobs) first.logprobs = echo ? PromptLogprobs(p) : openai::LegacyLogprobs{};
    if (stream) {
      if (echo) Write(first);
    } else {
      c.out = first;
    }
    return c;
  }

  openai::LegacyLogprobs TokenLogprobs(ChoiceState& c, const EngineEvent& ev) {
    const Tokenizer& t = model->tokenizer();
    openai::LegacyLogprobs lp;
    const std::string piece = t.TokenToPiece(ev.token);
    lp.tokens = {piece};
    lp.token_logprobs = {ev.logprob};
    std::vector<std::pair<std::string, float>> top = {{piece, ev.logprob}};
    for (const TokenLogprob& alt : ev.top) top.emplace_back(t.TokenToPiece(alt.id), alt.logprob);
    lp.top_logprobs = {std::move(top)};
    lp.text_offset = {c.offset};
    c.offset += openai::CodePoints(piece);
    return lp;
  }

  void Handle(int32_t prompt, const EngineEvent& ev) {
    ChoiceState& c = Choice(prompt, ev.index);
    openai::CompletionChoiceOut delta{c.out.index, ev.text, "", std::nullopt};
    if (ev.kind == EngineEvent::Kind::kToken) {
      if (logprobs) delta.logprobs = TokenLogprobs(c, ev);
    } else {
      delta.finish_reason = ev.finish == FinishReason::kLength ? "length" : "stop";
      openai::UsageOut& u = prompt_usage[static_cast<size_t>(prompt)];
      u.prompt_tokens = ev.usage.prompt_tokens;
      u.cached_tokens = ev.usage.cached_tokens;
      completion_tokens += ev.usage.completion_tokens;
      if (ev.finish == FinishReason::kError && error.ok()) error = ev.error;
    }
    if (stream) {
      if (!delta.text.empty() || delta.logprobs || !delta.finish_reason.empty()) Write(delta);
      return;
    }
    c.out.text += delta.text;
    if (delta.logprobs) c.out.logprobs->Append(*delta.logprobs);
    if (!delta.finish_reason.empty()) c.out.finish_reason = delta.finish_reason;
  }

  void Drain() {
    std::lock_guard lock(mu);
    if (done) return;
    bool ended = true;
    for (size_t p = 0; p < events.size(); ++p) {
      EngineEvent ev;
      while (events[p]->TryNext(&ev)) Handle(static_cast<int32_t>(p), ev);
      ended = ended && events[p]->ended();
    }
    if (!ended) return;
    done = true;
    for (const auto& s : events) s->SetNotify({});  // breaks the stream -> callback -> exchange cycles
    openai::UsageOut usage;
    for (const openai::UsageOut& u : prompt_usage) {
      usage.prompt_tokens += u.prompt_tokens;
      usage.cached_tokens += u.cached_tokens;
    }
    usage.completion_tokens = completion_tokens;
    if (stream) {
      if (include_usage) sse->WriteSseData(Dump(openai::CompletionUsageChunk(header, usage)));
      sse->Write(openai::kSseDone);
      sse->Finish();
      return;
    }
    if (!error.ok()) return RespondError(*responder, api::FromStatus(error));
    std::vector<openai::CompletionChoiceOut> out;
    for (auto& [i, c] : choices) out.push_back(c.out);
    responder->Respond(HttpResponse::Json(200, Dump(openai::Completion(header, out, usage))));
  }
};

void StartCompletion(ModelLease model, const api::CompletionRequest& req, const std::shared_ptr<Responder>& responder) {
  const Tokenizer& tok = model->tokenizer();
  auto x = std::make_shared<CompletionExchange>();
  std::vector<GenerationRequest> gens;
  for (const api::PromptInput& in : req.prompts) {
    PromptIn p;
    if (in.is_tokens) {
      p.tokens = in.tokens;
      DecodeOptions opts;
      opts.strip_leading_space = false;
      for (int32_t id : p.tokens) {
        if (id >= tok.n_tokens()) {
          return RespondError(*responder, api::InvalidRequest("token id " + std::to_string(id) +
                                                                  " is out of range for this model's vocabulary",
                                                              "prompt"));
        }
      }
      p.text = tok.Decode(p.tokens, opts);
    } else {
      p.text = in.text;
      p.tokens = tok.Encode(in.text, /*add_special=*/true, /*parse_special=*/true);
    }
    gens.push_back(model->ToGenerationRequest(p.tokens, req.options, /*default_max_tokens=*/16));
    x->prompts.push_back(std::move(p));
  }
  Engine& engine = model->engine();
  auto submitted = SubmitAll(engine, std::move(gens), [&](GenerationRequest g) { return engine.Submit(std::move(g)); });
  if (!submitted.ok()) return RespondError(*responder, api::FromStatus(submitted.status()));
  x->events = *std::move(submitted);
  x->responder = responder;
  x->model = model;
  x->header = {NewResponseId("cmpl-"), UnixNow(), model->name(), ""};
  x->n = req.options.n;
  x->stream = req.stream;
  x->include_usage = req.include_usage;
  x->echo = req.echo;
  x->logprobs = req.options.logprobs;
  x->prompt_usage.resize(x->prompts.size());
  if (x->stream) x->sse = responder->StartSse();
  ConnectAll(x, engine, *responder);
}

void Completions(ModelRegistry& models, HttpRequest& req, std::shared_ptr<Responder> responder) {
  const json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded()) return RespondError(*responder, api::InvalidRequest("the request body is not valid JSON"));
  api::CompletionRequest completion;
  api::ApiError error;
  if (!openai::ParseCompletionRequest(body, &completion, &error)) return RespondError(*responder, error);
  const std::string name = completion.model;
  const uint64_t affinity = AffinityKey(completion);
  models.Acquire(
      name, std::nullopt,
      [completion = std::move(completion), responder](ModelLease model, const api::ApiError& e) {
        if (!model) {
          return RespondError(
              *responder, e.kind == api::ErrorKind::kNotFound
                              ? api::ApiError{e.kind, "The model '" + completion.model + "' does not exist", "model",
                                              "model_not_found"}
                              : e);
        }
        StartCompletion(std::move(model), completion, responder);
      },
      affinity);
}

}  // namespace

void AddCompletionRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys) {
  const auto reject = [](const api::ApiError& e) { return HttpResponse::Json(401, openai::ErrorBody(e).dump()); };
  router.Post("/v1/completions", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                Completions(models, req, std::move(r));
              }));
}

}  // namespace herd::server
