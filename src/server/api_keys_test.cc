#include "server/api_keys.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>

#include "server/anthropic_routes.h"
#include "server/ollama_routes.h"
#include "server/openai_routes.h"
#include "server/server_test_util.h"

namespace herd::server {
namespace {

using nlohmann::json;

HttpRequest WithHeader(const std::string& name, const std::string& value) {
  HttpRequest r;
  r.headers.Add(name, value);
  return r;
}

TEST(ApiKeysTest, BearerOrXApiKey) {
  ApiKeys keys;
  EXPECT_TRUE(keys.Allows(HttpRequest{}));  // no keys: open
  keys.Add("sk-1");
  EXPECT_FALSE(keys.Allows(HttpRequest{}));
  EXPECT_TRUE(keys.Allows(WithHeader("Authorization", "Bearer sk-1")));
  EXPECT_TRUE(keys.Allows(WithHeader("x-api-key", "sk-1")));
  EXPECT_FALSE(keys.Allows(WithHeader("Authorization", "Bearer sk-2")));
  EXPECT_FALSE(keys.Allows(WithHeader("Authorization", "sk-1")));
  EXPECT_FALSE(keys.Allows(WithHeader("x-api-key", "")));
}

TEST(ApiKeysTest, LoadFileSkipsCommentsAndBlankLines) {
  const std::string path = ::testing::TempDir() + "/herd-keys.txt";
  {
    std::ofstream out(path);
    out << "# team keys\n\n  sk-a  \nsk-b\r\n";
  }
  ApiKeys keys;
  ASSERT_TRUE(keys.LoadFile(path).ok());
  EXPECT_TRUE(keys.Allows(WithHeader("x-api-key", "sk-a")));
  EXPECT_TRUE(keys.Allows(WithHeader("x-api-key", "sk-b")));
  EXPECT_FALSE(keys.Allows(WithHeader("x-api-key", "# team keys")));
  EXPECT_EQ(ApiKeys().LoadFile(path + ".missing").code(), StatusCode::kNotFound);
  { std::ofstream empty(path); }
  EXPECT_EQ(ApiKeys().LoadFile(path).code(), StatusCode::kInvalidArgument);
  std::remove(path.c_str());
}

TEST(ApiKeysTest, EveryApiAnswers401InItsOwnShape) {
  ApiKeys keys;
  keys.Add("sk-x");
  testing::ServerHarness server(
      [&keys](Router& router, ModelRegistry& models) {
        AddOpenAiRoutes(router, models, &keys);
        AddAnthropicRoutes(router, models, &keys);
        AddOllamaRoutes(router, models, &keys);
      },
      /*with_model=*/false);  // the key check comes before any model lookup
  auto call = [&](const std::string& method, const std::string& path, const std::string& headers) {
    return server.Call(method, path, "{}", headers);
  };
  auto openai = call("GET", "/v1/models", "");
  EXPECT_EQ(openai.status, 401);
  EXPECT_EQ(json::parse(openai.body)["error"]["type"], "authentication_error");
  EXPECT_EQ(call("GET", "/v1/models", "Authorization: Bearer sk-x\r\n").status, 200);
  auto anthropic = call("POST", "/v1/messages", "x-api-key: wrong\r\n");
  EXPECT_EQ(anthropic.status, 401);
  EXPECT_EQ(json::parse(anthropic.body)["error"]["type"], "authentication_error");
  auto ollama = call("GET", "/api/tags", "");
  EXPECT_EQ(ollama.status, 401);
  EXPECT_TRUE(json::parse(ollama.body)["error"].is_string());
  EXPECT_EQ(call("GET", "/", "").status, 200);  // health stays open
}

}  // namespace
}  // namespace herd::server
