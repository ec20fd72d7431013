#include "protocols/ollama/ollama_models.h"

#include <cmath>
#include <cstdio>
#include <ctime>

namespace herd::ollama {
namespace {

using nlohmann::json;

bool NeedObject(const json& body, api::ApiError* error) {
  if (body.is_object()) return true;
  *error = api::InvalidRequest("the request body must be a JSON object");
  return false;
}

// An optional string field; false (with the error) if present with another type.
bool OptionalString(const json& body, const char* key, std::string* out, api::ApiError* error) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return true;
  if (!it->is_string()) {
    *error = api::InvalidRequest(std::string(key) + " must be a string", key);
    return false;
  }
  *out = it->get<std::string>();
  return true;
}

bool OptionalBool(const json& body, const char* key, bool* out, api::ApiError* error) {
  auto it = body.find(key);
  if (it == body.end() || it->is_null()) return true;
  if (!it->is_boolean()) {
    *error = api::InvalidRequest(std::string(key) + " must be a boolean", key);
    return false;
  }
  *out = it->get<bool>();
  return true;
}

// "model", else the legacy "name"; required.
bool ModelName(const json& body, std::string* model, api::ApiError* error) {
  std::string name;
  if (!OptionalString(body, "model", model, error) || !OptionalString(body, "name", &name, error)) return false;
  if (model->empty()) *model = name;
  if (model->empty()) {
    *error = api::InvalidRequest("model is required", "model");
    return false;
  }
  return true;
}

}  // namespace

bool ParseShowRequest(const json& body, ShowRequest* out, api::ApiError* error) {
  *out = {};
  return NeedObject(body, error) && ModelName(body, &out->model, error) &&
         OptionalBool(body, "verbose", &out->verbose, error);
}

bool ParseCopyRequest(const json& body, CopyRequest* out, api::ApiError* error) {
  *out = {};
  if (!NeedObject(body, error) || !OptionalString(body, "source", &out->source, error) ||
      !OptionalString(body, "destination", &out->destination, error)) {
    return false;
  }
  if (out->source.empty()) {
    *error = api::InvalidRequest("source is required", "source");
    return false;
  }
  if (out->destination.empty()) {
    *error = api::InvalidRequest("destination is required", "destination");
    return false;
  }
  return true;
}

bool ParseDeleteRequest(const json& body, std::string* model, api::ApiError* error) {
  model->clear();
  return NeedObject(body, error) && ModelName(body, model, error);
}

bool ParsePullRequest(const json& body, PullRequest* out, api::ApiError* error) {
  *out = {};
  return NeedObject(body, error) && ModelName(body, &out->model, error) &&
         OptionalBool(body, "insecure", &out->insecure, error) && OptionalBool(body, "stream", &out->stream, error);
}

json DetailsJson(const ModelDetails& d) {
  return json{{"parent_model", d.parent_model},
              {"format", d.format},
              {"family", d.family},
              {"families", d.families.empty() ? json(nullptr) : json(d.families)},
              {"parameter_size", d.parameter_size},
              {"quantization_level", d.quantization_level}};
}

std::string HumanNumber(uint64_t n) {
  char buf[32];
  const double v = static_cast<double>(n);
  if (n >= 1000000000ULL) {
    const double b = v / 1e9;
    std::snprintf(buf, sizeof buf, b == std::floor(b) ? "%.0fB" : "%.1fB", b);
  } else if (n >= 1000000ULL) {
    const double m = v / 1e6;
    std::snprintf(buf, sizeof buf, m == std::floor(m) ? "%.0fM" : "%.2fM", m);
  } else if (n >= 1000ULL) {
    std::snprintf(buf, sizeof buf, "%.0fK", v / 1e3);
  } else {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(n));
  }
  return buf;
}

std::string Rfc3339(int64_t unix_seconds) {
  const std::time_t secs = static_cast<std::time_t>(unix_seconds);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec);
  return buf;
}

json ShowJson(const ShowResponse& s) {
  json j = json::object();
  if (!s.license.empty()) j["license"] = s.license;
  j["modelfile"] = s.modelfile;
  j["parameters"] = s.parameters;
  j["template"] = s.template_text;
  if (!s.system.empty()) j["system"] = s.system;
  j["details"] = DetailsJson(s.details);
  j["model_info"] = s.model_info;
  j["capabilities"] = s.capabilities;
  j["modified_at"] = s.modified_at;
  return j;
}

json PsJson(const std::vector<RunningModel>& models) {
  json list = json::array();
  for (const RunningModel& m : models) {
    list.push_back({{"name", m.name},
                    {"model", m.name},
                    {"size", m.size},
                    {"digest", m.digest},
                    {"details", DetailsJson(m.details)},
                    {"expires_at", m.expires_at},
                    {"size_vram", m.size_vram},
                    {"context_length", m.context_length}});
  }
  return json{{"models", list}};
}

json ProgressJson(const PullProgress& p) {
  json j{{"status", p.status}};
  if (!p.digest.empty()) {
    j["digest"] = p.digest;
    j["total"] = p.total;
    j["completed"] = p.completed;
  }
  return j;
}

}  // namespace herd::ollama
