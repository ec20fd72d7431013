// `herd bench serve` as a library call: calibrate prompt lengths against the server, then run
// the workload once per concurrency level, print each level's report and a comparison table,
// and return everything (also as the JSON document `--json` writes).
#pragma once

#include <chrono>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "base/status.h"
#include "cli/bench_serve/api_protocol.h"
#include "cli/bench_serve/calibrate.h"
#include "cli/bench_serve/report.h"
#include "cli/bench_serve/workload.h"

namespace herd::bench {

struct BenchServeOptions {
  std::string url;           // http://host:port[/base]
  RequestOptions request;    // api, model, ignore_eos, temperature, key
  WorkloadOptions workload;  // num_prompts <= 0: per level max(4, 2 x concurrency)
  std::vector<int> concurrency = {1};
  double request_rate = 0;  // sessions per second (Poisson); <= 0 or inf: all at once
  uint64_t seed = 0;
  std::chrono::milliseconds timeout{600'000};  // per request
  bool progress = true;                        // progress display on stderr
  double max_error_rate = 0.01;
};

struct BenchReport {
  Calibration calibration;
  std::vector<RunSummary> summaries;  // one per level, in order
  std::vector<RunResult> runs;
  nlohmann::json json;               // config, calibration, runs (with every request)
  bool error_rate_exceeded = false;  // some level's failed / requests > max_error_rate
};

// Errors: InvalidArgument (bad URL, concurrency, workload options, dataset file). Failed
// requests are not errors: they are counted in the report.
Result<BenchReport> RunBenchServe(const BenchServeOptions& o, std::ostream& out);

}  // namespace herd::bench
