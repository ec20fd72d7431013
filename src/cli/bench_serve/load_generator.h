// The load generator of `herd bench serve`: streams the workload's requests against one server
// at one concurrency level and records, per request, when each content delta arrived.
//
// Everything runs on the HttpClient's one I/O thread: arrivals (timers), launches and the
// stream callbacks, so the generator has no locks; the calling thread waits for the end.
// - Sessions arrive all at once (request_rate <= 0 or infinite) or at Poisson times of rate
//   `request_rate` per second (exponential gaps from `seed`). A session's first turn is then
//   ready; each later turn becomes ready when the previous one succeeded (and goes ahead of new
//   sessions). At most `concurrency` requests are in flight.
// - A failed turn ends its session: the turns left are recorded as errors of kind "skipped".
// - Timestamps are taken when the bytes reach the I/O thread: deltas read in one socket read
//   share a timestamp (their gap is 0), as a client would see them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cli/bench_serve/api_protocol.h"
#include "cli/bench_serve/workload.h"
#include "http/http_client.h"

namespace herd::bench {

struct RequestRecord {
  int session = 0, turn = 0;
  int requested_output = 0;      // max_tokens sent
  int fitted_prompt_tokens = 0;  // counted tokens of the text sent, answers of earlier turns excluded
  bool ok = false;
  // "" when ok; else http_<status>, connection, timeout, parse (malformed HTTP or stream),
  // server_error (an error inside a 200 stream), incomplete (no end marker), skipped.
  std::string error_kind;
  std::string error;
  int http_status = 0;
  double start_s = 0;         // send time, since the run's start
  double ttft_s = -1;         // first content delta - send; -1 when none arrived
  double e2e_s = 0;           // end of the response - send
  std::vector<double> itl_s;  // gaps between consecutive content deltas
  int64_t deltas = 0;
  int64_t usage_prompt_tokens = -1, usage_output_tokens = -1;  // -1: not reported
  int64_t output_tokens = 0;                                   // usage when reported, else the number of deltas
  bool tokens_from_usage = false;
  std::string finish_reason;
};

struct ProgressState {
  int total = 0, done = 0, failed = 0, in_flight = 0;
  int64_t output_tokens = 0;
  double elapsed_s = 0;
};

struct LoadOptions {
  HttpUrl url;
  RequestOptions request;
  int concurrency = 1;
  double request_rate = 0;  // sessions per second; <= 0 or inf: all at once
  uint64_t seed = 0;
  std::chrono::milliseconds timeout{600'000};
  // Called on the I/O thread every `progress_interval` and once at the end.
  std::function<void(const ProgressState&)> progress;
  std::chrono::milliseconds progress_interval{250};
};

struct RunResult {
  std::vector<RequestRecord> records;  // in completion order
  double duration_s = 0;               // first send to last completion
};

// Runs every turn of `sessions`; blocks until all have ended. Must not be called on the
// client's I/O thread.
RunResult RunLoad(HttpClient& client, const LoadOptions& o, const std::vector<Session>& sessions);

}  // namespace herd::bench
