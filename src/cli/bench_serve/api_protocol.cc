#include "cli/bench_serve/api_protocol.h"

#include <nlohmann/json.hpp>

namespace herd::bench {

using nlohmann::json;

std::optional<Api> ParseApi(std::string_view name) {
  if (name == "openai" || name == "openai-chat") return Api::kOpenAiChat;
  if (name == "completions" || name == "openai-completions") return Api::kOpenAiCompletions;
  if (name == "anthropic") return Api::kAnthropic;
  if (name == "ollama") return Api::kOllama;
  return std::nullopt;
}

const char* ApiName(Api api) {
  switch (api) {
    case Api::kOpenAiChat: return "openai";
    case Api::kOpenAiCompletions: return "completions";
    case Api::kAnthropic: return "anthropic";
    case Api::kOllama: return "ollama";
  }
  return "?";
}

const char* RequestPath(Api api) {
  switch (api) {
    case Api::kOpenAiChat: return "/v1/chat/completions";
    case Api::kOpenAiCompletions: return "/v1/completions";
    case Api::kAnthropic: return "/v1/messages";
    case Api::kOllama: return "/api/chat";
  }
  return "/";
}

bool SupportsIgnoreEos(Api api) { return api == Api::kOpenAiChat || api == Api::kOpenAiCompletions; }

Headers RequestHeaders(const RequestOptions& o) {
  Headers h;
  h.Set("Content-Type", "application/json");
  if (o.api == Api::kAnthropic) {
    h.Set("anthropic-version", "2023-06-01");
    if (!o.api_key.empty()) h.Set("x-api-key", o.api_key);
  } else if (!o.api_key.empty()) {
    h.Set("Authorization", "Bearer " + o.api_key);
  }
  return h;
}

std::string RequestBody(const RequestOptions& o, const std::vector<Message>& messages, int max_tokens) {
  json body = {{"model", o.model}, {"stream", true}};
  json msgs = json::array();
  for (const Message& m : messages) msgs.push_back({{"role", m.role}, {"content", m.content}});
  switch (o.api) {
    case Api::kOpenAiChat:
    case Api::kOpenAiCompletions:
      if (o.api == Api::kOpenAiChat) {
        body["messages"] = msgs;
      } else {
        std::string prompt;
        for (const Message& m : messages) prompt += (prompt.empty() ? "" : "\n\n") + m.content;
        body["prompt"] = prompt;
      }
      body["max_tokens"] = max_tokens;
      body["stream_options"] = {{"include_usage", true}};
      if (o.ignore_eos) body["ignore_eos"] = true;
      if (o.temperature) body["temperature"] = *o.temperature;
      break;
    case Api::kAnthropic: {
      json turns = json::array();
      std::string system;
      for (const Message& m : messages) {
        if (m.role == "system") {
          system += (system.empty() ? "" : "\n\n") + m.content;
        } else {
          turns.push_back({{"role", m.role}, {"content", m.content}});
        }
      }
      if (!system.empty()) body["system"] = system;
      body["messages"] = turns;
      body["max_tokens"] = max_tokens;
      if (o.temperature) body["temperature"] = *o.temperature;
      break;
    }
    case Api::kOllama: {
      body["messages"] = msgs;
      json options = {{"num_predict", max_tokens}};
      if (o.temperature) options["temperature"] = *o.temperature;
      body["options"] = options;
      break;
    }
  }
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

void StreamDecoder::Feed(std::string_view bytes, const std::function<void()>& on_delta) {
  size_t start = 0;
  while (start < bytes.size() && out_.parse_error.empty()) {
    const size_t nl = bytes.find('\n', start);
    if (nl == std::string_view::npos) {
      pending_.append(bytes.substr(start));
      return;
    }
    std::string_view piece = bytes.substr(start, nl - start);
    start = nl + 1;
    if (!pending_.empty()) {
      pending_.append(piece);
      std::string line = std::move(pending_);
      pending_.clear();
      Line(line, on_delta);
    } else {
      Line(piece, on_delta);
    }
  }
}

void StreamDecoder::Finish(const std::function<void()>& on_delta) {
  if (!pending_.empty()) {
    std::string line = std::move(pending_);
    pending_.clear();
    Line(line, on_delta);
  }
  if (api_ != Api::kOllama && sse_has_data_) SseEvent(on_delta);
}

void StreamDecoder::Line(std::string_view line, const std::function<void()>& on_delta) {
  if (!out_.parse_error.empty()) return;
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (api_ == Api::kOllama) {
    if (line.find_first_not_of(" \t") == std::string_view::npos) return;
    return Json("", line, on_delta);
  }
  // Server-Sent Events: fields until a blank line ends the event.
  if (line.empty()) return SseEvent(on_delta);
  if (line.front() == ':') return;  // a comment (keep-alive ping)
  const size_t colon = line.find(':');
  std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "event") {
    sse_event_ = std::string(value);
  } else if (field == "data") {
    if (sse_has_data_) sse_data_ += '\n';
    sse_data_.append(value);
    sse_has_data_ = true;
  }
}

void StreamDecoder::SseEvent(const std::function<void()>& on_delta) {
  std::string event = std::move(sse_event_), data = std::move(sse_data_);
  const bool has_data = sse_has_data_;
  sse_event_.clear();
  sse_data_.clear();
  sse_has_data_ = false;
  if (!has_data) return;
  if (data == "[DONE]") {
    out_.complete = true;
    return;
  }
  Json(event, data, on_delta);
}

namespace {

int64_t IntOr(const json& j, const char* key, int64_t fallback) {
  if (j.is_object() && j.contains(key) && j[key].is_number_integer()) return j[key].get<int64_t>();
  return fallback;
}

std::string StringOr(const json& j, const char* key) {
  if (j.is_object() && j.contains(key) && j[key].is_string()) return j[key].get<std::string>();
  return "";
}

std::string ErrorText(const json& e) {
  if (e.is_string()) return e.get<std::string>();
  const std::string m = StringOr(e, "message");
  return m.empty() ? e.dump() : m;
}

}  // namespace

void StreamDecoder::Json(std::string_view event, std::string_view data, const std::function<void()>& on_delta) {
  const json j = json::parse(data, nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    out_.parse_error = "not a JSON object: " + std::string(data.substr(0, 120));
    return;
  }
  auto delta = [&](const std::string& text) {
    if (text.empty()) return;
    out_.text += text;
    ++out_.deltas;
    if (on_delta) on_delta();
  };
  if (j.contains("error") && !j["error"].is_null()) {
    out_.error = ErrorText(j["error"]);
    return;
  }
  switch (api_) {
    case Api::kOpenAiChat:
    case Api::kOpenAiCompletions: {
      if (j.contains("usage") && j["usage"].is_object()) {
        out_.usage_prompt_tokens = IntOr(j["usage"], "prompt_tokens", out_.usage_prompt_tokens);
        out_.usage_output_tokens = IntOr(j["usage"], "completion_tokens", out_.usage_output_tokens);
      }
      if (!j.contains("choices") || !j["choices"].is_array()) {
        out_.parse_error = "a chunk without choices";
        return;
      }
      for (const json& c : j["choices"]) {
        if (api_ == Api::kOpenAiChat) {
          const json d = c.value("delta", json::object());
          delta(StringOr(d, "reasoning_content") + StringOr(d, "content"));
        } else {
          delta(StringOr(c, "text"));
        }
        const std::string finish = StringOr(c, "finish_reason");
        if (!finish.empty()) out_.finish_reason = finish;
      }
      return;
    }
    case Api::kAnthropic: {
      const std::string type = event.empty() ? StringOr(j, "type") : std::string(event);
      if (type == "message_start") {
        const json u = j.value("message", json::object()).value("usage", json::object());
        if (u.contains("input_tokens")) {
          out_.usage_prompt_tokens = IntOr(u, "input_tokens", 0) + IntOr(u, "cache_read_input_tokens", 0) +
                                     IntOr(u, "cache_creation_input_tokens", 0);
        }
      } else if (type == "content_block_delta") {
        const json d = j.value("delta", json::object());
        delta(StringOr(d, "text") + StringOr(d, "thinking"));
      } else if (type == "message_delta") {
        const json u = j.value("usage", json::object());
        out_.usage_output_tokens = IntOr(u, "output_tokens", out_.usage_output_tokens);
        const std::string stop = StringOr(j.value("delta", json::object()), "stop_reason");
        if (!stop.empty()) out_.finish_reason = stop;
      } else if (type == "message_stop") {
        out_.complete = true;
      }
      return;
    }
    case Api::kOllama: {
      delta(StringOr(j.value("message", json::object()), "content") + StringOr(j, "response"));
      if (j.value("done", false)) {
        out_.complete = true;
        out_.finish_reason = StringOr(j, "done_reason");
        out_.usage_prompt_tokens = IntOr(j, "prompt_eval_count", out_.usage_prompt_tokens);
        out_.usage_output_tokens = IntOr(j, "eval_count", out_.usage_output_tokens);
      }
      return;
    }
  }
}

std::string ErrorMessageOf(std::string_view body) {
  std::string m;
  const json j = json::parse(body, nullptr, false);
  if (!j.is_discarded() && j.is_object() && j.contains("error")) {
    m = ErrorText(j["error"]);
  } else {
    m = std::string(body);
  }
  if (m.size() > 200) m = m.substr(0, 200) + "...";
  return m;
}

}  // namespace herd::bench
