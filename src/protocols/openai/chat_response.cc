#include "protocols/openai/chat_response.h"

namespace herd::openai {
namespace {

using nlohmann::json;

json LogprobEntry(const TokenLogprobOut& t, bool with_top) {
  json e = {{"token", t.token}, {"logprob", t.logprob}, {"bytes", t.bytes}};
  if (with_top) {
    json top = json::array();
    for (const auto& alt : t.top) top.push_back(LogprobEntry(alt, false));
    e["top_logprobs"] = top;
  }
  return e;
}

json Logprobs(const std::optional<std::vector<TokenLogprobOut>>& lp) {
  if (!lp) return nullptr;
  json content = json::array();
  for (const auto& t : *lp) content.push_back(LogprobEntry(t, true));
  return json{{"content", content}, {"refusal", nullptr}};
}

json Header(const ResponseHeader& h, const char* object) {
  json j = {{"id", h.id}, {"object", object}, {"created", h.created}, {"model", h.model}};
  if (!h.system_fingerprint.empty()) j["system_fingerprint"] = h.system_fingerprint;
  return j;
}

}  // namespace

json UsageJson(const UsageOut& u) {
  return json{{"prompt_tokens", u.prompt_tokens},
              {"completion_tokens", u.completion_tokens},
              {"total_tokens", u.prompt_tokens + u.completion_tokens},
              {"prompt_tokens_details", {{"cached_tokens", u.cached_tokens}}}};
}

json ChatCompletion(const ResponseHeader& h, const std::vector<ChoiceOut>& choices, const UsageOut& usage) {
  json j = Header(h, "chat.completion");
  json cs = json::array();
  for (const ChoiceOut& c : choices) {
    cs.push_back({{"index", c.index},
                  {"message", {{"role", "assistant"}, {"content", c.text}, {"refusal", nullptr}}},
                  {"logprobs", Logprobs(c.logprobs)},
                  {"finish_reason", c.finish_reason}});
  }
  j["choices"] = cs;
  j["usage"] = UsageJson(usage);
  return j;
}

json ChatChunk(const ResponseHeader& h, int32_t index, bool first, const std::string& content,
               const std::string& finish_reason, const std::optional<std::vector<TokenLogprobOut>>& logprobs,
               bool include_usage_null) {
  json j = Header(h, "chat.completion.chunk");
  json delta = json::object();
  if (first) {
    delta["role"] = "assistant";
    delta["content"] = content;
  } else if (!content.empty() || finish_reason.empty()) {
    delta["content"] = content;
  }
  json choice = {{"index", index}, {"delta", delta}, {"logprobs", Logprobs(logprobs)}};
  choice["finish_reason"] = finish_reason.empty() ? json(nullptr) : json(finish_reason);
  j["choices"] = json::array({choice});
  if (include_usage_null) j["usage"] = nullptr;
  return j;
}

json UsageChunk(const ResponseHeader& h, const UsageOut& usage) {
  json j = Header(h, "chat.completion.chunk");
  j["choices"] = json::array();
  j["usage"] = UsageJson(usage);
  return j;
}

std::string SseData(const json& j) { return "data: " + j.dump() + "\n\n"; }

}  // namespace herd::openai
