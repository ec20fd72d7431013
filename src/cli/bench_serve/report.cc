#include "cli/bench_serve/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/quantile.h"

namespace herd::bench {

using nlohmann::json;

Distribution Distribute(std::vector<double> v, double scale) {
  Distribution d;
  if (v.empty()) return d;
  for (double& x : v) x *= scale;
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return Quantile(v, q); };
  d.n = v.size();
  d.min = v.front();
  d.max = v.back();
  d.p50 = at(0.50);
  d.p90 = at(0.90);
  d.p99 = at(0.99);
  double sum = 0;
  for (double x : v) sum += x;
  d.mean = sum / static_cast<double>(v.size());
  // Interpolation rounding must not break the order the definitions promise.
  d.p50 = std::clamp(d.p50, d.min, d.max);
  d.p90 = std::clamp(d.p90, d.p50, d.max);
  d.p99 = std::clamp(d.p99, d.p90, d.max);
  return d;
}

RunSummary Summarize(const RunResult& run, int concurrency, double request_rate) {
  RunSummary s;
  s.concurrency = concurrency;
  s.request_rate = request_rate;
  s.requests = static_cast<int>(run.records.size());
  s.duration_s = run.duration_s;
  std::vector<double> ttft, tpot, itl, e2e;
  double fitted = 0;
  for (const RequestRecord& r : run.records) {
    if (s.requested_output == 0) s.requested_output = r.requested_output;
    if (!r.ok) {
      ++s.failed;
      ++s.errors[r.error_kind];
      if (s.first_error.empty()) s.first_error = r.error_kind + ": " + r.error;
      continue;
    }
    ++s.completed;
    const bool prompt_usage = r.usage_prompt_tokens >= 0;
    s.prompt_usage_reported += prompt_usage ? 1 : 0;
    s.total_prompt_tokens += prompt_usage ? r.usage_prompt_tokens : r.fitted_prompt_tokens;
    fitted += r.fitted_prompt_tokens;
    s.total_output_tokens += r.output_tokens;
    (r.tokens_from_usage ? s.output_from_usage : s.output_from_deltas) += 1;
    if (r.tokens_from_usage && r.usage_output_tokens != r.deltas) ++s.usage_differs_from_deltas;
    if (r.output_tokens < r.requested_output) ++s.shorter_than_requested;
    if (r.output_tokens > r.requested_output) ++s.longer_than_requested;
    ++s.finish_reasons[r.finish_reason.empty() ? "(none)" : r.finish_reason];
    if (r.ttft_s >= 0) ttft.push_back(r.ttft_s);
    if (r.output_tokens > 1 && r.ttft_s >= 0) {
      tpot.push_back((r.e2e_s - r.ttft_s) / static_cast<double>(r.output_tokens - 1));
    }
    itl.insert(itl.end(), r.itl_s.begin(), r.itl_s.end());
    e2e.push_back(r.e2e_s);
  }
  if (s.completed > 0) {
    s.mean_prompt_tokens = static_cast<double>(s.total_prompt_tokens) / s.completed;
    s.mean_fitted_prompt_tokens = fitted / s.completed;
    s.mean_output_tokens = static_cast<double>(s.total_output_tokens) / s.completed;
  }
  if (s.duration_s > 0) {
    s.request_throughput = s.completed / s.duration_s;
    s.output_throughput = static_cast<double>(s.total_output_tokens) / s.duration_s;
    s.total_token_throughput = static_cast<double>(s.total_prompt_tokens + s.total_output_tokens) / s.duration_s;
  }
  s.ttft_ms = Distribute(std::move(ttft), 1000);
  s.tpot_ms = Distribute(std::move(tpot), 1000);
  s.itl_ms = Distribute(std::move(itl), 1000);
  s.e2e_ms = Distribute(std::move(e2e), 1000);
  return s;
}

std::vector<std::string> LengthWarnings(const RunSummary& s, bool ignore_eos_sent) {
  std::vector<std::string> w;
  char buf[256];
  if (s.longer_than_requested > 0) {
    std::snprintf(buf, sizeof buf, "the server ignored max_tokens: %d of %d requests produced more than %d tokens",
                  s.longer_than_requested, s.completed, s.requested_output);
    w.push_back(buf);
  }
  if (s.shorter_than_requested > 0) {
    if (ignore_eos_sent) {
      std::snprintf(buf, sizeof buf, "the server ignored ignore_eos: %d of %d requests stopped before max_tokens (%d)",
                    s.shorter_than_requested, s.completed, s.requested_output);
    } else {
      std::snprintf(buf, sizeof buf,
                    "%d of %d requests stopped before max_tokens (%d) at an end-of-generation token "
                    "(--ignore-eos forces the length where the API allows it)",
                    s.shorter_than_requested, s.completed, s.requested_output);
    }
    w.push_back(buf);
  }
  return w;
}

namespace {

void Row(std::ostream& out, const char* name, const Distribution& d) {
  char buf[160];
  if (d.n == 0) {
    std::snprintf(buf, sizeof buf, "  %-10s %10s\n", name, "-");
  } else {
    std::snprintf(buf, sizeof buf, "  %-10s %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", name, d.mean, d.min, d.p50,
                  d.p90, d.p99, d.max);
  }
  out << buf;
}

std::string Rate(double r) {
  if (r <= 0 || !std::isfinite(r)) return "inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", r);
  return buf;
}

}  // namespace

void PrintRun(std::ostream& out, const RunSummary& s, bool ignore_eos_sent) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "---- concurrency %d, request rate %s/s ----\n", s.concurrency,
                Rate(s.request_rate).c_str());
  out << buf;
  std::snprintf(buf, sizeof buf, "  requests           %d completed, %d failed, in %.2f s\n", s.completed, s.failed,
                s.duration_s);
  out << buf;
  for (const auto& [kind, n] : s.errors) out << "    error " << kind << ": " << n << "\n";
  if (!s.first_error.empty()) out << "    first error: " << s.first_error << "\n";
  std::snprintf(buf, sizeof buf, "  throughput         %.3f req/s, %.1f output tok/s, %.1f total tok/s\n",
                s.request_throughput, s.output_throughput, s.total_token_throughput);
  out << buf;
  if (s.completed == 0) {
    out << "  (no successful request: no token or latency numbers)\n";
    return;
  }
  std::snprintf(buf, sizeof buf, "  prompt tokens      %.1f mean (%s), %.1f mean counted by the benchmark\n",
                s.mean_prompt_tokens,
                s.prompt_usage_reported == s.completed ? "server usage"
                : s.prompt_usage_reported == 0         ? "the benchmark's count: no usage reported"
                                                       : "partly server usage",
                s.mean_fitted_prompt_tokens);
  out << buf;
  std::snprintf(buf, sizeof buf, "  output tokens      %.1f mean of %d requested (%s)\n", s.mean_output_tokens,
                s.requested_output,
                s.output_from_deltas == 0  ? "server usage"
                : s.output_from_usage == 0 ? "counted stream deltas: no usage reported"
                                           : "partly counted deltas");
  out << buf;
  if (s.usage_differs_from_deltas > 0) {
    std::snprintf(buf, sizeof buf, "  note               %d requests had usage != delta count (multi-token deltas)\n",
                  s.usage_differs_from_deltas);
    out << buf;
  }
  std::string reasons;
  for (const auto& [r, n] : s.finish_reasons) reasons += (reasons.empty() ? "" : ", ") + r + " " + std::to_string(n);
  if (!reasons.empty()) out << "  finish reasons     " << reasons << "\n";
  for (const std::string& w : LengthWarnings(s, ignore_eos_sent)) out << "  WARNING: " << w << "\n";
  std::snprintf(buf, sizeof buf, "  %-10s %10s %10s %10s %10s %10s %10s\n", "(ms)", "mean", "min", "p50", "p90", "p99",
                "max");
  out << buf;
  Row(out, "TTFT", s.ttft_ms);
  Row(out, "TPOT", s.tpot_ms);
  Row(out, "ITL", s.itl_ms);
  Row(out, "E2E", s.e2e_ms);
}

void PrintComparison(std::ostream& out, const std::vector<RunSummary>& runs) {
  char buf[320];
  std::snprintf(buf, sizeof buf, "%5s %6s %5s %5s %8s %10s %10s %10s %10s %10s %10s\n", "conc", "rate", "ok", "fail",
                "req/s", "out tok/s", "TTFT p50", "TTFT p99", "TPOT p50", "ITL p50", "E2E p50");
  out << buf;
  for (const RunSummary& s : runs) {
    std::snprintf(buf, sizeof buf, "%5d %6s %5d %5d %8.3f %10.1f %10.1f %10.1f %10.1f %10.1f %10.1f\n", s.concurrency,
                  Rate(s.request_rate).c_str(), s.completed, s.failed, s.request_throughput, s.output_throughput,
                  s.ttft_ms.p50, s.ttft_ms.p99, s.tpot_ms.p50, s.itl_ms.p50, s.e2e_ms.p50);
    out << buf;
  }
  out << "(latencies in ms)\n";
}

json ToJson(const Distribution& d) {
  return json{{"n", d.n},     {"mean", d.mean}, {"min", d.min}, {"p50", d.p50},
              {"p90", d.p90}, {"p99", d.p99},   {"max", d.max}};
}

json ToJson(const RunSummary& s, const RunResult* run) {
  json j = {{"concurrency", s.concurrency},
            {"request_rate", s.request_rate > 0 && std::isfinite(s.request_rate) ? json(s.request_rate) : json("inf")},
            {"requests", s.requests},
            {"completed", s.completed},
            {"failed", s.failed},
            {"error_rate", s.requests > 0 ? static_cast<double>(s.failed) / s.requests : 0.0},
            {"errors", s.errors},
            {"first_error", s.first_error},
            {"duration_s", s.duration_s},
            {"request_throughput", s.request_throughput},
            {"output_throughput", s.output_throughput},
            {"total_token_throughput", s.total_token_throughput},
            {"total_prompt_tokens", s.total_prompt_tokens},
            {"total_output_tokens", s.total_output_tokens},
            {"mean_prompt_tokens", s.mean_prompt_tokens},
            {"prompt_tokens_source",
             {{"server_usage", s.prompt_usage_reported}, {"benchmark_count", s.completed - s.prompt_usage_reported}}},
            {"mean_fitted_prompt_tokens", s.mean_fitted_prompt_tokens},
            {"mean_output_tokens", s.mean_output_tokens},
            {"output_tokens_source", {{"server_usage", s.output_from_usage}, {"stream_deltas", s.output_from_deltas}}},
            {"usage_differs_from_deltas", s.usage_differs_from_deltas},
            {"requested_output_tokens", s.requested_output},
            {"shorter_than_requested", s.shorter_than_requested},
            {"longer_than_requested", s.longer_than_requested},
            {"finish_reasons", s.finish_reasons},
            {"ttft_ms", ToJson(s.ttft_ms)},
            {"tpot_ms", ToJson(s.tpot_ms)},
            {"itl_ms", ToJson(s.itl_ms)},
            {"e2e_ms", ToJson(s.e2e_ms)}};
  if (run != nullptr) {
    json reqs = json::array();
    for (const RequestRecord& r : run->records) {
      auto opt = [](int64_t v) { return v >= 0 ? json(v) : json(nullptr); };
      reqs.push_back({{"session", r.session},
                      {"turn", r.turn},
                      {"ok", r.ok},
                      {"error_kind", r.error_kind},
                      {"error", r.error},
                      {"http_status", r.http_status},
                      {"start_s", r.start_s},
                      {"ttft_ms", r.ttft_s >= 0 ? json(r.ttft_s * 1000) : json(nullptr)},
                      {"e2e_ms", r.e2e_s * 1000},
                      {"deltas", r.deltas},
                      {"usage_prompt_tokens", opt(r.usage_prompt_tokens)},
                      {"usage_output_tokens", opt(r.usage_output_tokens)},
                      {"output_tokens", r.output_tokens},
                      {"output_tokens_source", r.tokens_from_usage ? "server_usage" : "stream_deltas"},
                      {"requested_output_tokens", r.requested_output},
                      {"fitted_prompt_tokens", r.fitted_prompt_tokens},
                      {"finish_reason", r.finish_reason}});
    }
    j["per_request"] = std::move(reqs);
  }
  return j;
}

}  // namespace herd::bench
