// HttpClient against herd's own HttpServer: whole and streamed responses, keep-alive reuse and
// the retry of a connection the server closed while idle, timeouts, refused connections,
// malformed responses, many concurrent streams on the one I/O thread.
#include "http/http_client.h"

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <future>
#include <mutex>
#include <set>
#include <thread>

#include "http/http_server.h"

namespace herd {
namespace {

using std::chrono::milliseconds;

struct Gate {
  std::mutex mu;
  std::condition_variable cv;
  bool open = false;
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
  bool Wait() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return open; });
  }
};

class HttpClientTest : public ::testing::Test {
 protected:
  void Start(HttpServerConfig cfg = {}) {
    Router r;
    r.Post("/echo", [](HttpRequest& req, std::shared_ptr<Responder> res) {
      HttpResponse out = HttpResponse::Text(201, req.method + " " + req.target + " " + req.body);
      out.headers.Set("X-Remote", req.remote_address);
      res->Respond(std::move(out));
    });
    // Writes "one", waits until the test saw it arrive, then writes "two" and finishes.
    r.Post("/stream", [this](HttpRequest&, std::shared_ptr<Responder> res) {
      auto s = res->StartSse();
      s->WriteSseData("one");
      std::thread([this, s] {
        if (gate_.Wait()) s->WriteSseData("two");
        s->Finish();
      }).detach();
    });
    r.Post("/many", [](HttpRequest& req, std::shared_ptr<Responder> res) {
      auto s = res->StartNdjson();
      for (int i = 0; i < 5; ++i) s->WriteNdjson("{\"i\":" + std::to_string(i) + ",\"r\":\"" + req.body + "\"}");
      s->Finish();
    });
    r.Post("/never", [this](HttpRequest&, std::shared_ptr<Responder> res) {
      std::lock_guard<std::mutex> lock(held_mu_);
      held_.push_back(std::move(res));
    });
    cfg.port = 0;
    server_ = std::make_unique<HttpServer>(cfg, std::move(r));
    ASSERT_TRUE(server_->Start().ok());
  }
  void TearDown() override {
    {
      std::lock_guard<std::mutex> lock(held_mu_);
      held_.clear();
    }
    gate_.Open();
    if (server_) server_->Stop(milliseconds(1000));
  }
  ClientRequest Req(const std::string& target, const std::string& body = "") const {
    ClientRequest q;
    q.host = "127.0.0.1";
    q.port = std::to_string(server_->port());
    q.target = target;
    q.body = body;
    return q;
  }

  Gate gate_;
  std::mutex held_mu_;
  std::vector<std::shared_ptr<Responder>> held_;
  std::unique_ptr<HttpServer> server_;
  HttpClient client_;
};

TEST_F(HttpClientTest, WholeResponseAndKeepAliveReuse) {
  Start();
  auto a = client_.Fetch(Req("/echo?x=1", "hello"));
  ASSERT_TRUE(a.ok()) << a.status().ToString();
  EXPECT_EQ(a->status, 201);
  EXPECT_EQ(a->body, "POST /echo?x=1 hello");
  auto b = client_.Fetch(Req("/echo", ""));
  ASSERT_TRUE(b.ok());
  // The second request came over the same connection (same client address and port).
  EXPECT_EQ(a->headers.GetOr("X-Remote", "a"), b->headers.GetOr("X-Remote", "b"));
  EXPECT_EQ(server_->active_connections(), 1);
}

TEST_F(HttpClientTest, BodyArrivesAsItIsWritten) {
  Start();
  std::mutex mu;
  std::condition_variable cv;
  std::string seen;
  bool done = false;
  int status = 0;
  ClientResult result;
  ClientHandlers h;
  h.on_response = [&](int s, const Headers& headers) {
    status = s;
    EXPECT_EQ(headers.GetOr("content-type", ""), "text/event-stream");
  };
  h.on_data = [&](std::string_view d) {
    EXPECT_TRUE(client_.OnIoThread());
    std::lock_guard<std::mutex> lock(mu);
    seen.append(d);
    // "two" is written only after "one" arrived here: the body is not buffered to the end.
    if (seen == "data: one\n\n") gate_.Open();
    return true;
  };
  h.on_done = [&](const ClientResult& r) {
    std::lock_guard<std::mutex> lock(mu);
    result = r;
    done = true;
    cv.notify_all();
  };
  client_.Send(Req("/stream"), h);
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(20), [&] { return done; }));
  EXPECT_EQ(result.error, ClientError::kNone) << result.message;
  EXPECT_EQ(result.status, 200);
  EXPECT_EQ(status, 200);
  EXPECT_EQ(seen, "data: one\n\ndata: two\n\n");
}

TEST_F(HttpClientTest, ManyConcurrentStreamsOnOneThread) {
  Start();
  constexpr int kN = 64;
  std::atomic<int> ok{0}, finished{0};
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> bodies(kN);
  for (int i = 0; i < kN; ++i) {
    ClientHandlers h;
    h.on_data = [&bodies, i](std::string_view d) {
      bodies[i].append(d);
      return true;
    };
    h.on_done = [&](const ClientResult& r) {
      if (r.error == ClientError::kNone && r.status == 200) ok.fetch_add(1);
      std::lock_guard<std::mutex> lock(mu);
      finished.fetch_add(1);
      cv.notify_all();
    };
    client_.Send(Req("/many", std::to_string(i)), h);
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return finished.load() == kN; }));
  EXPECT_EQ(ok.load(), kN);
  for (int i = 0; i < kN; ++i) {
    std::string want;
    for (int k = 0; k < 5; ++k) want += "{\"i\":" + std::to_string(k) + ",\"r\":\"" + std::to_string(i) + "\"}\n";
    EXPECT_EQ(bodies[i], want);
  }
}

TEST_F(HttpClientTest, RetriesAConnectionTheServerClosedWhileIdle) {
  HttpServerConfig cfg;
  cfg.idle_timeout = milliseconds(50);
  Start(cfg);
  auto a = client_.Fetch(Req("/echo", "a"));
  ASSERT_TRUE(a.ok());
  for (int i = 0; i < 500 && server_->active_connections() > 0; ++i) std::this_thread::sleep_for(milliseconds(10));
  ASSERT_EQ(server_->active_connections(), 0);
  auto b = client_.Fetch(Req("/echo", "b"));
  ASSERT_TRUE(b.ok()) << b.status().ToString();
  EXPECT_EQ(b->body, "POST /echo b");
  EXPECT_NE(a->headers.GetOr("X-Remote", ""), b->headers.GetOr("X-Remote", ""));
}

TEST_F(HttpClientTest, TimeoutAndAbort) {
  Start();
  ClientRequest q = Req("/never");
  q.timeout = milliseconds(200);
  auto r = client_.Fetch(q);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("timeout"), std::string::npos) << r.status().message();

  std::promise<ClientResult> done;
  ClientHandlers h;
  h.on_data = [](std::string_view) { return false; };
  h.on_done = [&](const ClientResult& res) { done.set_value(res); };
  client_.Send(Req("/many", "x"), h);
  const ClientResult res = done.get_future().get();
  EXPECT_EQ(res.error, ClientError::kAborted);
  EXPECT_EQ(res.status, 200);
}

TEST_F(HttpClientTest, RefusedConnectionAndMalformedResponse) {
  // A listening socket that answers garbage, and a port nobody listens on.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  ASSERT_EQ(::listen(fd, 4), 0);
  socklen_t len = sizeof addr;
  ASSERT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len), 0);
  const std::string port = std::to_string(ntohs(addr.sin_port));
  std::thread garbage([fd] {
    const int c = ::accept(fd, nullptr, nullptr);
    if (c < 0) return;
    char buf[4096];
    const ssize_t got = ::read(c, buf, sizeof buf);
    const char reply[] = "SPDY/9 banana\r\n\r\n";
    const ssize_t sent = got > 0 ? ::write(c, reply, sizeof reply - 1) : 0;
    (void)sent;
    ::close(c);
  });
  std::promise<ClientResult> done;
  ClientHandlers h;
  h.on_done = [&](const ClientResult& res) { done.set_value(res); };
  ClientRequest q;
  q.host = "127.0.0.1";
  q.port = port;
  client_.Send(q, h);
  EXPECT_EQ(done.get_future().get().error, ClientError::kProtocol);
  garbage.join();
  ::close(fd);  // now nobody listens there

  std::promise<ClientResult> refused;
  h.on_done = [&](const ClientResult& res) { refused.set_value(res); };
  client_.Send(q, h);
  EXPECT_EQ(refused.get_future().get().error, ClientError::kConnect);
}

TEST(HttpUrlTest, Parse) {
  auto a = HttpUrl::Parse("http://127.0.0.1:8080/");
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->host, "127.0.0.1");
  EXPECT_EQ(a->port, "8080");
  EXPECT_EQ(a->base_path, "");
  auto b = HttpUrl::Parse("http://[::1]:9/prefix/v/");
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(b->host, "::1");
  EXPECT_EQ(b->base_path, "/prefix/v");
  EXPECT_EQ(b->HostHeader(), "[::1]:9");
  auto c = HttpUrl::Parse("http://example.com");
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->port, "80");
  EXPECT_NE(HttpUrl::Parse("https://x").status().message().find("https is not supported"), std::string::npos);
  EXPECT_FALSE(HttpUrl::Parse("ftp://x").ok());
  EXPECT_FALSE(HttpUrl::Parse("http://:80").ok());
  EXPECT_FALSE(HttpUrl::Parse("http://x:99999").ok());
  EXPECT_FALSE(HttpUrl::Parse("http://x:8a").ok());
}

}  // namespace
}  // namespace herd
