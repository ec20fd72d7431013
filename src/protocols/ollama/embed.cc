#include "protocols/ollama/embed.h"

#include <set>

#include "protocols/ollama/ollama_api.h"

namespace herd::ollama {
namespace {

using nlohmann::json;
using Parser = api::Validator;

// Options of a generation request: meaningless for embeddings, accepted and ignored (clients
// such as LangChain send their defaults with every request).
const std::set<std::string>& IgnoredOptions() {
  static const std::set<std::string> k = {"num_predict",
                                          "temperature",
                                          "top_k",
                                          "top_p",
                                          "min_p",
                                          "typical_p",
                                          "repeat_penalty",
                                          "repeat_last_n",
                                          "presence_penalty",
                                          "frequency_penalty",
                                          "seed",
                                          "stop",
                                          "mirostat",
                                          "mirostat_tau",
                                          "mirostat_eta",
                                          "tfs_z",
                                          "num_keep",
                                          "penalize_newline",
                                          "num_gpu",
                                          "main_gpu",
                                          "num_thread",
                                          "num_batch",
                                          "use_mmap",
                                          "use_mlock",
                                          "numa",
                                          "low_vram",
                                          "f16_kv",
                                          "vocab_only"};
  return k;
}

bool ParseCommon(Parser& p, const json& body, const std::set<std::string>& known, api::EmbeddingRequest* out) {
  if (!body.is_object()) return p.Fail("the request body must be a JSON object");
  for (const auto& [key, value] : body.items()) {
    if (known.count(key) == 0) return p.Fail("unknown field: " + key, key);
  }
  if (!body.contains("model") || !body["model"].is_string() || body["model"].get<std::string>().empty()) {
    return p.Fail("model is required", "model");
  }
  out->model = body["model"].get<std::string>();
  if (body.contains("keep_alive") && !body["keep_alive"].is_null()) {
    double s = 0;
    if (!ParseDuration(body["keep_alive"], &s)) {
      return p.Fail("keep_alive must be a duration such as \"5m\" or a number of seconds", "keep_alive");
    }
    out->keep_alive_seconds = s;
  }
  if (body.contains("options") && !body["options"].is_null()) {
    const json& opts = body["options"];
    if (!opts.is_object()) return p.Fail("options must be an object", "options");
    for (const auto& [key, v] : opts.items()) {
      if (key == "num_ctx") {
        if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > INT32_MAX) {
          return p.Fail("options.num_ctx must be a positive integer", "options.num_ctx");
        }
        out->num_ctx = static_cast<int32_t>(v.get<int64_t>());
      } else if (IgnoredOptions().count(key) == 0) {
        return p.Fail("unsupported option: " + key, "options." + key);
      }
    }
  }
  return true;
}

}  // namespace

bool ParseEmbedRequest(const json& body, api::EmbeddingRequest* out, api::ApiError* error) {
  Parser p{error};
  static const std::set<std::string> kKnown = {"model", "input", "truncate", "options", "keep_alive", "dimensions"};
  if (!ParseCommon(p, body, kKnown, out)) return false;
  out->truncate = true;
  out->normalize = true;
  if (body.contains("input") && !body["input"].is_null()) {
    const json& in = body["input"];
    if (in.is_string()) {
      if (!in.get<std::string>().empty()) out->inputs.push_back({in.get<std::string>(), {}, false});
    } else if (in.is_array()) {
      for (size_t i = 0; i < in.size(); ++i) {
        if (!in[i].is_string()) return p.Fail("input must be a string or an array of strings", "input");
        out->inputs.push_back({in[i].get<std::string>(), {}, false});
      }
    } else {
      return p.Fail("input must be a string or an array of strings", "input");
    }
  }
  if (body.contains("truncate") && !body["truncate"].is_null()) {
    if (!body["truncate"].is_boolean()) return p.Fail("truncate must be a boolean", "truncate");
    out->truncate = body["truncate"].get<bool>();
  }
  if (body.contains("dimensions") && !body["dimensions"].is_null()) {
    const json& d = body["dimensions"];
    if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > INT32_MAX) {
      return p.Fail("dimensions must be a positive integer", "dimensions");
    }
    out->dimensions = static_cast<int32_t>(d.get<int64_t>());
  }
  return true;
}

bool ParseEmbeddingsRequest(const json& body, api::EmbeddingRequest* out, api::ApiError* error) {
  Parser p{error};
  static const std::set<std::string> kKnown = {"model", "prompt", "options", "keep_alive"};
  if (!ParseCommon(p, body, kKnown, out)) return false;
  out->truncate = true;
  out->normalize = false;  // Ollama's /api/embeddings returns the raw pooled vector
  if (body.contains("prompt") && !body["prompt"].is_null()) {
    if (!body["prompt"].is_string()) return p.Fail("prompt must be a string", "prompt");
    const std::string prompt = body["prompt"].get<std::string>();
    if (!prompt.empty()) out->inputs.push_back({prompt, {}, false});
  }
  return true;
}

json EmbedResponse(const std::string& model, const std::vector<std::vector<float>>& vectors, int64_t total_ns,
                   int64_t load_ns, int32_t prompt_eval_count) {
  json embeddings = json::array();
  for (const auto& v : vectors) embeddings.push_back(v);
  return json{{"model", model},
              {"embeddings", embeddings},
              {"total_duration", total_ns},
              {"load_duration", load_ns},
              {"prompt_eval_count", prompt_eval_count}};
}

json EmbeddingsResponse(const std::vector<float>& vector) { return json{{"embedding", vector}}; }

}  // namespace herd::ollama
