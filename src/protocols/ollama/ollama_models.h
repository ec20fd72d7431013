// Ollama's model-management API: request parsing for POST /api/show, /api/copy, /api/pull and
// DELETE /api/delete, and the response objects of /api/show, /api/ps, /api/tags' "details" and
// /api/pull's progress events. Shapes follow Ollama's docs/api.md.
//
// Requests name the model as "model" or (legacy) "name"; unknown fields are ignored as Ollama
// ignores them, but a known field of the wrong type is a 400 naming it.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/api_error.h"

namespace herd::ollama {

struct ShowRequest {
  std::string model;
  bool verbose = false;  // model_info with the tokenizer arrays
};
struct CopyRequest {
  std::string source, destination;
};
struct PullRequest {
  std::string model;
  bool insecure = false;  // plain http (and, in Ollama, unverified TLS)
  bool stream = true;
};

bool ParseShowRequest(const nlohmann::json& body, ShowRequest* out, api::ApiError* error);
bool ParseCopyRequest(const nlohmann::json& body, CopyRequest* out, api::ApiError* error);
bool ParseDeleteRequest(const nlohmann::json& body, std::string* model, api::ApiError* error);
bool ParsePullRequest(const nlohmann::json& body, PullRequest* out, api::ApiError* error);

// "details" of /api/tags, /api/show and /api/ps.
struct ModelDetails {
  std::string parent_model;
  std::string format = "gguf";
  std::string family;                 // general.architecture
  std::vector<std::string> families;  // empty: null
  std::string parameter_size;         // HumanNumber(parameter count), e.g. "8.0B"
  std::string quantization_level;     // e.g. "Q4_K_M"
};
nlohmann::json DetailsJson(const ModelDetails& details);

// Ollama's parameter_size: >= 1e9 "8B" / "8.0B" (one decimal unless whole), >= 1e6 "135M" /
// "999.89M" (two decimals unless whole), >= 1e3 "12K", else the number.
std::string HumanNumber(uint64_t n);

// RFC 3339 UTC with seconds ("2024-06-04T14:38:31Z"); any year up to 9999.
std::string Rfc3339(int64_t unix_seconds);

struct ShowResponse {
  std::string modelfile;
  std::string parameters;     // "name   value" lines
  std::string template_text;  // the chat template source
  std::string system;         // omitted when empty
  std::string license;        // omitted when empty
  ModelDetails details;
  nlohmann::json model_info = nlohmann::json::object();  // flat GGUF metadata
  std::vector<std::string> capabilities;
  std::string modified_at;  // RFC 3339
};
nlohmann::json ShowJson(const ShowResponse& show);

// One entry of /api/ps.
struct RunningModel {
  std::string name;
  std::string digest;  // hex, no "sha256:"; empty for plain files
  uint64_t size = 0;   // bytes held (weights + KV)
  uint64_t size_vram = 0;
  ModelDetails details;
  std::string expires_at;  // RFC 3339
  int32_t context_length = 0;
};
nlohmann::json PsJson(const std::vector<RunningModel>& models);

// One /api/pull progress event: {"status"} or, with `digest` set, {"status", "digest", "total",
// "completed"}.
struct PullProgress {
  std::string status;
  std::string digest;  // "sha256:<hex>"
  uint64_t total = 0;
  uint64_t completed = 0;
};
nlohmann::json ProgressJson(const PullProgress& progress);

}  // namespace herd::ollama
