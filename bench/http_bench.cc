// HTTP transport overhead: the cost of one streamed SSE event through HttpServer to a local
// client, and the memory held per idle streaming connection. Run:
//   build/bin/herd_http_bench [--events N] [--io-threads T] [--idle N] [--event-bytes B]
//
// - "lock-step": the producer (standing in for the engine thread) writes one event and waits
//   until the client has read it before writing the next: per-event latency through the whole
//   path (queue, post to the strand, write syscall, loopback, client read), nothing coalesced.
// - "free-running": the producer writes all events as fast as it can; the server coalesces
//   what queued during a write. Wall time and process CPU time (server + client) per event.
// - idle streams: N clients each hold an SSE stream (head + one event received, then idle);
//   the growth of resident memory / N is the per-connection cost (both ends of the socket
//   live in this process, so it is an upper bound), with the thread count unchanged.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/log.h"
#include "http/http_server.h"
#include "http/test_client.h"

namespace herd {
namespace {

using testing::TestClient;

double Now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double ThreadCpuSeconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double CpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

// A /proc/self/status field in kB ("VmRSS", "Threads").
long ProcStatus(const char* key) {
  std::ifstream f("/proc/self/status");
  std::string line;
  size_t n = std::strlen(key);
  while (std::getline(f, line)) {
    if (line.compare(0, n, key) == 0 && line.size() > n && line[n] == ':') return std::atol(line.c_str() + n + 1);
  }
  return -1;
}

struct Hub {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::shared_ptr<ResponseStream>> streams;
  void Add(std::shared_ptr<ResponseStream> s) {
    std::lock_guard<std::mutex> lock(mu);
    streams.push_back(std::move(s));
    cv.notify_all();
  }
  std::shared_ptr<ResponseStream> Wait(size_t i) {
    std::unique_lock<std::mutex> lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(30), [&] { return streams.size() > i; })) {
      std::fprintf(stderr, "stream %zu was not started within 30 s\n", i);
      std::exit(1);
    }
    return streams[i];
  }
};

const char kPost[] = "POST /sse HTTP/1.1\r\nHost: b\r\nContent-Length: 0\r\n\r\n";

// An OpenAI-style chunk of about `bytes` bytes (the JSON itself is the protocol layer's cost).
std::string EventPayload(size_t bytes) {
  std::string s =
      "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\","
      "\"choices\":[{\"index\":0,\"delta\":{\"content\":\"";
  while (s.size() + 30 < bytes) s += "tok";
  s += "\"},\"finish_reason\":null}]}";
  return s;
}

void LockStep(uint16_t port, Hub& hub, size_t& next, int events, const std::string& payload) {
  TestClient c(port);
  c.Send(kPost);
  auto stream = hub.Wait(next++);
  if (!c.ReadHead()) std::abort();
  // Warm-up.
  for (int i = 0; i < 200; ++i) {
    stream->WriteSseData(payload);
    if (!c.ReadChunk()) std::abort();
  }
  double t0 = Now(), c0 = CpuSeconds(), m0 = ThreadCpuSeconds(), in_write = 0;
  for (int i = 0; i < events; ++i) {
    double w0 = Now();
    stream->WriteSseData(payload);
    in_write += Now() - w0;
    if (!c.ReadChunk()) std::abort();
  }
  double wall = Now() - t0, cpu = CpuSeconds() - c0, main_cpu = ThreadCpuSeconds() - m0;
  stream->Finish();
  c.ReadChunk();
  // Server side = the I/O threads' CPU (process CPU minus this thread's) + time inside Write.
  std::printf(
      "lock-step     %7d events of %zu B: %6.2f us/event wall (round trip); server side %5.2f us/event "
      "(I/O threads CPU %5.2f + Write call %4.2f); all threads CPU %6.2f\n",
      events, payload.size(), wall / events * 1e6, (cpu - main_cpu + in_write) / events * 1e6,
      (cpu - main_cpu) / events * 1e6, in_write / events * 1e6, cpu / events * 1e6);
}

void FreeRunning(uint16_t port, Hub& hub, size_t& next, int events, const std::string& payload) {
  TestClient c(port);
  c.Send(kPost);
  auto stream = hub.Wait(next++);
  if (!c.ReadHead()) std::abort();
  double t0 = Now(), c0 = CpuSeconds(), m0 = ThreadCpuSeconds();
  double producer_cpu = 0;
  std::thread producer([&] {
    double p0 = ThreadCpuSeconds();
    for (int i = 0; i < events; ++i) {
      if (!stream->WriteSseData(payload)) std::abort();
    }
    stream->Finish();
    producer_cpu = ThreadCpuSeconds() - p0;
  });
  size_t bytes = 0, chunks = 0;
  while (true) {
    auto chunk = c.ReadChunk();
    if (!chunk) std::abort();
    if (chunk->empty()) break;
    bytes += chunk->size();
    ++chunks;
  }
  double main_cpu = ThreadCpuSeconds() - m0;
  producer.join();
  double wall = Now() - t0, cpu = CpuSeconds() - c0;
  double io_cpu = cpu - main_cpu - producer_cpu;
  std::printf(
      "free-running  %7d events of %zu B: %6.2f us/event wall; server side %5.2f us/event (I/O threads CPU %5.2f + "
      "producer's Write calls %4.2f); %.0f MB/s\n",
      events, payload.size(), wall / events * 1e6, (io_cpu + producer_cpu) / events * 1e6, io_cpu / events * 1e6,
      producer_cpu / events * 1e6, bytes / wall / 1e6);
}

// Engine-like: `n` streams; each step writes one event to every stream (one decode step of a
// batch), then the clients read them all before the next step.
void Steps(uint16_t port, Hub& hub, size_t& next, int n, int steps, const std::string& payload) {
  std::vector<std::unique_ptr<TestClient>> clients;
  std::vector<std::shared_ptr<ResponseStream>> streams;
  for (int i = 0; i < n; ++i) {
    clients.push_back(std::make_unique<TestClient>(port));
    clients.back()->Send(kPost);
    streams.push_back(hub.Wait(next++));
    if (!clients.back()->ReadHead()) std::abort();
  }
  double t0 = Now(), c0 = CpuSeconds(), m0 = ThreadCpuSeconds(), in_write = 0;
  for (int step = 0; step < steps; ++step) {
    double w0 = Now();
    for (auto& st : streams) st->WriteSseData(payload);
    in_write += Now() - w0;
    for (auto& c : clients) {
      if (!c->ReadChunk()) std::abort();
    }
  }
  double wall = Now() - t0, cpu = CpuSeconds() - c0, main_cpu = ThreadCpuSeconds() - m0;
  double events = static_cast<double>(n) * steps;
  for (auto& st : streams) st->Finish();
  for (auto& c : clients) c->ReadChunk();
  std::printf(
      "steps         %7d streams x %d steps: %6.2f us/event wall; server side %5.2f us/event (I/O threads CPU "
      "%5.2f + Write calls %4.2f)\n",
      n, steps, wall / events * 1e6, (cpu - main_cpu + in_write) / events * 1e6, (cpu - main_cpu) / events * 1e6,
      in_write / events * 1e6);
}

void IdleStreams(uint16_t port, Hub& hub, size_t& next, int n) {
  long rss0 = ProcStatus("VmRSS"), threads0 = ProcStatus("Threads");
  std::vector<std::unique_ptr<TestClient>> clients;
  clients.reserve(n);
  for (int i = 0; i < n; ++i) {
    clients.push_back(std::make_unique<TestClient>(port));
    if (!clients.back()->connected() || !clients.back()->Send(kPost)) {
      std::fprintf(stderr, "connection %d failed\n", i);
      std::exit(1);
    }
  }
  std::vector<std::shared_ptr<ResponseStream>> streams;
  for (int i = 0; i < n; ++i) {
    streams.push_back(hub.Wait(next++));
    streams.back()->WriteSseComment("ping");
  }
  for (auto& c : clients) {
    if (!c->ReadHead() || !c->ReadChunk()) std::abort();
  }
  long rss1 = ProcStatus("VmRSS"), threads1 = ProcStatus("Threads");
  std::printf(
      "idle streams  %7d held: RSS +%ld KiB = %.1f KiB per connection (client + server side), threads %ld -> %ld\n", n,
      rss1 - rss0, static_cast<double>(rss1 - rss0) / n, threads0, threads1);
  double t0 = Now();
  for (auto& s : streams) {
    s->WriteSseData("[DONE]");
    s->Finish();
  }
  int complete = 0;
  for (auto& c : clients) {
    auto chunk = c->ReadChunk();
    auto last = c->ReadChunk();
    if (chunk && last && last->empty()) ++complete;
  }
  std::printf("idle streams  %7d completed of %d after one final event each in %.1f ms\n", complete, n,
              (Now() - t0) * 1e3);
}

int Main(int argc, char** argv) {
  int events = 100000, io_threads = 2, idle = 1000;
  size_t event_bytes = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--events")
      events = std::atoi(argv[i + 1]);
    else if (a == "--io-threads")
      io_threads = std::atoi(argv[i + 1]);
    else if (a == "--idle")
      idle = std::atoi(argv[i + 1]);
    else if (a == "--event-bytes")
      event_bytes = std::strtoul(argv[i + 1], nullptr, 10);
    else {
      std::fprintf(stderr, "usage: %s [--events N] [--io-threads T] [--idle N] [--event-bytes B]\n", argv[0]);
      return 2;
    }
  }
  rlimit lim{};
  getrlimit(RLIMIT_NOFILE, &lim);
  lim.rlim_cur = lim.rlim_max;
  setrlimit(RLIMIT_NOFILE, &lim);

  SetLogLevel(LogLevel::kWarn);
  Hub hub;
  Router router;
  router.Post("/sse", [&hub](HttpRequest&, std::shared_ptr<Responder> r) { hub.Add(r->StartSse()); });
  HttpServerConfig cfg;
  cfg.port = 0;
  cfg.io_threads = io_threads;
  cfg.max_stream_buffer_bytes = size_t{1} << 30;  // the free-running producer outpaces any client
  cfg.max_connections = idle + 256;
  HttpServer server(cfg, std::move(router));
  Status s = server.Start();
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  std::printf("herd_http_bench: %d I/O threads, %u hardware threads\n", io_threads,
              std::thread::hardware_concurrency());
  std::string payload = EventPayload(event_bytes);
  size_t next = 0;
  LockStep(server.port(), hub, next, events / 5, payload);
  FreeRunning(server.port(), hub, next, events, payload);
  Steps(server.port(), hub, next, 64, std::max(1, events / 640), payload);
  if (idle > 0) IdleStreams(server.port(), hub, next, idle);
  server.Stop(std::chrono::milliseconds(1000));
  return 0;
}

}  // namespace
}  // namespace herd

int main(int argc, char** argv) { return herd::Main(argc, argv); }
