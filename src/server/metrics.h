// What `GET /metrics` serves: Prometheus text (prometheus_text.h) with vLLM's metric names where
// vLLM has one, so cluster routers and dashboards built for vLLM read herd unchanged.
//
// Per model (label model_name; every model that is loading or loaded, or has served a request
// since the server started — counters live per model name and survive unloads):
//   vllm:num_requests_running / _waiting      gauges: sequences in the batch / in the queue
//   vllm:kv_cache_usage_perc                  gauge, 0-1: KV blocks held by sequences or pins
//   vllm:prompt_tokens_total                  prompt tokens of requests that reached a first token
//   vllm:generation_tokens_total              sampled tokens
//   vllm:request_success_total{finished_reason="stop|length|abort|error"}  ended requests
//   vllm:prefix_cache_queries_total / _hits_total   prompt tokens looked up / found cached
//   vllm:num_preemptions_total
//   vllm:time_to_first_token_seconds, vllm:inter_token_latency_seconds,
//   vllm:time_per_output_token_seconds (the older name of inter_token_latency: same data),
//   vllm:request_time_per_output_token_seconds, vllm:e2e_request_latency_seconds,
//   vllm:request_queue_time_seconds           histograms with vLLM's buckets
//   herd_prompt_tokens_computed_total         prompt tokens that actually ran prefill (not cached)
// Server-wide:
//   herd_http_requests_total{api,route,status}, herd_models_loaded,
//   herd_model_memory_bytes{model_name} (loading or loaded models; weights + KV pool)
#pragma once

#include <string>

#include "server/http_metrics.h"
#include "server/model_registry.h"

namespace herd::server {

// `http` may be null (no herd_http_requests_total family then).
std::string RenderMetrics(const ModelRegistry& models, const HttpMetrics* http);

// The label value vLLM uses for a finish reason ("stop", "length", "abort", "error").
const char* VllmFinishReason(FinishReason reason);

}  // namespace herd::server
