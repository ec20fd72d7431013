#include "server/http_metrics.h"

#include <atomic>

namespace herd::server {
namespace {

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Forwards everything to the transport's responder and counts the first answer.
class CountingResponder : public Responder {
 public:
  CountingResponder(std::shared_ptr<Responder> inner, std::shared_ptr<HttpMetrics> metrics, std::string_view api,
                    std::string route)
      : inner_(std::move(inner)), metrics_(std::move(metrics)), api_(api), route_(std::move(route)) {}
  ~CountingResponder() override { Count(500); }  // no-op if it answered; else the transport's 500

  void Respond(HttpResponse response) override {
    Count(response.status);
    inner_->Respond(std::move(response));
  }
  std::shared_ptr<ResponseStream> StartStream(int status, Headers headers) override {
    Count(status);
    return inner_->StartStream(status, std::move(headers));
  }
  void OnCancel(std::function<void()> callback) override { inner_->OnCancel(std::move(callback)); }
  bool cancelled() const override { return inner_->cancelled(); }

 private:
  void Count(int status) {
    if (!counted_.exchange(true)) metrics_->Record(api_, route_, status);
  }

  std::shared_ptr<Responder> inner_;
  std::shared_ptr<HttpMetrics> metrics_;
  std::string_view api_;  // a literal from ApiOfRoute
  std::string route_;
  std::atomic<bool> counted_{false};
};

}  // namespace

std::string_view ApiOfRoute(std::string_view p) {
  if (p == "/v1/messages" || StartsWith(p, "/v1/messages/")) return "anthropic";
  if (p == "/" || p == "/api" || StartsWith(p, "/api/")) return "ollama";
  if (p == "/v1/status") return "herd";
  if (StartsWith(p, "/v1/")) return "openai";
  return "herd";
}

void HttpMetrics::Attach(Router& router) {
  std::shared_ptr<HttpMetrics> self = shared_from_this();
  router.SetResponderWrap([self](const HttpRequest& request, std::string_view pattern,
                                 std::shared_ptr<Responder> responder) -> std::shared_ptr<Responder> {
    // Unmatched requests: the API by the path (bounded: four values), the route a fixed word.
    const std::string_view api = ApiOfRoute(pattern.empty() ? std::string_view(request.path) : pattern);
    return std::make_shared<CountingResponder>(std::move(responder), self, api,
                                               pattern.empty() ? "unmatched" : std::string(pattern));
  });
}

void HttpMetrics::Record(std::string_view api, std::string_view route, int status) {
  std::lock_guard lock(mu_);
  ++counts_[{std::string(api), std::string(route), status}];
}

std::vector<HttpMetrics::Count> HttpMetrics::Counts() const {
  std::lock_guard lock(mu_);
  std::vector<Count> out;
  out.reserve(counts_.size());
  for (const auto& [key, n] : counts_) out.push_back({std::get<0>(key), std::get<1>(key), std::get<2>(key), n});
  return out;
}

}  // namespace herd::server
