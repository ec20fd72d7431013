#include "protocols/openai/embeddings.h"

#include <cstring>
#include <set>

#include "protocols/openai/request_fields.h"

namespace herd::openai {

using nlohmann::json;

bool ParseEmbeddingRequest(const json& body, api::EmbeddingRequest* out, api::ApiError* error) {
  FieldParser p{error};
  if (!body.is_object()) return p.Fail("the request body must be a JSON object", "");
  static const std::set<std::string> kKnown = {"model", "input", "encoding_format", "dimensions", "user"};
  for (const auto& [key, value] : body.items()) {
    if (kKnown.count(key) == 0) return p.Fail("unrecognized request argument: " + key, key);
  }
  if (!body.contains("model") || !body["model"].is_string()) return p.Fail("model must be a string", "model");
  out->model = body["model"].get<std::string>();
  if (!p.Prompts(body, "input", 2048, &out->inputs)) return false;
  for (size_t i = 0; i < out->inputs.size(); ++i) {
    if (!out->inputs[i].is_tokens && out->inputs[i].text.empty()) {
      return p.Fail("input must not be an empty string",
                    body["input"].is_array() ? "input[" + std::to_string(i) + "]" : "input");
    }
  }
  std::string format = "float";
  if (!p.String(body, "encoding_format", &format)) return false;
  if (format != "float" && format != "base64") {
    return p.Fail("encoding_format must be \"float\" or \"base64\", got \"" + format + "\"", "encoding_format");
  }
  out->base64 = format == "base64";
  if (!p.Integer(body, "dimensions", 1, INT32_MAX, &out->dimensions)) return false;
  out->truncate = false;
  return p.String(body, "user", &out->user);
}

std::string EmbeddingBase64(const std::vector<float>& v) {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string bytes;
  bytes.reserve(v.size() * 4);
  for (float f : v) {
    uint32_t u = 0;
    std::memcpy(&u, &f, 4);
    for (int k = 0; k < 4; ++k) bytes.push_back(static_cast<char>((u >> (8 * k)) & 0xFF));  // little-endian
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    const size_t n = std::min<size_t>(3, bytes.size() - i);
    uint32_t w = 0;
    for (size_t k = 0; k < 3; ++k) {
      w = (w << 8) | (k < n ? static_cast<unsigned char>(bytes[i + k]) : 0u);
    }
    for (size_t k = 0; k < 4; ++k) out.push_back(k <= n ? kAlphabet[(w >> (18 - 6 * k)) & 0x3F] : '=');
  }
  return out;
}

json EmbeddingList(const std::string& model, const std::vector<std::vector<float>>& vectors, bool base64,
                   int32_t prompt_tokens) {
  json data = json::array();
  for (size_t i = 0; i < vectors.size(); ++i) {
    data.push_back({{"object", "embedding"},
                    {"index", static_cast<int64_t>(i)},
                    {"embedding", base64 ? json(EmbeddingBase64(vectors[i])) : json(vectors[i])}});
  }
  return json{{"object", "list"},
              {"data", data},
              {"model", model},
              {"usage", {{"prompt_tokens", prompt_tokens}, {"total_tokens", prompt_tokens}}}};
}

}  // namespace herd::openai
