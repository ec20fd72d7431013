#include "cli/bench_serve/bench_serve.h"

#include <cmath>
#include <cstdio>

#include "cli/bench_serve/load_generator.h"
#include "cli/bench_serve/progress.h"
#include "http/http_client.h"

namespace herd::bench {

using nlohmann::json;

namespace {

json ConfigJson(const BenchServeOptions& o, int num_prompts_given) {
  const WorkloadOptions& w = o.workload;
  json j = {{"url", o.url},
            {"api", ApiName(o.request.api)},
            {"model", o.request.model},
            {"workload", w.kind},
            {"concurrency", o.concurrency},
            {"num_prompts", num_prompts_given > 0 ? json(num_prompts_given) : json("max(4, 2 x concurrency)")},
            {"input_len", w.input_len},
            {"output_len", w.output_len},
            {"shared_prefix_len", w.shared_prefix_len},
            {"ignore_eos", o.request.ignore_eos},
            {"ignore_eos_sent", o.request.ignore_eos && SupportsIgnoreEos(o.request.api)},
            {"request_rate", o.request_rate > 0 && std::isfinite(o.request_rate) ? json(o.request_rate) : json("inf")},
            {"seed", o.seed},
            {"timeout_s", o.timeout.count() / 1000.0},
            {"max_error_rate", o.max_error_rate}};
  if (o.request.temperature) j["temperature"] = *o.request.temperature;
  if (w.kind == "multiturn") {
    j["turns"] = w.turns;
    j["turn_len"] = w.turn_len;
  }
  if (w.kind == "dataset") j["dataset"] = w.dataset;
  return j;
}

}  // namespace

Result<BenchReport> RunBenchServe(const BenchServeOptions& o, std::ostream& out) {
  HERD_ASSIGN_OR_RETURN(const HttpUrl url, HttpUrl::Parse(o.url));
  if (o.concurrency.empty()) return InvalidArgument("--concurrency needs at least one level");
  for (int c : o.concurrency) {
    if (c < 1) return InvalidArgument("--concurrency levels must be at least 1");
  }
  if (o.request.model.empty()) return InvalidArgument("--model is required");
  BenchReport report;
  HttpClient client;
  TokenCounter counter;
  report.calibration = Calibrate(client, url, o.request, o.seed, &counter);
  const Calibration& cal = report.calibration;
  const bool ignore_eos_sent = o.request.ignore_eos && SupportsIgnoreEos(o.request.api);

  char buf[512];
  std::snprintf(buf, sizeof buf, "herd bench serve: %s API at %s, model %s, workload %s\n", ApiName(o.request.api),
                o.url.c_str(), o.request.model.c_str(), o.workload.kind.c_str());
  out << buf;
  if (o.workload.kind != "dataset") {
    std::snprintf(buf, sizeof buf, "  %d input / %d output tokens%s%s\n", o.workload.input_len, o.workload.output_len,
                  o.workload.shared_prefix_len > 0 || o.workload.kind == "agent" ? ", shared prefix " : "",
                  o.workload.shared_prefix_len > 0 ? std::to_string(o.workload.shared_prefix_len).c_str()
                  : o.workload.kind == "agent"     ? "1024 (system prompt)"
                                                   : "");
    out << buf;
  }
  if (cal.method == "tokenize") {
    std::snprintf(buf, sizeof buf, "  prompt lengths: fitted with the server's POST /tokenize (%.2f tokens/word)\n",
                  cal.tokens_per_word);
  } else if (cal.method == "usage") {
    std::snprintf(buf, sizeof buf,
                  "  prompt lengths: estimated, %.2f tokens/word from the API's usage (template adds ~%d); %s\n",
                  cal.tokens_per_word, cal.template_overhead, cal.note.c_str());
  } else {
    std::snprintf(buf, sizeof buf, "  prompt lengths: UNCALIBRATED, assuming %.2f tokens/word; %s\n",
                  cal.tokens_per_word, cal.note.c_str());
  }
  out << buf;
  if (o.request.ignore_eos && !ignore_eos_sent) {
    out << "  note: ignore_eos not sent: the " << ApiName(o.request.api) << " API has no such field\n";
  }
  if (o.request.api == Api::kOllama) {
    out << "  note: Ollama's prompt_eval_count (its usage) leaves out prompt tokens served from its cache\n";
  }
  std::snprintf(buf, sizeof buf, "  seed %llu\n", static_cast<unsigned long long>(o.seed));
  out << buf << std::flush;

  report.json = {{"herd_bench_serve", 1}, {"config", ConfigJson(o, o.workload.num_prompts)}};
  report.json["calibration"] = {
      {"method", cal.method},
      {"tokens_per_word", cal.tokens_per_word},
      {"template_overhead", cal.template_overhead >= 0 ? json(cal.template_overhead) : json(nullptr)},
      {"note", cal.note}};
  json runs = json::array();
  for (size_t level = 0; level < o.concurrency.size(); ++level) {
    const int conc = o.concurrency[level];
    WorkloadOptions w = o.workload;
    if (w.num_prompts <= 0) w.num_prompts = std::max(4, 2 * conc);
    w.seed = o.seed * 1000003ULL + level + 1;  // fresh prompts per level: no prefix-cache hits across levels
    HERD_ASSIGN_OR_RETURN(std::vector<Session> sessions, BuildWorkload(w, counter));
    LoadOptions lo;
    lo.url = url;
    lo.request = o.request;
    lo.request.ignore_eos = ignore_eos_sent;
    lo.concurrency = conc;
    lo.request_rate = o.request_rate;
    lo.seed = o.seed + level;
    lo.timeout = o.timeout;
    if (o.progress) {
      ProgressDisplay p = MakeProgress("concurrency " + std::to_string(conc), StderrIsTty());
      lo.progress = p.update;
      lo.progress_interval = p.interval;
    }
    RunResult run = RunLoad(client, lo, sessions);
    RunSummary s = Summarize(run, conc, o.request_rate);
    PrintRun(out, s, ignore_eos_sent);
    out << std::flush;
    if (s.requests > 0 && static_cast<double>(s.failed) / s.requests > o.max_error_rate) {
      report.error_rate_exceeded = true;
    }
    runs.push_back(ToJson(s, &run));
    runs.back()["length_warnings"] = LengthWarnings(s, ignore_eos_sent);
    report.summaries.push_back(std::move(s));
    report.runs.push_back(std::move(run));
  }
  report.json["runs"] = std::move(runs);
  report.json["error_rate_exceeded"] = report.error_rate_exceeded;
  out << "\n";
  PrintComparison(out, report.summaries);
  return report;
}

}  // namespace herd::bench
