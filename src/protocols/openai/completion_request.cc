#include "protocols/openai/completion_request.h"

#include <set>
#include <string>

#include "protocols/openai/request_fields.h"

namespace herd::openai {

using nlohmann::json;

bool ParseCompletionRequest(const json& body, api::CompletionRequest* out, api::ApiError* error) {
  FieldParser p{error};
  if (!body.is_object()) return p.Fail("the request body must be a JSON object", "");
  static const std::set<std::string> kKnown = {"model",
                                               "prompt",
                                               "best_of",
                                               "echo",
                                               "frequency_penalty",
                                               "logit_bias",
                                               "logprobs",
                                               "max_tokens",
                                               "n",
                                               "presence_penalty",
                                               "seed",
                                               "stop",
                                               "stream",
                                               "stream_options",
                                               "suffix",
                                               "temperature",
                                               "top_p",
                                               "user",
                                               "top_k",
                                               "min_p",
                                               "typical_p",
                                               "repeat_penalty",
                                               "repeat_last_n",
                                               "ignore_eos"};
  for (const auto& [key, value] : body.items()) {
    if (kKnown.count(key) == 0) return p.Fail("unrecognized request argument: " + key, key);
  }
  if (!body.contains("model") || !body["model"].is_string()) return p.Fail("model must be a string", "model");
  out->model = body["model"].get<std::string>();
  if (!p.Prompts(body, "prompt", 2048, &out->prompts)) return false;
  if (body.contains("suffix") && !body["suffix"].is_null() &&
      !(body["suffix"].is_string() && body["suffix"].get<std::string>().empty())) {
    return p.Fail("suffix (insertion) is not supported by herd", "suffix");
  }
  api::GenerationOptions& o = out->options;
  if (!p.SamplingOptions(body, 0, &o)) return false;
  std::optional<int32_t> best_of;
  if (!p.Integer(body, "best_of", 0, 20, &best_of)) return false;
  if (best_of && *best_of != 1 && *best_of != o.n) {
    return p.Fail("best_of other than 1 or n is not supported by herd (it returns every completion it computes)",
                  "best_of");
  }
  std::optional<int32_t> logprobs;
  if (!p.Integer(body, "logprobs", 0, 5, &logprobs)) return false;
  if (logprobs) {
    o.logprobs = true;
    o.top_logprobs = *logprobs;
  }
  if (!p.Bool(body, "echo", &out->echo)) return false;
  if (!p.Bool(body, "stream", &out->stream)) return false;
  if (!p.StreamOptions(body, out->stream, &out->include_usage)) return false;
  return p.String(body, "user", &out->user);
}

}  // namespace herd::openai
