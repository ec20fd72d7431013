#include "engine/engine_metrics.h"

namespace herd {
namespace {

// vLLM's bucket bounds, so dashboards and SLO queries written for vLLM read the same le values.
std::vector<double> TtftBounds() {
  return {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
}
std::vector<double> TokenGapBounds() {
  return {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
}
std::vector<double> RequestBounds() {
  return {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
          30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
}

}  // namespace

EngineMetrics::EngineMetrics()
    : ttft_(TtftBounds()),
      itl_(TokenGapBounds()),
      request_tpot_(TokenGapBounds()),
      e2e_(RequestBounds()),
      queue_(RequestBounds()) {}

void EngineMetrics::OnFirstToken(double ttft_s, int32_t n_prompt) {
  ttft_.Observe(ttft_s);
  prompt_tokens_.fetch_add(n_prompt, std::memory_order_relaxed);
}

void EngineMetrics::OnRequestEnd(FinishReason reason, double e2e_s, double queue_s, double tpot_s) {
  e2e_.Observe(e2e_s);
  if (queue_s >= 0) queue_.Observe(queue_s);
  if (tpot_s >= 0) request_tpot_.Observe(tpot_s);
  finished_[static_cast<size_t>(reason)].fetch_add(1, std::memory_order_relaxed);
}

void EngineMetrics::OnStep(const StepDelta& d, int32_t running, int32_t waiting, int32_t used_blocks,
                           int32_t total_blocks) {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  if (d.prompt_tokens_computed != 0) prompt_tokens_computed_.fetch_add(d.prompt_tokens_computed, kRelaxed);
  if (d.generation_tokens != 0) generation_tokens_.fetch_add(d.generation_tokens, kRelaxed);
  if (d.preemptions != 0) preemptions_.fetch_add(d.preemptions, kRelaxed);
  if (d.host_sampled_rows != 0) host_sampled_rows_.fetch_add(d.host_sampled_rows, kRelaxed);
  if (d.prefix_queries != 0) prefix_queries_.fetch_add(d.prefix_queries, kRelaxed);
  if (d.prefix_hits != 0) prefix_hits_.fetch_add(d.prefix_hits, kRelaxed);
  running_.store(running, kRelaxed);
  waiting_.store(waiting, kRelaxed);
  used_blocks_.store(used_blocks, kRelaxed);
  total_blocks_.store(total_blocks, kRelaxed);
}

EngineMetricsSnapshot EngineMetrics::Snapshot() const {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  EngineMetricsSnapshot s;
  s.ttft = ttft_.Snapshot();
  s.itl = itl_.Snapshot();
  s.request_tpot = request_tpot_.Snapshot();
  s.e2e = e2e_.Snapshot();
  s.queue = queue_.Snapshot();
  s.prompt_tokens = prompt_tokens_.load(kRelaxed);
  s.prompt_tokens_computed = prompt_tokens_computed_.load(kRelaxed);
  s.generation_tokens = generation_tokens_.load(kRelaxed);
  s.preemptions = preemptions_.load(kRelaxed);
  s.host_sampled_rows = host_sampled_rows_.load(kRelaxed);
  s.prefix_queries = prefix_queries_.load(kRelaxed);
  s.prefix_hits = prefix_hits_.load(kRelaxed);
  for (size_t i = 0; i < finished_.size(); ++i) s.finished[i] = finished_[i].load(kRelaxed);
  s.running = running_.load(kRelaxed);
  s.waiting = waiting_.load(kRelaxed);
  s.used_blocks = used_blocks_.load(kRelaxed);
  s.total_blocks = total_blocks_.load(kRelaxed);
  return s;
}

}  // namespace herd
