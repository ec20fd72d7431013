#include "protocols/ollama/ollama_api.h"

#include <cmath>
#include <cstdio>
#include <ctime>
#include <set>

namespace herd::ollama {
namespace {

using nlohmann::json;

using Parser = api::Validator;

// Runner options Ollama accepts that do not apply to herd (hardware and memory placement are
// herd's own decisions): accepted and ignored, as Ollama ignores options a runner lacks.
const std::set<std::string>& IgnoredOptions() {
  static const std::set<std::string> k = {"num_gpu",  "main_gpu",   "num_thread", "num_batch",
                                          "use_mmap", "use_mlock",  "numa",       "low_vram",
                                          "f16_kv",   "vocab_only", "num_keep",   "penalize_newline"};
  return k;
}

bool ParseOptions(Parser& p, const json& body, api::GenerationOptions* o) {
  if (!body.contains("options") || body["options"].is_null()) return true;
  const json& opts = body["options"];
  if (!opts.is_object()) return p.Fail("options must be an object", "options");
  for (const auto& [key, v] : opts.items()) {
    const std::string where = "options." + key;
    auto num = [&](std::optional<float>* dst) {
      if (!v.is_number()) return p.Fail(where + " must be a number", where);
      *dst = v.get<float>();
      return true;
    };
    auto integer = [&](std::optional<int32_t>* dst) {
      if (!v.is_number_integer()) return p.Fail(where + " must be an integer", where);
      *dst = static_cast<int32_t>(v.get<int64_t>());
      return true;
    };
    bool ok = true;
    if (key == "temperature") {
      ok = num(&o->temperature);
    } else if (key == "top_p") {
      ok = num(&o->top_p);
    } else if (key == "min_p") {
      ok = num(&o->min_p);
    } else if (key == "typical_p") {
      ok = num(&o->typical_p);
    } else if (key == "repeat_penalty") {
      ok = num(&o->repeat_penalty);
    } else if (key == "presence_penalty") {
      ok = num(&o->presence_penalty);
    } else if (key == "frequency_penalty") {
      ok = num(&o->frequency_penalty);
    } else if (key == "top_k") {
      ok = integer(&o->top_k);
    } else if (key == "repeat_last_n") {
      ok = integer(&o->repeat_last_n);
    } else if (key == "num_predict") {
      std::optional<int32_t> n;
      ok = integer(&n);
      if (ok && n && *n >= 0) o->max_tokens = *n;  // -1 (and -2): until the context is full
    } else if (key == "num_ctx") {
      ok = integer(&o->num_ctx);
    } else if (key == "seed") {
      if (!v.is_number_integer()) return p.Fail(where + " must be an integer", where);
      o->seed = static_cast<uint64_t>(v.get<int64_t>());
    } else if (key == "stop") {
      if (!v.is_array()) return p.Fail(where + " must be an array of strings", where);
      for (const json& s : v) {
        if (!s.is_string()) return p.Fail(where + " must be an array of strings", where);
        o->stop.push_back(s.get<std::string>());
      }
    } else if (IgnoredOptions().count(key) == 0) {
      return p.Fail("unsupported option: " + key, where);
    }
    if (!ok) return false;
  }
  return true;
}

bool ParseCommon(Parser& p, const json& body, std::string* model, api::GenerationOptions* o, bool* stream,
                 std::optional<double>* keep_alive) {
  if (!body.contains("model") || !body["model"].is_string() || body["model"].get<std::string>().empty()) {
    return p.Fail("model is required", "model");
  }
  *model = body["model"].get<std::string>();
  *stream = true;
  if (body.contains("stream") && !body["stream"].is_null()) {
    if (!body["stream"].is_boolean()) return p.Fail("stream must be a boolean", "stream");
    *stream = body["stream"].get<bool>();
  }
  if (body.contains("format") && !body["format"].is_null()) {
    const json& f = body["format"];
    if (f.is_string() && f.get<std::string>() == "json") {
      o->json_object = true;
    } else if (!(f.is_string() && f.get<std::string>().empty())) {
      return p.Fail("format must be \"json\" (JSON schemas are not supported yet)", "format");
    }
  }
  if (body.contains("keep_alive") && !body["keep_alive"].is_null()) {
    double s = 0;
    if (!ParseDuration(body["keep_alive"], &s)) {
      return p.Fail("keep_alive must be a duration such as \"5m\" or a number of seconds", "keep_alive");
    }
    *keep_alive = s;
  }
  if (body.contains("images")) return p.Fail("images are not supported (this model has no vision)", "images");
  for (const char* k : {"tools", "think"}) {
    if (body.contains(k) && !body[k].is_null() && !(body[k].is_array() && body[k].empty()) &&
        !(body[k].is_boolean() && !body[k].get<bool>())) {
      return p.Fail(std::string(k) + " is not supported by herd yet", k);
    }
  }
  return ParseOptions(p, body, o);
}

}  // namespace

bool ParseDuration(const json& value, double* seconds) {
  if (value.is_number()) {
    *seconds = value.get<double>();
    return std::isfinite(*seconds);
  }
  if (!value.is_string()) return false;
  const std::string s = value.get<std::string>();
  if (s.empty()) return false;
  char* end = nullptr;
  const double plain = std::strtod(s.c_str(), &end);
  if (end != s.c_str() && *end == '\0') {  // a bare number: seconds
    *seconds = plain;
    return true;
  }
  // Go durations: [-]<number><unit>... with units h, m, s, ms, us, ns.
  size_t i = 0;
  double sign = 1, total = 0;
  if (s[0] == '-') {
    sign = -1;
    i = 1;
  }
  bool any = false;
  while (i < s.size()) {
    const char* start = s.c_str() + i;
    const double v = std::strtod(start, &end);
    if (end == start) return false;
    i += static_cast<size_t>(end - start);
    std::string unit;
    while (i < s.size() && std::isalpha(static_cast<unsigned char>(s[i]))) unit += s[i++];
    double mult = 0;
    if (unit == "h")
      mult = 3600;
    else if (unit == "m")
      mult = 60;
    else if (unit == "s")
      mult = 1;
    else if (unit == "ms")
      mult = 1e-3;
    else if (unit == "us" || unit == "µs")
      mult = 1e-6;
    else if (unit == "ns")
      mult = 1e-9;
    else
      return false;
    total += v * mult;
    any = true;
  }
  if (!any) return false;
  *seconds = sign * total;
  return true;
}

bool ParseChatRequest(const json& body, api::ChatRequest* out, api::ApiError* error) {
  Parser p{error};
  if (!body.is_object()) return p.Fail("the request body must be a JSON object");
  if (!ParseCommon(p, body, &out->model, &out->options, &out->stream, &out->keep_alive_seconds)) return false;
  if (!body.contains("messages") || body["messages"].is_null()) return true;  // load-only request
  if (!body["messages"].is_array()) return p.Fail("messages must be an array", "messages");
  static const std::set<std::string> kRoles = {"system", "user", "assistant", "tool"};
  for (size_t i = 0; i < body["messages"].size(); ++i) {
    const json& m = body["messages"][i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object()) return p.Fail(where + " must be an object", where);
    api::ChatMessage msg;
    msg.role = m.contains("role") && m["role"].is_string() ? m["role"].get<std::string>() : "";
    if (kRoles.count(msg.role) == 0) return p.Fail(where + ".role must be system, user, assistant or tool", where);
    if (m.contains("content") && !m["content"].is_null()) {
      if (!m["content"].is_string()) return p.Fail(where + ".content must be a string", where);
      msg.content = m["content"].get<std::string>();
    }
    if (m.contains("images") && !m["images"].is_null() && !m["images"].empty()) {
      return p.Fail("images are not supported (this model has no vision)", where + ".images");
    }
    if (m.contains("tool_calls") && !m["tool_calls"].is_null() && !m["tool_calls"].empty()) {
      return p.Fail("tool calls are not supported by herd yet", where + ".tool_calls");
    }
    out->messages.push_back(std::move(msg));
  }
  return true;
}

bool ParseGenerateRequest(const json& body, api::CompletionRequest* out, api::ApiError* error) {
  Parser p{error};
  if (!body.is_object()) return p.Fail("the request body must be a JSON object");
  if (!ParseCommon(p, body, &out->model, &out->options, &out->stream, &out->keep_alive_seconds)) return false;
  auto str = [&](const char* key, std::string* dst) {
    if (!body.contains(key) || body[key].is_null()) return true;
    if (!body[key].is_string()) return p.Fail(std::string(key) + " must be a string", key);
    *dst = body[key].get<std::string>();
    return true;
  };
  if (!str("prompt", &out->prompt) || !str("system", &out->system) || !str("template", &out->template_override)) {
    return false;
  }
  if (body.contains("suffix") && body["suffix"].is_string() && !body["suffix"].get<std::string>().empty()) {
    return p.Fail("suffix (fill-in-the-middle) is not supported by herd yet", "suffix");
  }
  if (body.contains("context") && !body["context"].is_null()) {
    return p.Fail("context (the deprecated token context) is not supported; send the conversation with /api/chat",
                  "context");
  }
  if (body.contains("raw") && !body["raw"].is_null()) {
    if (!body["raw"].is_boolean()) return p.Fail("raw must be a boolean", "raw");
    out->raw = body["raw"].get<bool>();
  }
  return true;
}

json ErrorBody(const api::ApiError& e) { return json{{"error", e.message}}; }

std::string CreatedAt(int64_t unix_nanos) {
  const std::time_t secs = static_cast<std::time_t>(unix_nanos / 1000000000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<long long>(unix_nanos % 1000000000));
  return buf;
}

namespace {
void AddTimings(json& j, const std::string& done_reason, const Timings& t) {
  j["done"] = true;
  j["done_reason"] = done_reason;
  j["total_duration"] = t.total;
  j["load_duration"] = t.load;
  j["prompt_eval_count"] = t.prompt_eval_count;
  j["prompt_eval_duration"] = t.prompt_eval;
  j["eval_count"] = t.eval_count;
  j["eval_duration"] = t.eval;
}
}  // namespace

json ChatChunk(const std::string& model, const std::string& created_at, const std::string& content) {
  return json{{"model", model},
              {"created_at", created_at},
              {"message", {{"role", "assistant"}, {"content", content}}},
              {"done", false}};
}

json ChatDone(const std::string& model, const std::string& created_at, const std::string& content,
              const std::string& done_reason, const Timings& t) {
  json j = ChatChunk(model, created_at, content);
  AddTimings(j, done_reason, t);
  return j;
}

json GenerateChunk(const std::string& model, const std::string& created_at, const std::string& response) {
  return json{{"model", model}, {"created_at", created_at}, {"response", response}, {"done", false}};
}

json GenerateDone(const std::string& model, const std::string& created_at, const std::string& response,
                  const std::string& done_reason, const Timings& t) {
  json j = GenerateChunk(model, created_at, response);
  AddTimings(j, done_reason, t);
  return j;
}

}  // namespace herd::ollama
