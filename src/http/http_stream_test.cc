// Streamed responses: SSE/NDJSON chunks arrive one by one, disconnects cancel, many idle
// streams at once, graceful shutdown.
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

#include "http/http_server.h"
#include "http/test_client.h"

namespace herd {
namespace {

using std::chrono::milliseconds;
using testing::TestClient;

// Collects the streams the handler started, so the test (playing the engine) drives them.
struct StreamHub {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<ResponseStream>> streams;
  std::atomic<int> cancels{0};

  void Add(std::shared_ptr<ResponseStream> s) {
    std::lock_guard<std::mutex> lock(mu);
    streams.push_back(std::move(s));
    cv.notify_all();
  }
  // Waits until `n` streams started; false after 10 s.
  bool WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return streams.size() >= n; });
  }
  std::shared_ptr<ResponseStream> Get(size_t i) {
    std::lock_guard<std::mutex> lock(mu);
    return streams.at(i);
  }
};

Router StreamRouter(StreamHub* hub) {
  Router r;
  r.Post("/sse", [hub](HttpRequest&, std::shared_ptr<Responder> res) {
    res->OnCancel([hub] { hub->cancels.fetch_add(1); });
    hub->Add(res->StartSse());
  });
  r.Post("/ndjson", [hub](HttpRequest&, std::shared_ptr<Responder> res) {
    res->OnCancel([hub] { hub->cancels.fetch_add(1); });
    hub->Add(res->StartNdjson());
  });
  r.Get("/sse-get", [hub](HttpRequest&, std::shared_ptr<Responder> res) { hub->Add(res->StartSse()); });
  r.Get("/hello", [](HttpRequest&, std::shared_ptr<Responder> res) { res->Respond(HttpResponse::Text(200, "hi")); });
  return r;
}

std::unique_ptr<HttpServer> StartServer(Router router, HttpServerConfig cfg = {}) {
  cfg.port = 0;
  auto server = std::make_unique<HttpServer>(cfg, std::move(router));
  Status s = server->Start();
  EXPECT_TRUE(s.ok()) << s.ToString();
  return server;
}

const char kPostSse[] = "POST /sse HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n";

// Polls `pred` for up to 10 s (liveness only).
template <typename Pred>
bool Eventually(Pred pred) {
  for (int i = 0; i < 1000; ++i) {
    if (pred()) return true;
    std::this_thread::sleep_for(milliseconds(10));
  }
  return pred();
}

TEST(HttpStreamTest, SseEventsArriveOneByOne) {
  StreamHub hub;
  auto server = StartServer(StreamRouter(&hub));
  TestClient c(server->port());
  ASSERT_TRUE(c.Send(kPostSse));
  auto head = c.ReadHead();
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("content-type"), "text/event-stream");
  EXPECT_EQ(head->Header("cache-control"), "no-cache");
  EXPECT_EQ(head->Header("transfer-encoding"), "chunked");
  ASSERT_TRUE(hub.WaitFor(1));
  auto stream = hub.Get(0);

  // Each event is read by the client before the next one is written.
  EXPECT_TRUE(stream->WriteSse("message_start", "{\"a\":1}"));
  EXPECT_EQ(c.ReadChunk().value_or("<none>"), "event: message_start\ndata: {\"a\":1}\n\n");
  EXPECT_TRUE(stream->WriteSseData("line1\nline2"));
  EXPECT_EQ(c.ReadChunk().value_or("<none>"), "data: line1\ndata: line2\n\n");
  EXPECT_TRUE(stream->WriteSseComment("ping"));
  EXPECT_EQ(c.ReadChunk().value_or("<none>"), ": ping\n\n");
  stream->Finish();
  EXPECT_EQ(c.ReadChunk().value_or("<none>"), "");
  EXPECT_FALSE(stream->Write("late"));
  EXPECT_FALSE(stream->cancelled());

  // The connection is reused for the next request.
  ASSERT_TRUE(c.Send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  auto r = c.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "hi");
  EXPECT_EQ(hub.cancels.load(), 0);
}

TEST(HttpStreamTest, NdjsonAndHttp10AndHead) {
  StreamHub hub;
  auto server = StartServer(StreamRouter(&hub));
  {
    TestClient c(server->port());
    ASSERT_TRUE(c.Send("POST /ndjson HTTP/1.1\r\nHost: t\r\nContent-Length: 0\r\n\r\n"));
    ASSERT_TRUE(hub.WaitFor(1));
    auto s = hub.Get(0);
    s->WriteNdjson("{\"n\":1}");
    s->WriteNdjson("{\"n\":2}");
    s->Finish();
    auto r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->Header("content-type"), "application/x-ndjson");
    EXPECT_EQ(r->body, "{\"n\":1}\n{\"n\":2}\n");
  }
  {
    // HTTP/1.0 has no chunked encoding: raw body, then close.
    TestClient c(server->port());
    ASSERT_TRUE(c.Send("POST /ndjson HTTP/1.0\r\nContent-Length: 0\r\n\r\n"));
    ASSERT_TRUE(hub.WaitFor(2));
    auto s = hub.Get(1);
    s->WriteNdjson("{}");
    s->Finish();
    auto r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->Header("transfer-encoding"), "");
    EXPECT_EQ(r->Header("connection"), "close");
    EXPECT_EQ(r->body, "{}\n");
  }
  {
    // HEAD of a streaming route: headers only; writes are accepted and dropped.
    TestClient c(server->port());
    ASSERT_TRUE(c.Send("HEAD /sse-get HTTP/1.1\r\nHost: t\r\n\r\n"));
    ASSERT_TRUE(hub.WaitFor(3));
    auto s = hub.Get(2);
    EXPECT_TRUE(s->WriteSseData("dropped"));
    s->Finish();
    auto r = c.ReadResponse(/*head=*/true);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(r->Header("content-type"), "text/event-stream");
    // Nothing else was sent: the next response follows directly.
    ASSERT_TRUE(c.Send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
    r = c.ReadResponse();
    ASSERT_TRUE(r);
    EXPECT_EQ(r->body, "hi");
  }
}

TEST(HttpStreamTest, ClientDisconnectCancels) {
  StreamHub hub;
  auto server = StartServer(StreamRouter(&hub));
  for (bool reset : {false, true}) {
    hub.cancels = 0;
    size_t index = hub.streams.size();
    TestClient c(server->port());
    ASSERT_TRUE(c.Send(kPostSse));
    ASSERT_TRUE(hub.WaitFor(index + 1));
    auto s = hub.Get(index);
    ASSERT_TRUE(s->WriteSseData("first"));
    ASSERT_TRUE(c.ReadHead());
    EXPECT_EQ(c.ReadChunk().value_or("<none>"), "data: first\n\n");
    if (reset) {
      c.Reset();
    } else {
      c.Close();
    }
    // No write needed: the idle read notices the close.
    EXPECT_TRUE(Eventually([&] { return hub.cancels.load() == 1; })) << "reset=" << reset;
    EXPECT_TRUE(s->cancelled());
    EXPECT_FALSE(s->WriteSseData("after"));
    EXPECT_TRUE(Eventually([&] { return server->active_connections() == 0; }));
  }
}

TEST(HttpStreamTest, ClientNotReadingIsDropped) {
  StreamHub hub;
  HttpServerConfig cfg;
  cfg.max_stream_buffer_bytes = 256 << 10;
  auto server = StartServer(StreamRouter(&hub), cfg);
  TestClient c(server->port());
  ASSERT_TRUE(c.Send(kPostSse));
  ASSERT_TRUE(hub.WaitFor(1));
  auto s = hub.Get(0);
  std::string event(64 << 10, 'x');
  int written = 0;
  while (s->WriteSseData(event) && written < 4096) ++written;  // at most 256 MiB
  EXPECT_LT(written, 4096);
  EXPECT_TRUE(Eventually([&] { return hub.cancels.load() == 1; }));
  EXPECT_TRUE(s->cancelled());
}

// A burst larger than the socket buffers while the client is not reading yet: events are sent
// directly while the socket takes them, then queued for the I/O thread (a partial send leaves
// the rest of an event queued), then direct again. The client must see every byte in order.
class HttpStreamBurstTest : public ::testing::TestWithParam<bool> {};

TEST_P(HttpStreamBurstTest, EventsArriveIntactAndInOrder) {
  StreamHub hub;
  HttpServerConfig cfg;
  cfg.direct_writes = GetParam();
  cfg.max_stream_buffer_bytes = 64u << 20;
  auto server = StartServer(StreamRouter(&hub), cfg);
  TestClient c(server->port());
  ASSERT_TRUE(c.Send(kPostSse));
  ASSERT_TRUE(c.ReadHead());
  ASSERT_TRUE(hub.WaitFor(1));
  constexpr int kEvents = 3000;   // ~30 MB: more than the loopback socket buffers hold
  const auto event = [](int i) {  // 1 B .. 20 KB, distinct per index
    return std::to_string(i) + ":" +
           std::string(static_cast<size_t>((i * 7919) % 20000), static_cast<char>('a' + i % 26));
  };
  std::thread producer([&] {
    auto s = hub.Get(0);
    for (int i = 0; i < kEvents; ++i) {
      if (!s->Write(event(i))) return;
      if (i % 1000 == 999) std::this_thread::sleep_for(milliseconds(20));  // let the socket drain: direct again
    }
    s->Finish();
  });
  std::this_thread::sleep_for(milliseconds(50));  // the kernel buffers fill meanwhile
  int in_order = 0;
  for (int i = 0; i < kEvents; ++i) {
    auto chunk = c.ReadChunk();
    if (!chunk || *chunk != event(i)) break;
    ++in_order;
  }
  EXPECT_EQ(in_order, kEvents);
  EXPECT_EQ(c.ReadChunk().value_or("<none>"), "");  // the terminating chunk
  producer.join();
  EXPECT_EQ(hub.cancels.load(), 0);
}

INSTANTIATE_TEST_SUITE_P(DirectAndStrandWrites, HttpStreamBurstTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Direct" : "StrandOnly"; });

TEST(HttpStreamTest, ManyConcurrentStreams) {
  constexpr int kConnections = 200;
  constexpr int kClientThreads = 4;
  StreamHub hub;
  auto server = StartServer(StreamRouter(&hub));
  std::vector<std::unique_ptr<TestClient>> clients;
  for (int i = 0; i < kConnections; ++i) {
    clients.push_back(std::make_unique<TestClient>(server->port()));
    ASSERT_TRUE(clients.back()->connected());
    ASSERT_TRUE(clients.back()->Send(kPostSse));
  }
  ASSERT_TRUE(hub.WaitFor(kConnections));
  EXPECT_EQ(server->active_connections(), kConnections);

  // All streams are open and idle; now feed them from one "engine" thread.
  std::thread feeder([&] {
    for (int e = 0; e < 3; ++e) {
      for (int i = 0; i < kConnections; ++i) hub.Get(i)->WriteSseData(std::string(1, 'e').append(std::to_string(e)));
    }
    for (int i = 0; i < kConnections; ++i) hub.Get(i)->Finish();
  });
  std::atomic<int> complete{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < kClientThreads; ++t) {
    readers.emplace_back([&, t] {
      for (int i = t; i < kConnections; i += kClientThreads) {
        auto r = clients[i]->ReadResponse(false, milliseconds(20000));
        if (r && r->status == 200 && r->body == "data: e0\n\ndata: e1\n\ndata: e2\n\n") complete.fetch_add(1);
      }
    });
  }
  feeder.join();
  for (auto& t : readers) t.join();
  EXPECT_EQ(complete.load(), kConnections);
  EXPECT_EQ(hub.cancels.load(), 0);
}

TEST(HttpStreamTest, GracefulShutdownLetsStreamsFinish) {
  StreamHub hub;
  auto server = StartServer(StreamRouter(&hub));
  TestClient streaming(server->port()), idle(server->port());
  ASSERT_TRUE(streaming.Send(kPostSse));
  ASSERT_TRUE(hub.WaitFor(1));
  ASSERT_TRUE(idle.Send("GET /hello HTTP/1.1\r\nHost: t\r\n\r\n"));
  ASSERT_TRUE(idle.ReadResponse());
  std::thread engine([&] {
    std::this_thread::sleep_for(milliseconds(100));
    hub.Get(0)->WriteSseData("last");
    hub.Get(0)->Finish();
  });
  server->Stop(milliseconds(10000));  // returns once the stream completed
  engine.join();
  auto r = streaming.ReadResponse();
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body, "data: last\n\n");
  EXPECT_EQ(r->Header("connection"), "");  // the head went out before shutdown began
  EXPECT_TRUE(streaming.WaitClosed());
  EXPECT_TRUE(idle.WaitClosed());
  EXPECT_EQ(hub.cancels.load(), 0);
}

TEST(HttpStreamTest, ShutdownGraceOverCancelsStreams) {
  StreamHub hub;
  auto server = StartServer(StreamRouter(&hub));
  TestClient c(server->port());
  ASSERT_TRUE(c.Send(kPostSse));
  ASSERT_TRUE(hub.WaitFor(1));
  ASSERT_TRUE(c.ReadHead());
  server->Stop(milliseconds(100));
  EXPECT_EQ(hub.cancels.load(), 1);
  EXPECT_TRUE(hub.Get(0)->cancelled());
  EXPECT_FALSE(hub.Get(0)->WriteSseData("x"));
  EXPECT_TRUE(c.WaitClosed());
  TestClient after(server->port());
  EXPECT_FALSE(after.connected());
}

}  // namespace
}  // namespace herd
