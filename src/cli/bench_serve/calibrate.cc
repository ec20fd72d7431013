#include "cli/bench_serve/calibrate.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace herd::bench {
namespace {

using nlohmann::json;

std::optional<int> Tokenize(HttpClient& client, const HttpUrl& url, const RequestOptions& request,
                            const std::string& text, std::string* why) {
  ClientRequest q;
  q.host = url.host;
  q.port = url.port;
  q.target = url.base_path + "/tokenize";
  q.headers = RequestHeaders(request);
  q.body = json{{"model", request.model}, {"content", text}, {"prompt", text}, {"add_special", false}}.dump(
      -1, ' ', false, json::error_handler_t::replace);
  q.timeout = std::chrono::milliseconds(30'000);
  auto r = client.Fetch(std::move(q));
  if (!r.ok()) {
    if (why) *why = r.status().message();
    return std::nullopt;
  }
  if (r->status != 200) {
    if (why) *why = "POST /tokenize answered " + std::to_string(r->status) + ": " + ErrorMessageOf(r->body);
    return std::nullopt;
  }
  const json j = json::parse(r->body, nullptr, false);
  if (j.is_object() && j.contains("tokens") && j["tokens"].is_array()) return static_cast<int>(j["tokens"].size());
  if (j.is_object() && j.contains("count") && j["count"].is_number_integer()) return j["count"].get<int>();
  if (why) *why = "POST /tokenize answered without a token list";
  return std::nullopt;
}

// The prompt tokens the API reports for one user message (one output token asked for).
std::optional<int64_t> UsagePromptTokens(HttpClient& client, const HttpUrl& url, const RequestOptions& request,
                                         const std::string& text, std::string* why) {
  ClientRequest q;
  q.host = url.host;
  q.port = url.port;
  q.target = url.base_path + RequestPath(request.api);
  q.headers = RequestHeaders(request);
  q.body = RequestBody(request, {{"user", text}}, 1);
  q.timeout = std::chrono::milliseconds(300'000);
  auto r = client.Fetch(std::move(q));
  if (!r.ok()) {
    *why = r.status().message();
    return std::nullopt;
  }
  if (r->status != 200) {
    *why = std::string(RequestPath(request.api)) + " answered " + std::to_string(r->status) + ": " +
           ErrorMessageOf(r->body);
    return std::nullopt;
  }
  StreamDecoder d(request.api);
  d.Feed(r->body, nullptr);
  d.Finish(nullptr);
  if (d.outcome().usage_prompt_tokens < 0) {
    *why = "the response reported no prompt token usage";
    return std::nullopt;
  }
  return d.outcome().usage_prompt_tokens;
}

}  // namespace

Calibration Calibrate(HttpClient& client, const HttpUrl& url, const RequestOptions& request, uint64_t seed,
                      TokenCounter* counter) {
  Calibration c;
  PromptText text(seed ^ 0x5eedca1bULL, counter);
  const int kLong = 200, kShort = 10;
  const std::string sample = text.Words(kLong);
  std::string why_tokenize;
  if (std::optional<int> n = Tokenize(client, url, request, sample, &why_tokenize); n && *n > 0) {
    c.method = "tokenize";
    c.tokens_per_word = static_cast<double>(*n) / kLong;
    counter->tokens_per_word = c.tokens_per_word;
    counter->exact = [&client, &url, &request](const std::string& t) {
      return Tokenize(client, url, request, t, nullptr);
    };
    return c;
  }
  std::string why_usage;
  const auto long_tokens = UsagePromptTokens(client, url, request, sample, &why_usage);
  const auto short_tokens =
      long_tokens ? UsagePromptTokens(client, url, request, text.Words(kShort), &why_usage) : std::nullopt;
  if (long_tokens && short_tokens && *long_tokens > *short_tokens) {
    c.method = "usage";
    c.tokens_per_word = static_cast<double>(*long_tokens - *short_tokens) / (kLong - kShort);
    c.template_overhead = static_cast<int>(*short_tokens - std::lround(c.tokens_per_word * kShort));
    c.note = "no tokenize route (" + why_tokenize + ")";
  } else {
    c.note = "no tokenize route (" + why_tokenize + "); no usage (" +
             (why_usage.empty() ? std::string("prompt tokens did not grow with the text") : why_usage) + ")";
  }
  counter->tokens_per_word = c.tokens_per_word;
  return c;
}

}  // namespace herd::bench
