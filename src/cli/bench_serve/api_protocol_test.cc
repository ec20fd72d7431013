// Request bodies per API, and the stream decoders on bodies split at every byte.
#include "cli/bench_serve/api_protocol.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace herd::bench {
namespace {

using nlohmann::json;

// Decodes `body` fed in two pieces split at every offset; all splits must agree. Returns the
// outcome and the number of on_delta calls.
std::pair<StreamOutcome, int> DecodeEverySplit(Api api, const std::string& body) {
  std::pair<StreamOutcome, int> first;
  for (size_t cut = 0; cut <= body.size(); ++cut) {
    StreamDecoder d(api);
    int calls = 0;
    auto count = [&] { ++calls; };
    d.Feed(std::string_view(body).substr(0, cut), count);
    d.Feed(std::string_view(body).substr(cut), count);
    d.Finish(count);
    const StreamOutcome& o = d.outcome();
    if (cut == 0) {
      first = {o, calls};
      continue;
    }
    EXPECT_EQ(calls, first.second) << "split at " << cut;
    EXPECT_EQ(o.text, first.first.text) << "split at " << cut;
    EXPECT_EQ(o.usage_output_tokens, first.first.usage_output_tokens) << "split at " << cut;
    EXPECT_EQ(o.complete, first.first.complete) << "split at " << cut;
  }
  return first;
}

TEST(ApiProtocolTest, OpenAiChatStream) {
  const std::string body =
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
      ": keep-alive\n\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\r\n\r\n"
      "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"length\"}]}\n\n"
      "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":3,\"total_tokens\":15}}\n\n"
      "data: [DONE]\n\n";
  const auto [o, calls] = DecodeEverySplit(Api::kOpenAiChat, body);
  EXPECT_EQ(calls, 2);  // the empty role delta is not content
  EXPECT_EQ(o.deltas, 2);
  EXPECT_EQ(o.text, "Hello");
  EXPECT_EQ(o.usage_prompt_tokens, 12);
  EXPECT_EQ(o.usage_output_tokens, 3);
  EXPECT_EQ(o.finish_reason, "length");
  EXPECT_TRUE(o.complete);
  EXPECT_TRUE(o.parse_error.empty());
}

TEST(ApiProtocolTest, CompletionsStreamWithoutUsageAndWithoutDone) {
  const std::string body = "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\n";
  const auto [o, calls] = DecodeEverySplit(Api::kOpenAiCompletions, body);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(o.usage_output_tokens, -1);
  EXPECT_FALSE(o.complete);
}

TEST(ApiProtocolTest, AnthropicStream) {
  const std::string body =
      "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":5,"
      "\"cache_read_input_tokens\":16,\"cache_creation_input_tokens\":2,\"output_tokens\":1}}}\n\n"
      "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0}\n\n"
      "event: ping\ndata: {\"type\":\"ping\"}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\","
      "\"text\":\"Hi\"}}\n\n"
      "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"delta\":{\"type\":\"text_delta\","
      "\"text\":\" there\"}}\n\n"
      "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"max_tokens\"},"
      "\"usage\":{\"output_tokens\":4}}\n\n"
      "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
  const auto [o, calls] = DecodeEverySplit(Api::kAnthropic, body);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(o.text, "Hi there");
  EXPECT_EQ(o.usage_prompt_tokens, 23);  // input + cache read + cache creation
  EXPECT_EQ(o.usage_output_tokens, 4);
  EXPECT_EQ(o.finish_reason, "max_tokens");
  EXPECT_TRUE(o.complete);

  StreamDecoder err(Api::kAnthropic);
  err.Feed(
      "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"busy\"}}\n\n",
      nullptr);
  EXPECT_EQ(err.outcome().error, "busy");
}

TEST(ApiProtocolTest, OllamaNdjson) {
  const std::string body =
      "{\"message\":{\"role\":\"assistant\",\"content\":\"x\"},\"done\":false}\n"
      "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":false}\n"
      "{\"message\":{\"role\":\"assistant\",\"content\":\"yz\"},\"done\":false}\n"
      "{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":true,\"done_reason\":\"length\","
      "\"prompt_eval_count\":9,\"eval_count\":3}";  // no final newline
  const auto [o, calls] = DecodeEverySplit(Api::kOllama, body);
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(o.text, "xyz");
  EXPECT_EQ(o.usage_prompt_tokens, 9);
  EXPECT_EQ(o.usage_output_tokens, 3);
  EXPECT_EQ(o.finish_reason, "length");
  EXPECT_TRUE(o.complete);
}

TEST(ApiProtocolTest, MalformedStreamsAndErrorObjects) {
  StreamDecoder bad(Api::kOpenAiChat);
  bad.Feed("data: {not json}\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n", nullptr);
  EXPECT_NE(bad.outcome().parse_error.find("not a JSON object"), std::string::npos);
  EXPECT_EQ(bad.outcome().deltas, 0);  // nothing after the error counts

  StreamDecoder no_choices(Api::kOpenAiChat);
  no_choices.Feed("data: {\"id\":\"x\"}\n\n", nullptr);
  EXPECT_FALSE(no_choices.outcome().parse_error.empty());

  StreamDecoder in_stream(Api::kOpenAiChat);
  in_stream.Feed("data: {\"error\":{\"message\":\"engine died\",\"type\":\"server_error\"}}\n\n", nullptr);
  EXPECT_EQ(in_stream.outcome().error, "engine died");

  StreamDecoder ollama(Api::kOllama);
  ollama.Feed("{\"error\":\"model 'x' not found\"}\n", nullptr);
  EXPECT_EQ(ollama.outcome().error, "model 'x' not found");

  EXPECT_EQ(ErrorMessageOf(R"({"error":{"message":"nope","type":"x"}})"), "nope");
  EXPECT_EQ(ErrorMessageOf(R"({"error":"gone"})"), "gone");
  EXPECT_EQ(ErrorMessageOf("plain"), "plain");
}

TEST(ApiProtocolTest, RequestBodies) {
  RequestOptions o;
  o.model = "m";
  o.ignore_eos = true;
  const std::vector<Message> msgs = {{"system", "S"}, {"user", "U"}, {"assistant", "A"}, {"user", "V"}};
  const json chat = json::parse(RequestBody(o, msgs, 7));
  EXPECT_EQ(chat["max_tokens"], 7);
  EXPECT_EQ(chat["ignore_eos"], true);
  EXPECT_EQ(chat["stream"], true);
  EXPECT_EQ(chat["stream_options"]["include_usage"], true);
  EXPECT_EQ(chat["temperature"], 0);
  EXPECT_EQ(chat["messages"].size(), 4u);
  EXPECT_EQ(std::string(RequestPath(o.api)), "/v1/chat/completions");

  o.api = Api::kOpenAiCompletions;
  EXPECT_EQ(json::parse(RequestBody(o, msgs, 7))["prompt"], "S\n\nU\n\nA\n\nV");

  o.api = Api::kAnthropic;
  o.api_key = "k";
  const json a = json::parse(RequestBody(o, msgs, 7));
  EXPECT_EQ(a["system"], "S");
  EXPECT_EQ(a["messages"].size(), 3u);
  EXPECT_FALSE(a.contains("ignore_eos"));
  EXPECT_EQ(RequestHeaders(o).GetOr("x-api-key", ""), "k");
  EXPECT_EQ(RequestHeaders(o).GetOr("anthropic-version", ""), "2023-06-01");

  o.api = Api::kOllama;
  o.temperature.reset();
  const json l = json::parse(RequestBody(o, msgs, 7));
  EXPECT_EQ(l["options"]["num_predict"], 7);
  EXPECT_FALSE(l["options"].contains("temperature"));
  EXPECT_FALSE(l.contains("ignore_eos"));
  EXPECT_EQ(RequestHeaders(o).GetOr("Authorization", ""), "Bearer k");
  EXPECT_EQ(std::string(RequestPath(o.api)), "/api/chat");

  EXPECT_EQ(ParseApi("anthropic"), Api::kAnthropic);
  EXPECT_EQ(ParseApi("openai-completions"), Api::kOpenAiCompletions);
  EXPECT_FALSE(ParseApi("grpc").has_value());
}

}  // namespace
}  // namespace herd::bench
