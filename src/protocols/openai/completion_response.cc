#include "protocols/openai/completion_response.h"

namespace herd::openai {

using nlohmann::json;

void LegacyLogprobs::Append(const LegacyLogprobs& more) {
  tokens.insert(tokens.end(), more.tokens.begin(), more.tokens.end());
  token_logprobs.insert(token_logprobs.end(), more.token_logprobs.begin(), more.token_logprobs.end());
  top_logprobs.insert(top_logprobs.end(), more.top_logprobs.begin(), more.top_logprobs.end());
  text_offset.insert(text_offset.end(), more.text_offset.begin(), more.text_offset.end());
}

int32_t CodePoints(const std::string& text) {
  int32_t n = 0;
  for (unsigned char c : text) n += (c & 0xC0) != 0x80;
  return n;
}

namespace {

json LogprobsJson(const std::optional<LegacyLogprobs>& lp) {
  if (!lp) return nullptr;
  json lps = json::array(), tops = json::array();
  for (const auto& v : lp->token_logprobs) lps.push_back(v ? json(*v) : json(nullptr));
  for (const auto& t : lp->top_logprobs) {
    if (!t) {
      tops.push_back(nullptr);
      continue;
    }
    json d = json::object();
    for (const auto& [token, logprob] : *t) {
      if (!d.contains(token)) d[token] = logprob;  // equal texts of different ids: the likelier one (listed first)
    }
    tops.push_back(d);
  }
  return json{
      {"tokens", lp->tokens}, {"token_logprobs", lps}, {"top_logprobs", tops}, {"text_offset", lp->text_offset}};
}

json ChoiceJson(const CompletionChoiceOut& c) {
  return json{{"text", c.text},
              {"index", c.index},
              {"logprobs", LogprobsJson(c.logprobs)},
              {"finish_reason", c.finish_reason.empty() ? json(nullptr) : json(c.finish_reason)}};
}

json Header(const ResponseHeader& h) {
  json j = {{"id", h.id}, {"object", "text_completion"}, {"created", h.created}, {"model", h.model}};
  if (!h.system_fingerprint.empty()) j["system_fingerprint"] = h.system_fingerprint;
  return j;
}

}  // namespace

json Completion(const ResponseHeader& h, const std::vector<CompletionChoiceOut>& choices, const UsageOut& usage) {
  json j = Header(h);
  json cs = json::array();
  for (const auto& c : choices) cs.push_back(ChoiceJson(c));
  j["choices"] = cs;
  j["usage"] = UsageJson(usage);
  return j;
}

json CompletionChunk(const ResponseHeader& h, const CompletionChoiceOut& choice, bool include_usage_null) {
  json j = Header(h);
  j["choices"] = json::array({ChoiceJson(choice)});
  if (include_usage_null) j["usage"] = nullptr;
  return j;
}

json CompletionUsageChunk(const ResponseHeader& h, const UsageOut& usage) {
  json j = Header(h);
  j["choices"] = json::array();
  j["usage"] = UsageJson(usage);
  return j;
}

}  // namespace herd::openai
