// POST /tokenize, /detokenize and /apply-template (shapes in herd_routes.h).
#include <nlohmann/json.hpp>

#include "protocols/openai/chat_request.h"
#include "server/herd_routes.h"

namespace herd::server {
namespace {

using nlohmann::json;

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

bool ValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    size_t n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07;
    } else {
      return false;
    }
    for (size_t k = 1; k <= n; ++k) {
      if (i + k >= s.size()) return false;
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    static constexpr uint32_t kMin[] = {0, 0x80, 0x800, 0x10000};
    if (cp < kMin[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

// The body as a JSON object, and the model it names ("model", or the only registered model).
bool ParseBody(const HttpRequest& req, const ModelRegistry& models, json* body, std::string* model,
               api::ApiError* error) {
  *body = json::parse(req.body, nullptr, false);
  if (body->is_discarded() || !body->is_object()) {
    *error = api::InvalidRequest("the request body is not a JSON object");
    return false;
  }
  if (body->contains("model")) {
    if (!(*body)["model"].is_string()) {
      *error = api::InvalidRequest("model must be a string", "model");
      return false;
    }
    *model = (*body)["model"].get<std::string>();
    return true;
  }
  const std::vector<ModelEntry> entries = models.Entries();
  if (entries.size() != 1) {
    *error = api::InvalidRequest("model is required when the server has more than one model", "model");
    return false;
  }
  *model = entries[0].name;
  (*body)["model"] = *model;
  return true;
}

bool OptionalBool(const json& body, const char* name, bool fallback, bool* out, api::ApiError* error) {
  *out = fallback;
  if (!body.contains(name) || body[name].is_null()) return true;
  if (!body[name].is_boolean()) {
    *error = api::InvalidRequest(std::string(name) + " must be a boolean", name);
    return false;
  }
  *out = body[name].get<bool>();
  return true;
}

// Acquires the model and runs `fn(model)`; registry errors (404 unknown, 503 busy, 500 load
// failure) answer in herd's error shape.
template <class Fn>
void WithModel(ModelRegistry& models, const std::string& name, const std::shared_ptr<Responder>& r, Fn fn) {
  models.Acquire(name, std::nullopt, [r, name, fn = std::move(fn)](ModelLease model, const api::ApiError& e) {
    if (!model) {
      api::ApiError err = e;
      if (err.kind == api::ErrorKind::kNotFound) err.message = "model '" + name + "' not found";
      return r->Respond(HerdError(err));
    }
    fn(*model);
  });
}

void Tokenize(ModelRegistry& models, HttpRequest& req, const std::shared_ptr<Responder>& r) {
  json body;
  std::string name;
  api::ApiError error;
  if (!ParseBody(req, models, &body, &name, &error)) return r->Respond(HerdError(error));
  const char* field = body.contains("content") ? "content" : "prompt";
  if (!body.contains(field) || !body[field].is_string()) {
    return r->Respond(HerdError(api::InvalidRequest("content must be a string", "content")));
  }
  bool add_special = false, parse_special = true, with_pieces = false;
  if (!OptionalBool(body, "add_special", false, &add_special, &error) ||
      !OptionalBool(body, "parse_special", true, &parse_special, &error) ||
      !OptionalBool(body, "with_pieces", false, &with_pieces, &error)) {
    return r->Respond(HerdError(error));
  }
  std::string text = body[field].get<std::string>();
  WithModel(models, name, r, [r, text = std::move(text), add_special, parse_special, with_pieces](ModelInstance& m) {
    const Tokenizer& tok = m.tokenizer();
    const std::vector<int32_t> ids = tok.Encode(text, add_special, parse_special);
    json tokens = json::array();
    for (int32_t id : ids) {
      if (!with_pieces) {
        tokens.push_back(id);
        continue;
      }
      const std::string piece = tok.TokenToPiece(id, /*render_special=*/true);
      json p = json::array();
      if (ValidUtf8(piece)) {
        p = piece;
      } else {
        for (char c : piece) p.push_back(static_cast<int>(static_cast<unsigned char>(c)));
      }
      tokens.push_back(json{{"id", id}, {"piece", p}});
    }
    r->Respond(HttpResponse::Json(200, Dump(json{{"tokens", tokens}})));
  });
}

void Detokenize(ModelRegistry& models, HttpRequest& req, const std::shared_ptr<Responder>& r) {
  json body;
  std::string name;
  api::ApiError error;
  if (!ParseBody(req, models, &body, &name, &error)) return r->Respond(HerdError(error));
  if (!body.contains("tokens") || !body["tokens"].is_array()) {
    return r->Respond(HerdError(api::InvalidRequest("tokens must be an array of token ids", "tokens")));
  }
  std::vector<int32_t> ids;
  for (size_t i = 0; i < body["tokens"].size(); ++i) {
    const json& t = body["tokens"][i];
    if (!t.is_number_integer()) {
      return r->Respond(HerdError(api::InvalidRequest("tokens must be an array of token ids", "tokens")));
    }
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id > INT32_MAX) {
      return r->Respond(
          HerdError(api::InvalidRequest("token id " + std::to_string(id) + " is out of range", "tokens")));
    }
    ids.push_back(static_cast<int32_t>(id));
  }
  WithModel(models, name, r, [r, ids = std::move(ids)](ModelInstance& m) {
    const Tokenizer& tok = m.tokenizer();
    for (int32_t id : ids) {
      if (id >= tok.n_tokens()) {
        return r->Respond(HerdError(api::InvalidRequest(
            "token id " + std::to_string(id) + " is out of range [0, " + std::to_string(tok.n_tokens()) + ")",
            "tokens")));
      }
    }
    DecodeOptions opts;
    opts.render_special = true;
    r->Respond(HttpResponse::Json(200, Dump(json{{"content", tok.Decode(ids, opts)}})));
  });
}

void ApplyTemplate(ModelRegistry& models, HttpRequest& req, const std::shared_ptr<Responder>& r) {
  json body;
  std::string name;
  api::ApiError error;
  if (!ParseBody(req, models, &body, &name, &error)) return r->Respond(HerdError(error));
  api::ChatRequest chat;
  if (!openai::ParseChatRequest(body, &chat, &error)) return r->Respond(HerdError(error));
  WithModel(models, name, r, [r, chat = std::move(chat)](ModelInstance& m) {
    std::string prompt;
    api::ApiError e;
    if (!m.ChatText(chat, &prompt, &e)) return r->Respond(HerdError(e));
    r->Respond(HttpResponse::Json(200, Dump(json{{"prompt", prompt}})));
  });
}

}  // namespace

void AddTokenRoutes(Router& router, ModelRegistry& models, const ApiKeys* keys) {
  const auto reject = [](const api::ApiError& e) { return HerdError(e); };
  router.Post("/tokenize", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                Tokenize(models, req, r);
              }));
  router.Post("/detokenize", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                Detokenize(models, req, r);
              }));
  router.Post("/apply-template", RequireKey(keys, reject, [&models](HttpRequest& req, std::shared_ptr<Responder> r) {
                ApplyTemplate(models, req, r);
              }));
}

}  // namespace herd::server
