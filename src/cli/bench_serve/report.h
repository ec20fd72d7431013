// Aggregates of one benchmark run and their presentation (a table for people, JSON for tools).
//
// Definitions (per successful request unless said otherwise):
//   TTFT  first content delta - send (includes connecting and queueing in the server)
//   ITL   gaps between consecutive content deltas, pooled over all requests
//   TPOT  (e2e - ttft) / (output tokens - 1), requests with at least 2 output tokens
//   E2E   end of the response - send
//   output tokens: the server's reported usage when present, else the number of content deltas
//   duration: first send to last completion; throughputs are completed requests, output tokens
//   and (prompt + output) tokens of successful requests divided by it. Prompt tokens are the
//   server's usage when reported, else the benchmark's own count of the text it sent.
// Percentiles interpolate linearly between order statistics, so min <= p50 <= p90 <= p99 <= max.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "cli/bench_serve/load_generator.h"

namespace herd::bench {

struct Distribution {
  size_t n = 0;
  double mean = 0, min = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

// Of `values` scaled by `scale` (e.g. 1000 for seconds -> ms). All zero when empty.
Distribution Distribute(std::vector<double> values, double scale = 1);

struct RunSummary {
  int concurrency = 0;
  double request_rate = 0;  // <= 0: all at once
  int requests = 0, completed = 0, failed = 0;
  std::map<std::string, int> errors;  // by kind
  std::string first_error;            // "kind: message" of the first failure
  double duration_s = 0;
  double request_throughput = 0, output_throughput = 0, total_token_throughput = 0;
  int64_t total_prompt_tokens = 0, total_output_tokens = 0;
  int prompt_usage_reported = 0;  // successful requests whose prompt tokens came from usage
  double mean_prompt_tokens = 0;  // over successful requests (usage, else own count)
  double mean_fitted_prompt_tokens = 0;
  int output_from_usage = 0, output_from_deltas = 0;
  int usage_differs_from_deltas = 0;  // usage reported and != delta count (multi-token deltas)
  double mean_output_tokens = 0;
  int requested_output = 0;  // max_tokens of the first request (the same for all but datasets)
  int shorter_than_requested = 0, longer_than_requested = 0;
  std::map<std::string, int> finish_reasons;
  Distribution ttft_ms, tpot_ms, itl_ms, e2e_ms;
};

RunSummary Summarize(const RunResult& run, int concurrency, double request_rate);

// Lines warning that the server did not honour the requested output length: with ignore_eos,
// any request shorter than max_tokens; always, any request longer than it.
std::vector<std::string> LengthWarnings(const RunSummary& s, bool ignore_eos_sent);

// The block of one level: counts, throughputs, token sources, latency percentiles.
void PrintRun(std::ostream& out, const RunSummary& s, bool ignore_eos_sent);
// One line per level, for comparing levels (and servers) side by side.
void PrintComparison(std::ostream& out, const std::vector<RunSummary>& runs);

nlohmann::json ToJson(const Distribution& d);
// The summary, and with `records` every request's numbers (as "per_request").
nlohmann::json ToJson(const RunSummary& s, const RunResult* records);

}  // namespace herd::bench
