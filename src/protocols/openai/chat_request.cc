#include "protocols/openai/chat_request.h"

#include <set>
#include <string>

#include "protocols/openai/request_fields.h"

namespace herd::openai {
namespace {

using nlohmann::json;

using Parser = FieldParser;

// Text of a message's content: a string, or an array of {"type": "text", "text": ...} parts.
bool ContentText(Parser& p, const json& content, const std::string& param, bool may_be_null, std::string* out) {
  if (content.is_null()) return may_be_null ? true : p.Fail(param + " must not be null", param);
  if (content.is_string()) {
    *out = content.get<std::string>();
    return true;
  }
  if (!content.is_array()) return p.Fail(param + " must be a string or an array of content parts", param);
  for (size_t i = 0; i < content.size(); ++i) {
    const json& part = content[i];
    const std::string pp = param + "[" + std::to_string(i) + "]";
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return p.Fail(pp + " must be an object with a type", pp);
    }
    const std::string type = part["type"].get<std::string>();
    if (type != "text") {
      return p.Fail("content parts of type '" + type + "' are not supported (text only)", pp + ".type");
    }
    if (!part.contains("text") || !part["text"].is_string()) return p.Fail(pp + ".text must be a string", pp + ".text");
    *out += part["text"].get<std::string>();
  }
  return true;
}

bool ParseMessages(Parser& p, const json& body, std::vector<api::ChatMessage>* out) {
  if (!body.contains("messages")) return p.Fail("messages is required", "messages");
  const json& msgs = body["messages"];
  if (!msgs.is_array()) return p.Fail("messages must be an array", "messages");
  if (msgs.empty()) return p.Fail("messages must not be empty", "messages");
  static const std::set<std::string> kRoles = {"system", "developer", "user", "assistant", "tool"};
  for (size_t i = 0; i < msgs.size(); ++i) {
    const json& m = msgs[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return p.Fail(param + " must be an object", param);
    if (!m.contains("role") || !m["role"].is_string()) return p.Fail(param + ".role must be a string", param + ".role");
    api::ChatMessage msg;
    msg.role = m["role"].get<std::string>();
    if (kRoles.count(msg.role) == 0) {
      return p.Fail("unknown role '" + msg.role + "' (system, developer, user, assistant, tool)", param + ".role");
    }
    if (m.contains("tool_calls") || m.contains("function_call") || m.contains("audio")) {
      return p.Fail("assistant tool calls are not supported yet", param + ".tool_calls");
    }
    if (!m.contains("content")) return p.Fail(param + ".content is required", param + ".content");
    if (!ContentText(p, m["content"], param + ".content", msg.role == "assistant", &msg.content)) return false;
    if (m.contains("name")) {
      if (!m["name"].is_string()) return p.Fail(param + ".name must be a string", param + ".name");
      msg.name = m["name"].get<std::string>();
    }
    if (msg.role == "tool") {
      if (!m.contains("tool_call_id") || !m["tool_call_id"].is_string()) {
        return p.Fail(param + ".tool_call_id must be a string", param + ".tool_call_id");
      }
      msg.tool_call_id = m["tool_call_id"].get<std::string>();
    }
    out->push_back(std::move(msg));
  }
  return true;
}

}  // namespace

bool ParseChatRequest(const json& body, api::ChatRequest* out, api::ApiError* error) {
  Parser p{error};
  if (!body.is_object()) return p.Fail("the request body must be a JSON object", "");
  static const std::set<std::string> kKnown = {"model",
                                               "messages",
                                               "max_tokens",
                                               "max_completion_tokens",
                                               "temperature",
                                               "top_p",
                                               "n",
                                               "stop",
                                               "seed",
                                               "presence_penalty",
                                               "frequency_penalty",
                                               "logit_bias",
                                               "logprobs",
                                               "top_logprobs",
                                               "response_format",
                                               "stream",
                                               "stream_options",
                                               "user",
                                               "top_k",
                                               "min_p",
                                               "typical_p",
                                               "repeat_penalty",
                                               "repeat_last_n",
                                               "ignore_eos",
                                               "store",
                                               "metadata",
                                               "service_tier"};
  static const std::set<std::string> kNotYet = {
      "tools", "tool_choice", "parallel_tool_calls", "functions",        "function_call",
      "audio", "modalities",  "prediction",          "reasoning_effort", "web_search_options"};
  for (const auto& [key, value] : body.items()) {
    if (kNotYet.count(key) != 0) return p.Fail(key + " is not supported by herd yet", key);
    if (kKnown.count(key) == 0) return p.Fail("unrecognized request argument: " + key, key);
  }
  if (!body.contains("model") || !body["model"].is_string()) return p.Fail("model must be a string", "model");
  out->model = body["model"].get<std::string>();
  if (!ParseMessages(p, body, &out->messages)) return false;
  api::GenerationOptions& o = out->options;
  if (!p.SamplingOptions(body, 1, &o)) return false;
  if (!p.Integer(body, "max_completion_tokens", 1, INT32_MAX, &o.max_tokens)) return false;
  if (!p.Bool(body, "logprobs", &o.logprobs)) return false;
  std::optional<int32_t> top_logprobs;
  if (!p.Integer(body, "top_logprobs", 0, 20, &top_logprobs)) return false;
  if (top_logprobs && !o.logprobs) return p.Fail("top_logprobs requires logprobs to be true", "top_logprobs");
  o.top_logprobs = top_logprobs.value_or(0);
  if (body.contains("response_format") && !body["response_format"].is_null()) {
    const json& rf = body["response_format"];
    if (!rf.is_object() || !rf.contains("type") || !rf["type"].is_string()) {
      return p.Fail("response_format must be an object with a type", "response_format");
    }
    const std::string type = rf["type"].get<std::string>();
    if (type == "json_object") {
      o.json_object = true;
    } else if (type != "text") {
      return p.Fail("response_format type '" + type + "' is not supported yet (text, json_object)",
                    "response_format.type");
    }
  }
  if (!p.Bool(body, "stream", &out->stream)) return false;
  if (!p.StreamOptions(body, out->stream, &out->include_usage)) return false;
  if (!p.String(body, "user", &out->user)) return false;
  if (body.contains("store") && body["store"].is_boolean() && body["store"].get<bool>()) {
    return p.Fail("store is not supported by herd (completions are not stored)", "store");
  }
  return true;
}

json ErrorBody(const api::ApiError& e) {
  const char* type = "invalid_request_error";
  switch (e.kind) {
    case api::ErrorKind::kInvalidRequest:
    case api::ErrorKind::kTooLarge:
    case api::ErrorKind::kUnprocessable:
    case api::ErrorKind::kNotFound: type = "invalid_request_error"; break;
    case api::ErrorKind::kAuthentication: type = "authentication_error"; break;
    case api::ErrorKind::kOverloaded:
    case api::ErrorKind::kUnavailable:
    case api::ErrorKind::kInternal: type = "server_error"; break;
  }
  json err = {{"message", e.message}, {"type", type}, {"param", nullptr}, {"code", nullptr}};
  if (!e.param.empty()) err["param"] = e.param;
  if (!e.code.empty()) err["code"] = e.code;
  return json{{"error", err}};
}

}  // namespace herd::openai
