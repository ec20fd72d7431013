#include "server/metrics.h"

#include <functional>
#include <vector>

#include "server/prometheus_text.h"

namespace herd::server {
namespace {

struct ModelSample {
  MetricLabels labels;  // model_name, and replica where the model has several
  EngineMetricsSnapshot m;
};

MetricLabels ModelLabels(const ModelStatus& st) {
  MetricLabels l = {{"model_name", st.entry.name}};
  if (st.replicas > 1) l.push_back({"replica", std::to_string(st.replica)});
  return l;
}

constexpr FinishReason kReasons[] = {FinishReason::kStop, FinishReason::kLength, FinishReason::kCancelled,
                                     FinishReason::kError};

bool Active(const ModelStatus& st, const EngineMetricsSnapshot& m) {
  if (st.state != ModelState::kUnloaded) return true;
  int64_t ended = 0;
  for (int64_t n : m.finished) ended += n;
  return ended > 0 || m.generation_tokens > 0 || m.prompt_tokens > 0;
}

}  // namespace

const char* VllmFinishReason(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "abort";
    case FinishReason::kError: return "error";
  }
  return "error";
}

std::string RenderMetrics(const ModelRegistry& models, const HttpMetrics* http) {
  const std::vector<ModelStatus> status = models.Status();
  std::vector<ModelSample> samples;
  for (const ModelStatus& st : status) {
    if (!st.entry.load.metrics) continue;
    ModelSample s{ModelLabels(st), st.entry.load.metrics->Snapshot()};
    if (Active(st, s.m)) samples.push_back(std::move(s));
  }
  PrometheusWriter w;
  using Value = std::function<double(const EngineMetricsSnapshot&)>;
  const auto per_model = [&](const char* name, const char* type, const char* help, const Value& value) {
    w.Family(name, type, help);
    for (const ModelSample& s : samples) w.Sample(name, s.labels, value(s.m));
  };
  using HistogramOf = std::function<const HistogramSnapshot&(const EngineMetricsSnapshot&)>;
  const auto histogram = [&](const char* name, const char* help, const HistogramOf& of) {
    w.Family(name, "histogram", help);
    for (const ModelSample& s : samples) w.Histogram(name, s.labels, of(s.m));
  };
  const auto i64 = [](int64_t v) { return static_cast<double>(v); };

  per_model("vllm:num_requests_running", "gauge", "Number of requests in model execution batches.",
            [](const EngineMetricsSnapshot& m) { return m.running; });
  per_model("vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.",
            [](const EngineMetricsSnapshot& m) { return m.waiting; });
  per_model("vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.",
            [](const EngineMetricsSnapshot& m) { return m.kv_usage(); });
  per_model("vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.",
            [&](const EngineMetricsSnapshot& m) { return i64(m.prompt_tokens); });
  per_model("vllm:generation_tokens_total", "counter", "Number of generation tokens processed.",
            [&](const EngineMetricsSnapshot& m) { return i64(m.generation_tokens); });
  per_model("vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.",
            [&](const EngineMetricsSnapshot& m) { return i64(m.preemptions); });
  per_model("vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.",
            [&](const EngineMetricsSnapshot& m) { return i64(m.prefix_queries); });
  per_model("vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.",
            [&](const EngineMetricsSnapshot& m) { return i64(m.prefix_hits); });
  w.Family("vllm:request_success_total", "counter", "Count of successfully processed requests.");
  for (const ModelSample& s : samples) {
    for (FinishReason r : kReasons) {
      MetricLabels labels = s.labels;
      labels.push_back({"finished_reason", VllmFinishReason(r)});
      w.Sample("vllm:request_success_total", labels, i64(s.m.finished[static_cast<size_t>(r)]));
    }
  }
  histogram("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
            [](const EngineMetricsSnapshot& m) -> const HistogramSnapshot& { return m.ttft; });
  histogram("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.",
            [](const EngineMetricsSnapshot& m) -> const HistogramSnapshot& { return m.itl; });
  histogram("vllm:time_per_output_token_seconds",
            "Histogram of time per output token in seconds. DEPRECATED: use vllm:inter_token_latency_seconds.",
            [](const EngineMetricsSnapshot& m) -> const HistogramSnapshot& { return m.itl; });
  histogram("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.",
            [](const EngineMetricsSnapshot& m) -> const HistogramSnapshot& { return m.request_tpot; });
  histogram("vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.",
            [](const EngineMetricsSnapshot& m) -> const HistogramSnapshot& { return m.e2e; });
  histogram("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.",
            [](const EngineMetricsSnapshot& m) -> const HistogramSnapshot& { return m.queue; });
  per_model("herd_prompt_tokens_computed_total", "counter",
            "Prompt tokens that went through a forward pass (prefill work; prefix-cache hits excluded).",
            [&](const EngineMetricsSnapshot& m) { return i64(m.prompt_tokens_computed); });
  per_model("herd_host_sampled_rows_total", "counter",
            "Logits rows copied to the host and sampled there (sampling the device could not do: logit bias, "
            "typical-p without top-k, top-k above 64, ...).",
            [&](const EngineMetricsSnapshot& m) { return i64(m.host_sampled_rows); });

  if (http != nullptr) {
    w.Family("herd_http_requests_total", "counter", "HTTP requests answered, by API, route pattern and status.");
    for (const HttpMetrics::Count& c : http->Counts()) {
      w.Sample("herd_http_requests_total", {{"api", c.api}, {"route", c.route}, {"status", std::to_string(c.status)}},
               i64(c.count));
    }
  }
  int loaded = 0;
  for (const ModelStatus& st : status) loaded += st.state == ModelState::kLoaded ? 1 : 0;
  w.Family("herd_models_loaded", "gauge", "Models loaded now.");
  w.Sample("herd_models_loaded", {}, loaded);
  w.Family("herd_model_memory_bytes", "gauge", "Memory a loading or loaded model holds: weights and KV pool.");
  for (const ModelStatus& st : status) {
    if (st.state == ModelState::kUnloaded) continue;
    w.Sample("herd_model_memory_bytes", ModelLabels(st), static_cast<double>(st.memory_bytes));
  }
  return w.text();
}

}  // namespace herd::server
