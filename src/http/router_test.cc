#include "http/router.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

namespace herd {
namespace {

// Records what the router answered, without a server.
class FakeResponder : public Responder {
 public:
  void Respond(HttpResponse r) override { response = std::move(r); }
  std::shared_ptr<ResponseStream> StartStream(int, Headers) override { return nullptr; }
  void OnCancel(std::function<void()>) override {}
  bool cancelled() const override { return false; }
  std::optional<HttpResponse> response;
};

struct Dispatched {
  int status = 0;
  std::string body;
  std::string allow;
};

Dispatched Route(const Router& router, const std::string& method, const std::string& path, HttpRequest* out = nullptr) {
  HttpRequest req;
  req.method = method;
  req.path = path;
  auto responder = std::make_shared<FakeResponder>();
  router.Dispatch(req, responder);
  if (out) *out = req;
  Dispatched d;
  if (responder->response) {
    d.status = responder->response->status;
    d.body = responder->response->body;
    d.allow = responder->response->headers.GetOr("Allow", "");
  }
  return d;
}

HttpHandler Reply(std::string text) {
  return [text](HttpRequest&, std::shared_ptr<Responder> r) { r->Respond(HttpResponse::Text(200, text)); };
}

TEST(RouterTest, ExactParamAndPrefixRoutes) {
  Router router;
  router.Get("/", Reply("root"));
  router.Get("/v1/models", Reply("list"));
  router.Get("/v1/models/{id}", Reply("one"));
  router.Get("/v1/{a}/x/{b}", Reply("two"));
  router.Get("/static/*", Reply("static"));

  EXPECT_EQ(Route(router, "GET", "/").body, "root");
  EXPECT_EQ(Route(router, "GET", "/v1/models").body, "list");
  HttpRequest req;
  EXPECT_EQ(Route(router, "GET", "/v1/models/llama3%3A8b", &req).body, "one");
  EXPECT_EQ(req.PathParam("id"), "llama3:8b");
  EXPECT_EQ(Route(router, "GET", "/v1/p/x/q", &req).body, "two");
  EXPECT_EQ(req.PathParam("a"), "p");
  EXPECT_EQ(req.PathParam("b"), "q");
  EXPECT_EQ(Route(router, "GET", "/static/a/b.txt", &req).body, "static");
  EXPECT_EQ(req.PathParam("*"), "a/b.txt");
  EXPECT_EQ(Route(router, "GET", "/static", &req).body, "static");
  EXPECT_EQ(req.PathParam("*"), "");

  EXPECT_EQ(Route(router, "GET", "/v1/models/").status, 404);  // empty {id}
  EXPECT_EQ(Route(router, "GET", "/v1/models/a/b").status, 404);
  EXPECT_EQ(Route(router, "GET", "/staticx").status, 404);
  EXPECT_EQ(Route(router, "GET", "/nope").status, 404);
  EXPECT_EQ(Route(router, "GET", "/nope").body, GenericErrorJson(404, "no route for GET /nope"));
}

TEST(RouterTest, MethodsHeadFallbackAnd405) {
  Router router;
  router.Get("/r", Reply("get"));
  router.Post("/r", Reply("post"));
  router.Add("DELETE", "/d", Reply("del"));
  EXPECT_EQ(Route(router, "POST", "/r").body, "post");
  EXPECT_EQ(Route(router, "HEAD", "/r").body, "get");
  Dispatched d = Route(router, "PUT", "/r");
  EXPECT_EQ(d.status, 405);
  EXPECT_EQ(d.allow, "GET, POST");
  EXPECT_EQ(Route(router, "GET", "/d").status, 405);
}

TEST(RouterTest, FirstRegisteredWins) {
  Router router;
  router.Get("/v1/models/special", Reply("special"));
  router.Get("/v1/models/{id}", Reply("param"));
  EXPECT_EQ(Route(router, "GET", "/v1/models/special").body, "special");
  EXPECT_EQ(Route(router, "GET", "/v1/models/other").body, "param");
}

TEST(RouterTest, HooksAndExceptions) {
  Router router;
  router.Get("/throw", [](HttpRequest&, std::shared_ptr<Responder>) { throw std::runtime_error("boom"); });
  router.Get("/throw-int", [](HttpRequest&, std::shared_ptr<Responder>) { throw 42; });
  router.SetErrorFormatter([](int status, std::string_view message, const HttpRequest& req) {
    return HttpResponse::Text(status, "custom " + std::to_string(status) + " " + std::string(message) + " " + req.path);
  });
  Dispatched d = Route(router, "GET", "/throw");
  EXPECT_EQ(d.status, 500);
  EXPECT_EQ(d.body, "custom 500 internal error /throw");
  EXPECT_EQ(Route(router, "GET", "/throw-int").status, 500);
  EXPECT_EQ(Route(router, "GET", "/x").body, "custom 404 no route for GET /x /x");

  router.SetNotFound(
      [](HttpRequest& req, std::shared_ptr<Responder> r) { r->Respond(HttpResponse::Text(404, "nf " + req.path)); });
  EXPECT_EQ(Route(router, "GET", "/y").body, "nf /y");

  router.SetErrorFormatter(
      [](int, std::string_view, const HttpRequest&) -> HttpResponse { throw std::runtime_error("formatter broken"); });
  d = Route(router, "GET", "/throw");
  EXPECT_EQ(d.status, 500);
  EXPECT_EQ(d.body, GenericErrorJson(500, "internal error"));
}

// A wrapper that records the route pattern and the status the handler answered with.
class Recorder : public Responder {
 public:
  Recorder(std::shared_ptr<Responder> inner, std::string pattern, std::vector<std::string>* log)
      : inner_(std::move(inner)), pattern_(std::move(pattern)), log_(log) {}
  void Respond(HttpResponse r) override {
    log_->push_back(pattern_ + " " + std::to_string(r.status));
    inner_->Respond(std::move(r));
  }
  std::shared_ptr<ResponseStream> StartStream(int status, Headers h) override {
    log_->push_back(pattern_ + " " + std::to_string(status));
    return inner_->StartStream(status, std::move(h));
  }
  void OnCancel(std::function<void()> f) override { inner_->OnCancel(std::move(f)); }
  bool cancelled() const override { return inner_->cancelled(); }

 private:
  std::shared_ptr<Responder> inner_;
  std::string pattern_;
  std::vector<std::string>* log_;
};

TEST(RouterTest, ResponderWrapSeesPatternAndAnswer) {
  Router router;
  router.Get("/v1/models/{id}", Reply("one"));
  router.Post("/v1/models/{id}", Reply("posted"));
  router.Get("/throw", [](HttpRequest&, std::shared_ptr<Responder>) { throw std::runtime_error("boom"); });
  std::vector<std::string> log;
  router.SetResponderWrap([&log](const HttpRequest&, std::string_view pattern, std::shared_ptr<Responder> r) {
    return std::make_shared<Recorder>(std::move(r), std::string(pattern), &log);
  });
  EXPECT_EQ(Route(router, "GET", "/v1/models/a").body, "one");  // the answer still reaches the client
  EXPECT_EQ(Route(router, "HEAD", "/v1/models/b").status, 200);
  EXPECT_EQ(Route(router, "POST", "/v1/models/c").body, "posted");
  EXPECT_EQ(Route(router, "GET", "/throw").status, 500);
  EXPECT_EQ(Route(router, "GET", "/nowhere").status, 404);
  EXPECT_EQ(Route(router, "DELETE", "/v1/models/a").status, 405);
  EXPECT_EQ(log, (std::vector<std::string>{"/v1/models/{id} 200", "/v1/models/{id} 200", "/v1/models/{id} 200",
                                           "/throw 500", " 404", " 405"}));
}

}  // namespace
}  // namespace herd
