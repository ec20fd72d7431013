// Test helper: an HttpServer on an ephemeral port serving the tiny random test model through the
// routes the test adds, and one-shot raw HTTP calls against it.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "http/http_server.h"
#include "http/test_client.h"
#include "model/test_models.h"
#include "server/exchange_util.h"
#include "server/model_catalog.h"
#include "server/model_registry.h"

namespace herd::testing {

class ServerHarness {
 public:
  using AddRoutes = std::function<void(Router&, server::ModelRegistry&)>;

  // Loads the tiny F32 model as "tiny" (1 thread, 512-token context) unless `with_model` is false.
  explicit ServerHarness(const AddRoutes& add_routes, bool with_model = true) {
    if (with_model) {
      server::ModelInstanceOptions o;
      o.path = TestModelPath("tiny", "F32");
      o.name = "tiny";
      o.threads = 1;
      o.n_ctx = 512;
      auto m = server::ModelInstance::Load(o);
      EXPECT_TRUE(m.ok()) << m.status().ToString();
      if (m.ok()) models_.AddLoaded(std::move(m).value());
    }
    Router router;
    router.SetErrorFormatter(server::TransportErrorInApiShape);
    add_routes(router, models_);
    HttpServerConfig c;
    c.port = 0;
    server_ = std::make_unique<HttpServer>(c, std::move(router));
    const Status started = server_->Start();
    EXPECT_TRUE(started.ok()) << started.ToString();
  }
  ~ServerHarness() { server_->Stop(std::chrono::milliseconds(1000)); }

  uint16_t port() const { return server_->port(); }
  server::ModelRegistry& registry() { return models_; }

  // Model leases still held (requests in flight), after waiting up to 10 s for them to end.
  int32_t ActiveLeasesAfterWait() {
    int32_t active = 0;
    for (int i = 0; i < 1000; ++i) {
      active = 0;
      for (const auto& s : models_.Status()) active += s.active_leases;
      if (active == 0) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return active;
  }

  // One request on a fresh connection (Connection: close); `headers` are extra "Name: value\r\n" lines.
  TestResponse Call(const std::string& method, const std::string& path, const std::string& body = "",
                    const std::string& headers = "") const {
    TestClient client(port());
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n" + headers;
    req += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
    EXPECT_TRUE(client.Send(req));
    auto r = client.ReadResponse(method == "HEAD", std::chrono::milliseconds(60000));
    EXPECT_TRUE(r.has_value());
    return r.value_or(TestResponse{});
  }

 private:
  server::ModelRegistry models_;  // outlives the server (declared first, destroyed last)
  std::unique_ptr<HttpServer> server_;
};

// Registers the tiny F32 model as `name` with two replicas on the CPU (preloaded), starts the
// registry's loader and waits until both are loaded (for ServerHarness(..., with_model=false)).
inline void RegisterTinyReplicas(server::ModelRegistry& m, const std::string& name) {
  server::ModelInstanceOptions o;
  o.threads = 1;
  o.n_ctx = 256;
  auto entry = server::FileEntry(TestModelPath("tiny", "F32"), name, o);
  ASSERT_TRUE(entry.ok()) << entry.status().ToString();
  entry->preload = true;
  entry->devices = {DeviceSpec{}, DeviceSpec{}};
  ASSERT_TRUE(m.Register(*entry));
  m.Start();
  for (int i = 0; i < 600 && m.Loading(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
}

}  // namespace herd::testing
