#include "protocols/anthropic/messages.h"

#include <set>

namespace herd::anthropic {
namespace {

using nlohmann::json;

using Parser = api::Validator;

// Appends the text of `content` (a string or text blocks) to *text; cache_control on a block
// adds a breakpoint after it.
bool AppendContent(Parser& p, const json& content, const std::string& where, int32_t message_index, std::string* text,
                   std::vector<api::CacheBreakpoint>* breakpoints) {
  if (content.is_string()) {
    *text += content.get<std::string>();
    return true;
  }
  if (!content.is_array()) return p.Fail(where + ": content must be a string or an array of content blocks");
  for (size_t i = 0; i < content.size(); ++i) {
    const json& b = content[i];
    const std::string at = where + ".content." + std::to_string(i);
    if (!b.is_object() || !b.contains("type") || !b["type"].is_string()) return p.Fail(at + ": type is required");
    const std::string type = b["type"].get<std::string>();
    if (type != "text") return p.Fail(at + ": content blocks of type '" + type + "' are not supported yet (text only)");
    if (!b.contains("text") || !b["text"].is_string()) return p.Fail(at + ".text: Field required");
    *text += b["text"].get<std::string>();
    if (b.contains("cache_control") && !b["cache_control"].is_null()) {
      const json& cc = b["cache_control"];
      if (!cc.is_object() || cc.value("type", "") != "ephemeral") {
        return p.Fail(at + ".cache_control: type must be 'ephemeral'");
      }
      api::CacheBreakpoint bp;
      bp.message_index = message_index;
      bp.content_bytes = text->size();
      const std::string ttl = cc.value("ttl", "5m");
      if (ttl == "5m") {
        bp.ttl_seconds = 300;
      } else if (ttl == "1h") {
        bp.ttl_seconds = 3600;
      } else {
        return p.Fail(at + ".cache_control.ttl: must be '5m' or '1h'");
      }
      breakpoints->push_back(bp);
    }
  }
  return true;
}

}  // namespace

bool ParseMessagesRequest(const json& body, bool count_tokens, api::ChatRequest* out, api::ApiError* error) {
  Parser p{error};
  if (!body.is_object()) return p.Fail("the request body must be a JSON object");
  static const std::set<std::string> kKnown = {"model",       "messages", "system", "max_tokens", "stop_sequences",
                                               "temperature", "top_p",    "top_k",  "metadata",   "stream"};
  static const std::set<std::string> kNotYet = {"tools",       "tool_choice", "thinking",
                                                "mcp_servers", "container",   "service_tier"};
  for (const auto& [key, value] : body.items()) {
    if (kNotYet.count(key) != 0) return p.Fail(key + ": not supported by herd yet", key);
    if (kKnown.count(key) == 0) return p.Fail(key + ": Extra inputs are not permitted", key);
  }
  if (!body.contains("model") || !body["model"].is_string()) return p.Fail("model: Field required", "model");
  out->model = body["model"].get<std::string>();
  if (!count_tokens) {
    if (!body.contains("max_tokens")) return p.Fail("max_tokens: Field required", "max_tokens");
    if (!body["max_tokens"].is_number_integer() || body["max_tokens"].get<int64_t>() < 1 ||
        body["max_tokens"].get<int64_t>() > INT32_MAX) {
      return p.Fail("max_tokens: must be a positive integer", "max_tokens");
    }
    out->options.max_tokens = static_cast<int32_t>(body["max_tokens"].get<int64_t>());
  }
  if (body.contains("system") && !body["system"].is_null()) {
    api::ChatMessage sys;
    sys.role = "system";
    if (!AppendContent(p, body["system"], "system", 0, &sys.content, &out->cache_breakpoints)) return false;
    out->messages.push_back(std::move(sys));
  }
  if (!body.contains("messages") || !body["messages"].is_array()) {
    return p.Fail("messages: Field required (an array)", "messages");
  }
  const json& msgs = body["messages"];
  if (msgs.empty()) return p.Fail("messages: at least one message is required", "messages");
  for (size_t i = 0; i < msgs.size(); ++i) {
    const json& m = msgs[i];
    const std::string where = "messages." + std::to_string(i);
    if (!m.is_object()) return p.Fail(where + ": must be an object");
    const std::string role = m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
    if (role != "user" && role != "assistant") return p.Fail(where + ".role: must be 'user' or 'assistant'");
    if (!m.contains("content")) return p.Fail(where + ".content: Field required");
    api::ChatMessage msg;
    msg.role = role;
    const int32_t index = static_cast<int32_t>(out->messages.size());
    if (!AppendContent(p, m["content"], where, index, &msg.content, &out->cache_breakpoints)) return false;
    out->messages.push_back(std::move(msg));
  }
  if (body.contains("stop_sequences") && !body["stop_sequences"].is_null()) {
    const json& s = body["stop_sequences"];
    if (!s.is_array()) return p.Fail("stop_sequences: must be an array of strings", "stop_sequences");
    for (const json& x : s) {
      if (!x.is_string()) return p.Fail("stop_sequences: must be an array of strings", "stop_sequences");
      out->options.stop.push_back(x.get<std::string>());
    }
  }
  auto number = [&](const char* name, double lo, double hi, std::optional<float>* dst) {
    if (!body.contains(name) || body[name].is_null()) return true;
    if (!body[name].is_number() || body[name].get<double>() < lo || body[name].get<double>() > hi) {
      return p.Fail(std::string(name) + ": must be a number in [" + json(lo).dump() + ", " + json(hi).dump() + "]",
                    name);
    }
    *dst = body[name].get<float>();
    return true;
  };
  if (!number("temperature", 0, 1, &out->options.temperature)) return false;
  if (!number("top_p", 0, 1, &out->options.top_p)) return false;
  if (body.contains("top_k") && !body["top_k"].is_null()) {
    if (!body["top_k"].is_number_integer() || body["top_k"].get<int64_t>() < 0) {
      return p.Fail("top_k: must be a non-negative integer", "top_k");
    }
    out->options.top_k = static_cast<int32_t>(body["top_k"].get<int64_t>());
  }
  if (body.contains("metadata") && !body["metadata"].is_null()) {
    const json& md = body["metadata"];
    if (!md.is_object()) return p.Fail("metadata: must be an object", "metadata");
    if (md.contains("user_id") && md["user_id"].is_string()) out->user = md["user_id"].get<std::string>();
  }
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) return p.Fail("stream: must be a boolean", "stream");
    out->stream = body["stream"].get<bool>();
  }
  return true;
}

json ErrorBody(const api::ApiError& e) {
  const char* type = "invalid_request_error";
  switch (e.kind) {
    case api::ErrorKind::kInvalidRequest:
    case api::ErrorKind::kUnprocessable: type = "invalid_request_error"; break;
    case api::ErrorKind::kAuthentication: type = "authentication_error"; break;
    case api::ErrorKind::kNotFound: type = "not_found_error"; break;
    case api::ErrorKind::kTooLarge: type = "request_too_large"; break;
    case api::ErrorKind::kOverloaded:
    case api::ErrorKind::kUnavailable: type = "overloaded_error"; break;
    case api::ErrorKind::kInternal: type = "api_error"; break;
  }
  return json{{"type", "error"}, {"error", {{"type", type}, {"message", e.message}}}};
}

int HttpStatus(const api::ApiError& e) {
  return api::ShouldRetry(e.kind) ? 529 : api::HttpStatusFor(e.kind);
}

std::string StopReason(const std::string& finish_reason, const std::string& stop_sequence) {
  if (finish_reason == "length") return "max_tokens";
  return stop_sequence.empty() ? "end_turn" : "stop_sequence";
}

namespace {
json UsageJson(const MessageUsage& u) {
  return json{{"input_tokens", u.input_tokens},
              {"output_tokens", u.output_tokens},
              {"cache_creation_input_tokens", u.cache_creation_input_tokens},
              {"cache_read_input_tokens", u.cache_read_input_tokens}};
}
}  // namespace

json Message(const std::string& id, const std::string& model, const std::string& text, const std::string& stop_reason,
             const std::string& stop_sequence, const MessageUsage& usage) {
  return json{{"id", id},
              {"type", "message"},
              {"role", "assistant"},
              {"model", model},
              {"content", json::array({{{"type", "text"}, {"text", text}}})},
              {"stop_reason", stop_reason},
              {"stop_sequence", stop_sequence.empty() ? json(nullptr) : json(stop_sequence)},
              {"usage", UsageJson(usage)}};
}

std::string SseEvent(const json& event) {
  return "event: " + event["type"].get<std::string>() + "\ndata: " + event.dump() + "\n\n";
}

json MessageStart(const std::string& id, const std::string& model, const MessageUsage& usage) {
  return json{{"type", "message_start"},
              {"message",
               {{"id", id},
                {"type", "message"},
                {"role", "assistant"},
                {"model", model},
                {"content", json::array()},
                {"stop_reason", nullptr},
                {"stop_sequence", nullptr},
                {"usage", UsageJson(usage)}}}};
}

json ContentBlockStart(int32_t index) {
  return json{{"type", "content_block_start"}, {"index", index}, {"content_block", {{"type", "text"}, {"text", ""}}}};
}

json Ping() { return json{{"type", "ping"}}; }

json TextDelta(int32_t index, const std::string& text) {
  return json{{"type", "content_block_delta"}, {"index", index}, {"delta", {{"type", "text_delta"}, {"text", text}}}};
}

json ContentBlockStop(int32_t index) { return json{{"type", "content_block_stop"}, {"index", index}}; }

json MessageDelta(const std::string& stop_reason, const std::string& stop_sequence, int32_t output_tokens) {
  return json{
      {"type", "message_delta"},
      {"delta",
       {{"stop_reason", stop_reason}, {"stop_sequence", stop_sequence.empty() ? json(nullptr) : json(stop_sequence)}}},
      {"usage", {{"output_tokens", output_tokens}}}};
}

json MessageStop() { return json{{"type", "message_stop"}}; }

}  // namespace herd::anthropic
