// HttpGet against herd's own HTTP server (redirects, streaming to a sink, errors, timeouts,
// cancellation) and, when the `openssl` tool is installed, against `openssl s_server` over TLS
// with a certificate made for the test.
#include "server/http_fetch.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "http/http_server.h"

namespace herd::server {
namespace {

namespace fs = std::filesystem;

std::string Pattern(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>('a' + (i * 7 + i / 251) % 26);
  return s;
}

class HttpFetchTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    Router router;
    router.Get("/data", [](HttpRequest& req, std::shared_ptr<Responder> r) {
      HttpResponse resp = HttpResponse::Text(200, Pattern(300000));
      resp.headers.Set("X-Accept-Seen", req.headers.GetOr("Accept", ""));
      r->Respond(std::move(resp));
    });
    router.Get("/redirect", [](HttpRequest&, std::shared_ptr<Responder> r) {
      HttpResponse resp = HttpResponse::Text(307, "");
      resp.headers.Set("Location", "/data");
      r->Respond(std::move(resp));
    });
    router.Get("/loop", [](HttpRequest&, std::shared_ptr<Responder> r) {
      HttpResponse resp = HttpResponse::Text(302, "");
      resp.headers.Set("Location", "/loop");
      r->Respond(std::move(resp));
    });
    router.Get("/missing", [](HttpRequest&, std::shared_ptr<Responder> r) {
      HttpResponse resp = HttpResponse::Json(404, R"({"errors":[{"code":"MANIFEST_UNKNOWN"}]})");
      resp.headers.Set("WWW-Authenticate", "Bearer realm=x");
      r->Respond(std::move(resp));
    });
    router.Get("/slow", [](HttpRequest&, std::shared_ptr<Responder> r) {
      std::lock_guard lock(mu_);
      parked_->push_back(std::move(r));  // never answered until the server stops
    });
    HttpServerConfig c;
    c.port = 0;
    parked_ = new std::vector<std::shared_ptr<Responder>>();
    server_ = new HttpServer(c, std::move(router));
    ASSERT_TRUE(server_->Start().ok());
  }
  static void TearDownTestSuite() {
    server_->Stop(std::chrono::milliseconds(100));
    delete server_;
    delete parked_;
  }
  static std::string Url(const std::string& path) {
    return "http://127.0.0.1:" + std::to_string(server_->port()) + path;
  }
  static inline HttpServer* server_ = nullptr;
  static inline std::mutex mu_;
  static inline std::vector<std::shared_ptr<Responder>>* parked_ = nullptr;
};

TEST_F(HttpFetchTest, FollowsRedirectsAndStreamsTheBodyToTheSink) {
  FetchOptions o;
  o.headers.push_back({"Accept", "application/x-test"});
  std::string got;
  size_t calls = 0;
  auto r = HttpGet(Url("/redirect"), o, [&](std::string_view chunk) {
    got.append(chunk);
    ++calls;
    return true;
  });
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->url, Url("/data"));
  EXPECT_EQ(r->content_length, std::optional<uint64_t>(300000));
  EXPECT_EQ(got, Pattern(300000));
  EXPECT_GT(calls, 1u);  // chunk by chunk
  EXPECT_TRUE(r->body.empty());
  // Without a sink the body is collected, within max_body.
  auto whole = HttpGet(Url("/data"), o);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->body, Pattern(300000));
  auto small = HttpGet(Url("/data"), o, {}, 1000);
  EXPECT_EQ(small.status().code(), StatusCode::kIo);
  // A sink that says stop cancels.
  auto stopped = HttpGet(Url("/data"), o, [](std::string_view) { return false; });
  EXPECT_EQ(stopped.status().code(), StatusCode::kCancelled);
}

TEST_F(HttpFetchTest, ErrorsAreStatusesOrClearMessages) {
  auto missing = HttpGet(Url("/missing"), {}, [](std::string_view) { return true; });
  ASSERT_TRUE(missing.ok());
  EXPECT_EQ(missing->status, 404);
  EXPECT_EQ(missing->body, R"({"errors":[{"code":"MANIFEST_UNKNOWN"}]})");  // error bodies never go to the sink
  EXPECT_EQ(missing->www_authenticate, "Bearer realm=x");
  auto loop = HttpGet(Url("/loop"), {});
  EXPECT_EQ(loop.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(loop.status().message().find("redirects"), std::string::npos);
  EXPECT_EQ(HttpGet("ftp://x/y", {}).status().code(), StatusCode::kInvalidArgument);
  // Nothing listens on port 1.
  auto refused = HttpGet("http://127.0.0.1:1/x", {});
  EXPECT_EQ(refused.status().code(), StatusCode::kIo);
  EXPECT_NE(refused.status().message().find("127.0.0.1:1"), std::string::npos);
}

TEST_F(HttpFetchTest, TimeoutAndCancellation) {
  FetchOptions o;
  o.timeout = std::chrono::milliseconds(300);
  auto slow = HttpGet(Url("/slow"), o);
  EXPECT_EQ(slow.status().code(), StatusCode::kIo);
  EXPECT_NE(slow.status().message().find("timed out"), std::string::npos) << slow.status().message();
  std::atomic<bool> cancel{false};
  FetchOptions c;
  c.cancelled = [&] { return cancel.load(); };
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    cancel = true;
  });
  auto cancelled = HttpGet(Url("/slow"), c);
  canceller.join();
  EXPECT_EQ(cancelled.status().code(), StatusCode::kCancelled);
}

TEST(UrlTest, ParseAndResolve) {
  auto u = Url::Parse("https://registry.ollama.ai/v2/library/x/manifests/latest");
  ASSERT_TRUE(u.ok());
  EXPECT_EQ(u->port, "443");
  EXPECT_EQ(u->HostHeader(), "registry.ollama.ai");
  EXPECT_EQ(u->target, "/v2/library/x/manifests/latest");
  auto v6 = Url::Parse("http://[::1]:8080?q=1");
  ASSERT_TRUE(v6.ok());
  EXPECT_EQ(v6->host, "::1");
  EXPECT_EQ(v6->target, "/?q=1");
  EXPECT_EQ(v6->ToString(), "http://[::1]:8080/?q=1");
  auto cdn = u->Resolve("https://cdn.example/blob?sig=1");
  ASSERT_TRUE(cdn.ok());
  EXPECT_EQ(cdn->ToString(), "https://cdn.example/blob?sig=1");
  EXPECT_EQ(u->Resolve("/other")->ToString(), "https://registry.ollama.ai/other");
  EXPECT_EQ(u->Resolve("//h2:9/p")->ToString(), "https://h2:9/p");
  EXPECT_FALSE(Url::Parse("http://h:8x/").ok());
  EXPECT_FALSE(Url::Parse("http:///p").ok());
}

// TLS: `openssl s_server -WWW` serves files from its working folder with a certificate for
// localhost made here; HttpGet trusts it only through FetchOptions::ca_file.
TEST(HttpFetchTlsTest, VerifiesTheCertificateAndHost) {
  if (std::system("openssl version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no openssl tool";
  const fs::path dir = fs::temp_directory_path() / ("herd-tls-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const std::string gen = "cd " + dir.string() +
                          " && openssl req -x509 -newkey rsa:2048 -nodes -keyout key.pem -out cert.pem -days 2 "
                          "-subj /CN=localhost -addext subjectAltName=DNS:localhost > /dev/null 2>&1";
  ASSERT_EQ(std::system(gen.c_str()), 0);
  std::ofstream(dir / "hello.txt") << "hello over TLS";
  // A free port: bind to 0, read it, release it for s_server.
  int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  socklen_t len = sizeof addr;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) _exit(1);
    const std::string p = std::to_string(port);
    ::execlp("openssl", "openssl", "s_server", "-quiet", "-WWW", "-accept", p.c_str(), "-cert", "cert.pem", "-key",
             "key.pem", static_cast<char*>(nullptr));
    _exit(127);
  }
  const std::string url = "https://localhost:" + std::to_string(port) + "/hello.txt";
  FetchOptions trusted;
  trusted.ca_file = (dir / "cert.pem").string();
  Result<FetchResponse> r = IoError("not tried");
  for (int i = 0; i < 100; ++i) {  // until s_server listens
    r = HttpGet(url, trusted);
    if (r.ok() || r.status().message().find("connect") == std::string::npos) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(r.ok()) << r.status().ToString();
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body, "hello over TLS");
  auto untrusted = HttpGet(url, {});
  EXPECT_EQ(untrusted.status().code(), StatusCode::kIo);
  EXPECT_NE(untrusted.status().message().find("TLS"), std::string::npos) << untrusted.status().message();
  // The certificate is for "localhost", not for the address.
  auto wrong_host = HttpGet("https://127.0.0.1:" + std::to_string(port) + "/hello.txt", trusted);
  EXPECT_EQ(wrong_host.status().code(), StatusCode::kIo);
  ::kill(pid, SIGTERM);
  ::waitpid(pid, nullptr, 0);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace herd::server
