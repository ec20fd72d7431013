#include "protocols/openai/request_fields.h"

#include <climits>

namespace herd::openai {

using nlohmann::json;

namespace {
bool Present(const json& j, const char* name) { return j.contains(name) && !j[name].is_null(); }
}  // namespace

bool FieldParser::Number(const json& j, const char* name, double lo, double hi, std::optional<float>* out) const {
  if (!Present(j, name)) return true;
  if (!j[name].is_number()) return Fail(std::string(name) + " must be a number", name);
  const double v = j[name].get<double>();
  if (v < lo || v > hi) {
    return Fail(
        std::string(name) + " must be in [" + json(lo).dump() + ", " + json(hi).dump() + "], got " + j[name].dump(),
        name);
  }
  *out = static_cast<float>(v);
  return true;
}

bool FieldParser::Integer(const json& j, const char* name, int64_t lo, int64_t hi, std::optional<int32_t>* out) const {
  if (!Present(j, name)) return true;
  if (!j[name].is_number_integer()) return Fail(std::string(name) + " must be an integer", name);
  const int64_t v = j[name].get<int64_t>();
  if (v < lo || v > hi) {
    return Fail(std::string(name) + " must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " +
                    std::to_string(v),
                name);
  }
  *out = static_cast<int32_t>(v);
  return true;
}

bool FieldParser::Bool(const json& j, const char* name, bool* out) const {
  if (!Present(j, name)) return true;
  if (!j[name].is_boolean()) return Fail(std::string(name) + " must be a boolean", name);
  *out = j[name].get<bool>();
  return true;
}

bool FieldParser::String(const json& j, const char* name, std::string* out) const {
  if (!Present(j, name)) return true;
  if (!j[name].is_string()) return Fail(std::string(name) + " must be a string", name);
  *out = j[name].get<std::string>();
  return true;
}

bool FieldParser::Seed(const json& j, std::optional<uint64_t>* out) const {
  if (!Present(j, "seed")) return true;
  if (!j["seed"].is_number_integer()) return Fail("seed must be an integer", "seed");
  *out = j["seed"].is_number_unsigned() ? j["seed"].get<uint64_t>() : static_cast<uint64_t>(j["seed"].get<int64_t>());
  return true;
}

bool FieldParser::Stop(const json& j, std::vector<std::string>* out) const {
  if (!Present(j, "stop")) return true;
  const json& s = j["stop"];
  if (s.is_string()) {
    out->push_back(s.get<std::string>());
    return true;
  }
  if (!s.is_array()) return Fail("stop must be a string or an array of strings", "stop");
  if (s.size() > 4) return Fail("stop may hold at most 4 sequences", "stop");
  for (const json& x : s) {
    if (!x.is_string()) return Fail("stop must be a string or an array of strings", "stop");
    out->push_back(x.get<std::string>());
  }
  return true;
}

bool FieldParser::LogitBias(const json& j, std::vector<std::pair<int32_t, float>>* out) const {
  if (!Present(j, "logit_bias")) return true;
  const json& b = j["logit_bias"];
  if (!b.is_object()) return Fail("logit_bias must be an object of token id -> bias", "logit_bias");
  for (const auto& [key, value] : b.items()) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (...) {
      used = 0;
    }
    if (key.empty() || used != key.size() || id < 0 || id > INT32_MAX) {
      return Fail("logit_bias keys must be token ids, got '" + key + "'", "logit_bias");
    }
    if (!value.is_number() || value.get<double>() < -100 || value.get<double>() > 100) {
      return Fail("logit_bias values must be numbers in [-100, 100]", "logit_bias");
    }
    out->emplace_back(static_cast<int32_t>(id), value.get<float>());
  }
  return true;
}

bool FieldParser::SamplingOptions(const json& j, int64_t min_max_tokens, api::GenerationOptions* o) const {
  if (!Integer(j, "max_tokens", min_max_tokens, INT32_MAX, &o->max_tokens)) return false;
  if (!Number(j, "temperature", 0, 2, &o->temperature)) return false;
  if (!Number(j, "top_p", 0, 1, &o->top_p)) return false;
  if (!Number(j, "presence_penalty", -2, 2, &o->presence_penalty)) return false;
  if (!Number(j, "frequency_penalty", -2, 2, &o->frequency_penalty)) return false;
  if (!Number(j, "min_p", 0, 1, &o->min_p)) return false;
  if (!Number(j, "typical_p", 0, 1, &o->typical_p)) return false;
  if (!Number(j, "repeat_penalty", 0, 10, &o->repeat_penalty)) return false;
  if (!Integer(j, "top_k", 0, INT32_MAX, &o->top_k)) return false;
  if (!Integer(j, "repeat_last_n", -1, INT32_MAX, &o->repeat_last_n)) return false;
  std::optional<int32_t> n;
  if (!Integer(j, "n", 1, 128, &n)) return false;
  o->n = n.value_or(1);
  return Seed(j, &o->seed) && Stop(j, &o->stop) && LogitBias(j, &o->logit_bias) &&
         Bool(j, "ignore_eos", &o->ignore_eos);
}

bool FieldParser::StreamOptions(const json& j, bool stream, bool* include_usage) const {
  if (!Present(j, "stream_options")) return true;
  if (!stream) return Fail("stream_options is only allowed when stream is true", "stream_options");
  const json& so = j["stream_options"];
  if (!so.is_object()) return Fail("stream_options must be an object", "stream_options");
  for (const auto& [key, value] : so.items()) {
    if (key != "include_usage" && key != "include_obfuscation") {
      return Fail("unrecognized stream option: " + key, "stream_options." + key);
    }
  }
  return Bool(so, "include_usage", include_usage);
}

bool FieldParser::Prompts(const json& j, const char* name, size_t max_items, std::vector<api::PromptInput>* out) const {
  const std::string n = name;
  if (!Present(j, name)) return Fail(n + " is required", n);
  const json& p = j[name];
  const std::string shape = n +
                            " must be a string, an array of strings, an array of token ids or an array of arrays "
                            "of token ids";
  const auto tokens = [&](const json& arr, const std::string& where, api::PromptInput* in) {
    if (arr.empty()) return Fail(where + " must not be empty", where);
    in->is_tokens = true;
    for (const json& t : arr) {
      if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() > INT32_MAX) {
        return Fail(where + " must hold token ids (non-negative integers)", where);
      }
      in->tokens.push_back(static_cast<int32_t>(t.get<int64_t>()));
    }
    return true;
  };
  if (p.is_string()) {
    out->push_back({p.get<std::string>(), {}, false});
    return true;
  }
  if (!p.is_array()) return Fail(shape, n);
  if (p.empty()) return Fail(n + " must not be empty", n);
  if (p.size() > max_items) return Fail(n + " may hold at most " + std::to_string(max_items) + " items", n);
  if (p[0].is_number()) {
    api::PromptInput in;
    if (!tokens(p, n, &in)) return false;
    out->push_back(std::move(in));
    return true;
  }
  for (size_t i = 0; i < p.size(); ++i) {
    const std::string where = n + "[" + std::to_string(i) + "]";
    api::PromptInput in;
    if (p[i].is_string() && p[0].is_string()) {
      in.text = p[i].get<std::string>();
    } else if (p[i].is_array() && p[0].is_array()) {
      if (!tokens(p[i], where, &in)) return false;
    } else {
      return Fail(shape, where);
    }
    out->push_back(std::move(in));
  }
  return true;
}

}  // namespace herd::openai
