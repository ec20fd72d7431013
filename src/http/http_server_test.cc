// Plain (non-streamed) request/response behaviour of HttpServer over real sockets.
#include "http/http_server.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <thread>

#include "http/test_client.h"

namespace herd {
namespace {

using std::chrono::milliseconds;
using testing::TestClient;

std::unique_ptr<HttpServer> StartServer(Router router, HttpServerConfig cfg = {}) {
  cfg.port = 0;
  auto server = std::make_unique<HttpServer>(cfg, std::move(router));
  Status s = server->Start();
  EXPECT_TRUE(s.ok()) << s.ToString();
  return server;
}

Router BasicRouter() {
  Router r;
  r.Get("/hello", [](HttpRequest&, std::shared_ptr<Responder> res) { res->Respond(HttpResponse::Text(200, "hi")); });
  r.Post("/echo/{name}", [](HttpRequest& req, std::shared_ptr<Responder> res) {
    HttpResponse out = HttpResponse::Text(200, req.PathParam("name") + "|" + req.QueryParam("q").value_or("-") + "|" +
                                                   req.headers.GetOr("x-test", "") + "|" + req.body);
    out.headers.Set("X-Method", req.method);
    res->Respond(std::move(out));
  });
  r.Get("/throw", [](HttpRequest&, std::shared_ptr<Responder>) { throw std::runtime_error("boom"); });
  r.Get("/drop", [](HttpRequest&, std::shared_ptr<Responder>) {});  // never answers
  r.Get("/later", [](HttpRequest&, std::shared_ptr<Responder> res) {
    std::thread([res] {
      std::this_thread::sleep_for(milliseconds(20));
      res->Respond(HttpResponse::Json(202, "{\"later\":true}"));
    }).detach();
  });
  return r;
}

std::string Post(const std::string& path, const std::string& body, const std::string& extra = "") {
  return "POST " + path + " HTTP/1.1\r\nHost: t\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" + extra +
         "\r\n" + body;
}

const char kGetHello[] = "GET /hello HTTP/1.1\r\nHost: t\r\n\r\n";

TEST(HttpServerTest, GetPostAndKeepAlive) {
  auto server = StartServer(BasicRouter());
  TestClient c(server->port());
  ASSERT_TRUE(c.connected());
  ASSERT_TRUE(c.Send(kGetHello));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hi");
  EXPECT_EQ(r->Header("content-type"), "text/plain; charset=utf-8");
  EXPECT_EQ(r->Header("content-length"), "2");
  EXPECT_EQ(r->Header("connection"), "");

  // Several more requests on the same connection.
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(c.Send(Post("/echo/m%3A1?q=a+b", "body" + std::to_string(i), "X-Test: v\r\n")));
    r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->body, "m:1|a b|v|body" + std::to_string(i));
    EXPECT_EQ(r->Header("x-method"), "POST");
  }
  EXPECT_EQ(server->active_connections(), 1);

  // Connection: close is honoured.
  ASSERT_TRUE(c.Send("GET /hello HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->Header("connection"), "close");
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServerTest, PipelinedRequestsAnswerInOrder) {
  auto server = StartServer(BasicRouter());
  TestClient c(server->port());
  ASSERT_TRUE(c.Send(std::string("GET /later HTTP/1.1\r\nHost: t\r\n\r\n") + kGetHello + Post("/echo/x", "p")));
  auto a = c.ReadResponse(), b = c.ReadResponse(), d = c.ReadResponse();
  ASSERT_TRUE(a && b && d);
  EXPECT_EQ(a->status, 202);
  EXPECT_EQ(b->body, "hi");
  EXPECT_EQ(d->body, "x|-||p");
}

TEST(HttpServerTest, HeadSendsHeadersOnly) {
  auto server = StartServer(BasicRouter());
  TestClient c(server->port());
  ASSERT_TRUE(c.Send("HEAD /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto r = c.ReadResponse(/*head=*/true);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->Header("content-length"), "2");
  // No body bytes followed: the next response starts right after the head.
  ASSERT_TRUE(c.Send(kGetHello));
  r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hi");
}

TEST(HttpServerTest, NotFoundMethodNotAllowedAndErrorHook) {
  Router router = BasicRouter();
  router.SetErrorFormatter([](int status, std::string_view message, const HttpRequest& req) {
    return HttpResponse::Json(status, "{\"shaped\":\"" + std::string(message) + "\",\"path\":\"" + req.path + "\"}");
  });
  auto server = StartServer(std::move(router));
  TestClient c(server->port());
  ASSERT_TRUE(c.Send("GET /nope HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 404);
  EXPECT_EQ(r->body, "{\"shaped\":\"no route for GET /nope\",\"path\":\"/nope\"}");
  ASSERT_TRUE(c.Send("DELETE /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 405);
  EXPECT_EQ(r->Header("allow"), "GET");
}

TEST(HttpServerTest, HandlerErrorsDoNotHurtTheServer) {
  auto server = StartServer(BasicRouter());
  TestClient c(server->port());
  ASSERT_TRUE(c.Send("GET /throw HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, GenericErrorJson(500, "internal error"));
  ASSERT_TRUE(c.Send("GET /drop HTTP/1.1\r\nHost: t\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 500);
  EXPECT_EQ(r->body, GenericErrorJson(500, "the handler did not respond"));
  ASSERT_TRUE(c.Send("GET /later HTTP/1.1\r\nHost: t\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 202);
  EXPECT_EQ(r->body, "{\"later\":true}");
}

TEST(HttpServerTest, BodyLimitGives413) {
  HttpServerConfig cfg;
  cfg.max_body_bytes = 1024;
  auto server = StartServer(BasicRouter(), cfg);
  {
    // Declared too large: answered before the body is read.
    TestClient c(server->port());
    ASSERT_TRUE(c.Send("POST /echo/x HTTP/1.1\r\nHost: t\r\nContent-Length: 100000\r\n\r\n" + std::string(2000, 'a')));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(r->body, GenericErrorJson(413, "request body exceeds the limit of 1024 bytes"));
    EXPECT_EQ(r->Header("connection"), "close");
    EXPECT_TRUE(c.WaitClosed());
  }
  {
    // Chunked body growing past the limit.
    TestClient c(server->port());
    std::string chunk = "400\r\n" + std::string(1024, 'b') + "\r\n";
    ASSERT_TRUE(c.Send("POST /echo/x HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked\r\n\r\n" + chunk + chunk));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
  }
  {
    // Exactly at the limit is fine.
    TestClient c(server->port());
    ASSERT_TRUE(c.Send(Post("/echo/x", std::string(1024, 'c'))));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
  }
}

TEST(HttpServerTest, HeaderLimitGives431AndGarbageGives400) {
  HttpServerConfig cfg;
  cfg.max_header_bytes = 2048;
  auto server = StartServer(BasicRouter(), cfg);
  {
    TestClient c(server->port());
    ASSERT_TRUE(c.Send("GET /hello HTTP/1.1\r\nHost: t\r\nX-Big: " + std::string(4096, 'x') + "\r\n\r\n"));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 431);
    EXPECT_TRUE(c.WaitClosed());
  }
  for (const char* garbage : {"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03\r\n\r\n", "HELLO WORLD\r\n\r\n",
                              "GET /hello HTTP/9.9\r\n\r\n", "POST /echo/x HTTP/1.1\r\nContent-Length: -4\r\n\r\n"}) {
    TestClient c(server->port());
    ASSERT_TRUE(c.Send(garbage));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r) << garbage;
    EXPECT_EQ(r->status, 400) << garbage;
    EXPECT_TRUE(c.WaitClosed());
  }
  // The server still serves.
  TestClient c(server->port());
  ASSERT_TRUE(c.Send(kGetHello));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST(HttpServerTest, SlowClientsTimeOut) {
  HttpServerConfig cfg;
  cfg.header_timeout = milliseconds(200);
  cfg.body_timeout = milliseconds(200);
  cfg.idle_timeout = milliseconds(200);
  auto server = StartServer(BasicRouter(), cfg);
  {
    // A partial header, then nothing: 408 and close.
    TestClient c(server->port());
    ASSERT_TRUE(c.Send("GET /hello HTTP/1.1\r\nHost: t\r\n"));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(c.WaitClosed());
  }
  {
    // A partial body.
    TestClient c(server->port());
    ASSERT_TRUE(c.Send("POST /echo/x HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\nabc"));
    auto r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 408);
    EXPECT_TRUE(c.WaitClosed());
  }
  {
    // Connected, never sent a byte: closed without a response.
    TestClient c(server->port());
    EXPECT_TRUE(c.WaitClosed());
  }
  {
    // Idle keep-alive connection: closed after idle_timeout.
    TestClient c(server->port());
    ASSERT_TRUE(c.Send(kGetHello));
    ASSERT_TRUE(c.ReadResponse());
    EXPECT_TRUE(c.WaitClosed());
  }
  // The server side lets go of them too (liveness: the close may be seen before ~Session).
  for (int i = 0; i < 500 && server->active_connections() != 0; ++i) std::this_thread::sleep_for(milliseconds(10));
  EXPECT_EQ(server->active_connections(), 0);
}

TEST(HttpServerTest, ExpectContinue) {
  auto server = StartServer(BasicRouter());
  TestClient c(server->port());
  ASSERT_TRUE(c.Send("POST /echo/x HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n"));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 100);
  ASSERT_TRUE(c.Send("hello"));
  r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "x|-||hello");
}

TEST(HttpServerTest, Http10ClosesUnlessKeepAlive) {
  auto server = StartServer(BasicRouter());
  TestClient c(server->port());
  ASSERT_TRUE(c.Send("GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->Header("connection"), "keep-alive");
  ASSERT_TRUE(c.Send("GET /hello HTTP/1.0\r\n\r\n"));
  r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "hi");
  EXPECT_TRUE(c.WaitClosed());
}

TEST(HttpServerTest, Cors) {
  HttpServerConfig cfg;
  cfg.cors_allow_origin = "*";
  auto server = StartServer(BasicRouter(), cfg);
  TestClient c(server->port());
  ASSERT_TRUE(
      c.Send("OPTIONS /echo/x HTTP/1.1\r\nHost: t\r\nOrigin: http://a\r\nAccess-Control-Request-Method: POST\r\n"
             "Access-Control-Request-Headers: content-type, authorization\r\n\r\n"));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 204);
  EXPECT_EQ(r->Header("access-control-allow-origin"), "*");
  EXPECT_EQ(r->Header("access-control-allow-headers"), "content-type, authorization");
  EXPECT_NE(r->Header("access-control-allow-methods").find("POST"), std::string::npos);
  ASSERT_TRUE(c.Send(kGetHello));
  r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->Header("access-control-allow-origin"), "*");
}

TEST(HttpServerTest, MaxConnectionsGives503) {
  HttpServerConfig cfg;
  cfg.max_connections = 2;
  auto server = StartServer(BasicRouter(), cfg);
  TestClient a(server->port()), b(server->port());
  ASSERT_TRUE(a.Send(kGetHello) && b.Send(kGetHello));
  ASSERT_TRUE(a.ReadResponse() && b.ReadResponse());  // both accepted and open
  TestClient c(server->port());
  auto r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->Header("retry-after"), "1");
  EXPECT_TRUE(c.WaitClosed());
  a.Close();
  // Once a slot frees up, new connections are served again (liveness only).
  for (int attempt = 0; attempt < 100; ++attempt) {
    TestClient d(server->port());
    ASSERT_TRUE(d.Send(kGetHello));
    auto rd = d.ReadResponse();
    if (rd && rd->status == 200) return;
    std::this_thread::sleep_for(milliseconds(20));
  }
  FAIL() << "no connection served after a slot was freed";
}

TEST(HttpServerTest, BindErrorsAreStatuses) {
  HttpServerConfig cfg;
  cfg.host = "not-an-address";
  HttpServer bad(cfg, Router());
  Status s = bad.Start();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  auto first = StartServer(BasicRouter());
  cfg.host = "127.0.0.1";
  cfg.port = first->port();
  HttpServer second(cfg, Router());
  s = second.Start();
  EXPECT_EQ(s.code(), StatusCode::kIo);
  EXPECT_NE(s.message().find("bind 127.0.0.1:"), std::string::npos) << s.message();
}

}  // namespace
}  // namespace herd
