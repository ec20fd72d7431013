// EngineMetrics: what a monitoring system scrapes from one model's engine — counters that only
// grow, gauges of the current state, and latency histograms — recorded by the engine thread and
// read from any thread (all fields are atomics; Snapshot never blocks the engine).
//
// Protocol-neutral: the server renders it (Prometheus text with vLLM's metric names, JSON
// status). The object may outlive its engine and be handed to the next engine of the same model
// (EngineOptions::metrics), so counters survive an unload and reload; the engine zeroes the
// gauges when it goes.
//
// What is measured (times from EngineClock, per request unless stated):
//   ttft            first token - submission (the first sampled token of any choice)
//   itl             gap between consecutive tokens of one choice (every token after its first)
//   request_tpot    (last token - first token) / (generated - 1) of choice 0, when it made >= 2 tokens
//   e2e             end - submission, for every request that ends (stop, length, cancel, error)
//   queue           first scheduled - submission, for requests that were scheduled
//   prompt_tokens   prompt length of each request, counted at its first token (cached tokens
//                   included, as vLLM counts them); prompt_tokens_computed: tokens that went
//                   through a forward pass as prefill
//   prefix_queries / prefix_hits: prompt tokens looked up in / found in the prefix cache at admission
// Requests coalesced into an identical one in flight are not counted separately.
#pragma once

#include <array>
#include <atomic>
#include <cstdint>

#include "base/histogram.h"
#include "engine/request.h"

namespace herd {

struct EngineMetricsSnapshot {
  HistogramSnapshot ttft, itl, request_tpot, e2e, queue;
  int64_t prompt_tokens = 0;
  int64_t prompt_tokens_computed = 0;
  int64_t generation_tokens = 0;
  int64_t preemptions = 0;
  int64_t host_sampled_rows = 0;  // logits rows sampled on the host (EngineStats::host_sampled_rows)
  int64_t prefix_queries = 0;
  int64_t prefix_hits = 0;
  std::array<int64_t, 4> finished{};  // ended requests by FinishReason (kStop, kLength, kCancelled, kError)
  // Gauges: sequences in the running batch / waiting for admission, KV blocks in use (held by a
  // sequence or a pin; cached-but-free blocks count as free) and in the pool.
  int32_t running = 0, waiting = 0, used_blocks = 0, total_blocks = 0;

  double kv_usage() const { return total_blocks > 0 ? static_cast<double>(used_blocks) / total_blocks : 0.0; }
};

class EngineMetrics {
 public:
  EngineMetrics();
  EngineMetrics(const EngineMetrics&) = delete;
  EngineMetrics& operator=(const EngineMetrics&) = delete;

  // Engine thread.
  void OnFirstToken(double ttft_s, int32_t n_prompt);
  void OnTokenGap(double seconds) { itl_.Observe(seconds); }
  // A request ended. queue_s < 0: never scheduled; tpot_s < 0: fewer than two tokens.
  void OnRequestEnd(FinishReason reason, double e2e_s, double queue_s, double tpot_s);
  // Per step: what the step added to the engine's cumulative counts, and the state after it.
  struct StepDelta {
    int64_t prompt_tokens_computed = 0, generation_tokens = 0, preemptions = 0, host_sampled_rows = 0;
    int64_t prefix_queries = 0, prefix_hits = 0;
  };
  void OnStep(const StepDelta& delta, int32_t running, int32_t waiting, int32_t used_blocks, int32_t total_blocks);

  EngineMetricsSnapshot Snapshot() const;

 private:
  Histogram ttft_, itl_, request_tpot_, e2e_, queue_;
  std::atomic<int64_t> prompt_tokens_{0}, prompt_tokens_computed_{0}, generation_tokens_{0}, preemptions_{0};
  std::atomic<int64_t> host_sampled_rows_{0};
  std::atomic<int64_t> prefix_queries_{0}, prefix_hits_{0};
  std::array<std::atomic<int64_t>, 4> finished_{};
  std::atomic<int32_t> running_{0}, waiting_{0}, used_blocks_{0}, total_blocks_{0};
};

}  // namespace herd
