#include "server/herd_routes.h"

#include <chrono>
#include <nlohmann/json.hpp>

#include "base/memory_info.h"
#include "server/metrics.h"

namespace herd::server {
namespace {

using nlohmann::json;

const char* ErrorType(api::ErrorKind kind) {
  switch (kind) {
    case api::ErrorKind::kInvalidRequest: return "invalid_request_error";
    case api::ErrorKind::kAuthentication: return "authentication_error";
    case api::ErrorKind::kNotFound: return "not_found_error";
    case api::ErrorKind::kTooLarge: return "invalid_request_error";
    case api::ErrorKind::kUnprocessable: return "invalid_request_error";
    case api::ErrorKind::kOverloaded: return "unavailable_error";
    case api::ErrorKind::kUnavailable: return "unavailable_error";
    case api::ErrorKind::kInternal: return "server_error";
  }
  return "server_error";
}

const char* StateName(ModelState s) {
  switch (s) {
    case ModelState::kUnloaded: return "unloaded";
    case ModelState::kLoading: return "loading";
    case ModelState::kLoaded: return "loaded";
  }
  return "unloaded";
}

json EngineJson(const EngineMetricsSnapshot& m) {
  json finished = json::object();
  for (FinishReason r : {FinishReason::kStop, FinishReason::kLength, FinishReason::kCancelled, FinishReason::kError}) {
    finished[VllmFinishReason(r)] = m.finished[static_cast<size_t>(r)];
  }
  return json{
      {"running", m.running},
      {"waiting", m.waiting},
      {"kv_blocks_used", m.used_blocks},
      {"kv_blocks_total", m.total_blocks},
      {"kv_usage", m.kv_usage()},
      {"prefix_cache_queried_tokens", m.prefix_queries},
      {"prefix_cache_hit_tokens", m.prefix_hits},
      {"prefix_cache_hit_rate", m.prefix_queries > 0 ? static_cast<double>(m.prefix_hits) / m.prefix_queries : 0.0},
      {"prompt_tokens", m.prompt_tokens},
      {"prompt_tokens_computed", m.prompt_tokens_computed},
      {"generated_tokens", m.generation_tokens},
      {"preemptions", m.preemptions},
      {"requests_finished", finished},
  };
}

json ModelStatusJson(const ModelStatus& st) {
  json j{
      {"name", st.entry.name},
      {"state", StateName(st.state)},
      {"source", ModelSourceName(st.entry.source)},
      {"path", st.entry.load.path},
      {"size_bytes", st.entry.size_bytes},
      {"memory_bytes", st.memory_bytes},
      {"preload", st.entry.preload},
      {"active_requests", st.active_leases},
      {"loaded_at", nullptr},
      {"expires_at", nullptr},
  };
  if (!st.entry.digest.empty()) j["digest"] = st.entry.digest;
  j["device"] = st.entry.load.device.ToString();
  j["load_failures"] = st.load_failures;
  if (st.replicas > 1) {  // one element per replica of the name
    j["replica"] = st.replica;
    j["replicas"] = st.replicas;
  }
  if (st.state == ModelState::kLoaded) {
    j["loaded_at"] = st.loaded_at;
    // Unix seconds of the idle unload; null while in use; "never" when kept loaded.
    if (st.expires_at < 0) {
      j["expires_at"] = "never";
    } else if (st.expires_at > 0) {
      j["expires_at"] = st.expires_at;
    }
    if (st.entry.load.metrics) j["engine"] = EngineJson(st.entry.load.metrics->Snapshot());
  }
  return j;
}

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string StatusBody(const ModelRegistry& models, const HerdRoutesOptions& o,
                       std::chrono::steady_clock::time_point started, int64_t started_unix) {
  json server{
      {"name", "herd"},
      {"version", o.version},
      {"started_at", started_unix},
      {"uptime_seconds", std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count()},
  };
  if (o.open_connections) server["http_connections"] = o.open_connections();
  json list = json::array();
  size_t reserved = 0;
  for (const ModelStatus& st : models.Status()) {
    if (st.state != ModelState::kUnloaded) reserved += st.memory_bytes;
    list.push_back(ModelStatusJson(st));
  }
  const size_t budget = o.memory_budget_bytes;
  const json none(nullptr);
  json memory{
      {"budget_bytes", budget > 0 ? json(budget) : none},
      {"reserved_bytes", reserved},
      {"free_in_budget_bytes", budget > 0 ? json(budget > reserved ? budget - reserved : 0) : none},
      {"system_available_bytes", AvailableMemoryBytes()},
  };
  json body{{"server", server}, {"memory", memory}, {"models", list}};
  return body.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

HttpResponse HerdError(const api::ApiError& e) {
  const int status = api::HttpStatusFor(e.kind);
  json body{{"error", {{"code", status}, {"message", e.message}, {"type", ErrorType(e.kind)}}}};
  HttpResponse r = HttpResponse::Json(status, body.dump(-1, ' ', false, json::error_handler_t::replace));
  if (api::ShouldRetry(e.kind)) r.headers.Set("Retry-After", std::to_string(api::kRetryAfterSeconds));
  return r;
}

void AddHerdRoutes(Router& router, ModelRegistry& models, HerdRoutesOptions options) {
  if (options.http_metrics) options.http_metrics->Attach(router);
  router.Get("/health", [&models](HttpRequest&, std::shared_ptr<Responder> r) {
    if (models.Loading()) return r->Respond(HttpResponse::Json(503, R"({"status":"loading"})"));
    r->Respond(HttpResponse::Json(200, R"({"status":"ok"})"));
  });
  std::shared_ptr<HttpMetrics> http = options.http_metrics;
  router.Get("/metrics", [&models, http](HttpRequest&, std::shared_ptr<Responder> r) {
    HttpResponse response = HttpResponse::Text(200, RenderMetrics(models, http.get()));
    response.headers.Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    r->Respond(std::move(response));
  });
  const auto started_steady = std::chrono::steady_clock::now();
  const int64_t started_unix = UnixNow();
  const auto reject = [](const api::ApiError& e) { return HerdError(e); };
  router.Get(
      "/v1/status",
      RequireKey(options.keys, reject,
                 [&models, options, started_steady, started_unix](HttpRequest&, std::shared_ptr<Responder> r) {
                   r->Respond(HttpResponse::Json(200, StatusBody(models, options, started_steady, started_unix)));
                 }));
  AddTokenRoutes(router, models, options.keys);
}

}  // namespace herd::server
